// normalization.cpp — batch norm, layer norm and dropout: each op's shape rule, core-runtime call
// and gradient rule side by side, then their fused backward ops, whose rules differentiate the
// backward formula written with primitive ops (formula_grad.h).
//
// Optional operands (weight, bias, running statistics) are absent from a node's inputs when not
// given; the attributes has_weight, has_bias, has_running_stats say which are there.
#include "ember/ops/normalization.h"

#include "ember/autodiff/ops.h"
#include "families.h"
#include "formula_grad.h"
#include "infer.h"

namespace ember::autodiff {

namespace {

// ---- shared helpers ----

// The index of the next optional input if present (advancing `next`), else -1.
int slot(bool present, int& next) { return present ? next++ : -1; }

template <class T> T optional_input(const std::vector<T>& in, int index) {
  return index < 0 ? T() : in[size_t(index)];
}

// Statistics are kept in float32 for half inputs, in x's dtype otherwise (core-runtime's rule).
DType stats_dtype(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 ? DType::Float32 : t;
}

// A parameter (weight, bias, a running statistic): x's device and dtype, and `shape`.
void check_param(const char* op, const TensorType& x, const TensorType& p, const char* name,
                 const Shape& shape, const char* what) {
  const std::string operands = "x is " + x.str() + ", " + name + " is " + p.str();
  if (p.device != x.device) throw DeviceError(op, operands + "; move " + name + " to x's device");
  if (p.dtype != x.dtype)
    throw DTypeError(op, operands + "; " + name + " must have x's dtype " + dtype_name(x.dtype) +
                             ", cast it with .to()");
  if (p.shape != shape)
    throw ShapeError(op, operands + "; expected " + name + " of shape " + shape_str(shape) + " (" +
                             what + ")");
}

// A statistic saved by the forward op: `shape` in the stats dtype, on x's device.
void check_saved(const char* op, const TensorType& x, const TensorType& s, const char* name,
                 const Shape& shape) {
  const TensorType want{shape, stats_dtype(x.dtype), x.device};
  if (s != want)
    throw ShapeError(op, "x is " + x.str() + ", " + name + " is " + s.str() + "; expected " +
                             want.str() + ", as the forward op returns it");
}

void check_grad_like(const char* op, const TensorType& grad, const TensorType& x) {
  if (grad != x)
    throw ShapeError(op, "grad is " + grad.str() + ", x is " + x.str() +
                             "; grad must have x's shape, dtype and device");
}

// a + b where either may be undefined (a zero gradient).
Val add_defined(Val a, Val b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return a + b;
}

Val cube(Val v) { return v * v * v; }

// Half inputs keep their statistics in float32, so a gradient mixing the two is float32: brought
// back to the dtype of the value it is the gradient of.
Val as_dtype(Val v, DType dtype) { return !v.defined() || v.dtype() == dtype ? v : to(v, dtype); }

// ---- batch norm ----

// Where batch_norm's inputs sit: x first, then whichever of the others were given.
struct BatchNormSlots {
  int weight, bias, running_mean, running_var, count;
};
BatchNormSlots batch_norm_slots(const Attrs& a) {
  int next = 1;
  BatchNormSlots s{};
  s.weight = slot(a.b("has_weight"), next);
  s.bias = slot(a.b("has_bias"), next);
  s.running_mean = slot(a.b("has_running_stats"), next);
  s.running_var = slot(a.b("has_running_stats"), next);
  s.count = next;
  return s;
}

void check_batch_norm_x(const char* op, const TensorType& x) {
  if (!is_floating(x.dtype))
    throw DTypeError(op, "x is " + x.str() + "; expected a floating dtype");
  if (x.shape.size() < 2)
    throw ShapeError(op, "x is " + x.str() +
                             "; expected at least 2 dims [N, C, *]; for one sample add a batch "
                             "dim with unsqueeze(0)");
}

int64_t values_per_channel(const Shape& x) { return x[1] == 0 ? 0 : shape_numel(x) / x[1]; }

// The dims of x [N, C, *] that batch norm reduces: all but the channel dim 1.
std::vector<int64_t> non_channel_dims(int64_t ndim) {
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < ndim; ++d) dims.push_back(d);
  return dims;
}

// v [C] as [1, C, 1, ...], to broadcast against x [N, C, *] of `ndim` dims.
Val per_channel(Val v, int64_t ndim) {
  Shape shape(size_t(ndim), 1);
  shape[1] = v.size(0);
  return reshape(v, shape);
}

// x [N, C, *], weight/bias/running_mean/running_var [C] -> y [N, C, *], save_mean [C],
// save_invstd [C] (and batch_var [C] in training).
Types batch_norm_infer(const Types& in, const Attrs& a) {
  const char* op = "batch_norm";
  const BatchNormSlots s = batch_norm_slots(a);
  infer::arity(op, in, size_t(s.count));
  infer::same_device(op, in);
  const TensorType& x = in[0];
  check_batch_norm_x(op, x);
  const Shape channels{x.shape[1]};
  const char* what = "one per channel, x's dim 1";
  if (s.weight >= 0) check_param(op, x, in[size_t(s.weight)], "weight", channels, what);
  if (s.bias >= 0) check_param(op, x, in[size_t(s.bias)], "bias", channels, what);
  if (s.running_mean >= 0) {
    check_param(op, x, in[size_t(s.running_mean)], "running_mean", channels, what);
    check_param(op, x, in[size_t(s.running_var)], "running_var", channels, what);
  }
  const bool training = a.b("training");
  if (!training && s.running_mean < 0)
    throw ValueError(op, "x is " + x.str() +
                             "; eval mode normalises with running_mean and running_var: pass "
                             "them (or use training=true for batch statistics)");
  if (training && x.shape[1] > 0 && values_per_channel(x.shape) <= 1)
    throw ValueError(op, "x is " + x.str() +
                             "; training needs more than 1 value per channel to estimate a "
                             "variance; use a larger batch or eval mode");
  const TensorType stat{channels, stats_dtype(x.dtype), x.device};
  Types out{x, stat, stat};
  if (training) out.push_back(stat);
  return out;
}

Tensors batch_norm_run(const Tensors& in, const Attrs& a) {
  const BatchNormSlots s = batch_norm_slots(a);
  BatchNormResult r =
      ember::batch_norm(in[0], optional_input(in, s.weight), optional_input(in, s.bias),
                        optional_input(in, s.running_mean), optional_input(in, s.running_var),
                        a.b("training"), a.f("eps"));
  Tensors out{r.output, r.save_mean, r.save_invstd};
  if (r.batch_var.defined()) out.push_back(r.batch_var);
  return out;
}

// Training: the gradients reaching the statistics (mean, invstd = (var + eps)^-1/2, var) go on
// to x:  dx = dmean / M + (dvar - dinvstd invstd^3 / 2) 2 (x - mean) / M.
Val batch_stats_grad(const GradContext& c) {
  Val x = c.x(), mean = c.y(1), invstd = c.y(2);
  Val dvar = add_defined(c.dy(3), c.dy(2).defined() ? c.dy(2) * cube(invstd) * -0.5 : Val());
  const double m = double(values_per_channel(x.shape()));
  Val dx;
  if (c.dy(1).defined()) {
    const Shape shape = x.shape();  // a copy: adding nodes may move the graph's values
    dx = expand(per_channel(c.dy(1) * (1.0 / m), x.dim()), shape);
  }
  if (dvar.defined())
    dx = add_defined(dx, per_channel(dvar * (2.0 / m), x.dim()) * (x - per_channel(mean, x.dim())));
  return as_dtype(dx, x.dtype());
}

// Eval: y = (x - running_mean) invstd w + b with invstd = (running_var + eps)^-1/2, and
// save_mean = running_mean, save_invstd = invstd:
//   drunning_mean = dsave_mean - sum(dy w invstd),
//   drunning_var = -(dsave_invstd + sum(dy w (x - mean))) invstd^3 / 2   (sums over all but C).
void running_stats_grad(const GradContext& c, const BatchNormSlots& s, Val dx, Grads& d) {
  Val x = c.x(), w = optional_input(c.inputs, s.weight), mean = c.y(1), invstd = c.y(2);
  const std::vector<int64_t> dims = non_channel_dims(x.dim());
  if (c.needs_grad[size_t(s.running_mean)])
    d[size_t(s.running_mean)] =
        as_dtype(add_defined(c.dy(1), dx.defined() ? -sum(dx, dims) : Val()), x.dtype());
  if (!c.needs_grad[size_t(s.running_var)]) return;
  Val dinvstd;
  if (c.dy().defined()) {
    dinvstd = sum(c.dy() * (x - per_channel(mean, x.dim())), dims);
    if (w.defined()) dinvstd = dinvstd * w;
  }
  dinvstd = add_defined(dinvstd, c.dy(2));
  if (dinvstd.defined())
    d[size_t(s.running_var)] = as_dtype(dinvstd * cube(invstd) * -0.5, x.dtype());
}

// x [N, C, *] -> y [N, C, *]:  dx, dweight, dbias = batch_norm_backward(dy, ...), plus the
// gradients reaching the statistics (training: to x; eval: to the running statistics).
Grads batch_norm_grad(const GradContext& c) {
  const BatchNormSlots s = batch_norm_slots(c.attrs);
  const bool training = c.attrs.b("training");
  Grads d(c.inputs.size());
  if (c.dy().defined()) {
    std::vector<Val> g = batch_norm_backward(c.dy(), c.x(), optional_input(c.inputs, s.weight),
                                             c.y(1), c.y(2), training);
    d[0] = g[0];
    if (s.weight >= 0) d[size_t(s.weight)] = g[1];
    if (s.bias >= 0) d[size_t(s.bias)] = g[2];
  }
  if (training) d[0] = add_defined(d[0], batch_stats_grad(c));
  else running_stats_grad(c, s, d[0], d);
  return d;
}

// running_mean, running_var, batch_mean, batch_var: [C] -> running_mean, running_var, updated in
// place (the outputs alias inputs 0 and 1, so a compiled step sees the statistics' new values).
Types batch_norm_update_stats_infer(const Types& in, const Attrs& a) {
  const char* op = "batch_norm_update_stats";
  infer::arity(op, in, 4);
  infer::same_device(op, in);
  const char* names[] = {"running_mean", "running_var", "batch_mean", "batch_var"};
  for (size_t i = 0; i < 4; ++i) {
    if (!is_floating(in[i].dtype) || in[i].shape.size() != 1 || in[i].shape != in[0].shape)
      throw ShapeError(op, std::string(names[i]) + " is " + in[i].str() + ", running_mean is " +
                               in[0].str() + "; all four must be floating [C]");
  }
  if (in[1].dtype != in[0].dtype)
    throw DTypeError(op, "running_mean is " + in[0].str() + ", running_var is " + in[1].str() +
                             "; they must have one dtype");
  if (a.i("count") <= 1)
    throw ValueError(op, "count is " + std::to_string(a.i("count")) +
                             "; the unbiased variance needs more than 1 value per channel");
  return {in[0], in[1]};
}

Tensors batch_norm_update_stats_run(const Tensors& in, const Attrs& a) {
  ember::batch_norm_update_stats(in[0], in[1], in[2], in[3], a.f("momentum"), a.i("count"));
  return {in[0], in[1]};
}

// batch_norm_backward's inputs: grad, x, weight (if has_weight), save_mean, save_invstd.
struct BatchNormBackwardSlots {
  int weight, mean, invstd, count;
};
BatchNormBackwardSlots batch_norm_backward_slots(const Attrs& a) {
  int next = 2;
  BatchNormBackwardSlots s{};
  s.weight = slot(a.b("has_weight"), next);
  s.mean = next++;
  s.invstd = next++;
  s.count = next;
  return s;
}

// grad, x [N, C, *], weight, save_mean, save_invstd [C] -> dx [N, C, *], dweight, dbias [C].
Types batch_norm_backward_infer(const Types& in, const Attrs& a) {
  const char* op = "batch_norm_backward";
  const BatchNormBackwardSlots s = batch_norm_backward_slots(a);
  infer::arity(op, in, size_t(s.count));
  infer::same_device(op, in);
  const TensorType& x = in[1];
  check_batch_norm_x(op, x);
  check_grad_like(op, in[0], x);
  const Shape channels{x.shape[1]};
  if (s.weight >= 0)
    check_param(op, x, in[size_t(s.weight)], "weight", channels, "one per channel, x's dim 1");
  check_saved(op, x, in[size_t(s.mean)], "save_mean", channels);
  check_saved(op, x, in[size_t(s.invstd)], "save_invstd", channels);
  const TensorType per_channel_type{channels, x.dtype, x.device};
  return {x, per_channel_type, per_channel_type};
}

Tensors batch_norm_backward_run(const Tensors& in, const Attrs& a) {
  const BatchNormBackwardSlots s = batch_norm_backward_slots(a);
  NormGrads g =
      ember::batch_norm_backward(in[0], in[1], optional_input(in, s.weight), in[size_t(s.mean)],
                                 in[size_t(s.invstd)], a.b("training"));
  return {g.grad_input, g.grad_weight, g.grad_bias};
}

// batch_norm_backward with primitive ops, over M values per channel:
//   xhat = (x - mean) invstd;  dbias = sum(g), dweight = sum(g xhat) over all dims but C;
//   dx = w invstd (g - dbias / M - xhat dweight / M) in training, w invstd g in eval.
Grads batch_norm_backward_formula(Val g, Val x, Val w, Val mean, Val invstd, bool training) {
  const int64_t n = x.dim();
  const std::vector<int64_t> dims = non_channel_dims(n);
  Val is = per_channel(invstd, n);
  Val xhat = (x - per_channel(mean, n)) * is;
  Val dbias = sum(g, dims), dweight = sum(g * xhat, dims);
  Val centred = g;
  if (training) {
    const double m = double(values_per_channel(x.shape()));
    centred = g - per_channel(dbias * (1.0 / m), n) - xhat * per_channel(dweight * (1.0 / m), n);
  }
  Val dx = centred * is;
  if (w.defined()) dx = dx * per_channel(w, n);
  return {as_dtype(dx, x.dtype()), as_dtype(dweight, x.dtype()), as_dtype(dbias, x.dtype())};
}

// (grad, x, weight, save_mean, save_invstd) -> (dx, dweight, dbias): the derivative of the formula
// above, whose mean and invstd are inputs here (batch_norm's rule carries theirs on to x).
Grads batch_norm_backward_grad(const GradContext& c) {
  const BatchNormBackwardSlots s = batch_norm_backward_slots(c.attrs);
  const bool training = c.attrs.b("training");
  return grad_of_formula(c, [&](const std::vector<Val>& in) {
    return batch_norm_backward_formula(in[0], in[1], optional_input(in, s.weight),
                                       in[size_t(s.mean)], in[size_t(s.invstd)], training);
  });
}

// ---- layer norm ----

// x [*outer, *normalized_shape]: the number of normalised dims k, checked.
size_t check_layer_norm_x(const char* op, const TensorType& x, const Shape& normalized) {
  if (!is_floating(x.dtype))
    throw DTypeError(op, "x is " + x.str() + "; expected a floating dtype");
  const size_t k = normalized.size();
  bool fits = k > 0 && k <= x.shape.size();
  for (size_t i = 1; fits && i <= k; ++i) fits = x.shape[x.shape.size() - i] == normalized[k - i];
  if (!fits)
    throw ShapeError(op, "x is " + x.str() + "; normalized_shape " + shape_str(normalized) +
                             " must be non-empty and equal x's trailing dims");
  return k;
}

// x's shape with the normalised dims set to 1: the shape of mean and rstd.
Shape layer_stats_shape(Shape s, size_t k) {
  for (size_t i = s.size() - k; i < s.size(); ++i) s[i] = 1;
  return s;
}

// The dims of x [*outer, *normalized]: the outer ones and the normalised ones.
std::vector<int64_t> dim_range(int64_t from, int64_t to) {
  std::vector<int64_t> dims;
  for (int64_t d = from; d < to; ++d) dims.push_back(d);
  return dims;
}

// x [*, normalized], weight/bias [normalized] -> y (x's shape), mean, rstd [*, 1, ..., 1].
Types layer_norm_infer(const Types& in, const Attrs& a) {
  const char* op = "layer_norm";
  int next = 1;
  const int weight = slot(a.b("has_weight"), next), bias = slot(a.b("has_bias"), next);
  infer::arity(op, in, size_t(next));
  infer::same_device(op, in);
  const TensorType& x = in[0];
  const Shape& normalized = a.ints("normalized_shape");
  const size_t k = check_layer_norm_x(op, x, normalized);
  if (weight >= 0) check_param(op, x, in[size_t(weight)], "weight", normalized, "normalized_shape");
  if (bias >= 0) check_param(op, x, in[size_t(bias)], "bias", normalized, "normalized_shape");
  const TensorType stat{layer_stats_shape(x.shape, k), stats_dtype(x.dtype), x.device};
  return {x, stat, stat};
}

Tensors layer_norm_run(const Tensors& in, const Attrs& a) {
  int next = 1;
  const int weight = slot(a.b("has_weight"), next), bias = slot(a.b("has_bias"), next);
  LayerNormResult r =
      ember::layer_norm(in[0], a.ints("normalized_shape"), optional_input(in, weight),
                        optional_input(in, bias), a.f("eps"));
  return {r.output, r.mean, r.rstd};
}

// x [*, normalized] -> y:  dx, dweight, dbias = layer_norm_backward(dy, ...), and over the D
// normalised values the statistics' gradients: dx += (dmean - drstd rstd^3 (x - mean)) / D.
Grads layer_norm_grad(const GradContext& c) {
  int next = 1;
  const int weight = slot(c.attrs.b("has_weight"), next), bias = slot(c.attrs.b("has_bias"), next);
  const Shape& normalized = c.attrs.ints("normalized_shape");
  Val x = c.x(), mean = c.y(1), rstd = c.y(2);
  Grads d(c.inputs.size());
  if (c.dy().defined()) {
    std::vector<Val> g =
        layer_norm_backward(c.dy(), x, normalized, mean, rstd, optional_input(c.inputs, weight));
    d[0] = g[0];
    if (weight >= 0) d[size_t(weight)] = g[1];
    if (bias >= 0) d[size_t(bias)] = g[2];
  }
  const double inv_d = 1.0 / double(shape_numel(normalized));
  if (c.dy(1).defined()) {
    const Shape shape = x.shape();  // a copy: adding nodes may move the graph's values
    d[0] = add_defined(d[0], as_dtype(expand(c.dy(1) * inv_d, shape), x.dtype()));
  }
  if (c.dy(2).defined())
    d[0] = add_defined(d[0], as_dtype(c.dy(2) * cube(rstd) * (x - mean) * -inv_d, x.dtype()));
  return d;
}

// grad, x [*, normalized], mean, rstd [*, 1...], weight [normalized] -> dx, dweight, dbias.
Types layer_norm_backward_infer(const Types& in, const Attrs& a) {
  const char* op = "layer_norm_backward";
  int next = 4;
  const int weight = slot(a.b("has_weight"), next);
  infer::arity(op, in, size_t(next));
  infer::same_device(op, in);
  const TensorType& x = in[1];
  const Shape& normalized = a.ints("normalized_shape");
  const size_t k = check_layer_norm_x(op, x, normalized);
  check_grad_like(op, in[0], x);
  check_saved(op, x, in[2], "mean", layer_stats_shape(x.shape, k));
  check_saved(op, x, in[3], "rstd", layer_stats_shape(x.shape, k));
  if (weight >= 0) check_param(op, x, in[size_t(weight)], "weight", normalized, "normalized_shape");
  const TensorType param{normalized, x.dtype, x.device};
  return {x, param, param};
}

Tensors layer_norm_backward_run(const Tensors& in, const Attrs& a) {
  const int weight = a.b("has_weight") ? 4 : -1;
  NormGrads g = ember::layer_norm_backward(in[0], in[1], a.ints("normalized_shape"), in[2], in[3],
                                           optional_input(in, weight));
  return {g.grad_input, g.grad_weight, g.grad_bias};
}

// layer_norm_backward with primitive ops, over the D normalised values of each row:
//   xhat = (x - mean) rstd;  dbias = sum(g), dweight = sum(g xhat) over the outer dims;
//   with gw = g w:  dx = rstd (gw - sum(gw) / D - xhat sum(gw xhat) / D) over the normalised dims.
Grads layer_norm_backward_formula(Val g, Val x, size_t k, Val mean, Val rstd, Val w) {
  const std::vector<int64_t> outer = dim_range(0, x.dim() - int64_t(k));
  const std::vector<int64_t> rows = dim_range(x.dim() - int64_t(k), x.dim());
  double inv_d = 1.0;
  for (int64_t d : rows) inv_d /= double(x.size(d));
  Val xhat = (x - mean) * rstd;
  // sum over no dims would be sum over every dim: without outer dims there is nothing to sum.
  Val dbias = outer.empty() ? g : sum(g, outer);
  Val dweight = outer.empty() ? g * xhat : sum(g * xhat, outer);
  Val gw = w.defined() ? g * w : g;
  Val dx = (gw - sum(gw, rows, true) * inv_d - xhat * sum(gw * xhat, rows, true) * inv_d) * rstd;
  return {as_dtype(dx, x.dtype()), as_dtype(dweight, x.dtype()), as_dtype(dbias, x.dtype())};
}

// (grad, x, mean, rstd, weight) -> (dx, dweight, dbias): the derivative of the formula above
// (layer_norm's rule carries the gradients of mean and rstd on to x).
Grads layer_norm_backward_grad(const GradContext& c) {
  const size_t k = c.attrs.ints("normalized_shape").size();
  const int weight = c.attrs.b("has_weight") ? 4 : -1;
  return grad_of_formula(c, [&](const std::vector<Val>& in) {
    return layer_norm_backward_formula(in[0], in[1], k, in[2], in[3], optional_input(in, weight));
  });
}

// ---- dropout ----

void check_probability(const char* op, double p) {
  if (!(p > 0 && p <= 1))
    throw ValueError(op, "p is " + std::to_string(p) +
                             "; expected a drop probability in (0, 1] (dropout with p = 0 is x "
                             "itself, which the builder returns without a node)");
}

// x [*] -> y [*], mask bool [*].
Types dropout_infer(const Types& in, const Attrs& a) {
  infer::arity("dropout", in, 1);
  infer::floating("dropout", in, 0);
  check_probability("dropout", a.f("p"));
  return {in[0], TensorType{in[0].shape, DType::Bool, in[0].device}};
}

// grad [*], mask bool [*] -> [*].
Types dropout_backward_infer(const Types& in, const Attrs& a) {
  const char* op = "dropout_backward";
  infer::arity(op, in, 2);
  infer::same_device(op, in);
  infer::floating(op, in, 0);
  check_probability(op, a.f("p"));
  if (in[1].dtype != DType::Bool || in[1].shape != in[0].shape)
    throw ShapeError(op, "grad is " + in[0].str() + ", mask is " + in[1].str() +
                             "; mask must be the bool mask dropout returned, of grad's shape");
  return {in[0]};
}

}  // namespace

