// normalization.cpp — front functions of batch norm and layer norm: check the operands, bring x
// to the contiguous 3-D (batch norm) or 2-D (layer norm) layout the kernels expect, allocate the
// outputs and call the kernels. Dropout draws its mask with bernoulli (ops/random.h), then one
// kernel applies it.
#include "ember/ops/normalization.h"

#include <string>
#include <utility>

#include "kernels.h"
#include "ops/checks.h"
#include "ops/normalization_kernels.h"
#include "ops/out.h"

namespace ember {
namespace {

// Statistics are kept in float32 for half types (their 8- or 11-bit mantissas cannot hold a sum).
DType compute_dtype(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 ? DType::Float32 : t;
}

std::string str(int64_t v) { return std::to_string(v); }

// A per-channel (or per-feature) parameter: optional; if given, x's device and dtype and `shape`.
void check_param(const char* op, const Tensor& x, const Named& p, const Shape& shape,
                 const char* what) {
  if (!p.tensor.defined()) return;
  if (p.tensor.device() != x.device())
    throw DeviceError(op, operands({{"x", x}, p}) + "; move " + p.name + " to x's device");
  if (p.tensor.dtype() != x.dtype())
    throw DTypeError(op, operands({{"x", x}, p}) + "; " + p.name + " must have x's dtype, cast " +
                             "it with .to(" + dtype_cpp(x.dtype()) + ")");
  if (p.tensor.shape() != shape)
    throw ShapeError(op, operands({{"x", x}, p}) + "; expected " + p.name + " of shape " +
                             shape_str(shape) + " (" + what + ")");
}

// Saved statistics handed back to a backward: [shape] in the compute dtype, on x's device. Each
// mismatch has its own error type: a statistic on another device is a DeviceError, not a shape.
void check_saved(const char* op, const Tensor& x, const Named& s, const Shape& shape) {
  check_same_device(op, {{"x", x}, s});
  const bool dtype_ok = s.tensor.dtype() == compute_dtype(x.dtype());
  if (dtype_ok && s.tensor.shape() == shape) return;  // the message is built only for an error
  const std::string message = operands({{"x", x}, s}) + "; expected " + s.name + " " +
                              shape_str(shape) + " " + dtype_name(compute_dtype(x.dtype())) + " " +
                              x.device().str() + ", as returned by the forward op";
  if (!dtype_ok) throw DTypeError(op, message);
  throw ShapeError(op, message);
}

void check_grad_out(const char* op, const Tensor& grad_out, const Tensor& x) {
  check_same_device(op, {{"grad_out", grad_out}, {"x", x}});
  check_same_dtype(op, {{"grad_out", grad_out}, {"x", x}});
  if (grad_out.shape() != x.shape())
    throw ShapeError(op, operands({{"grad_out", grad_out}, {"x", x}}) +
                             "; grad_out must have x's shape");
}

// x: [N, C, *] -> contiguous [N, C, S].
Tensor as_ncs(const Tensor& x) {
  int64_t s = 1;
  for (int64_t d = 2; d < x.dim(); ++d) s *= x.size(d);
  return x.contiguous().view({x.size(0), x.size(1), s});
}

void check_batch_norm_input(const char* op, const Tensor& x) {
  check_defined(op, {{"x", x}});
  check_floating(op, {{"x", x}});
  if (x.dim() < 2)
    throw ShapeError(op, operands({{"x", x}}) +
                             "; expected at least 2 dims [N, C, *]; for a single sample add a "
                             "batch dim with unsqueeze(0)");
}

// The outputs of a normalization's backward: grad_input x's shape, grad_weight and grad_bias
// param_shape, all x's dtype (outs: the _out form's, or null to allocate).
NormGrads norm_grads(const char* op, const NormGrads* outs, const Tensor& x,
                     const Shape& param_shape, std::initializer_list<Named> inputs) {
  NormGrads r;
  r.grad_input = output(op, outs ? &outs->grad_input : nullptr, x.shape(), x.dtype(), x.device(),
                        inputs, "grad_input");
  r.grad_weight = output(op, outs ? &outs->grad_weight : nullptr, param_shape, x.dtype(),
                         x.device(), inputs, "grad_weight");
  r.grad_bias = output(op, outs ? &outs->grad_bias : nullptr, param_shape, x.dtype(), x.device(),
                       inputs, "grad_bias");
  check_outs_apart(op, {{"grad_input", r.grad_input},
                        {"grad_weight", r.grad_weight},
                        {"grad_bias", r.grad_bias}});
  return r;
}

// outs: the _out form's outputs in BatchNormResult's order, or null to allocate them (and so for
// every op below). The kernels write contiguous outputs (see write_contiguous).
BatchNormResult run_batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                               const Tensor& running_mean, const Tensor& running_var, bool training,
                               double eps, const BatchNormResult* outs) {
  const char* op = "batch_norm";
  check_batch_norm_input(op, x);
  const int64_t c = x.size(1);
  const Shape channels{c};
  check_param(op, x, {"weight", weight}, channels, "one per channel, x's dim 1");
  check_param(op, x, {"bias", bias}, channels, "one per channel, x's dim 1");
  check_param(op, x, {"running_mean", running_mean}, channels, "one per channel, x's dim 1");
  check_param(op, x, {"running_var", running_var}, channels, "one per channel, x's dim 1");
  if (running_mean.defined() != running_var.defined())
    throw ValueError(op, operands({{"running_mean", running_mean}, {"running_var", running_var}}) +
                             "; pass both running statistics or neither");
  if (!training && !running_mean.defined())
    throw ValueError(op, operands({{"x", x}}) +
                             "; eval mode (training=false) normalises with running_mean and "
                             "running_var, pass them (or use training=true for batch statistics)");
  if (!(eps >= 0)) throw ValueError(op, "eps must be >= 0, got " + std::to_string(eps));
  const int64_t per_channel = c == 0 ? 0 : x.numel() / c;
  if (training && c > 0 && per_channel <= 1)
    throw ValueError(
        op, operands({{"x", x}}) +
                "; training needs more than 1 value per channel to estimate a variance, got " +
                str(per_channel) + "; use a larger batch or eval mode");

  if (outs && !training && outs->batch_var.defined())
    throw ValueError(op, operands({{"batch_var", outs->batch_var}}) +
                             "; eval mode has no batch variance, pass an undefined batch_var");
  const std::initializer_list<Named> inputs = {{"x", x},
                                               {"weight", weight},
                                               {"bias", bias},
                                               {"running_mean", running_mean},
                                               {"running_var", running_var}};
  const DType acc = compute_dtype(x.dtype());
  BatchNormResult r;
  r.output = output(op, outs ? &outs->output : nullptr, x.shape(), x.dtype(), x.device(), inputs,
                    "output");
  r.save_mean =
      output(op, outs ? &outs->save_mean : nullptr, channels, acc, x.device(), inputs, "save_mean");
  r.save_invstd = output(op, outs ? &outs->save_invstd : nullptr, channels, acc, x.device(), inputs,
                         "save_invstd");
  if (training)
    r.batch_var = output(op, outs ? &outs->batch_var : nullptr, channels, acc, x.device(), inputs,
                         "batch_var");
  check_outs_apart(op, {{"output", r.output},
                        {"save_mean", r.save_mean},
                        {"save_invstd", r.save_invstd},
                        {"batch_var", r.batch_var}});
  Tensor x3 = as_ncs(x);
  Tensor w = weight.defined() ? weight.contiguous() : Tensor();
  Tensor b = bias.defined() ? bias.contiguous() : Tensor();
  write_contiguous(op, {r.output, r.save_mean, r.save_invstd, r.batch_var},
                   [&](std::vector<Tensor>& dsts) {
                     Tensor y3 = dsts[0].view(x3.shape());
                     if (c > 0) {
                       if (training)
                         batch_norm_stats_kernel(x.device())(x3, eps, dsts[1], dsts[2], dsts[3]);
                       else
                         batch_norm_eval_stats_kernel(x.device())(running_mean, running_var, eps,
                                                                  dsts[1], dsts[2]);
                     }
                     if (x.numel() > 0)
                       batch_norm_apply_kernel(x.device())(x3, dsts[1], dsts[2], w, b, y3);
                   });
  return r;
}

}  // namespace

