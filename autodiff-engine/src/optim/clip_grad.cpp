// clip_grad.cpp — clip_grad_norm_ and clip_grad_value_ from core-runtime ops.
#include "ember/autodiff/optim/clip_grad.h"

#include <cmath>
#include <map>

#include "ember/ops/creation.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/reduction.h"
#include "ember/ops/shape_ops.h"

namespace ember::autodiff::optim {

namespace {
std::vector<Variable> with_grads(const std::vector<Variable>& params) {
  std::vector<Variable> out;
  for (const Variable& p : params)
    if (p.defined() && p.grad().defined()) out.push_back(p);
  return out;
}

// Whether each parameter's grad may be written in place. Backward may hand out a broadcast view
// as a grad (the gradient of a sum is one expanded tensor), and one tensor to several parameters:
// those grads are replaced by new tensors instead.
std::vector<bool> writable_grads(const std::vector<Variable>& params) {
  std::map<const StorageImpl*, int> users;
  for (const Variable& p : params) ++users[p.grad().data().storage().get()];
  std::vector<bool> writable;
  for (const Variable& p : params) {
    const Tensor& g = p.grad().data();
    writable.push_back(g.is_contiguous() && users[g.storage().get()] == 1);
  }
  return writable;
}
}  // namespace

Tensor clip_grad_norm_(const std::vector<Variable>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  if (!(max_norm >= 0))
    throw ValueError("clip_grad_norm_",
                     "max_norm is " + std::to_string(max_norm) + "; pass a norm >= 0");
  const std::vector<Variable> ps = with_grads(params);
  if (ps.empty()) return scalar_tensor(0.0);
  // Half-precision grads are summed in float32 at least.
  DType dtype = DType::Float32;
  for (const Variable& p : ps)
    if (p.grad().dtype() == DType::Float64) dtype = DType::Float64;
  const Device device = ps.front().grad().device();
  TensorList norms;
  for (const Variable& p : ps)
    norms.push_back(norm(p.grad().data().to(dtype), norm_type).to(device));
  const Tensor total = norm(stack(norms), norm_type);
  if (error_if_nonfinite && !std::isfinite(total.item<double>()))
    throw ValueError("clip_grad_norm_",
                     "the total norm of the gradients is " + std::to_string(total.item<double>()) +
                         "; some gradient holds NaN or infinity (check the loss and the learning "
                         "rate), or pass error_if_nonfinite=false to clip anyway");
  const Tensor scale = clamp(div(max_norm, add(total, 1e-6)), std::nullopt, 1.0);
  const std::vector<bool> writable = writable_grads(ps);
  for (size_t i = 0; i < ps.size(); ++i) {
    const Tensor& g = ps[i].grad().data();
    const Tensor s = scale.to(g.device());
    if (writable[i]) mul_(g, s);
    else ps[i].set_grad(Variable(mul(g, s).to(g.dtype())));
  }
  return total;
}

void clip_grad_value_(const std::vector<Variable>& params, double clip_value) {
  if (!(clip_value >= 0))
    throw ValueError("clip_grad_value_",
                     "clip_value is " + std::to_string(clip_value) + "; pass a bound >= 0");
  const std::vector<Variable> ps = with_grads(params);
  const std::vector<bool> writable = writable_grads(ps);
  for (size_t i = 0; i < ps.size(); ++i) {
    Tensor g = ps[i].grad().data();
    Tensor clamped = clamp(g, -clip_value, clip_value);
    if (writable[i]) g.copy_(clamped);
    else ps[i].set_grad(Variable(clamped));
  }
}

}  // namespace ember::autodiff::optim
