// softmax_loss.cpp — front functions of softmax and the losses: check the operands, lay them out
// as the kernels expect (softmax / class dim last), call the device's kernel, then reduce the
// per-sample losses with the reductions of ember/ops/reduction.h.
#include "ember/ops/softmax_loss.h"

#include <algorithm>
#include <string>
#include <vector>

#include "ember/ops/elementwise.h"
#include "ember/ops/reduction.h"
#include "kernels.h"
#include "ops/checks.h"
#include "ops/out.h"
#include "ops/softmax_loss_kernels.h"

namespace ember {
namespace {

// t with dim d moved last (a view): the [rows..., C] layout of the row-wise kernels.
Tensor dim_last(const Tensor& t, int64_t d) {
  std::vector<int64_t> perm;
  for (int64_t k = 0; k < t.dim(); ++k)
    if (k != d) perm.push_back(k);
  perm.push_back(d);
  return t.permute(perm);
}

// given: the _out form's out, or null to allocate the result (as in every op below). The row-wise
// and pointwise kernels write outputs of any strides, so out is written directly.
Tensor softmax_forward(const char* op, const Tensor& x, int64_t dim, bool log,
                       const Tensor* given) {
  check_defined(op, {{"x", x}});
  check_floating(op, {{"x", x}});
  const int64_t d = wrap_dim_or_scalar(dim, x.dim(), op, "x is " + describe(x));
  Tensor rows = x.dim() == 0 ? x.unsqueeze(0) : x;  // a scalar is one row of one element
  Tensor y = output(op, given, x.shape(), x.dtype(), x.device(), {{"x", x}});
  Tensor y_rows = dim_last(x.dim() == 0 ? y.unsqueeze(0) : y, d);
  y.bump_version();
  softmax_kernel(x.device())(dim_last(rows, d), log, y_rows);
  return y;
}

Tensor softmax_backward_impl(const char* op, const Tensor& grad_y, const Tensor& y, int64_t dim,
                             bool log, const Tensor* given) {
  check_same_device(op, {{"grad_y", grad_y}, {"y", y}});
  check_floating(op, {{"y", y}});
  check_same_dtype(op, {{"grad_y", grad_y}, {"y", y}});
  if (grad_y.shape() != y.shape())
    throw ShapeError(op, operands({{"grad_y", grad_y}, {"y", y}}) + "; grad_y must have y's shape");
  const int64_t d = wrap_dim_or_scalar(dim, y.dim(), op, "y is " + describe(y));
  Tensor gy = grad_y.dim() == 0 ? grad_y.unsqueeze(0) : grad_y;
  Tensor yy = y.dim() == 0 ? y.unsqueeze(0) : y;
  Tensor grad_x =
      output(op, given, y.shape(), y.dtype(), y.device(), {{"grad_y", grad_y}, {"y", y}});
  Tensor gx_rows = dim_last(y.dim() == 0 ? grad_x.unsqueeze(0) : grad_x, d);
  grad_x.bump_version();
  softmax_backward_kernel(y.device())(dim_last(gy, d), dim_last(yy, d), log, gx_rows);
  return grad_x;
}

// Per-sample losses, sample weights and gradient multipliers are kept in the compute dtype.
DType compute_dtype(DType t) { return t == DType::Float64 ? DType::Float64 : DType::Float32; }

// ---- class-index losses (cross_entropy, nll_loss) ----

// logits [N, C, d...] (or [C]) and target [N, d...] (or []) laid out for the kernels.
struct ClassLayout {
  Tensor x;       // class dim last: [N, d..., C] (or [1, C])
  Tensor target;  // [N, d...] (or [1])
  Tensor weight;  // [C] in the compute dtype, or undefined
  int64_t classes;
  bool single;  // one unbatched sample: logits [C], target []
};

ClassLayout class_layout(const char* op, const char* xname, const Tensor& x, const Tensor& target,
                         const Tensor& weight) {
  check_same_device(op, {{xname, x}, {"target", target}});
  check_floating(op, {{xname, x}});
  if (target.dtype() != DType::Int64)
    throw DTypeError(op, operands({{xname, x}, {"target", target}}) +
                             "; target must hold int64 class indices; cast it with "
                             ".to(DType::Int64)");
  if (x.dim() == 0)
    throw ShapeError(op, operands({{xname, x}, {"target", target}}) + "; " + xname +
                             " must be [N, C], [N, C, d1, ...] or [C]");
  ClassLayout L;
  L.single = x.dim() == 1;
  const int64_t cdim = L.single ? 0 : 1;
  L.classes = x.size(cdim);
  Shape expected = x.shape();
  expected.erase(expected.begin() + cdim);
  if (target.shape() != expected)
    throw ShapeError(op, operands({{xname, x}, {"target", target}}) + "; target must be " +
                             shape_str(expected) + ", " + xname +
                             "'s shape without its class dim " + std::to_string(cdim));
  if (weight.defined()) {
    check_same_device(op, {{xname, x}, {"weight", weight}});
    check_floating(op, {{"weight", weight}});
    if (weight.shape() != Shape{L.classes})
      throw ShapeError(op, operands({{xname, x}, {"weight", weight}}) + "; weight must be [" +
                               std::to_string(L.classes) + "], one value per class");
    L.weight = weight.to(compute_dtype(x.dtype()));
  }
  L.x = L.single ? x.unsqueeze(0) : dim_last(x, 1);
  L.target = L.single ? target.unsqueeze(0) : target;
  return L;
}

// w[target] per sample (0 where ignored); IndexError for a target outside [0, C), at once on the
// CPU and at the next synchronising point on CUDA.
Tensor sample_weights(const char* op, const char* xname, const ClassLayout& L, const Tensor& x,
                      const Tensor& target, int64_t ignore_index) {
  Tensor sw = Tensor::empty(L.target.shape(), compute_dtype(x.dtype()), x.device(), op);
  DeferredError error{DeferredError::Kind::Index, op,
                      operands({{xname, x}, {"target", target}}) + "; target holds ",
                      ", outside the valid class range [0, " + std::to_string(L.classes) +
                          "); each target must be a class index or ignore_index (" +
                          std::to_string(ignore_index) + ")"};
  target_weight_kernel(x.device())(L.target, L.weight, ignore_index, L.classes, sw, error);
  return sw;
}

// The loss of a class-index loss into out (target's shape for None, a scalar otherwise, in out's
// dtype): kernel(loss) writes the per-sample losses (compute dtype, [N, d...]); sw holds
// the sample weights. For None they are the result, written into out directly when out is
// contiguous and of the compute dtype; a sum or mean is reduced in the compute dtype and then
// cast into out.
template <class F>
void write_losses(const char* op, const ClassLayout& L, const Tensor& sw, LossReduction reduction,
                  const Tensor& out, F&& kernel) {
  if (reduction == LossReduction::None) {
    write_contiguous(op, {out},
                     [&](std::vector<Tensor>& dsts) { kernel(dsts[0].view(L.target.shape())); },
                     {sw.dtype()});
    return;
  }
  Tensor loss = Tensor::empty(L.target.shape(), sw.dtype(), out.device(), op);
  kernel(loss);
  out.copy_(reduction == LossReduction::Sum ? sum(loss) : div(sum(loss), sum(sw)));
}

Shape loss_shape(LossReduction reduction, const Tensor& target) {
  return reduction == LossReduction::None ? target.shape() : Shape{};
}

// grad_loss as the multiplier of each sample's loss, [N, d...] in the compute dtype (a broadcast
// view for Sum and Mean; Mean divides by the total weight of the samples).
Tensor loss_multiplier(const char* op, const Tensor& grad_loss, const Tensor& sw,
                       LossReduction reduction, const Shape& loss_shape, DType dtype) {
  const Shape& samples = sw.shape();
  if (reduction == LossReduction::None) {
    if (grad_loss.shape() != loss_shape)
      throw ShapeError(op, operands({{"grad_loss", grad_loss}}) + "; with reduction none " +
                               "grad_loss must have the loss's shape " + shape_str(loss_shape));
    return grad_loss.to(dtype).reshape(samples);
  }
  if (grad_loss.numel() != 1)
    throw ShapeError(op, operands({{"grad_loss", grad_loss}}) +
                             "; with reduction mean or sum the loss is a scalar, so grad_loss " +
                             "must hold one element");
  Tensor g = grad_loss.to(dtype).reshape({});
  if (reduction == LossReduction::Mean) g = div(g, sum(sw));
  return g.expand(samples);
}

void check_label_smoothing(const char* op, double eps, const Tensor& logits) {
  if (!(eps >= 0.0 && eps <= 1.0))
    throw ValueError(op, "label_smoothing is " + value_str(eps) + " (" +
                             operands({{"logits", logits}}) +
                             "); it must be in [0, 1]: 0 for hard targets, e.g. 0.1 to smooth");
}

// ---- pointwise losses (mse, l1, bce with logits) ----

// Checks input/target (and pos_weight); returns pos_weight broadcast to input's shape.
Tensor check_pointwise(const char* op, const Tensor& x, const Tensor& y, const Tensor& pos_weight) {
  check_same_device(op, {{"input", x}, {"target", y}});
  check_floating(op, {{"input", x}});
  check_same_dtype(op, {{"input", x}, {"target", y}});
  if (x.shape() != y.shape())
    throw ShapeError(op, operands({{"input", x}, {"target", y}}) +
                             "; input and target must have one shape");
  if (!pos_weight.defined()) return Tensor();
  check_same_device(op, {{"input", x}, {"pos_weight", pos_weight}});
  check_same_dtype(op, {{"input", x}, {"pos_weight", pos_weight}});
  bool fits = pos_weight.dim() <= x.dim();  // each trailing dim 1 or x's size
  for (int64_t k = 1; fits && k <= pos_weight.dim(); ++k) {
    int64_t s = pos_weight.size(pos_weight.dim() - k);
    fits = s == 1 || s == x.size(x.dim() - k);
  }
  if (!fits)
    throw ShapeError(op, operands({{"input", x}, {"pos_weight", pos_weight}}) +
                             "; pos_weight must broadcast to input's shape, e.g. [C] for the "
                             "last dim");
  return pos_weight.expand(x.shape());
}

// The per-element losses are the result for None; Sum and Mean reduce them into out.
Tensor pointwise_forward(const char* op, PointwiseLoss kind, const Tensor& x, const Tensor& y,
                         const Tensor& pos_weight, LossReduction reduction, const Tensor* given) {
  Tensor pw = check_pointwise(op, x, y, pos_weight);
  const bool none = reduction == LossReduction::None;
  Tensor out = output(op, given, none ? x.shape() : Shape{}, x.dtype(), x.device(),
                      {{"input", x}, {"target", y}, {"pos_weight", pos_weight}});
  Tensor loss = none ? out : Tensor::empty(x.shape(), x.dtype(), x.device(), op);
  loss.bump_version();
  pointwise_loss_kernel(x.device())(kind, x, y, pw, loss);
  if (reduction == LossReduction::Sum) sum_out(out, loss);
  if (reduction == LossReduction::Mean) mean_out(out, loss);
  return out;
}

Tensor pointwise_backward(const char* op, PointwiseLoss kind, const Tensor& grad_loss,
                          const Tensor& x, const Tensor& y, const Tensor& pos_weight,
                          LossReduction reduction, const Tensor* given) {
  Tensor pw = check_pointwise(op, x, y, pos_weight);
  check_same_device(op, {{"grad_loss", grad_loss}, {"input", x}});
  Tensor g;
  if (reduction == LossReduction::None) {
    if (grad_loss.shape() != x.shape())
      throw ShapeError(op, operands({{"grad_loss", grad_loss}, {"input", x}}) +
                               "; with reduction none grad_loss must have input's shape");
    g = grad_loss.to(x.dtype());
  } else {
    if (grad_loss.numel() != 1)
      throw ShapeError(op, operands({{"grad_loss", grad_loss}, {"input", x}}) +
                               "; with reduction mean or sum grad_loss must hold one element");
    g = grad_loss.to(x.dtype()).reshape({}).expand(x.shape());
  }
  const double scale =
      reduction == LossReduction::Mean && x.numel() > 0 ? 1.0 / double(x.numel()) : 1.0;
  Tensor grad =
      output(op, given, x.shape(), x.dtype(), x.device(),
             {{"grad_loss", grad_loss}, {"input", x}, {"target", y}, {"pos_weight", pos_weight}});
  grad.bump_version();
  pointwise_loss_backward_kernel(x.device())(kind, g, scale, x, y, pw, grad);
  return grad;
}

Tensor run_cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight,
                         int64_t ignore_index, LossReduction reduction, double label_smoothing,
                         const Tensor* given) {
  const char* op = "cross_entropy";
  check_label_smoothing(op, label_smoothing, logits);
  ClassLayout L = class_layout(op, "logits", logits, target, weight);
  Tensor sw = sample_weights(op, "logits", L, logits, target, ignore_index);
  // The losses are computed in the compute dtype (float32 for float16/bfloat16 logits): an out of
  // that dtype gets them unrounded (autocast's float32 loss).
  const DType compute = compute_dtype(logits.dtype());
  const DType dtype = given && given->dtype() == compute ? compute : logits.dtype();
  Tensor out = output(op, given, loss_shape(reduction, target), dtype, logits.device(),
                      {{"logits", logits}, {"target", target}, {"weight", weight}});
  write_losses(op, L, sw, reduction, out, [&](Tensor loss) {
    cross_entropy_kernel(logits.device())(L.x, L.target, L.weight, ignore_index, label_smoothing,
                                          loss);
  });
  return out;
}

Tensor run_cross_entropy_backward(const Tensor& grad_loss, const Tensor& logits,
                                  const Tensor& target, const Tensor& weight, int64_t ignore_index,
                                  LossReduction reduction, double label_smoothing,
                                  const Tensor* given) {
  const char* op = "cross_entropy_backward";
  check_label_smoothing(op, label_smoothing, logits);
  ClassLayout L = class_layout(op, "logits", logits, target, weight);
  check_same_device(op, {{"grad_loss", grad_loss}, {"logits", logits}});
  Tensor sw = sample_weights(op, "logits", L, logits, target, ignore_index);
  Tensor g = loss_multiplier(op, grad_loss, sw, reduction, target.shape(), sw.dtype());
  Tensor grad = output(
      op, given, logits.shape(), logits.dtype(), logits.device(),
      {{"grad_loss", grad_loss}, {"logits", logits}, {"target", target}, {"weight", weight}});
  Tensor grad_rows = L.single ? grad.unsqueeze(0) : dim_last(grad, 1);
  grad.bump_version();
  cross_entropy_backward_kernel(logits.device())(g, L.x, L.target, L.weight, ignore_index,
                                                 label_smoothing, grad_rows);
  return grad;
}

Tensor run_nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight,
                    int64_t ignore_index, LossReduction reduction, const Tensor* given) {
  const char* op = "nll_loss";
  ClassLayout L = class_layout(op, "log_probs", log_probs, target, weight);
  Tensor sw = sample_weights(op, "log_probs", L, log_probs, target, ignore_index);
  Tensor out =
      output(op, given, loss_shape(reduction, target), log_probs.dtype(), log_probs.device(),
             {{"log_probs", log_probs}, {"target", target}, {"weight", weight}});
  write_losses(op, L, sw, reduction, out, [&](Tensor loss) {
    nll_loss_kernel(log_probs.device())(L.x, L.target, L.weight, ignore_index, loss);
  });
  return out;
}