void batch_norm_update_stats(const Tensor& running_mean, const Tensor& running_var,
                             const Tensor& batch_mean, const Tensor& batch_var, double momentum,
                             int64_t count) {
  const char* op = "batch_norm_update_stats";
  const auto all = {Named{"running_mean", running_mean}, Named{"running_var", running_var},
                    Named{"batch_mean", batch_mean}, Named{"batch_var", batch_var}};
  check_same_device(op, all);
  check_floating(op, all);
  check_same_dtype(op, {{"running_mean", running_mean}, {"running_var", running_var}});
  const Shape channels = running_mean.shape();
  for (const Named& t : all)
    if (t.tensor.dim() != 1 || t.tensor.shape() != channels)
      throw ShapeError(op, operands(all) + "; all four must be [C], one value per channel");
  if (count <= 1)
    throw ValueError(op, "count is " + str(count) +
                             "; the unbiased variance needs more than 1 value per channel");
  // The batch statistics in the compute dtype, as batch_norm returns them (a no-op then).
  const DType acc = compute_dtype(running_mean.dtype());
  Tensor mean = batch_mean.to(acc).contiguous(), var = batch_var.to(acc).contiguous();
  running_mean.bump_version();
  running_var.bump_version();
  if (channels[0] > 0)
    batch_norm_update_stats_kernel(running_mean.device())(mean, var, momentum,
                                                          double(count) / double(count - 1),
                                                          running_mean, running_var);
}

