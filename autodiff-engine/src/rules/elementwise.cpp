// elementwise.cpp — the elementwise family: each op's shape rule, core-runtime call and gradient
// rule side by side. Shapes: every op here maps [*] (or broadcasting shapes) to [*]; in the rules
// x, a, b are the inputs, y the output and dy its gradient, of the broadcast shape.
//
// A rule may return a gradient of the broadcast shape (the driver sums it back), but it must have
// its input's dtype: ops of several inputs promote mixed dtypes, so their rules use grad_for().
#include "ember/ops/elementwise.h"

#include <cmath>
#include <optional>

#include "ember/autodiff/ops.h"
#include "ember/ops/indexing.h"
#include "families.h"
#include "infer.h"

namespace ember::autodiff {

namespace {

using infer::DTypeRule;

constexpr double kPi = 3.14159265358979323846;

// A kernel's one output as the list run() returns, moved in: a braced list would copy it, and a
// Tensor copy allocates its shape and strides (a share of a small op's time).
Tensors one(Tensor t) {
  Tensors out;
  out.push_back(std::move(t));
  return out;
}

// g in x's dtype. Only a mixed-dtype op's gradient differs (it arrives in the promoted dtype);
// it is summed to x's shape first, in the wider dtype. Otherwise the driver sums it back.
Val grad_for(Val g, const Val& x) {
  if (!g.defined() || g.dtype() == x.dtype()) return g;
  if (g.shape() != x.shape()) g = sum_to(g, x.shape());
  return to(g, x.dtype());
}

// g where cond, else exactly 0: a where, never g * mask (0 * inf would be NaN).
Val where_else_zero(const Val& cond, const Val& g) { return where(cond, g, zeros_like(g)); }

// ---- unary: x [*] -> y [*] ----

// y = -x;  dx = -dy
Grads neg_grad(const GradContext& c) { return {neg(c.dy())}; }
// y = |x|;  dx = dy sign(x)
Grads abs_grad(const GradContext& c) { return {c.dy() * sign(c.x())}; }
// y = e^x;  dx = dy y
Grads exp_grad(const GradContext& c) { return {c.dy() * c.y()}; }
// y = e^x - 1;  dx = dy (y + 1)
Grads expm1_grad(const GradContext& c) { return {c.dy() * (c.y() + 1.0)}; }
// y = log x;  dx = dy / x
Grads log_grad(const GradContext& c) { return {c.dy() / c.x()}; }
// y = log(1 + x);  dx = dy / (1 + x)
Grads log1p_grad(const GradContext& c) { return {c.dy() / (c.x() + 1.0)}; }
// y = sqrt x;  dx = dy / (2 y)
Grads sqrt_grad(const GradContext& c) { return {c.dy() / (c.y() * 2.0)}; }
// y = x^(-1/2);  dx = -dy y^3 / 2
Grads rsqrt_grad(const GradContext& c) { return {c.dy() * c.y() * c.y() * c.y() * -0.5}; }
// y = sin x;  dx = dy cos x
Grads sin_grad(const GradContext& c) { return {c.dy() * cos(c.x())}; }
// y = cos x;  dx = -dy sin x
Grads cos_grad(const GradContext& c) { return {neg(c.dy() * sin(c.x()))}; }
// y = tanh x;  dx = dy (1 - y^2)
Grads tanh_grad(const GradContext& c) { return {tanh_backward(c.dy(), c.y())}; }
// y = sigmoid x;  dx = dy y (1 - y)
Grads sigmoid_grad(const GradContext& c) { return {sigmoid_backward(c.dy(), c.y())}; }
// y = erf x;  dx = dy 2 / sqrt(pi) e^(-x^2)
Grads erf_grad(const GradContext& c) {
  return {c.dy() * exp(neg(c.x() * c.x())) * (2 / std::sqrt(kPi))};
}
// y = 1 / x;  dx = -dy y^2
Grads reciprocal_grad(const GradContext& c) { return {neg(c.dy() * c.y() * c.y())}; }
// floor, ceil, round, trunc: piecewise constant;  dx = 0 (as PyTorch: a gradient, of zeros)
Grads rounding_grad(const GradContext& c) { return {zeros_like(c.dy())}; }
constexpr GradRule floor_grad = rounding_grad;
constexpr GradRule ceil_grad = rounding_grad;
constexpr GradRule round_grad = rounding_grad;
constexpr GradRule trunc_grad = rounding_grad;
// sign: zero almost everywhere and undefined at 0; no rule, so its output stops gradients
constexpr GradRule sign_grad = nullptr;
// y = x where finite, else the replacement;  dx = dy where x is finite, else 0
Grads nan_to_num_grad(const GradContext& c) { return {where_else_zero(isfinite(c.x()), c.dy())}; }
// y = max(x, 0);  dx = dy where x > 0, i.e. where y > 0: the output is what is saved, which the
// next op often reads too (a max-pool), while the input (a batch-norm's output) can go
Grads relu_grad(const GradContext& c) { return {relu_backward(c.dy(), c.y())}; }
// y = x sigmoid(x);  dx = dy s (1 + x (1 - s))
Grads silu_grad(const GradContext& c) { return {silu_backward(c.dy(), c.x())}; }
// y = x > 0 ? x : slope x;  dx = dy (x > 0 ? 1 : slope)
Grads leaky_relu_grad(const GradContext& c) {
  return {leaky_relu_backward(c.dy(), c.x(), c.attrs.f("negative_slope"))};
}
// y = x > 0 ? x : alpha (e^x - 1);  dx = dy (x > 0 ? 1 : alpha e^x)
Grads elu_grad(const GradContext& c) { return {elu_backward(c.dy(), c.x(), c.attrs.f("alpha"))}; }
// y = x Phi(x) (or its tanh form);  dx = dy (Phi(x) + x phi(x))
Grads gelu_grad(const GradContext& c) {
  return {gelu_backward(c.dy(), c.x(), c.attrs.s("approximate"))};
}
// y = log(1 + e^(beta x)) / beta;  dx = dy sigmoid(beta x) (dy above the threshold)
Grads softplus_grad(const GradContext& c) {
  return {softplus_backward(c.dy(), c.x(), c.attrs.f("beta"), c.attrs.f("threshold"))};
}

// ---- the activations' backward ops: g (= dy) [*], x or y [*] -> dx [*] ----
// Each is g f'(x); with gg the gradient arriving at dx, d/dg = gg f'(x) (the op itself again)
// and d/dx = gg g f''(x), written with builder ops so that it can be differentiated once more.

// dx = g (x > 0);  d/dg = relu_backward(gg, x), d/dx = 0 (f'' = 0 away from the kink)
Grads relu_backward_grad(const GradContext& c) {
  return {grad_for(relu_backward(c.dy(), c.x(1)), c.x(0)), Val()};
}
// dx = g (x > 0 ? 1 : slope);  d/dg = leaky_relu_backward(gg, x), d/dx = 0
Grads leaky_relu_backward_grad(const GradContext& c) {
  const double slope = c.attrs.f("negative_slope");
  return {grad_for(leaky_relu_backward(c.dy(), c.x(1), slope), c.x(0)), Val()};
}
// dx = g (x > 0 ? 1 : alpha e^x);  d/dx = gg g (x > 0 ? 0 : alpha e^x)
Grads elu_backward_grad(const GradContext& c) {
  const double alpha = c.attrs.f("alpha");
  Val g = c.x(0), x = c.x(1), gg = c.dy();
  Val dg = c.needs_grad[0] ? elu_backward(gg, x, alpha) : Val();
  Val dx;
  if (c.needs_grad[1]) {
    Val curved = gg * g * exp(x) * alpha;
    dx = where(gt(x, 0.0), zeros_like(curved), curved);
  }
  return {grad_for(dg, g), grad_for(dx, x)};
}
// f''(x) of gelu: phi(x) (2 - x^2) exactly, or for the tanh form, with u = k (x + c x^3) and
// t = tanh(u): (1 - t^2) (k + 6 c k x^2 - x t u'^2), u' = k (1 + 3 c x^2).
Val gelu_second_derivative(const Val& x, const std::string& approximate) {
  Val x2 = x * x;
  if (approximate == "none") return exp(x2 * -0.5) * (1.0 / std::sqrt(2 * kPi)) * (2.0 - x2);
  const double k = std::sqrt(2 / kPi), cubic = 0.044715;
  Val t = tanh((x + x2 * x * cubic) * k);
  Val du = x2 * (3 * cubic * k) + k;
  return (1.0 - t * t) * (x2 * (6 * cubic * k) + k - x * t * du * du);
}
// dx = g gelu'(x);  d/dg = gelu_backward(gg, x), d/dx = gg g gelu''(x)
Grads gelu_backward_grad(const GradContext& c) {
  const std::string& approximate = c.attrs.s("approximate");
  Val g = c.x(0), x = c.x(1), gg = c.dy();
  Val dg = c.needs_grad[0] ? gelu_backward(gg, x, approximate) : Val();
  Val dx = c.needs_grad[1] ? gg * g * gelu_second_derivative(x, approximate) : Val();
  return {grad_for(dg, g), grad_for(dx, x)};
}
// dx = g s (1 + x (1 - s)), s = sigmoid(x);  d/dx = gg g s (1 - s) (2 + x (1 - 2 s))
Grads silu_backward_grad(const GradContext& c) {
  Val g = c.x(0), x = c.x(1), gg = c.dy();
  Val dg = c.needs_grad[0] ? silu_backward(gg, x) : Val();
  Val dx;
  if (c.needs_grad[1]) {
    Val s = sigmoid(x);
    dx = gg * g * s * (1.0 - s) * (x * (1.0 - s * 2.0) + 2.0);
  }
  return {grad_for(dg, g), grad_for(dx, x)};
}
// dx = g s, s = sigmoid(beta x) (g above the threshold);  d/dx = gg g beta s (1 - s) (0 above)
Grads softplus_backward_grad(const GradContext& c) {
  const double beta = c.attrs.f("beta"), threshold = c.attrs.f("threshold");
  Val g = c.x(0), x = c.x(1), gg = c.dy();
  Val dg = c.needs_grad[0] ? softplus_backward(gg, x, beta, threshold) : Val();
  Val dx;
  if (c.needs_grad[1]) {
    Val s = sigmoid(x * beta);
    Val curved = gg * g * s * (1.0 - s) * beta;
    dx = where(gt(x * beta, threshold), zeros_like(curved), curved);
  }
  return {grad_for(dg, g), grad_for(dx, x)};
}
// dx = g y (1 - y);  d/dg = sigmoid_backward(gg, y), d/dy = gg g (1 - 2 y)
Grads sigmoid_backward_grad(const GradContext& c) {
  Val g = c.x(0), y = c.x(1), gg = c.dy();
  Val dg = c.needs_grad[0] ? sigmoid_backward(gg, y) : Val();
  Val dy = c.needs_grad[1] ? gg * g * (1.0 - y * 2.0) : Val();
  return {grad_for(dg, g), grad_for(dy, y)};
}
// dx = g (1 - y^2);  d/dg = tanh_backward(gg, y), d/dy = -2 gg g y
Grads tanh_backward_grad(const GradContext& c) {
  Val g = c.x(0), y = c.x(1), gg = c.dy();
  Val dg = c.needs_grad[0] ? tanh_backward(gg, y) : Val();
  Val dy = c.needs_grad[1] ? gg * g * y * -2.0 : Val();
  return {grad_for(dg, g), grad_for(dy, y)};
}

// ---- binary: a [*], b [*] -> y [broadcast] ----

// y = a + b;  da = dy, db = dy
Grads add_grad(const GradContext& c) {
  return {grad_for(c.dy(), c.x(0)), grad_for(c.dy(), c.x(1))};
}
// y = a - b;  da = dy, db = -dy
Grads sub_grad(const GradContext& c) {
  return {grad_for(c.dy(), c.x(0)), c.needs_grad[1] ? grad_for(neg(c.dy()), c.x(1)) : Val()};
}
// y = a b;  da = dy b, db = dy a
Grads mul_grad(const GradContext& c) {
  return {c.needs_grad[0] ? grad_for(c.dy() * c.x(1), c.x(0)) : Val(),
          c.needs_grad[1] ? grad_for(c.dy() * c.x(0), c.x(1)) : Val()};
}
// y = a / b;  da = dy / b, db = -dy y / b
Grads div_grad(const GradContext& c) {
  return {c.needs_grad[0] ? grad_for(c.dy() / c.x(1), c.x(0)) : Val(),
          c.needs_grad[1] ? grad_for(neg(c.dy() * c.y() / c.x(1)), c.x(1)) : Val()};
}
// y = a^b;  da = dy b a^(b-1) (0 where b == 0), db = dy y log(a) (0 where a == 0 and b >= 0,
// PyTorch's guard: there y is 0 or 1 and does not change with b)
Grads pow_grad(const GradContext& c) {
  Val a = c.x(0), b = c.x(1), dy = c.dy();
  Val da, db;
  if (c.needs_grad[0]) {
    Val slope = dy * b * pow(a, b - 1.0);
    da = where(eq(b, 0.0), zeros_like(slope), slope);
  }
  if (c.needs_grad[1]) {
    Val rate = dy * c.y() * log(a);
    db = where(logical_and(eq(a, 0.0), ge(b, 0.0)), zeros_like(rate), rate);
  }
  return {grad_for(da, a), grad_for(db, b)};
}
// The gradient of one side of maximum/minimum: dy where it wins, dy / 2 on ties, else 0.
Val tie_split(const Val& wins, const Val& ties, const Val& dy) {
  return where(wins, dy, where_else_zero(ties, dy * 0.5));
}
// y = max(a, b);  da = dy (a > b) + dy/2 (a == b), db = dy (b > a) + dy/2 (a == b)
Grads maximum_grad(const GradContext& c) {
  Val a = c.x(0), b = c.x(1);
  return {c.needs_grad[0] ? grad_for(tie_split(gt(a, b), eq(a, b), c.dy()), a) : Val(),
          c.needs_grad[1] ? grad_for(tie_split(gt(b, a), eq(a, b), c.dy()), b) : Val()};
}
// y = min(a, b);  da = dy (a < b) + dy/2 (a == b), db = dy (b < a) + dy/2 (a == b)
Grads minimum_grad(const GradContext& c) {
  Val a = c.x(0), b = c.x(1);
  return {c.needs_grad[0] ? grad_for(tie_split(lt(a, b), eq(a, b), c.dy()), a) : Val(),
          c.needs_grad[1] ? grad_for(tie_split(lt(b, a), eq(a, b), c.dy()), b) : Val()};
}

// y = floor(a / b): piecewise constant, no rule (as PyTorch's); its output stops gradients
constexpr GradRule floor_divide_grad = nullptr;
// y = a - b floor(a / b), Python's % (the divisor's sign);  da = dy, db = -dy floor(a / b).
// floor_divide is piecewise constant, so it enters the rule as a constant (it has no rule).
Grads remainder_grad(const GradContext& c) {
  Val a = c.x(0), b = c.x(1);
  return {c.needs_grad[0] ? grad_for(c.dy(), a) : Val(),
          c.needs_grad[1] ? grad_for(neg(c.dy() * floor_divide(a, b)), b) : Val()};
}
// y = fmod(a, b) = a - b trunc(a / b), C's % (the dividend's sign);  da = dy,
// db = -dy trunc(a / b) (trunc, piecewise constant, enters as a constant, as in remainder_grad)
Grads fmod_grad(const GradContext& c) {
  Val a = c.x(0), b = c.x(1);
  return {c.needs_grad[0] ? grad_for(c.dy(), a) : Val(),
          c.needs_grad[1] ? grad_for(neg(c.dy() * trunc(a / b)), b) : Val()};
}
// y = atan2(a, b);  da = dy b / (a^2 + b^2), db = -dy a / (a^2 + b^2) (NaN at the origin, as
// PyTorch's)
Grads atan2_grad(const GradContext& c) {
  Val a = c.x(0), b = c.x(1);
  Val rate = c.dy() / (a * a + b * b);  // shared by both sides
  return {c.needs_grad[0] ? grad_for(rate * b, a) : Val(),
          c.needs_grad[1] ? grad_for(neg(rate * a), b) : Val()};
}
// y = hypot(a, b);  da = dy a / y, db = dy b / y (NaN at the origin, as PyTorch's)
Grads hypot_grad(const GradContext& c) {
  Val a = c.x(0), b = c.x(1);
  Val rate = c.dy() / c.y();  // shared by both sides
  return {c.needs_grad[0] ? grad_for(rate * a, a) : Val(),
          c.needs_grad[1] ? grad_for(rate * b, b) : Val()};
}

// The bitwise ops (on integers), the comparisons and the logical ops (-> bool): no gradient.
constexpr GradRule bitwise_and_grad = nullptr;
constexpr GradRule bitwise_or_grad = nullptr;
constexpr GradRule bitwise_xor_grad = nullptr;
constexpr GradRule eq_grad = nullptr;
constexpr GradRule ne_grad = nullptr;
constexpr GradRule lt_grad = nullptr;
constexpr GradRule le_grad = nullptr;
constexpr GradRule gt_grad = nullptr;
constexpr GradRule ge_grad = nullptr;
constexpr GradRule logical_and_grad = nullptr;
constexpr GradRule logical_or_grad = nullptr;
constexpr GradRule logical_xor_grad = nullptr;

// ---- with a scalar s (attribute value): x [*] -> y [*] ----

double scalar_of(const GradContext& c) { return c.attrs.f("value"); }
// y = x + s;  dx = dy
Grads add_scalar_grad(const GradContext& c) { return {c.dy()}; }
// y = x s;  dx = dy s
Grads mul_scalar_grad(const GradContext& c) { return {c.dy() * scalar_of(c)}; }
// y = s - x;  dx = -dy
Grads rsub_scalar_grad(const GradContext& c) { return {neg(c.dy())}; }
// y = x / s;  dx = dy / s
Grads div_scalar_grad(const GradContext& c) { return {c.dy() / scalar_of(c)}; }
// y = s / x;  dx = -dy y / x
Grads rdiv_scalar_grad(const GradContext& c) { return {neg(c.dy() * c.y() / c.x())}; }
// y = x^s;  dx = dy s x^(s-1) (0 for s == 0, where y is 1 even at x = 0)
Grads pow_scalar_grad(const GradContext& c) {
  const double s = scalar_of(c);
  if (s == 0) return {zeros_like(c.dy())};
  return {c.dy() * pow(c.x(), s - 1) * s};
}
// y = s^x;  dx = dy y log(s) (0 where s == 0 and x >= 0)
Grads rpow_scalar_grad(const GradContext& c) {
  const double s = scalar_of(c);
  Val rate = c.dy() * c.y() * std::log(s);
  if (s == 0) rate = where(ge(c.x(), 0.0), zeros_like(rate), rate);
  return {rate};
}
// y = max(x, s);  dx = dy (x > s) + dy/2 (x == s)
Grads maximum_scalar_grad(const GradContext& c) {
  return {tie_split(gt(c.x(), scalar_of(c)), eq(c.x(), scalar_of(c)), c.dy())};
}
// y = min(x, s);  dx = dy (x < s) + dy/2 (x == s)
Grads minimum_scalar_grad(const GradContext& c) {
  return {tie_split(lt(c.x(), scalar_of(c)), eq(c.x(), scalar_of(c)), c.dy())};
}

// ---- selection and conversions ----

// cond bool, a, b -> y [broadcast];  da = where(cond, dy, 0), db = where(cond, 0, dy)
Grads where_grad(const GradContext& c) {
  Val cond = c.x(0), a = c.x(1), b = c.x(2), dy = c.dy();
  return {Val(), c.needs_grad[1] ? grad_for(where_else_zero(cond, dy), a) : Val(),
          c.needs_grad[2] ? grad_for(where(cond, zeros_like(dy), dy), b) : Val()};
}
// y = clamp(x, min, max);  dx = dy where min < x < max, else 0. At a bound, where y has no
// derivative, the gradient is the minimum-norm subgradient 0, as relu's at 0 and as PyTorch's
// clamp with number bounds (since its 2.x releases of 2026; it passed dy at the bounds before).
Grads clamp_grad(const GradContext& c) {
  Val inside;
  if (c.attrs.has("min")) inside = gt(c.x(), c.attrs.f("min"));
  if (c.attrs.has("max")) {
    Val below_max = lt(c.x(), c.attrs.f("max"));
    inside = inside.defined() ? logical_and(inside, below_max) : below_max;
  }
  return {where_else_zero(inside, c.dy())};
}
// x [*], mask bool (broadcasts to x) -> y [*];  dx = masked_fill(dy, mask, 0)
Grads masked_fill_grad(const GradContext& c) { return {masked_fill(c.dy(), c.x(1), 0.0), Val()}; }
// y = x in another floating dtype;  dx = dy converted back
Grads to_dtype_grad(const GradContext& c) { return {grad_for(c.dy(), c.x())}; }
// y = x on another device;  dx = dy moved back
Grads to_device_grad(const GradContext& c) { return {to(c.dy(), c.x().device())}; }

// ---- shape/dtype rules that need more than infer.h ----

// grad, x (or y) -> the broadcast shape: both floating.
Types backward_infer(const char* op, const Types& in) {
  infer::arity(op, in, 2);
  infer::floating(op, in, 0);
  infer::floating(op, in, 1);
  return {infer::broadcast(op, in[0], in[1])};
}

// "none" or "tanh": gelu's two forms.
void check_approximate(const char* op, const Attrs& attrs) {
  const std::string& approximate = attrs.s("approximate");
  if (approximate != "none" && approximate != "tanh")
    throw ValueError(op, "approximate is \"" + approximate + "\"; expected \"none\" or \"tanh\"");
}

// cond bool, a, b on one device -> their broadcast shape, dtype result_type(a, b).
Types where_infer(const Types& in, const Attrs&) {
  infer::arity("where", in, 3);
  infer::same_device("where", in);
  const std::string operands = infer::describe("cond", in[0]) + ", " + infer::describe("a", in[1]) +
                               ", " + infer::describe("b", in[2]);
  if (in[0].dtype != DType::Bool)
    throw DTypeError("where", operands + "; cond must be bool, e.g. gt(x, 0.0)");
  Shape shape;
  try {
    shape = broadcast_shapes(broadcast_shapes(in[0].shape, in[1].shape, ""), in[2].shape, "");
  } catch (const ShapeError& e) {
    throw ShapeError("where", operands + "; " + e.what());
  }
  return {TensorType{shape, infer::result_type(in[1], in[2]), in[0].device}};
}

// x [*] -> [*] with min and/or max: the scalar rule applied to each bound.
Types clamp_infer(const Types& in, const Attrs& attrs) {
  infer::arity("clamp", in, 1);
  TensorType t = in[0];
  if (!attrs.has("min") && !attrs.has("max"))
    throw ValueError("clamp", infer::describe("x", t) + "; give min, max or both");
  for (const char* bound : {"min", "max"})
    if (attrs.has(bound))
      t.dtype = promote_types(t.dtype, infer::scalar_dtype(in[0].dtype, attrs.f(bound)));
  return {t};
}

// x [*], mask bool broadcasting to x -> x's type; value must fit x's dtype.
Types masked_fill_infer(const Types& in, const Attrs& attrs) {
  infer::arity("masked_fill", in, 2);
  infer::same_device("masked_fill", in);
  const std::string operands = infer::describe("x", in[0]) + ", " + infer::describe("mask", in[1]);
  if (in[1].dtype != DType::Bool)
    throw DTypeError("masked_fill", operands + "; mask must be bool, e.g. gt(x, 0.0)");
  infer::broadcasts_to("masked_fill", "mask", in[1], in[0].shape);
  const double value = attrs.f("value");
  if (!dtype_holds(in[0].dtype, value))
    throw ValueError("masked_fill", operands + "; value " + std::to_string(value) +
                                        " does not fit " + dtype_name(in[0].dtype));
  return {in[0]};
}

// A new tensor even when nothing changes, so that the output never aliases the input (these ops
// are not views); Tensor::to returns the tensor itself then.
Tensor copy_to(const Tensor& x, Device device, DType dtype) {
  return device == x.device() && dtype == x.dtype() ? x.clone() : x.to(device, dtype);
}

}  // namespace

// The table's entries for ops whose rule for types needs only the op's name and a dtype rule.
// `call` computes the output from `in` (the input tensors) and `a` (the attributes).
// clang-format off
#define EMBER_UNARY_OPDEF(name, rule, grad)                                                 \
  {#name,                                                                             \
   [](const Types& in, const Attrs&) -> Types {                                       \
     return {infer::unary(#name, in, DTypeRule::rule)};                               \
   },                                                                                 \
   [](const Tensors& in, const Attrs&) -> Tensors { return one(ember::name(in[0])); }, \
   grad}
#define EMBER_BINARY_OPDEF(name, rule, grad)                                                    \
  {#name,                                                                                 \
   [](const Types& in, const Attrs&) -> Types {                                           \
     return {infer::binary(#name, in, DTypeRule::rule)};                                  \
   },                                                                                     \
   [](const Tensors& in, const Attrs&) -> Tensors { return one(ember::name(in[0], in[1])); }, \
   grad}
#define EMBER_SCALAR_OPDEF(name, rule, call, grad)                                          \
  {#name,                                                                             \
   [](const Types& in, const Attrs& a) -> Types {                                     \
     return {infer::with_scalar(#name, in, a, DTypeRule::rule)};                      \
   },                                                                                 \
   [](const Tensors& in, const Attrs& a) -> Tensors { return one(call); },            \
   grad}
#define EMBER_BACKWARD_OPDEF(name, call, grad)                                                       \
  {#name,                                                                                      \
   [](const Types& in, const Attrs&) -> Types { return backward_infer(#name, in); },           \
   [](const Tensors& in, [[maybe_unused]] const Attrs& a) -> Tensors { return one(call); },    \
   grad}
// unary.def's and binary.def's ops: the dtype rule of their dtypes column (infer.h), the gradient
// rule name_grad.
#define EMBER_UNARY_OP(name, Formula, dtypes, cost, api, doc) \
  EMBER_UNARY_OPDEF(name, dtypes, name##_grad),
#define EMBER_BINARY_OP(name, Formula, dtypes, scalar, api, doc) \
  EMBER_BINARY_OPDEF(name, dtypes, name##_grad),
// clang-format on

std::vector<OpDef> elementwise_ops() {
  // ---- unary: the ops of unary.def first ----
  return {
#include "ember/ops/unary.def"
      EMBER_UNARY_OPDEF(isnan, Bool, nullptr),
      EMBER_UNARY_OPDEF(isinf, Bool, nullptr),
      EMBER_UNARY_OPDEF(isfinite, Bool, nullptr),
      {"nan_to_num", infer::same_as_first,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         std::optional<double> posinf, neginf;
         if (a.has("posinf")) posinf = a.f("posinf");
         if (a.has("neginf")) neginf = a.f("neginf");
         return {ember::nan_to_num(in[0], a.f("nan"), posinf, neginf)};
       },
       nan_to_num_grad},
      EMBER_UNARY_OPDEF(logical_not, Bool, nullptr),
      // y = a copy of x in new memory (contiguous);  dx = dy
      {"clone",
       [](const Types& in, const Attrs&) -> Types {
         return {infer::unary("clone", in, DTypeRule::Promoted)};
       },
       [](const Tensors& in, const Attrs&) -> Tensors { return {in[0].clone()}; },
       [](const GradContext& c) -> Grads { return {c.dy()}; }},
      // y = x itself (a view) with no rule: gradients stop here.
      {"detach",
       [](const Types& in, const Attrs&) -> Types {
         return {infer::unary("detach", in, DTypeRule::Promoted)};
       },
       [](const Tensors& in, const Attrs&) -> Tensors { return {in[0]}; }, nullptr, true},
      {"leaky_relu",
       [](const Types& in, const Attrs&) -> Types {
         return {infer::unary("leaky_relu", in, DTypeRule::Floating)};
       },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::leaky_relu(in[0], a.f("negative_slope"))};
       },
       leaky_relu_grad},
      {"elu",
       [](const Types& in, const Attrs&) -> Types {
         return {infer::unary("elu", in, DTypeRule::Floating)};
       },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::elu(in[0], a.f("alpha"))};
       },
       elu_grad},
      {"gelu",
       [](const Types& in, const Attrs& a) -> Types {
         check_approximate("gelu", a);
         return {infer::unary("gelu", in, DTypeRule::Floating)};
       },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::gelu(in[0], a.s("approximate"))};
       },
       gelu_grad},
      {"softplus",
       [](const Types& in, const Attrs&) -> Types {
         return {infer::unary("softplus", in, DTypeRule::Floating)};
       },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::softplus(in[0], a.f("beta"), a.f("threshold"))};
       },
       softplus_grad},

      // ---- the activations' backward ops ----
      EMBER_BACKWARD_OPDEF(relu_backward, ember::relu_backward(in[0], in[1]), relu_backward_grad),
      EMBER_BACKWARD_OPDEF(leaky_relu_backward,
                           ember::leaky_relu_backward(in[0], in[1], a.f("negative_slope")),
                           leaky_relu_backward_grad),
      EMBER_BACKWARD_OPDEF(elu_backward, ember::elu_backward(in[0], in[1], a.f("alpha")),
                           elu_backward_grad),
      EMBER_BACKWARD_OPDEF(silu_backward, ember::silu_backward(in[0], in[1]), silu_backward_grad),
      EMBER_BACKWARD_OPDEF(softplus_backward,
                           ember::softplus_backward(in[0], in[1], a.f("beta"), a.f("threshold")),
                           softplus_backward_grad),
      EMBER_BACKWARD_OPDEF(sigmoid_backward, ember::sigmoid_backward(in[0], in[1]),
                           sigmoid_backward_grad),
      EMBER_BACKWARD_OPDEF(tanh_backward, ember::tanh_backward(in[0], in[1]), tanh_backward_grad),
      {"gelu_backward",
       [](const Types& in, const Attrs& a) -> Types {
         check_approximate("gelu_backward", a);
         return backward_infer("gelu_backward", in);
       },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::gelu_backward(in[0], in[1], a.s("approximate"))};
       },
       gelu_backward_grad},

  // ---- binary: the ops of binary.def ----
#include "ember/ops/binary.def"

      // ---- with a scalar ----
      EMBER_SCALAR_OPDEF(add_scalar, Promoted, ember::add(in[0], a.f("value")), add_scalar_grad),
      EMBER_SCALAR_OPDEF(mul_scalar, Promoted, ember::mul(in[0], a.f("value")), mul_scalar_grad),
      EMBER_SCALAR_OPDEF(rsub_scalar, Numeric, ember::sub(a.f("value"), in[0]), rsub_scalar_grad),
      EMBER_SCALAR_OPDEF(div_scalar, Floating, ember::div(in[0], a.f("value")), div_scalar_grad),
      EMBER_SCALAR_OPDEF(rdiv_scalar, Floating, ember::div(a.f("value"), in[0]), rdiv_scalar_grad),
      EMBER_SCALAR_OPDEF(pow_scalar, Numeric, ember::pow(in[0], a.f("value")), pow_scalar_grad),
      EMBER_SCALAR_OPDEF(rpow_scalar, Numeric, ember::pow(a.f("value"), in[0]), rpow_scalar_grad),
      EMBER_SCALAR_OPDEF(maximum_scalar, Promoted, ember::maximum(in[0], a.f("value")),
                         maximum_scalar_grad),
      EMBER_SCALAR_OPDEF(minimum_scalar, Promoted, ember::minimum(in[0], a.f("value")),
                         minimum_scalar_grad),
      EMBER_SCALAR_OPDEF(eq_scalar, Bool, ember::eq(in[0], a.f("value")), nullptr),
      EMBER_SCALAR_OPDEF(ne_scalar, Bool, ember::ne(in[0], a.f("value")), nullptr),
      EMBER_SCALAR_OPDEF(lt_scalar, Bool, ember::lt(in[0], a.f("value")), nullptr),
      EMBER_SCALAR_OPDEF(le_scalar, Bool, ember::le(in[0], a.f("value")), nullptr),
      EMBER_SCALAR_OPDEF(gt_scalar, Bool, ember::gt(in[0], a.f("value")), nullptr),
      EMBER_SCALAR_OPDEF(ge_scalar, Bool, ember::ge(in[0], a.f("value")), nullptr),

      // ---- selection ----
      {"where", where_infer,
       [](const Tensors& in, const Attrs&) -> Tensors {
         return {ember::where(in[0], in[1], in[2])};
       },
       where_grad},
      {"clamp", clamp_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         std::optional<double> min, max;
         if (a.has("min")) min = a.f("min");
         if (a.has("max")) max = a.f("max");
         return {ember::clamp(in[0], min, max)};
       },
       clamp_grad},
      {"masked_fill", masked_fill_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {ember::masked_fill(in[0], in[1], a.f("value"))};
       },
       masked_fill_grad},

      // ---- conversions ----
      {"to_dtype",
       [](const Types& in, const Attrs& a) -> Types {
         infer::arity("to_dtype", in, 1);
         TensorType t = in[0];
         t.dtype = dtype_from_name(a.s("dtype"));
         return {t};
       },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {copy_to(in[0], in[0].device(), dtype_from_name(a.s("dtype")))};
       },
       to_dtype_grad},
      {"to_device",
       [](const Types& in, const Attrs& a) -> Types {
         infer::arity("to_device", in, 1);
         TensorType t = in[0];
         t.device = Device(a.s("device"));
         return {t};
       },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {copy_to(in[0], Device(a.s("device")), in[0].dtype())};
       },
       to_device_grad},
  };
}

#undef EMBER_UNARY_OP
#undef EMBER_BINARY_OP
#undef EMBER_UNARY_OPDEF
#undef EMBER_BINARY_OPDEF
#undef EMBER_SCALAR_OPDEF
#undef EMBER_BACKWARD_OPDEF

}  // namespace ember::autodiff