Tensor run_nll_loss_backward(const Tensor& grad_loss, const Tensor& log_probs, const Tensor& target,
                             const Tensor& weight, int64_t ignore_index, LossReduction reduction,
                             const Tensor* given) {
  const char* op = "nll_loss_backward";
  ClassLayout L = class_layout(op, "log_probs", log_probs, target, weight);
  check_same_device(op, {{"grad_loss", grad_loss}, {"log_probs", log_probs}});
  Tensor sw = sample_weights(op, "log_probs", L, log_probs, target, ignore_index);
  Tensor g = loss_multiplier(op, grad_loss, sw, reduction, target.shape(), sw.dtype());
  Tensor grad = output(
      op, given, log_probs.shape(), log_probs.dtype(), log_probs.device(),
      {{"grad_loss", grad_loss}, {"log_probs", log_probs}, {"target", target}, {"weight", weight}});
  Tensor grad_rows = L.single ? grad.unsqueeze(0) : dim_last(grad, 1);
  grad.bump_version();
  nll_loss_backward_kernel(log_probs.device())(g, L.target, L.weight, ignore_index, grad_rows);
  return grad;
}

}  // namespace

LossReduction loss_reduction(const std::string& name) {
  if (name == "none") return LossReduction::None;
  if (name == "mean") return LossReduction::Mean;
  if (name == "sum") return LossReduction::Sum;
  throw ValueError("loss", "reduction '" + name + "' is unknown; expected 'none', 'mean' or 'sum'");
}

