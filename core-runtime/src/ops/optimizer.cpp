// optimizer.cpp — front functions of the fused optimizer updates: check the lists and the
// hyperparameters, group the parameters by (device, dtype), and run one kernel per group.
#include "ember/ops/optimizer.h"

#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "kernels.h"
#include "ops/checks.h"
#include "ops/optimizer_kernels.h"

namespace ember {
namespace {

struct NamedList {
  const char* name;
  const TensorList& tensors;
};

std::string at(const char* name, size_t i) {
  return std::string(name) + "[" + std::to_string(i) + "]";
}

// Every used list has one tensor per parameter, matching it in shape, dtype and device; params
// are floating. lists[0] is params; an empty list other than params and grads is unused.
void check_lists(const char* op, const std::vector<NamedList>& lists) {
  const TensorList& params = lists[0].tensors;
  for (size_t k = 1; k < lists.size(); ++k) {
    const size_t n = lists[k].tensors.size();
    if (n != params.size() && (k == 1 || n != 0))
      throw ValueError(op, "params has " + std::to_string(params.size()) + " tensors but " +
                               lists[k].name + " has " + std::to_string(n) +
                               "; pass one per parameter" + (k == 1 ? "" : " (or none if unused)"));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string pname = at("params", i);
    const Tensor& p = params[i];
    check_defined(op, {{pname.c_str(), p}});
    check_floating(op, {{pname.c_str(), p}});
    for (size_t k = 1; k < lists.size(); ++k) {
      if (lists[k].tensors.empty()) continue;
      const std::string tname = at(lists[k].name, i);
      const Tensor& t = lists[k].tensors[i];
      const std::string both = operands({{pname.c_str(), p}, {tname.c_str(), t}});
      const std::string fix = "; " + tname + " must match " + pname + "'s shape, dtype and device";
      if (!t.defined()) throw ValueError(op, both + fix);
      if (t.device() != p.device()) throw DeviceError(op, both + fix);
      if (t.dtype() != p.dtype()) throw DTypeError(op, both + fix);
      if (t.shape() != p.shape()) throw ShapeError(op, both + fix);
    }
  }
}

// Runs kernel once per (device, dtype) group of parameters. Kernels take contiguous tensors:
// a non-contiguous one is replaced by a contiguous copy, written back afterwards. Every list but
// grads (lists[1], only read) is updated in place, so its tensors' versions are bumped.
template <class Hyper>
void run_grouped(KernelFn<void(const std::vector<TensorList>&, const Hyper&)> (*kernel)(Device),
                 const std::vector<NamedList>& lists, const Hyper& h) {
  std::map<std::tuple<int, int, int>, std::vector<size_t>> groups;
  for (size_t i = 0; i < lists[0].tensors.size(); ++i) {
    const Tensor& p = lists[0].tensors[i];
    groups[{int(p.device().type), p.device().index, int(p.dtype())}].push_back(i);
  }
  for (const auto& [key, members] : groups) {
    std::vector<TensorList> work(lists.size());
    for (size_t k = 0; k < lists.size(); ++k)
      if (!lists[k].tensors.empty())
        for (size_t i : members) work[k].push_back(lists[k].tensors[i].contiguous());
    kernel(lists[0].tensors[members[0]].device())(work, h);
    for (size_t k = 0; k < lists.size(); ++k) {
      if (k == 1) continue;
      for (size_t j = 0; j < work[k].size(); ++j) {
        Tensor original = lists[k].tensors[members[j]];
        original.bump_version();
        if (!work[k][j].shares_storage(original)) original.copy_(work[k][j]);
      }
    }
  }
}

void check_non_negative(const char* op, const char* name, double v) {
  if (!(v >= 0))
    throw ValueError(op, std::string(name) + " must be >= 0, got " + std::to_string(v));
}

void check_unit(const char* op, const char* name, double v) {
  if (!(v >= 0 && v < 1))
    throw ValueError(op, std::string(name) + " must be in [0, 1), got " + std::to_string(v));
}

}  // namespace

void sgd_step(const TensorList& params, const TensorList& grads, const TensorList& momentum_buffers,
              double lr, double momentum, double dampening, bool nesterov, double weight_decay,
              bool first_step, bool maximize) {
  const char* op = "sgd_step";
  check_non_negative(op, "lr", lr);
  check_non_negative(op, "momentum", momentum);
  check_non_negative(op, "weight_decay", weight_decay);
  if (nesterov && (momentum <= 0 || dampening != 0))
    throw ValueError(op, "nesterov momentum needs momentum > 0 and dampening == 0, got momentum " +
                             std::to_string(momentum) + ", dampening " + std::to_string(dampening));
  if (momentum != 0 && momentum_buffers.empty() && !params.empty())
    throw ValueError(op, "momentum " + std::to_string(momentum) +
                             " needs momentum_buffers, one per parameter");
  const TensorList unused;
  std::vector<NamedList> lists{{"params", params},
                               {"grads", grads},
                               {"momentum_buffers", momentum != 0 ? momentum_buffers : unused}};
  check_lists(op, lists);
  run_grouped(sgd_kernel, lists,
              SgdHyper{lr, momentum, dampening, weight_decay, nesterov, first_step, maximize});
}

void adam_step(const TensorList& params, const TensorList& grads, const TensorList& exp_avgs,
               const TensorList& exp_avg_sqs, int64_t step, double lr, double beta1, double beta2,
               double eps, double weight_decay, bool decoupled, bool maximize) {
  const char* op = decoupled ? "adamw_step" : "adam_step";
  check_non_negative(op, "lr", lr);
  check_unit(op, "beta1", beta1);
  check_unit(op, "beta2", beta2);
  check_non_negative(op, "eps", eps);
  check_non_negative(op, "weight_decay", weight_decay);
  if (step < 1)
    throw ValueError(op,
                     "step must be >= 1 (the number of this update), got " + std::to_string(step));
  if (!params.empty() && (exp_avgs.empty() || exp_avg_sqs.empty()))
    throw ValueError(op, "exp_avgs and exp_avg_sqs are required, one per parameter");
  std::vector<NamedList> lists{{"params", params},
                               {"grads", grads},
                               {"exp_avgs", exp_avgs},
                               {"exp_avg_sqs", exp_avg_sqs}};
  check_lists(op, lists);
  const double t = double(step);
  AdamHyper h{lr,
              beta1,
              beta2,
              eps,
              weight_decay,
              decoupled,
              maximize,
              lr / (1 - std::pow(beta1, t)),
              std::sqrt(1 - std::pow(beta2, t))};
  run_grouped(adam_kernel, lists, h);
}

void rmsprop_step(const TensorList& params, const TensorList& grads, const TensorList& square_avgs,
                  const TensorList& momentum_buffers, const TensorList& grad_avgs, double lr,
                  double alpha, double eps, double weight_decay, double momentum, bool centered,
                  bool maximize) {
  const char* op = "rmsprop_step";
  check_non_negative(op, "lr", lr);
  check_non_negative(op, "alpha", alpha);
  check_non_negative(op, "eps", eps);
  check_non_negative(op, "weight_decay", weight_decay);
  check_non_negative(op, "momentum", momentum);
  if (!params.empty() && (square_avgs.empty() || (momentum > 0 && momentum_buffers.empty()) ||
                          (centered && grad_avgs.empty())))
    throw ValueError(op,
                     "needs square_avgs, momentum_buffers when momentum > 0 and grad_avgs when "
                     "centered, one per parameter");
  const TensorList unused;
  std::vector<NamedList> lists{{"params", params},
                               {"grads", grads},
                               {"square_avgs", square_avgs},
                               {"momentum_buffers", momentum > 0 ? momentum_buffers : unused},
                               {"grad_avgs", centered ? grad_avgs : unused}};
  check_lists(op, lists);
  run_grouped(rmsprop_kernel, lists,
              RmspropHyper{lr, alpha, eps, weight_decay, momentum, centered, maximize});
}

}  // namespace ember
