// softmax_loss.cpp — softmax, log_softmax and the losses: each op's shape rule, core-runtime call
// and gradient rule side by side, then the backward ops, each with a rule of its own.
//
// Class targets (int64) get no gradient, and neither do class weights (constants, as in
// PyTorch); the targets of mse, l1 and bce are floating and do, and so does bce's pos_weight.
// Every backward op is linear in grad_loss; G below is grad_loss as the factor of each element's
// loss: grad_loss itself (reduction none), a scalar (sum), or the scalar over the count (mean).
#include "ember/ops/softmax_loss.h"

#include <sstream>

#include "ember/autodiff/ops.h"
#include "families.h"
#include "formula_grad.h"
#include "infer.h"

namespace ember::autodiff {

namespace {

// ---- shared helpers ----

const std::string& checked_reduction(const char* op, const Attrs& a) {
  const std::string& r = a.s("reduction");
  if (r != "none" && r != "mean" && r != "sum")
    throw ValueError(op, "reduction is '" + r + "'; expected 'none', 'mean' or 'sum'");
  return r;
}

// A loss of per-element (or per-sample) shape `shape`: itself when not reduced, else a scalar.
TensorType loss_type(const TensorType& x, const Shape& shape, const std::string& reduction) {
  return TensorType{reduction == "none" ? shape : Shape{}, x.dtype, x.device};
}

// grad_loss of a backward op: floating, and the loss's shape (none) or one element.
void check_grad_loss(const char* op, const TensorType& g, const Shape& loss_shape,
                     const std::string& reduction) {
  if (!is_floating(g.dtype))
    throw DTypeError(op, "grad_loss is " + g.str() + "; expected a floating dtype");
  if (reduction == "none" ? g.shape != loss_shape : g.numel() != 1)
    throw ShapeError(op, "grad_loss is " + g.str() + "; with reduction " + reduction +
                             " it must be " +
                             (reduction == "none" ? shape_str(loss_shape) : "one element"));
}

// d<gg, B(g)>/dg for a backward op B, linear in g and diagonal over the elements:
// B applied to gg (none), or the sum of gg B(1) (mean, sum).
template <class Backward>
Val grad_of_grad_loss(Val g, Val gg, const std::string& reduction, const Backward& backward) {
  if (reduction == "none") return backward(gg);
  const Shape shape = g.shape();  // a copy: adding nodes may move the graph's values
  return reshape(sum(gg * backward(ones_like(g))), shape);
}

// ---- softmax, log_softmax ----

// x [*] -> [*] (softmax, log_softmax).
Types softmax_infer(const char* op, const Types& in, const Attrs& a) {
  infer::arity(op, in, 1);
  infer::floating(op, in, 0);
  wrap_dim_or_scalar(a.i("dim"), int64_t(in[0].shape.size()), op, "x is " + in[0].str());
  return {in[0]};
}

// grad [*], y [*] -> [*] (softmax_backward, log_softmax_backward).
Types softmax_backward_infer(const char* op, const Types& in, const Attrs& a) {
  infer::arity(op, in, 2);
  infer::same_device(op, in);
  infer::floating(op, in, 1);
  if (in[0] != in[1])
    throw ShapeError(op, "grad is " + in[0].str() + ", y is " + in[1].str() +
                             "; grad must have y's shape and dtype");
  wrap_dim_or_scalar(a.i("dim"), int64_t(in[1].shape.size()), op, "y is " + in[1].str());
  return {in[1]};
}

// gx = y (g - sum(g y));  dg = y (gg - sum(gg y)),  dy = gg (g - sum(g y)) - g sum(gg y)
Grads softmax_backward_grad(const GradContext& c) {
  const int64_t dim = c.attrs.i("dim");
  Val g = c.x(0), y = c.x(1), gg = c.dy();
  Grads d(2);
  if (c.needs_grad[0]) d[0] = softmax_backward(gg, y, dim);
  if (c.needs_grad[1]) d[1] = gg * (g - sum(g * y, {dim}, true)) - g * sum(gg * y, {dim}, true);
  return d;
}

// gx = g - exp(y) sum(g);  dg = gg - sum(gg exp(y)),  dy = -gg exp(y) sum(g)
Grads log_softmax_backward_grad(const GradContext& c) {
  const int64_t dim = c.attrs.i("dim");
  Val g = c.x(0), y = c.x(1), gg = c.dy();
  Val p = exp(y);
  Grads d(2);
  if (c.needs_grad[0]) d[0] = gg - sum(gg * p, {dim}, true);
  if (c.needs_grad[1]) d[1] = -(gg * p * sum(g, {dim}, true));
  return d;
}

// ---- class-index losses: cross_entropy, nll_loss ----

// Where a class loss's inputs sit: (x, target, weight if has_weight) after `first` leading ones.
struct ClassSlots {
  int x, target, weight, count;
};
ClassSlots class_slots(const Attrs& a, int first) {
  const bool has_weight = a.b("has_weight");
  return {first, first + 1, has_weight ? first + 2 : -1, first + 2 + int(has_weight)};
}

// The class dim of x [N, C, d...] (1), or of one sample [C] (0).
int64_t class_dim(size_t ndim) { return ndim == 1 ? 0 : 1; }

// x [N, C, d...] (or [C]), int64 target [N, d...] (or []), weight [C]: the samples' shape.
Shape check_class_loss(const char* op, const char* xname, const Types& in, const ClassSlots& s) {
  infer::arity(op, in, size_t(s.count));
  infer::same_device(op, in);
  const TensorType& x = in[size_t(s.x)];
  const TensorType& target = in[size_t(s.target)];
  const std::string operands =
      std::string(xname) + " is " + x.str() + ", target is " + target.str();
  if (!is_floating(x.dtype)) throw DTypeError(op, operands + "; " + xname + " must be floating");
  if (target.dtype != DType::Int64)
    throw DTypeError(op, operands +
                             "; expected int64 class indices as target, cast it with "
                             ".to(DType::Int64)");
  if (x.shape.empty())
    throw ShapeError(op, operands + "; " + xname + " must be [N, C], [N, C, d1, ...] or [C]");
  const int64_t cdim = class_dim(x.shape.size());
  Shape samples = x.shape;
  samples.erase(samples.begin() + cdim);
  if (target.shape != samples)
    throw ShapeError(op, operands + "; expected target of shape " + shape_str(samples) + ", " +
                             xname + "'s shape without its class dim " + std::to_string(cdim));
  if (s.weight >= 0) {
    const TensorType& w = in[size_t(s.weight)];
    if (w.dtype != x.dtype || w.shape != Shape{x.shape[size_t(cdim)]})
      throw ShapeError(op, std::string(xname) + " is " + x.str() + ", weight is " + w.str() +
                               "; expected weight " +
                               TensorType{{x.shape[size_t(cdim)]}, x.dtype, x.device}.str() +
                               ", one value per class");
  }
  return samples;
}

// `logits` names the input for the message.
double checked_label_smoothing(const char* op, const Attrs& a, const TensorType& logits) {
  const double eps = a.f("label_smoothing");
  if (!(eps >= 0 && eps <= 1)) {
    std::ostringstream os;
    os << "label_smoothing is " << eps << " (logits is " << logits.str()
       << "); it must be in [0, 1]: 0 for hard targets, e.g. 0.1 to smooth";
    throw ValueError(op, os.str());
  }
  return eps;
}

// logits [N, C, d...], target [N, d...], weight [C] -> loss [] (or [N, d...] for none).
Types class_loss_infer(const char* op, const char* xname, const Types& in, const Attrs& a) {
  const Shape samples = check_class_loss(op, xname, in, class_slots(a, 0));
  return {loss_type(in[0], samples, checked_reduction(op, a))};
}

// grad_loss, logits [N, C, d...], target, weight -> grad_logits [N, C, d...].
Types class_loss_backward_infer(const char* op, const char* xname, const Types& in,
                                const Attrs& a) {
  const Shape samples = check_class_loss(op, xname, in, class_slots(a, 1));
  check_grad_loss(op, in[0], samples, checked_reduction(op, a));
  return {in[1]};
}

// Whether the loss is float32 whatever the logits' dtype (autocast's float32_result: the kernels
// compute in float32, and the loss is then not rounded to float16/bfloat16).
bool float32_result(const Attrs& a) { return a.has("float32_result") && a.b("float32_result"); }

Tensors cross_entropy_run(const Tensors& in, const Attrs& a) {
  const ClassSlots s = class_slots(a, 0);
  const Tensor weight = s.weight < 0 ? Tensor() : in[size_t(s.weight)];
  const LossReduction reduction = loss_reduction(a.s("reduction"));
  if (!float32_result(a))
    return {ember::cross_entropy(in[0], in[1], weight, a.i("ignore_index"), reduction,
                                 a.f("label_smoothing"))};
  Tensor loss = Tensor::empty(reduction == LossReduction::None ? in[1].shape() : Shape{},
                              DType::Float32, in[0].device(), "cross_entropy");
  ember::cross_entropy_out(loss, in[0], in[1], weight, a.i("ignore_index"), reduction,
                           a.f("label_smoothing"));
  return {loss};
}

Tensors cross_entropy_backward_run(const Tensors& in, const Attrs& a) {
  const ClassSlots s = class_slots(a, 1);
  return {ember::cross_entropy_backward(in[0], in[1], in[2],
                                        s.weight < 0 ? Tensor() : in[size_t(s.weight)],
                                        a.i("ignore_index"), loss_reduction(a.s("reduction")),
                                        a.f("label_smoothing"))};
}

Tensors nll_loss_run(const Tensors& in, const Attrs& a) {
  const ClassSlots s = class_slots(a, 0);
  return {ember::nll_loss(in[0], in[1], s.weight < 0 ? Tensor() : in[size_t(s.weight)],
                          a.i("ignore_index"), loss_reduction(a.s("reduction")))};
}

Tensors nll_loss_backward_run(const Tensors& in, const Attrs& a) {
  const ClassSlots s = class_slots(a, 1);
  return {ember::nll_loss_backward(in[0], in[1], in[2],
                                   s.weight < 0 ? Tensor() : in[size_t(s.weight)],
                                   a.i("ignore_index"), loss_reduction(a.s("reduction")))};
}

Val optional_weight(const std::vector<Val>& in, const ClassSlots& s) {
  return s.weight < 0 ? Val() : in[size_t(s.weight)];
}

// logits [N, C, d...] -> loss:  dlogits = cross_entropy_backward(dy, logits, target, ...)
Grads cross_entropy_grad(const GradContext& c) {
  const ClassSlots s = class_slots(c.attrs, 0);
  Grads d(c.inputs.size());
  d[0] = cross_entropy_backward(c.dy(), c.x(0), c.x(1), optional_weight(c.inputs, s),
                                c.attrs.i("ignore_index"), c.attrs.s("reduction"),
                                c.attrs.f("label_smoothing"));
  return d;
}

// v [C] shaped to broadcast along the class dim of x [N, C, d...] (ndim dims).
Val along_classes(Val v, int64_t ndim) {
  if (ndim == 1) return v;
  Shape shape(size_t(ndim), 1);
  shape[1] = v.size(0);
  return reshape(v, shape);
}

// cross_entropy_backward with primitive ops. Per sample, with p = softmax(x) over the C
// classes, e the target's one-hot (zero when ignored), w the class weights (1 without) and
// eps the label smoothing:
//   q = (1 - eps) w e + eps / C w [not ignored],  gx = G (sum_c(q) p - q),
// where G divides by the total weight of the samples not ignored (sum of w e) for mean.
Val cross_entropy_backward_formula(Val g, Val x, Val target, Val weight, const Attrs& a) {
  const std::string& reduction = a.s("reduction");
  const double eps = a.f("label_smoothing");
  const int64_t cdim = class_dim(size_t(x.dim()));
  // nll_loss_backward with grad_loss 1 is minus the one-hot of the targets (0 where ignored).
  Val onehot = -nll_loss_backward(ones_like(g), x, target, Val(), a.i("ignore_index"),
                                  reduction == "none" ? "none" : "sum");
  Val w = weight.defined() ? along_classes(weight, x.dim()) : Val();
  Val weighted = w.defined() ? onehot * w : onehot;
  Val q = eps == 0 ? weighted : weighted * (1 - eps);
  if (eps > 0) {
    Val kept = sum(onehot, {cdim}, true);  // 1 per sample, 0 where ignored
    q = q + (w.defined() ? kept * w : kept) * (eps / double(x.size(cdim)));
  }
  Val gx = softmax(x, cdim) * sum(q, {cdim}, true) - q;
  if (reduction == "none") {
    Shape per_sample = x.shape();
    per_sample[size_t(cdim)] = 1;
    return gx * reshape(g, per_sample);
  }
  Val factor = reshape(g, {});
  if (reduction == "mean") factor = factor / sum(weighted);
  return gx * factor;
}

// (grad_loss, logits, target, weight) -> grad_logits: the derivative of the formula above; in
// logits it is the Hessian of softmax cross-entropy, G sum_c(q) (diag(p) - p p^T), applied.
Grads cross_entropy_backward_grad(const GradContext& c) {
  const ClassSlots s = class_slots(c.attrs, 1);
  GradContext without_weight = c;  // class weights are constants
  if (s.weight >= 0) without_weight.needs_grad[size_t(s.weight)] = false;
  return grad_of_formula(without_weight, [&](const std::vector<Val>& in) {
    return Grads{
        cross_entropy_backward_formula(in[0], in[1], in[2], optional_weight(in, s), c.attrs)};
  });
}

// log_probs [N, C, d...] -> loss = -w[t] log_probs[t]:  dlog_probs = nll_loss_backward(dy, ...)
Grads nll_loss_grad(const GradContext& c) {
  const ClassSlots s = class_slots(c.attrs, 0);
  Grads d(c.inputs.size());
  d[0] = nll_loss_backward(c.dy(), c.x(0), c.x(1), optional_weight(c.inputs, s),
                           c.attrs.i("ignore_index"), c.attrs.s("reduction"));
  return d;
}

// gx = -G w[t] onehot(t), linear in g and free of log_probs: its adjoint picks gg at the target,
// dg = nll_loss(gg, target, weight) reduced alike; dlog_probs = 0
Grads nll_loss_backward_grad(const GradContext& c) {
  const ClassSlots s = class_slots(c.attrs, 1);
  Grads d(c.inputs.size());
  const Shape shape = c.x(0).shape();  // a copy: adding nodes may move the graph's values
  if (c.needs_grad[0])
    d[0] = reshape(nll_loss(c.dy(), c.x(2), optional_weight(c.inputs, s), c.attrs.i("ignore_index"),
                            c.attrs.s("reduction")),
                   shape);
  return d;
}

// ---- elementwise losses: mse_loss, l1_loss, binary_cross_entropy_with_logits ----

// input, target [*] of one dtype and shape; pos_weight (at index pos_weight, if >= 0)
// broadcasting to them: the loss's per-element shape.
Shape check_pair_loss(const char* op, const Types& in, size_t first, int pos_weight) {
  infer::arity(op, in, first + 2 + (pos_weight >= 0 ? 1 : 0));
  infer::same_device(op, in);
  const TensorType& x = in[first];
  const TensorType& y = in[first + 1];
  const std::string operands = "input is " + x.str() + ", target is " + y.str();
  if (!is_floating(x.dtype)) throw DTypeError(op, operands + "; input must be floating");
  if (y.dtype != x.dtype) throw DTypeError(op, operands + "; target must have input's dtype");
  if (y.shape != x.shape) throw ShapeError(op, operands + "; target must have input's shape");
  if (pos_weight >= 0) {
    const TensorType& pw = in[size_t(pos_weight)];
    bool fits = pw.dtype == x.dtype && pw.shape.size() <= x.shape.size();
    for (size_t k = 1; fits && k <= pw.shape.size(); ++k) {
      const int64_t s = pw.shape[pw.shape.size() - k];
      fits = s == 1 || s == x.shape[x.shape.size() - k];
    }
    if (!fits)
      throw ShapeError(op, "input is " + x.str() + ", pos_weight is " + pw.str() +
                               "; pos_weight must have input's dtype and broadcast to its shape, "
                               "e.g. [C] for the last dim");
  }
  return x.shape;
}

int pos_weight_slot(const Attrs& a, int first) {
  return a.has("has_pos_weight") && a.b("has_pos_weight") ? first + 2 : -1;
}

// input, target [*] (pos_weight) -> loss [] (or [*] for none).
Types pair_loss_infer(const char* op, const Types& in, const Attrs& a) {
  const Shape shape = check_pair_loss(op, in, 0, pos_weight_slot(a, 0));
  return {loss_type(in[0], shape, checked_reduction(op, a))};
}

// grad_loss, input, target [*] (pos_weight) -> grad_input [*].
Types pair_loss_backward_infer(const char* op, const Types& in, const Attrs& a) {
  const Shape shape = check_pair_loss(op, in, 1, pos_weight_slot(a, 1));
  check_grad_loss(op, in[0], shape, checked_reduction(op, a));
  return {in[1]};
}

// G: grad_loss as the factor of each element's loss (see the top of this file).
Val elementwise_factor(Val g, const Val& x, const std::string& reduction) {
  if (reduction == "none") return g;
  Val scalar = reshape(g, {});
  const int64_t n = x.type().numel();
  return reduction == "mean" && n > 0 ? scalar * (1.0 / double(n)) : scalar;
}

// Gradients of a loss of (input - target): dinput = gx, dtarget = -gx.
Grads difference_loss_grad(const GradContext& c, Val gx) {
  return {c.needs_grad[0] ? gx : Val(), c.needs_grad[1] ? -gx : Val()};
}

// gx = 2 G (x - y);  dg = <gg, 2 (x - y)> reduced alike, dx = 2 G gg, dy = -dx
Grads mse_loss_backward_grad(const GradContext& c) {
  const std::string& reduction = c.attrs.s("reduction");
  Val g = c.x(0), x = c.x(1), y = c.x(2), gg = c.dy();
  Grads d(3);
  if (c.needs_grad[0])
    d[0] = grad_of_grad_loss(g, gg, reduction,
                             [&](Val v) { return mse_loss_backward(v, x, y, reduction); });
  Val dx = gg * elementwise_factor(g, x, reduction) * 2.0;
  if (c.needs_grad[1]) d[1] = dx;
  if (c.needs_grad[2]) d[2] = -dx;
  return d;
}

// gx = G sign(x - y);  dg = <gg, sign(x - y)> reduced alike; dx = dy = 0 (almost everywhere)
Grads l1_loss_backward_grad(const GradContext& c) {
  const std::string& reduction = c.attrs.s("reduction");
  Val x = c.x(1), y = c.x(2);
  Grads d(3);
  if (c.needs_grad[0])
    d[0] = grad_of_grad_loss(c.x(0), c.dy(), reduction,
                             [&](Val v) { return l1_loss_backward(v, x, y, reduction); });
  return d;
}

// loss = pw y softplus(-x) + (1 - y) softplus(x), with softplus(-x) = softplus(x) - x:
//   dx = bce_backward(dy, ...),  dy = G ((pw - 1) softplus(x) - pw x),
//   dpw = G y (softplus(x) - x)  (summed back to pos_weight's shape by the driver);
// without pos_weight (pw = 1), dy = -G x.
Grads bce_with_logits_grad(const GradContext& c) {
  const std::string& reduction = c.attrs.s("reduction");
  const int pw_slot = pos_weight_slot(c.attrs, 0);
  Val x = c.x(0), y = c.x(1), pw = pw_slot < 0 ? Val() : c.x(size_t(pw_slot));
  Val factor = elementwise_factor(c.dy(), x, reduction);
  Grads d(c.inputs.size());
  if (c.needs_grad[0])
    d[0] = binary_cross_entropy_with_logits_backward(c.dy(), x, y, pw, reduction);
  if (c.needs_grad[1])
    d[1] = pw.defined() ? factor * ((pw - 1.0) * softplus(x) - pw * x) : -(factor * x);
  if (pw.defined() && c.needs_grad[size_t(pw_slot)])
    d[size_t(pw_slot)] = factor * y * (softplus(x) - x);
  return d;
}

// gx = G (s a - pw y) with s = sigmoid(x), a = 1 + (pw - 1) y (pw = 1 without pos_weight):
//   dg = <gg, s a - pw y> reduced alike,  dx = gg G a s (1 - s),
//   dy = gg G (s (pw - 1) - pw),  dpw = gg G y (s - 1)
Grads bce_with_logits_backward_grad(const GradContext& c) {
  const std::string& reduction = c.attrs.s("reduction");
  const int pw_slot = pos_weight_slot(c.attrs, 1);
  Val g = c.x(0), x = c.x(1), y = c.x(2), pw = pw_slot < 0 ? Val() : c.x(size_t(pw_slot));
  Val ggf = c.dy() * elementwise_factor(g, x, reduction);
  Val s = sigmoid(x);
  Grads d(c.inputs.size());
  if (c.needs_grad[0])
    d[0] = grad_of_grad_loss(g, c.dy(), reduction, [&](Val v) {
      return binary_cross_entropy_with_logits_backward(v, x, y, pw, reduction);
    });
  if (c.needs_grad[1])
    d[1] = sigmoid_backward(pw.defined() ? ggf * (y * (pw - 1.0) + 1.0) : ggf, s);
  if (c.needs_grad[2]) d[2] = pw.defined() ? ggf * (s * (pw - 1.0) - pw) : -ggf;
  if (pw.defined() && c.needs_grad[size_t(pw_slot)]) d[size_t(pw_slot)] = ggf * y * (s - 1.0);
  return d;
}

LossReduction reduction_of(const Attrs& a) { return loss_reduction(a.s("reduction")); }

}  // namespace

std::vector<OpDef> softmax_loss_ops() {
  return {
      // y = softmax(x);  dx = softmax_backward(dy, y) = y (dy - sum(dy y))
      {"softmax",
       [](const Types& in, const Attrs& a) -> Types { return softmax_infer("softmax", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::softmax(in[0], a.i("dim"))};
       },
       [](const GradContext& c) -> Grads {
         return {softmax_backward(c.dy(), c.y(), c.attrs.i("dim"))};
       }},
      // y = log_softmax(x);  dx = log_softmax_backward(dy, y) = dy - exp(y) sum(dy)
      {"log_softmax",
       [](const Types& in, const Attrs& a) -> Types { return softmax_infer("log_softmax", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::log_softmax(in[0], a.i("dim"))};
       },
       [](const GradContext& c) -> Grads {
         return {log_softmax_backward(c.dy(), c.y(), c.attrs.i("dim"))};
       }},
      // gx = y (g - sum(g y)), see softmax_backward_grad
      {"softmax_backward",
       [](const Types& in, const Attrs& a) -> Types {
         return softmax_backward_infer("softmax_backward", in, a);
       },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::softmax_backward(in[0], in[1], a.i("dim"))};
       },
       softmax_backward_grad},
      // gx = g - exp(y) sum(g), see log_softmax_backward_grad
      {"log_softmax_backward",
       [](const Types& in, const Attrs& a) -> Types {
         return softmax_backward_infer("log_softmax_backward", in, a);
       },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::log_softmax_backward(in[0], in[1], a.i("dim"))};
       },
       log_softmax_backward_grad},
      {"cross_entropy",
       [](const Types& in, const Attrs& a) -> Types {
         Types out = class_loss_infer("cross_entropy", "logits", in, a);
         checked_label_smoothing("cross_entropy", a, in[0]);
         if (float32_result(a)) out[0].dtype = DType::Float32;
         return out;
       },
       cross_entropy_run, cross_entropy_grad},
      {"cross_entropy_backward",
       [](const Types& in, const Attrs& a) -> Types {
         Types out = class_loss_backward_infer("cross_entropy_backward", "logits", in, a);
         checked_label_smoothing("cross_entropy_backward", a, in[1]);
         return out;
       },
       cross_entropy_backward_run, cross_entropy_backward_grad},
      {"nll_loss",
       [](const Types& in, const Attrs& a) -> Types {
         return class_loss_infer("nll_loss", "log_probs", in, a);
       },
       nll_loss_run, nll_loss_grad},
      {"nll_loss_backward",
       [](const Types& in, const Attrs& a) -> Types {
         return class_loss_backward_infer("nll_loss_backward", "log_probs", in, a);
       },
       nll_loss_backward_run, nll_loss_backward_grad},
      // loss = (x - y)^2;  dx = mse_loss_backward(dy, x, y), dy = -dx
      {"mse_loss",
       [](const Types& in, const Attrs& a) -> Types { return pair_loss_infer("mse_loss", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::mse_loss(in[0], in[1], reduction_of(a))};
       },
       [](const GradContext& c) -> Grads {
         return difference_loss_grad(c, mse_loss_backward(c.dy(), c.x(0), c.x(1),
                                                          c.attrs.s("reduction")));
       }},
      {"mse_loss_backward",
       [](const Types& in, const Attrs& a) -> Types {
         return pair_loss_backward_infer("mse_loss_backward", in, a);
       },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::mse_loss_backward(in[0], in[1], in[2], reduction_of(a))};
       },
       mse_loss_backward_grad},
      // loss = |x - y|;  dx = l1_loss_backward(dy, x, y) = G sign(x - y), dy = -dx
      {"l1_loss",
       [](const Types& in, const Attrs& a) -> Types { return pair_loss_infer("l1_loss", in, a); },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::l1_loss(in[0], in[1], reduction_of(a))};
       },
       [](const GradContext& c) -> Grads {
         return difference_loss_grad(c, l1_loss_backward(c.dy(), c.x(0), c.x(1),
                                                         c.attrs.s("reduction")));
       }},
      {"l1_loss_backward",
       [](const Types& in, const Attrs& a) -> Types {
         return pair_loss_backward_infer("l1_loss_backward", in, a);
       },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::l1_loss_backward(in[0], in[1], in[2], reduction_of(a))};
       },
       l1_loss_backward_grad},
      {"binary_cross_entropy_with_logits",
       [](const Types& in, const Attrs& a) -> Types {
         return pair_loss_infer("binary_cross_entropy_with_logits", in, a);
       },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         const int pw = pos_weight_slot(a, 0);
         return {ember::binary_cross_entropy_with_logits(in[0], in[1],
                                                         pw < 0 ? Tensor() : in[size_t(pw)],
                                                         reduction_of(a))};
       },
       bce_with_logits_grad},
      {"binary_cross_entropy_with_logits_backward",
       [](const Types& in, const Attrs& a) -> Types {
         return pair_loss_backward_infer("binary_cross_entropy_with_logits_backward", in, a);
       },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         const int pw = pos_weight_slot(a, 1);
         return {ember::binary_cross_entropy_with_logits_backward(
             in[0], in[1], in[2], pw < 0 ? Tensor() : in[size_t(pw)], reduction_of(a))};
       },
       bce_with_logits_backward_grad},
  };
}

}  // namespace ember::autodiff