// Each op's out-of-place form passes no output (allocate); its _out form passes &out.
Tensor softmax(const Tensor& x, int64_t dim) {
  return softmax_forward("softmax", x, dim, false, nullptr);
}
const Tensor& softmax_out(const Tensor& out, const Tensor& x, int64_t dim) {
  softmax_forward("softmax", x, dim, false, &out);
  return out;
}

Tensor log_softmax(const Tensor& x, int64_t dim) {
  return softmax_forward("log_softmax", x, dim, true, nullptr);
}
const Tensor& log_softmax_out(const Tensor& out, const Tensor& x, int64_t dim) {
  softmax_forward("log_softmax", x, dim, true, &out);
  return out;
}

Tensor softmax_backward(const Tensor& grad_y, const Tensor& y, int64_t dim) {
  return softmax_backward_impl("softmax_backward", grad_y, y, dim, false, nullptr);
}
const Tensor& softmax_backward_out(const Tensor& out, const Tensor& grad_y, const Tensor& y,
                                   int64_t dim) {
  softmax_backward_impl("softmax_backward", grad_y, y, dim, false, &out);
  return out;
}

Tensor log_softmax_backward(const Tensor& grad_y, const Tensor& y, int64_t dim) {
  return softmax_backward_impl("log_softmax_backward", grad_y, y, dim, true, nullptr);
}
const Tensor& log_softmax_backward_out(const Tensor& out, const Tensor& grad_y, const Tensor& y,
                                       int64_t dim) {
  softmax_backward_impl("log_softmax_backward", grad_y, y, dim, true, &out);
  return out;
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight,
                     int64_t ignore_index, LossReduction reduction, double label_smoothing) {
  return run_cross_entropy(logits, target, weight, ignore_index, reduction, label_smoothing,
                           nullptr);
}
const Tensor& cross_entropy_out(const Tensor& out, const Tensor& logits, const Tensor& target,
                                const Tensor& weight, int64_t ignore_index, LossReduction reduction,
                                double label_smoothing) {
  run_cross_entropy(logits, target, weight, ignore_index, reduction, label_smoothing, &out);
  return out;
}