namespace {

NormGrads run_batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                                  const Tensor& save_mean, const Tensor& save_invstd, bool training,
                                  const NormGrads* outs) {
  const char* op = "batch_norm_backward";
  // Devices first: an operand on another device is a DeviceError whatever else is wrong with it.
  check_same_device(op, {{"grad_out", grad_out},
                         {"x", x},
                         {"save_mean", save_mean},
                         {"save_invstd", save_invstd}});
  check_batch_norm_input(op, x);
  check_grad_out(op, grad_out, x);
  const Shape channels{x.size(1)};
  check_param(op, x, {"weight", weight}, channels, "one per channel, x's dim 1");
  check_saved(op, x, {"save_mean", save_mean}, channels);
  check_saved(op, x, {"save_invstd", save_invstd}, channels);

  NormGrads r = norm_grads(op, outs, x, channels,
                           {{"grad_out", grad_out},
                            {"x", x},
                            {"weight", weight},
                            {"save_mean", save_mean},
                            {"save_invstd", save_invstd}});
  Tensor x3 = as_ncs(x);
  Tensor dy3 = as_ncs(grad_out);
  Tensor w = weight.defined() ? weight.contiguous() : Tensor();
  // The per-channel sums are the parameters' gradients, which the kernel keeps in the compute
  // dtype: a float16 or bfloat16 result receives them cast.
  const DType acc = compute_dtype(x.dtype());
  write_contiguous(op, {r.grad_input, r.grad_weight, r.grad_bias},
                   [&](std::vector<Tensor>& dsts) {
                     Tensor dx3 = dsts[0].view(x3.shape());
                     if (x.size(1) > 0)
                       batch_norm_backward_reduce_kernel(x.device())(dy3, x3, save_mean,
                                                                     save_invstd, dsts[2], dsts[1]);
                     if (x.numel() > 0)
                       batch_norm_backward_input_kernel(x.device())(dy3, x3, save_mean, save_invstd,
                                                                    w, dsts[2], dsts[1], training,
                                                                    dx3);
                   },
                   {x.dtype(), acc, acc});
  return r;
}

