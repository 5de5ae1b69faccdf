// ops/elementwise.h — builder functions of the elementwise family (src/rules/elementwise.cpp):
// for graphs (Val) and eager code (Variable) alike (see apply.h). Each has the name and the
// arguments of its core-runtime function (ember/ops/elementwise.h); the op it adds has that name
// too, with the arguments as attributes. Unary ops map x [*] -> [*]; binary ops broadcast.
#pragma once
#include <cmath>
#include <optional>
#include <string>

#include "ember/autodiff/ops/apply.h"

namespace ember::autodiff {

// ---- unary ----
// The plain unary ops of core-runtime's ember/ops/unary.def: name(x), one per line there (those
// marked Own are written below). sign has no gradient (zero almost everywhere); the rounding ops
// keep x's dtype and have a zero gradient (as PyTorch's), not none.
#define EMBER_AD_UNARY(name) \
  template <class V> if_handle<V> name(const V& x) { return apply1<V>(EMBER_OP(#name), {x}); }
#define EMBER_AD_UNARY_Plain(name) EMBER_AD_UNARY(name)
#define EMBER_AD_UNARY_Own(name)
#define EMBER_UNARY_OP(name, Formula, dtypes, cost, api, doc) EMBER_AD_UNARY_##api(name)
#include "ember/ops/unary.def"
#undef EMBER_UNARY_OP
#undef EMBER_AD_UNARY_Plain
#undef EMBER_AD_UNARY_Own
EMBER_AD_UNARY(isnan)  // -> bool, no gradient (also isinf, isfinite)
EMBER_AD_UNARY(isinf)
EMBER_AD_UNARY(isfinite)
EMBER_AD_UNARY(logical_not)  // -> bool, no gradient
EMBER_AD_UNARY(detach)       // x itself, and the gradient stops here
EMBER_AD_UNARY(clone)        // a copy in new memory; the gradient passes
#undef EMBER_AD_UNARY

// Half to even; decimals != 0 rounds x 10^decimals and scales back, as PyTorch does.
template <class V> if_handle<V> round(const V& x, int64_t decimals = 0) {
  if (decimals == 0) return apply1<V>(EMBER_OP("round"), {x});
  const double scale = std::pow(10.0, double(decimals));
  return div(apply1<V>(EMBER_OP("round"), {mul(x, scale)}), scale);
}
// x x, through mul (so its gradient is 2 x dy).
template <class V> if_handle<V> square(const V& x) { return mul(x, x); }
// x with NaN, +inf and -inf replaced (absent posinf/neginf: the dtype's largest/lowest finite
// value); the gradient passes where x is finite, else 0.
template <class V>
if_handle<V> nan_to_num(const V& x, double nan = 0.0, std::optional<double> posinf = {},
                        std::optional<double> neginf = {}) {
  Attrs attrs{{"nan", nan}};
  if (posinf) attrs.set("posinf", *posinf);
  if (neginf) attrs.set("neginf", *neginf);
  return apply1<V>(EMBER_OP("nan_to_num"), {x}, std::move(attrs));
}

template <class V> if_handle<V> leaky_relu(const V& x, double negative_slope = 0.01) {
  return apply1<V>(EMBER_OP("leaky_relu"), {x}, {{"negative_slope", negative_slope}});
}
template <class V> if_handle<V> elu(const V& x, double alpha = 1.0) {
  return apply1<V>(EMBER_OP("elu"), {x}, {{"alpha", alpha}});
}
template <class V> if_handle<V> gelu(const V& x, const std::string& approximate = "none") {
  return apply1<V>(EMBER_OP("gelu"), {x}, {{"approximate", approximate}});
}
template <class V> if_handle<V> softplus(const V& x, double beta = 1.0, double threshold = 20.0) {
  return apply1<V>(EMBER_OP("softplus"), {x}, {{"beta", beta}, {"threshold", threshold}});
}

// ---- the backward ops of the activations (each differentiable again) ----
// relu/leaky_relu/elu/gelu/silu/softplus_backward(grad, x); sigmoid/tanh_backward(grad, y).
#define EMBER_AD_BACKWARD(name)                                     \
  template <class V> if_handle<V> name(const V& grad, const V& x) { \
    return apply1<V>(EMBER_OP(#name), {grad, x});                   \
  }
EMBER_AD_BACKWARD(relu_backward)
EMBER_AD_BACKWARD(silu_backward)
EMBER_AD_BACKWARD(sigmoid_backward)  // grad * y (1 - y)
EMBER_AD_BACKWARD(tanh_backward)     // grad * (1 - y^2)
#undef EMBER_AD_BACKWARD
template <class V>
if_handle<V> leaky_relu_backward(const V& grad, const V& x, double negative_slope = 0.01) {
  return apply1<V>(EMBER_OP("leaky_relu_backward"), {grad, x},
                   {{"negative_slope", negative_slope}});
}
template <class V> if_handle<V> elu_backward(const V& grad, const V& x, double alpha = 1.0) {
  return apply1<V>(EMBER_OP("elu_backward"), {grad, x}, {{"alpha", alpha}});
}
template <class V>
if_handle<V> gelu_backward(const V& grad, const V& x, const std::string& approximate = "none") {
  return apply1<V>(EMBER_OP("gelu_backward"), {grad, x}, {{"approximate", approximate}});
}
template <class V>
if_handle<V> softplus_backward(const V& grad, const V& x, double beta = 1.0,
                               double threshold = 20.0) {
  return apply1<V>(EMBER_OP("softplus_backward"), {grad, x},
                   {{"beta", beta}, {"threshold", threshold}});
}

// ---- binary, broadcasting: a [*], b [*] -> the broadcast shape ----
// The plain binary ops of core-runtime's ember/ops/binary.def: name(a, b), one per line there
// (those marked Own are written below). maximum/minimum split the gradient equally on ties, as
// PyTorch does; floor_divide (piecewise constant), the bitwise ops, the comparisons and the
// logical ops (-> bool) have no gradient; remainder's is d/da = dy, d/db = -dy floor_divide(a, b).
#define EMBER_AD_BINARY_Plain(name)                              \
  template <class V> if_handle<V> name(const V& a, const V& b) { \
    return apply1<V>(EMBER_OP(#name), {a, b});                   \
  }
#define EMBER_AD_BINARY_Own(name)
#define EMBER_BINARY_OP(name, Formula, dtypes, scalar, api, doc) EMBER_AD_BINARY_##api(name)
#include "ember/ops/binary.def"
#undef EMBER_BINARY_OP
#undef EMBER_AD_BINARY_Plain
#undef EMBER_AD_BINARY_Own

// ---- with a scalar: x [*] -> [*]; ops "<name>_scalar" with attribute value ----
// add_scalar: x + s, mul_scalar: x s, rsub_scalar: s - x, div_scalar: x / s, rdiv_scalar: s / x,
// pow_scalar: x^s, rpow_scalar: s^x, maximum_scalar, minimum_scalar, and the comparisons
// eq/ne/lt/le/gt/ge_scalar (-> bool).
#define EMBER_AD_SCALAR(name, op)                                  \
  template <class V> if_handle<V> name(const V& x, double value) { \
    return apply1<V>(EMBER_OP(op), {x}, {{"value", value}});       \
  }
EMBER_AD_SCALAR(add, "add_scalar")
EMBER_AD_SCALAR(mul, "mul_scalar")
EMBER_AD_SCALAR(div, "div_scalar")
EMBER_AD_SCALAR(pow, "pow_scalar")
EMBER_AD_SCALAR(maximum, "maximum_scalar")
EMBER_AD_SCALAR(minimum, "minimum_scalar")
EMBER_AD_SCALAR(eq, "eq_scalar")
EMBER_AD_SCALAR(ne, "ne_scalar")
EMBER_AD_SCALAR(lt, "lt_scalar")
EMBER_AD_SCALAR(le, "le_scalar")
EMBER_AD_SCALAR(gt, "gt_scalar")
EMBER_AD_SCALAR(ge, "ge_scalar")
#undef EMBER_AD_SCALAR
template <class V> if_handle<V> sub(const V& x, double value) { return add(x, -value); }
template <class V> if_handle<V> sub(double value, const V& x) {
  return apply1<V>(EMBER_OP("rsub_scalar"), {x}, {{"value", value}});
}
template <class V> if_handle<V> div(double value, const V& x) {
  return apply1<V>(EMBER_OP("rdiv_scalar"), {x}, {{"value", value}});
}
template <class V> if_handle<V> pow(double value, const V& x) {
  return apply1<V>(EMBER_OP("rpow_scalar"), {x}, {{"value", value}});
}

// ---- selection ----
// cond bool [*], a [*], b [*] -> broadcast: a where cond, else b. The gradient of the branch
// not taken is exactly zero (never 0 * inf).
template <class V> if_handle<V> where(const V& cond, const V& a, const V& b) {
  return apply1<V>(EMBER_OP("where"), {cond, a, b});
}
// x [*] -> [*] limited to [min, max] (either may be absent); the gradient passes where x is
// inside the range (bounds included, as PyTorch).
template <class V>
if_handle<V> clamp(const V& x, std::optional<double> min, std::optional<double> max = {}) {
  Attrs attrs;
  if (min) attrs.set("min", *min);
  if (max) attrs.set("max", *max);
  return apply1<V>(EMBER_OP("clamp"), {x}, std::move(attrs));
}
// x [*], mask bool (broadcasts to x) -> x with value where mask is true.
template <class V> if_handle<V> masked_fill(const V& x, const V& mask, double value) {
  return apply1<V>(EMBER_OP("masked_fill"), {x, mask}, {{"value", value}});
}

// ---- conversions ----
// x -> x's values in dtype (op "to_dtype", attribute dtype: the dtype's name). Differentiable
// between floating dtypes: the gradient is converted back.
template <class V> if_handle<V> to(const V& x, DType dtype) {
  return apply1<V>(EMBER_OP("to_dtype"), {x}, {{"dtype", std::string(dtype_name(dtype))}});
}
// x -> a copy on device (op "to_device", attribute device: "cpu", "cuda:0"); the gradient
// moves back.
template <class V> if_handle<V> to(const V& x, Device device) {
  return apply1<V>(EMBER_OP("to_device"), {x}, {{"device", device.str()}});
}

// ---- operators ----
template <class V> if_handle<V> operator-(const V& x) { return neg(x); }
template <class V> if_handle<V> operator+(const V& a, const V& b) { return add(a, b); }
template <class V> if_handle<V> operator-(const V& a, const V& b) { return sub(a, b); }
template <class V> if_handle<V> operator*(const V& a, const V& b) { return mul(a, b); }
template <class V> if_handle<V> operator/(const V& a, const V& b) { return div(a, b); }
template <class V> if_handle<V> operator+(const V& x, double s) { return add(x, s); }
template <class V> if_handle<V> operator+(double s, const V& x) { return add(x, s); }
template <class V> if_handle<V> operator-(const V& x, double s) { return add(x, -s); }
template <class V> if_handle<V> operator-(double s, const V& x) { return sub(s, x); }
template <class V> if_handle<V> operator*(const V& x, double s) { return mul(x, s); }
template <class V> if_handle<V> operator*(double s, const V& x) { return mul(x, s); }
template <class V> if_handle<V> operator/(const V& x, double s) { return div(x, s); }
template <class V> if_handle<V> operator/(double s, const V& x) { return div(s, x); }

}  // namespace ember::autodiff