std::vector<OpDef> normalization_ops() {
  return {
      {"batch_norm", batch_norm_infer, batch_norm_run, batch_norm_grad},
      // Writes running_mean and running_var in place (its outputs alias them); no gradient.
      {"batch_norm_update_stats", batch_norm_update_stats_infer, batch_norm_update_stats_run,
       nullptr, false, true},
      {"batch_norm_backward", batch_norm_backward_infer, batch_norm_backward_run,
       batch_norm_backward_grad},
      {"layer_norm", layer_norm_infer, layer_norm_run, layer_norm_grad},
      {"layer_norm_backward", layer_norm_backward_infer, layer_norm_backward_run,
       layer_norm_backward_grad},
      // y = x mask / (1 - p);  dx = dropout_backward(dy, mask, p) = dy mask / (1 - p)
      {"dropout", dropout_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         DropoutResult r = ember::dropout(in[0], a.f("p"), true);
         return {r.output, r.mask};
       },
       [](const GradContext& c) -> Grads {
         return {dropout_backward(c.dy(), c.y(1), c.attrs.f("p"))};
       },
       false, false, true},
      // gx = g mask / (1 - p), linear in g:  dg = dropout_backward(gg, mask, p); mask: none
      {"dropout_backward", dropout_backward_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::dropout_backward(in[0], in[1], a.f("p"))};
       },
       [](const GradContext& c) -> Grads {
         return {dropout_backward(c.dy(), c.x(1), c.attrs.f("p")), Val()};
       }},
  };
}

}  // namespace ember::autodiff