// Checks x against normalized_shape and returns (M, D): x viewed as M rows of D values.
std::pair<int64_t, int64_t> layer_norm_rows(const char* op, const Tensor& x,
                                            const Shape& normalized_shape) {
  check_defined(op, {{"x", x}});
  check_floating(op, {{"x", x}});
  const int64_t k = int64_t(normalized_shape.size());
  bool fits = k > 0 && k <= x.dim();
  for (int64_t i = 1; fits && i <= k; ++i) fits = x.size(-i) == normalized_shape[size_t(k - i)];
  if (!fits)
    throw ShapeError(op, operands({{"x", x}}) + "; normalized_shape " +
                             shape_str(normalized_shape) +
                             " must be non-empty and equal x's trailing dims, e.g. [" +
                             str(x.dim() ? x.size(-1) : 0) + "] to normalise the last dim");
  const int64_t d = shape_numel(normalized_shape);
  int64_t m = 1;
  for (int64_t i = 0; i < x.dim() - k; ++i) m *= x.size(i);
  return {m, d};
}

// x's shape with the normalised dims set to 1: the shape of mean and rstd.
Shape stats_shape(const Tensor& x, size_t k) {
  Shape s = x.shape();
  for (size_t i = s.size() - k; i < s.size(); ++i) s[i] = 1;
  return s;
}

LayerNormResult run_layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape,
                               const Tensor& weight, const Tensor& bias, double eps,
                               const LayerNormResult* outs) {
  const char* op = "layer_norm";
  auto [m, d] = layer_norm_rows(op, x, normalized_shape);
  check_param(op, x, {"weight", weight}, normalized_shape, "normalized_shape");
  check_param(op, x, {"bias", bias}, normalized_shape, "normalized_shape");
  if (!(eps >= 0)) throw ValueError(op, "eps must be >= 0, got " + std::to_string(eps));

  const std::initializer_list<Named> inputs = {{"x", x}, {"weight", weight}, {"bias", bias}};
  const Shape s = stats_shape(x, normalized_shape.size());
  const DType acc = compute_dtype(x.dtype());
  LayerNormResult r;
  r.output = output(op, outs ? &outs->output : nullptr, x.shape(), x.dtype(), x.device(), inputs,
                    "output");
  r.mean = output(op, outs ? &outs->mean : nullptr, s, acc, x.device(), inputs, "mean");
  r.rstd = output(op, outs ? &outs->rstd : nullptr, s, acc, x.device(), inputs, "rstd");
  check_outs_apart(op, {{"output", r.output}, {"mean", r.mean}, {"rstd", r.rstd}});
  Tensor x2 = x.contiguous().view({m, d});
  Tensor w = weight.defined() ? weight.contiguous().view({d}) : Tensor();
  Tensor b = bias.defined() ? bias.contiguous().view({d}) : Tensor();
  write_contiguous(op, {r.output, r.mean, r.rstd}, [&](std::vector<Tensor>& dsts) {
    Tensor y2 = dsts[0].view({m, d}), mean = dsts[1].view({m}), rstd = dsts[2].view({m});
    if (m > 0) layer_norm_kernel(x.device())(x2, w, b, eps, y2, mean, rstd);
  });
  return r;
}

