// update.cpp — the ops that write state in place: copy_ and the optimizers' per-parameter updates.
// Eager code calls core-runtime for these directly (a fused update per group); while a step is
// traced (compile/), they run through these ops so that the update is a node of the step's graph.
//
// The optimizers' numbers that change between steps (the learning rate a schedule sets, Adam's
// step count) are not attributes but an input: `hyper`, a small float64 CPU tensor the replay
// refills from the live optimizer before every call, so a compiled step never bakes them in.
#include <algorithm>

#include "ember/ops/optimizer.h"
#include "families.h"
#include "infer.h"

namespace ember::autodiff {

namespace {

// The layout of each update's hyper tensor.
enum SgdHyper { kSgdLr, kSgdMomentum, kSgdDampening, kSgdWeightDecay, kSgdCount };
enum AdamHyper {
  kAdamLr,
  kAdamBeta1,
  kAdamBeta2,
  kAdamEps,
  kAdamWeightDecay,
  kAdamStep,
  kAdamCount
};

void check_hyper(const char* op, const TensorType& hyper, int64_t count) {
  if (hyper.dtype != DType::Float64 || hyper.shape != Shape{count} ||
      hyper.device.type != DeviceType::CPU)
    throw ShapeError(op, infer::describe("hyper", hyper) + "; expected f64[" +
                             std::to_string(count) + "] on the CPU");
}

// param, then its state buffers and grad, all of param's type; hyper last.
void check_update(const char* op, const Types& in, size_t tensors, int64_t hyper_count) {
  infer::arity(op, in, tensors + 1);
  infer::floating(op, in, 0);
  for (size_t i = 1; i < tensors; ++i)
    if (in[i] != in[0])
      throw ShapeError(op, infer::describe("param", in[0]) + ", " +
                               infer::describe(("operand " + std::to_string(i)).c_str(), in[i]) +
                               "; every operand must have the parameter's type");
  check_hyper(op, in[tensors], hyper_count);
}

const double* hyper_of(const Tensor& t) { return t.data<double>(); }

// The updates of n parameters (attribute `params`; absent: 1, the per-parameter ops sgd_update
// and adam_update): each parameter followed by its state buffers (so that output o is written
// into input o, as the memory plan reads an in-place node), then the n grads, then the n hyper
// tensors. For one parameter that is (param, [state...], grad, hyper). The grouped forms
// (sgd_update_group, adam_update_group) are what compile/passes.h's group_updates makes of a run
// of per-parameter updates, so that the multi-tensor kernel updates them together, as eager
// mode's optimizer step does; parameters whose hyper numbers are equal (one learning rate, one
// step count) go through one call of core-runtime's multi-tensor step.
size_t params_of(const Attrs& a) { return a.has("params") ? size_t(a.i("params")) : 1; }

template <class Step>
void for_each_run_of_equal_hyper(const Tensors& in, size_t n, size_t hyper_at, int64_t count,
                                 Step step) {
  for (size_t first = 0; first < n;) {
    const double* h = hyper_of(in[hyper_at + first]);
    size_t last = first + 1;
    while (last < n && std::equal(h, h + count, hyper_of(in[hyper_at + last]))) ++last;
    step(first, last, h);
    first = last;
  }
}

Types updates_infer(const char* op, const Types& in, const Attrs& a, size_t state,
                    int64_t hyper_count) {
  const size_t n = params_of(a), per = 1 + state;  // per: the parameter and its state buffers
  if (n < 1 || in.size() != n * (per + 2))
    throw ShapeError(op, "got " + std::to_string(in.size()) + " operands for " + std::to_string(n) +
                             " parameters; expected " + std::to_string(per + 2) + " a parameter");
  Types out;
  for (size_t i = 0; i < n; ++i) {
    Types one(in.begin() + long(i * per), in.begin() + long((i + 1) * per));
    one.push_back(in[n * per + i]);        // its grad
    one.push_back(in[n * (per + 1) + i]);  // its hyper
    check_update(op, one, per + 1, hyper_count);
    out.insert(out.end(), one.begin(), one.begin() + long(per));
  }
  return out;
}

template <const char* kOp> Types sgd_updates_infer(const Types& in, const Attrs& a) {
  return updates_infer(kOp, in, a, a.b("has_buffer") ? 1 : 0, kSgdCount);
}

Tensors sgd_updates_run(const Tensors& in, const Attrs& a) {
  const bool buffer = a.b("has_buffer");
  const size_t n = params_of(a), per = buffer ? 2 : 1;
  for_each_run_of_equal_hyper(in, n, n * (per + 1), kSgdCount,
                              [&](size_t first, size_t last, const double* h) {
                                TensorList params, buffers, grads;
                                for (size_t i = first; i < last; ++i) {
                                  params.push_back(in[i * per]);
                                  if (buffer) buffers.push_back(in[i * per + 1]);
                                  grads.push_back(in[n * per + i]);
                                }
                                sgd_step(params, grads, buffers, h[kSgdLr], h[kSgdMomentum],
                                         h[kSgdDampening], a.b("nesterov"), h[kSgdWeightDecay],
                                         a.b("first_step"), a.b("maximize"));
                              });
  return Tensors(in.begin(), in.begin() + long(n * per));
}

template <const char* kOp> Types adam_updates_infer(const Types& in, const Attrs& a) {
  return updates_infer(kOp, in, a, 2, kAdamCount);
}

Tensors adam_updates_run(const Tensors& in, const Attrs& a) {
  const size_t n = params_of(a), per = 3;
  for_each_run_of_equal_hyper(in, n, n * (per + 1), kAdamCount,
                              [&](size_t first, size_t last, const double* h) {
                                TensorList params, exp_avgs, exp_avg_sqs, grads;
                                for (size_t i = first; i < last; ++i) {
                                  params.push_back(in[i * per]);
                                  exp_avgs.push_back(in[i * per + 1]);
                                  exp_avg_sqs.push_back(in[i * per + 2]);
                                  grads.push_back(in[n * per + i]);
                                }
                                adam_step(params, grads, exp_avgs, exp_avg_sqs,
                                          int64_t(h[kAdamStep]), h[kAdamLr], h[kAdamBeta1],
                                          h[kAdamBeta2], h[kAdamEps], h[kAdamWeightDecay],
                                          a.b("decoupled"), a.b("maximize"));
                              });
  return Tensors(in.begin(), in.begin() + long(n * per));
}

constexpr char kSgdUpdate[] = "sgd_update", kSgdUpdateGroup[] = "sgd_update_group";
constexpr char kAdamUpdate[] = "adam_update", kAdamUpdateGroup[] = "adam_update_group";

// (dst, src) -> dst with src's values (broadcast and cast), in place.
Types copy_infer(const Types& in, const Attrs&) {
  infer::arity("copy_", in, 2);
  infer::broadcasts_to("copy_", "src", in[1], in[0].shape);
  return {in[0]};
}

}  // namespace

std::vector<OpDef> update_ops() {
  return {
      {"copy_", copy_infer,
       [](const Tensors& in, const Attrs&) -> Tensors {
         in[0].copy_(in[1]);
         return {in[0]};
       },
       nullptr, false, true},
      {kSgdUpdate, sgd_updates_infer<kSgdUpdate>, sgd_updates_run, nullptr, false, true},
      {kAdamUpdate, adam_updates_infer<kAdamUpdate>, adam_updates_run, nullptr, false, true},
      {kSgdUpdateGroup, sgd_updates_infer<kSgdUpdateGroup>, sgd_updates_run, nullptr, false, true},
      {kAdamUpdateGroup, adam_updates_infer<kAdamUpdateGroup>, adam_updates_run, nullptr, false,
       true},
  };
}

}  // namespace ember::autodiff