Tensor cross_entropy_backward(const Tensor& grad_loss, const Tensor& logits, const Tensor& target,
                              const Tensor& weight, int64_t ignore_index, LossReduction reduction,
                              double label_smoothing) {
  return run_cross_entropy_backward(grad_loss, logits, target, weight, ignore_index, reduction,
                                    label_smoothing, nullptr);
}
const Tensor& cross_entropy_backward_out(const Tensor& out, const Tensor& grad_loss,
                                         const Tensor& logits, const Tensor& target,
                                         const Tensor& weight, int64_t ignore_index,
                                         LossReduction reduction, double label_smoothing) {
  run_cross_entropy_backward(grad_loss, logits, target, weight, ignore_index, reduction,
                             label_smoothing, &out);
  return out;
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight,
                int64_t ignore_index, LossReduction reduction) {
  return run_nll_loss(log_probs, target, weight, ignore_index, reduction, nullptr);
}
const Tensor& nll_loss_out(const Tensor& out, const Tensor& log_probs, const Tensor& target,
                           const Tensor& weight, int64_t ignore_index, LossReduction reduction) {
  run_nll_loss(log_probs, target, weight, ignore_index, reduction, &out);
  return out;
}

Tensor nll_loss_backward(const Tensor& grad_loss, const Tensor& log_probs, const Tensor& target,
                         const Tensor& weight, int64_t ignore_index, LossReduction reduction) {
  return run_nll_loss_backward(grad_loss, log_probs, target, weight, ignore_index, reduction,
                               nullptr);
}
const Tensor& nll_loss_backward_out(const Tensor& out, const Tensor& grad_loss,
                                    const Tensor& log_probs, const Tensor& target,
                                    const Tensor& weight, int64_t ignore_index,
                                    LossReduction reduction) {
  run_nll_loss_backward(grad_loss, log_probs, target, weight, ignore_index, reduction, &out);
  return out;
}