NormGrads run_layer_norm_backward(const Tensor& grad_out, const Tensor& x,
                                  const std::vector<int64_t>& normalized_shape, const Tensor& mean,
                                  const Tensor& rstd, const Tensor& weight, const NormGrads* outs) {
  const char* op = "layer_norm_backward";
  auto [m, d] = layer_norm_rows(op, x, normalized_shape);
  check_grad_out(op, grad_out, x);
  check_param(op, x, {"weight", weight}, normalized_shape, "normalized_shape");
  Shape s = stats_shape(x, normalized_shape.size());
  check_saved(op, x, {"mean", mean}, s);
  check_saved(op, x, {"rstd", rstd}, s);

  Tensor x2 = x.contiguous().view({m, d});
  Tensor dy2 = grad_out.contiguous().view({m, d});
  Tensor mean1 = mean.contiguous().view({m});
  Tensor rstd1 = rstd.contiguous().view({m});
  Tensor w = weight.defined() ? weight.contiguous().view({d}) : Tensor();
  NormGrads r = norm_grads(
      op, outs, x, normalized_shape,
      {{"grad_out", grad_out}, {"x", x}, {"mean", mean}, {"rstd", rstd}, {"weight", weight}});
  write_contiguous(op, {r.grad_input, r.grad_weight, r.grad_bias}, [&](std::vector<Tensor>& dsts) {
    Tensor dx2 = dsts[0].view({m, d}), gw = dsts[1].view({d}), gb = dsts[2].view({d});
    if (m > 0 && d > 0) layer_norm_backward_input_kernel(x.device())(dy2, x2, mean1, rstd1, w, dx2);
    if (d > 0) layer_norm_backward_params_kernel(x.device())(dy2, x2, mean1, rstd1, gw, gb);
  });
  return r;
}

// `input` names the operand for the message.
void check_probability(const char* op, double p, const Named& input) {
  if (!(p >= 0 && p <= 1))
    throw ValueError(op, "p is " + value_str(p) + " (" + operands({input}) +
                             "); p is the probability of zeroing an element and must be in "
                             "[0, 1], e.g. 0.5");
}

// out = mask ? x / (1 - p) : 0 (p = 1: zero); the kernel writes any strided out.
void apply_mask(const Tensor& x, const Tensor& mask, double p, const Tensor& out) {
  Tensor dst = out;
  dst.bump_version();
  if (dst.numel() > 0) dropout_apply_kernel(x.device())(x, mask, p < 1 ? 1 / (1 - p) : 0.0, dst);
}

// Eval or p = 0 keep x: the out-of-place form returns x itself, the _out form copies it.
DropoutResult run_dropout(const Tensor& x, double p, bool training, Generator* gen,
                          const DropoutResult* outs) {
  const char* op = "dropout";
  check_defined(op, {{"x", x}});
  check_floating(op, {{"x", x}});
  check_probability(op, p, {"x", x});
  if (!training || p == 0) {
    if (!outs) return {x, Tensor()};
    Tensor out = output(op, &outs->output, x.shape(), x.dtype(), x.device(), {{"x", x}}, "output");
    out.copy_(x);
    return {out, Tensor()};
  }
  const std::initializer_list<Named> inputs = {{"x", x}};
  Tensor out = output(op, outs ? &outs->output : nullptr, x.shape(), x.dtype(), x.device(), inputs,
                      "output");
  Tensor mask =
      output(op, outs ? &outs->mask : nullptr, x.shape(), DType::Bool, x.device(), inputs, "mask");
  check_outs_apart(op, {{"output", out}, {"mask", mask}});
  bernoulli_out(mask, x.shape(), 1 - p, DType::Bool, x.device(), gen);
  apply_mask(x, mask, p, out);
  return {out, mask};
}

// grad itself when mask is undefined (nothing was dropped): the _out form copies it.
Tensor run_dropout_backward(const Tensor& grad, const Tensor& mask, double p, const Tensor* given) {
  const char* op = "dropout_backward";
  check_defined(op, {{"grad", grad}});
  check_probability(op, p, {"grad", grad});
  if (!mask.defined() && !given) return grad;
  if (mask.defined()) {
    check_same_device(op, {{"grad", grad}, {"mask", mask}});
    if (mask.dtype() != DType::Bool || mask.shape() != grad.shape())
      throw ShapeError(op, operands({{"grad", grad}, {"mask", mask}}) +
                               "; mask must be the bool mask dropout returned, of grad's shape");
  }
  Tensor out = output(op, given, grad.shape(), grad.dtype(), grad.device(),
                      {{"grad", grad}, {"mask", mask}});
  if (!mask.defined()) return out.copy_(grad);
  apply_mask(grad, mask, p, out);
  return out;
}

}  // namespace