Tensor mse_loss(const Tensor& input, const Tensor& target, LossReduction reduction) {
  return pointwise_forward("mse_loss", PointwiseLoss::Mse, input, target, Tensor(), reduction,
                           nullptr);
}
const Tensor& mse_loss_out(const Tensor& out, const Tensor& input, const Tensor& target,
                           LossReduction reduction) {
  pointwise_forward("mse_loss", PointwiseLoss::Mse, input, target, Tensor(), reduction, &out);
  return out;
}

Tensor mse_loss_backward(const Tensor& grad_loss, const Tensor& input, const Tensor& target,
                         LossReduction reduction) {
  return pointwise_backward("mse_loss_backward", PointwiseLoss::Mse, grad_loss, input, target,
                            Tensor(), reduction, nullptr);
}
const Tensor& mse_loss_backward_out(const Tensor& out, const Tensor& grad_loss, const Tensor& input,
                                    const Tensor& target, LossReduction reduction) {
  pointwise_backward("mse_loss_backward", PointwiseLoss::Mse, grad_loss, input, target, Tensor(),
                     reduction, &out);
  return out;
}

Tensor l1_loss(const Tensor& input, const Tensor& target, LossReduction reduction) {
  return pointwise_forward("l1_loss", PointwiseLoss::L1, input, target, Tensor(), reduction,
                           nullptr);
}
const Tensor& l1_loss_out(const Tensor& out, const Tensor& input, const Tensor& target,
                          LossReduction reduction) {
  pointwise_forward("l1_loss", PointwiseLoss::L1, input, target, Tensor(), reduction, &out);
  return out;
}

Tensor l1_loss_backward(const Tensor& grad_loss, const Tensor& input, const Tensor& target,
                        LossReduction reduction) {
  return pointwise_backward("l1_loss_backward", PointwiseLoss::L1, grad_loss, input, target,
                            Tensor(), reduction, nullptr);
}
const Tensor& l1_loss_backward_out(const Tensor& out, const Tensor& grad_loss, const Tensor& input,
                                   const Tensor& target, LossReduction reduction) {
  pointwise_backward("l1_loss_backward", PointwiseLoss::L1, grad_loss, input, target, Tensor(),
                     reduction, &out);
  return out;
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        const Tensor& pos_weight, LossReduction reduction) {
  return pointwise_forward("binary_cross_entropy_with_logits", PointwiseLoss::BceWithLogits, logits,
                           target, pos_weight, reduction, nullptr);
}
const Tensor& binary_cross_entropy_with_logits_out(const Tensor& out, const Tensor& logits,
                                                   const Tensor& target, const Tensor& pos_weight,
                                                   LossReduction reduction) {
  pointwise_forward("binary_cross_entropy_with_logits", PointwiseLoss::BceWithLogits, logits,
                    target, pos_weight, reduction, &out);
  return out;
}

Tensor binary_cross_entropy_with_logits_backward(const Tensor& grad_loss, const Tensor& logits,
                                                 const Tensor& target, const Tensor& pos_weight,
                                                 LossReduction reduction) {
  return pointwise_backward("binary_cross_entropy_with_logits_backward",
                            PointwiseLoss::BceWithLogits, grad_loss, logits, target, pos_weight,
                            reduction, nullptr);
}
const Tensor& binary_cross_entropy_with_logits_backward_out(
    const Tensor& out, const Tensor& grad_loss, const Tensor& logits, const Tensor& target,
    const Tensor& pos_weight, LossReduction reduction) {
  pointwise_backward("binary_cross_entropy_with_logits_backward", PointwiseLoss::BceWithLogits,
                     grad_loss, logits, target, pos_weight, reduction, &out);
  return out;
}

}  // namespace ember