// Each op's out-of-place form passes no outputs (allocate); its _out form passes its outputs.
BatchNormResult batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                           const Tensor& running_mean, const Tensor& running_var, bool training,
                           double eps) {
  return run_batch_norm(x, weight, bias, running_mean, running_var, training, eps, nullptr);
}
BatchNormResult batch_norm_out(const Tensor& output, const Tensor& save_mean,
                               const Tensor& save_invstd, const Tensor& batch_var, const Tensor& x,
                               const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                               const Tensor& running_var, bool training, double eps) {
  const BatchNormResult outs{output, save_mean, save_invstd, batch_var};
  return run_batch_norm(x, weight, bias, running_mean, running_var, training, eps, &outs);
}

NormGrads batch_norm_backward(const Tensor& grad_out, const Tensor& x, const Tensor& weight,
                              const Tensor& save_mean, const Tensor& save_invstd, bool training) {
  return run_batch_norm_backward(grad_out, x, weight, save_mean, save_invstd, training, nullptr);
}
NormGrads batch_norm_backward_out(const Tensor& grad_input, const Tensor& grad_weight,
                                  const Tensor& grad_bias, const Tensor& grad_out, const Tensor& x,
                                  const Tensor& weight, const Tensor& save_mean,
                                  const Tensor& save_invstd, bool training) {
  const NormGrads outs{grad_input, grad_weight, grad_bias};
  return run_batch_norm_backward(grad_out, x, weight, save_mean, save_invstd, training, &outs);
}

LayerNormResult layer_norm(const Tensor& x, const std::vector<int64_t>& normalized_shape,
                           const Tensor& weight, const Tensor& bias, double eps) {
  return run_layer_norm(x, normalized_shape, weight, bias, eps, nullptr);
}
LayerNormResult layer_norm_out(const Tensor& output, const Tensor& mean, const Tensor& rstd,
                               const Tensor& x, const std::vector<int64_t>& normalized_shape,
                               const Tensor& weight, const Tensor& bias, double eps) {
  const LayerNormResult outs{output, mean, rstd};
  return run_layer_norm(x, normalized_shape, weight, bias, eps, &outs);
}

NormGrads layer_norm_backward(const Tensor& grad_out, const Tensor& x,
                              const std::vector<int64_t>& normalized_shape, const Tensor& mean,
                              const Tensor& rstd, const Tensor& weight) {
  return run_layer_norm_backward(grad_out, x, normalized_shape, mean, rstd, weight, nullptr);
}
NormGrads layer_norm_backward_out(const Tensor& grad_input, const Tensor& grad_weight,
                                  const Tensor& grad_bias, const Tensor& grad_out, const Tensor& x,
                                  const std::vector<int64_t>& normalized_shape, const Tensor& mean,
                                  const Tensor& rstd, const Tensor& weight) {
  const NormGrads outs{grad_input, grad_weight, grad_bias};
  return run_layer_norm_backward(grad_out, x, normalized_shape, mean, rstd, weight, &outs);
}

DropoutResult dropout(const Tensor& x, double p, bool training, Generator* gen) {
  return run_dropout(x, p, training, gen, nullptr);
}
DropoutResult dropout_out(const Tensor& output, const Tensor& mask, const Tensor& x, double p,
                          bool training, Generator* gen) {
  const DropoutResult outs{output, mask};
  return run_dropout(x, p, training, gen, &outs);
}

Tensor dropout_backward(const Tensor& grad, const Tensor& mask, double p) {
  return run_dropout_backward(grad, mask, p, nullptr);
}
const Tensor& dropout_backward_out(const Tensor& out, const Tensor& grad, const Tensor& mask,
                                   double p) {
  run_dropout_backward(grad, mask, p, &out);
  return out;
}

}  // namespace ember
