// elementwise.h — elementwise math: unary functions and activations (with their fused backward),
// binary arithmetic and comparisons with NumPy broadcasting, rounding, value tests, bitwise ops,
// where and clamp.
//
// Result dtypes (PyTorch's rules):
// - Binary ops promote their operands with promote_types (int32 + float16 -> float16,
//   uint8 + int8 -> int16, ...). div is true division: integer / integer -> float32.
// - A 0-d tensor beside one with dims counts only by its kind, as a scalar does (result_type in
//   dtype.h): float32 [3] + float64 [] -> float32, int32 [3] + int64 [] -> int32, but
//   int32 [3] + float64 [] -> float64. This holds for comparisons and where too.
// - neg, abs, sign, relu, clamp and the rounding ops (floor, ceil, round, trunc: the identity on
//   integers) keep the input dtype and reject bool; every other unary op and activation computes
//   in floating point, so integer and bool inputs give float32.
// - Comparisons, logical ops and the value tests (isnan, isinf, isfinite) give bool.
// - Bitwise ops take integer and bool operands only (a floating one is a DTypeError) and promote
//   like arithmetic; floor_divide and remainder promote like arithmetic and reject two bools.
// - A double scalar acts like a Python number: it keeps a floating tensor's dtype; with an integer
//   or bool tensor an integral value (2, -3.0) keeps the tensor's integer dtype (bool -> int64)
//   and a fractional value (2.5), inf or NaN gives float32.
// Mixed dtypes are handled by casting each operand to the result dtype (Tensor::to) before the
// kernel runs; float16 and bfloat16 compute in float32 inside the kernel.
// Every op takes tensors of any layout (transposed, sliced, expanded) and returns a new
// contiguous tensor on the operands' device; operands must share one device.
//
// Each op but the in-place ones and operators has an `_out` form (at the end; unary.def's: top):
// `const Tensor& add_out(const Tensor& out, const Tensor& a, const Tensor& b)` writes the result
// into out and returns it. out must have exactly the result's shape, dtype and device (it is never
// resized or cast: ShapeError, DTypeError, DeviceError; an undefined out is a ValueError), may
// have any strides (a transposed or step-sliced view of a larger tensor), may be identical to an
// input (add_out(x, x, y) adds in place) but may not otherwise overlap one (ValueError). Writing
// into out bumps its version counter.
#pragma once
#include <optional>
#include <string>

#include "ember/ops/out_arg.h"
#include "ember/tensor.h"

namespace ember {

// ---- unary: x [*] -> [*], the ops of unary.def (one line each there) ----
// neg, abs, sign (-1, 0 or 1; NaN stays NaN), exp, expm1 (e^x - 1, accurate for small x), log,
// log1p (log(1 + x), accurate for small x), sqrt, rsqrt (1 / sqrt(x)), sin, cos, tanh, sigmoid
// (1 / (1 + e^-x)), erf (the error function), reciprocal (1 / x; integers give float32,
// 1 / 0 = inf), floor, ceil, round (half to even, as NumPy and PyTorch: 0.5 -> 0, 1.5 -> 2,
// -2.5 -> -2), trunc (toward zero), relu (max(x, 0)) and silu (x sigmoid(x)). Each is
//   Tensor name(const Tensor& x, OutArg out = {});             // out given: written and returned
//   const Tensor& name_out(const Tensor& out, const Tensor& x);  // the older spelling
// The rounding ops keep x's dtype (the identity on integers; bool is a DTypeError).
#define EMBER_UNARY_OP(name, Formula, dtypes, cost, api, doc) \
  Tensor name(const Tensor& x, OutArg out = {});              \
  const Tensor& name##_out(const Tensor& out, const Tensor& x);
#include "ember/ops/unary.def"
#undef EMBER_UNARY_OP

// ---- shape rules: the result's dtype alone, as the ops above work it out ----
// For autodiff-engine's inference as well, so that each rule is written once. The dtypes column
// of unary.def: Numeric keeps any numeric dtype and refuses bool; Floating keeps a floating dtype
// and gives float32 for the others. `who()` says how the caller describes x ("x is [3] bool cpu");
// it is called only to build the DTypeError naming `op`.
enum class UnaryDTypes { Numeric, Floating };
[[noreturn]] void throw_not_numeric(const char* op, const std::string& who);
template <class Who>
DType unary_result_dtype(const char* op, UnaryDTypes rule, DType x, Who&& who) {
  if (rule == UnaryDTypes::Floating) return is_floating(x) ? x : DType::Float32;
  if (x == DType::Bool) throw_not_numeric(op, who());
  return x;
}

// ---- value tests: x [*] of any dtype -> bool [*] (integers and bool are finite) ----
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);     // +inf or -inf
Tensor isfinite(const Tensor& x);  // neither NaN nor infinite
// A copy of x with NaN replaced by `nan`, +inf by `posinf` and -inf by `neginf`; a missing posinf
// (neginf) is the dtype's largest (lowest) finite value. Any dtype: integers are copied unchanged.
// A value the (floating) dtype cannot hold (1e5 for float16) is a ValueError.
Tensor nan_to_num(const Tensor& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);

// ---- activations: x [*] -> [*] ----
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);  // x > 0 ? x : slope x
Tensor elu(const Tensor& x, double alpha = 1.0);                   // x > 0 ? x : alpha (e^x - 1)
// x Phi(x) with Phi the standard normal CDF; approximate "none" uses erf, "tanh" the tanh formula.
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
// log(1 + e^(beta x)) / beta; x itself where beta x > threshold (for numerical stability).
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);

// ---- activation backward: grad, x [*] -> dx [*] (one fused kernel each) ----
// grad is dLoss/dOutput; the result is dLoss/dx = grad * f'(x). Both floating, broadcastable.
Tensor relu_backward(const Tensor& grad, const Tensor& x);
Tensor leaky_relu_backward(const Tensor& grad, const Tensor& x, double negative_slope = 0.01);
Tensor elu_backward(const Tensor& grad, const Tensor& x, double alpha = 1.0);
Tensor gelu_backward(const Tensor& grad, const Tensor& x, const std::string& approximate = "none");
Tensor silu_backward(const Tensor& grad, const Tensor& x);
Tensor softplus_backward(const Tensor& grad, const Tensor& x, double beta = 1.0,
                         double threshold = 20.0);
// These two take the forward OUTPUT y (sigmoid'(x) = y (1 - y), tanh'(x) = 1 - y^2).
Tensor sigmoid_backward(const Tensor& grad, const Tensor& y);
Tensor tanh_backward(const Tensor& grad, const Tensor& y);

// ---- binary arithmetic: a [*], b [*] broadcast -> [broadcast shape] ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);  // bool - bool is an error (use logical_xor)
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);  // true division
// a^b. Integer pow is exact; a negative integer exponent gives 1/a^|b| truncated toward zero.
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);  // NaN in either operand gives NaN
Tensor minimum(const Tensor& a, const Tensor& b);
// Python's // and %: the quotient rounds toward -infinity, the remainder takes the divisor's sign
// (-7 // 2 = -4, -7 % 2 = 1, 7 % -2 = -1), a == b * (a // b) + a % b. Integer and floating dtypes.
// Integer division by zero cannot raise inside a kernel: both give 0, as NumPy does; floating
// division by zero gives +-inf (floor_divide) and NaN (remainder).
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Tensor& b);
// Integer and bool operands (bool & bool -> bool); a floating operand is a DTypeError.
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
Tensor bitwise_not(const Tensor& x);  // ~x; logical not for bool

// The same with a scalar on either side (see the scalar rule above).
Tensor add(const Tensor& a, double b);
Tensor add(double a, const Tensor& b);
Tensor sub(const Tensor& a, double b);
Tensor sub(double a, const Tensor& b);
Tensor mul(const Tensor& a, double b);
Tensor mul(double a, const Tensor& b);
Tensor div(const Tensor& a, double b);
Tensor div(double a, const Tensor& b);
Tensor pow(const Tensor& a, double b);
Tensor pow(double a, const Tensor& b);
Tensor maximum(const Tensor& a, double b);
Tensor minimum(const Tensor& a, double b);
Tensor floor_divide(const Tensor& a, double b);
Tensor floor_divide(double a, const Tensor& b);
Tensor remainder(const Tensor& a, double b);
Tensor remainder(double a, const Tensor& b);

// ---- comparisons and logic: a [*], b [*] broadcast -> bool [broadcast shape] ----
// Operands are compared in their promoted dtype. Logical ops read nonzero (and NaN) as true.
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, double b);
Tensor ne(const Tensor& a, double b);
Tensor lt(const Tensor& a, double b);
Tensor le(const Tensor& a, double b);
Tensor gt(const Tensor& a, double b);
Tensor ge(const Tensor& a, double b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& x);  // x [*] -> bool [*]

// ---- in place: self op= other, returns self ----
// The result must have self's shape (other broadcasts to it) and its dtype must be castable to
// self's (a floating result cannot go into an integer tensor, nor a numeric one into bool).
// The result is computed in the promoted dtype and then stored in self's dtype.
const Tensor& add_(const Tensor& self, const Tensor& other);
const Tensor& sub_(const Tensor& self, const Tensor& other);
const Tensor& mul_(const Tensor& self, const Tensor& other);
const Tensor& div_(const Tensor& self, const Tensor& other);
const Tensor& add_(const Tensor& self, double other);
const Tensor& sub_(const Tensor& self, double other);
const Tensor& mul_(const Tensor& self, double other);
const Tensor& div_(const Tensor& self, double other);

// ---- selection ----
// cond (bool), a, b broadcast together -> [broadcast shape], dtype result_type(a, b) (0-d rule).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// min(max(x, min), max) with either bound optional (at least one is required); NaN stays NaN.
// Dtype follows the scalar rule: an integer tensor with a fractional bound gives float32.
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max = std::nullopt);

// ---- `_out` forms: the result written into out (see the top of this file), out returned ----
const Tensor& isnan_out(const Tensor& out, const Tensor& x);
const Tensor& isinf_out(const Tensor& out, const Tensor& x);
const Tensor& isfinite_out(const Tensor& out, const Tensor& x);
const Tensor& nan_to_num_out(const Tensor& out, const Tensor& x, double nan = 0.0,
                             std::optional<double> posinf = std::nullopt,
                             std::optional<double> neginf = std::nullopt);

const Tensor& leaky_relu_out(const Tensor& out, const Tensor& x, double negative_slope = 0.01);
const Tensor& elu_out(const Tensor& out, const Tensor& x, double alpha = 1.0);
const Tensor& gelu_out(const Tensor& out, const Tensor& x, const std::string& approximate = "none");
const Tensor& softplus_out(const Tensor& out, const Tensor& x, double beta = 1.0,
                           double threshold = 20.0);

const Tensor& relu_backward_out(const Tensor& out, const Tensor& grad, const Tensor& x);
const Tensor& leaky_relu_backward_out(const Tensor& out, const Tensor& grad, const Tensor& x,
                                      double negative_slope = 0.01);
const Tensor& elu_backward_out(const Tensor& out, const Tensor& grad, const Tensor& x,
                               double alpha = 1.0);
const Tensor& gelu_backward_out(const Tensor& out, const Tensor& grad, const Tensor& x,
                                const std::string& approximate = "none");
const Tensor& silu_backward_out(const Tensor& out, const Tensor& grad, const Tensor& x);
const Tensor& softplus_backward_out(const Tensor& out, const Tensor& grad, const Tensor& x,
                                    double beta = 1.0, double threshold = 20.0);
const Tensor& sigmoid_backward_out(const Tensor& out, const Tensor& grad, const Tensor& y);
const Tensor& tanh_backward_out(const Tensor& out, const Tensor& grad, const Tensor& y);

const Tensor& add_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& sub_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& mul_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& div_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& pow_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& maximum_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& minimum_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& floor_divide_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& remainder_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& bitwise_and_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& bitwise_or_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& bitwise_xor_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& bitwise_not_out(const Tensor& out, const Tensor& x);
const Tensor& add_out(const Tensor& out, const Tensor& a, double b);
const Tensor& add_out(const Tensor& out, double a, const Tensor& b);
const Tensor& sub_out(const Tensor& out, const Tensor& a, double b);
const Tensor& sub_out(const Tensor& out, double a, const Tensor& b);
const Tensor& mul_out(const Tensor& out, const Tensor& a, double b);
const Tensor& mul_out(const Tensor& out, double a, const Tensor& b);
const Tensor& div_out(const Tensor& out, const Tensor& a, double b);
const Tensor& div_out(const Tensor& out, double a, const Tensor& b);
const Tensor& pow_out(const Tensor& out, const Tensor& a, double b);
const Tensor& pow_out(const Tensor& out, double a, const Tensor& b);
const Tensor& maximum_out(const Tensor& out, const Tensor& a, double b);
const Tensor& minimum_out(const Tensor& out, const Tensor& a, double b);
const Tensor& floor_divide_out(const Tensor& out, const Tensor& a, double b);
const Tensor& floor_divide_out(const Tensor& out, double a, const Tensor& b);
const Tensor& remainder_out(const Tensor& out, const Tensor& a, double b);
const Tensor& remainder_out(const Tensor& out, double a, const Tensor& b);

const Tensor& eq_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& ne_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& lt_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& le_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& gt_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& ge_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& eq_out(const Tensor& out, const Tensor& a, double b);
const Tensor& ne_out(const Tensor& out, const Tensor& a, double b);
const Tensor& lt_out(const Tensor& out, const Tensor& a, double b);
const Tensor& le_out(const Tensor& out, const Tensor& a, double b);
const Tensor& gt_out(const Tensor& out, const Tensor& a, double b);
const Tensor& ge_out(const Tensor& out, const Tensor& a, double b);
const Tensor& logical_and_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& logical_or_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& logical_xor_out(const Tensor& out, const Tensor& a, const Tensor& b);
const Tensor& logical_not_out(const Tensor& out, const Tensor& x);

const Tensor& where_out(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b);
const Tensor& clamp_out(const Tensor& out, const Tensor& x, std::optional<double> min,
                        std::optional<double> max = std::nullopt);

// ---- operators ----
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
// Element-wise comparisons returning bool tensors (so `if (a == b)` does not compile: use
// eq(a, b) with a reduction, or compare tensors' values in tests).
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, double b);
Tensor operator!=(const Tensor& a, double b);
Tensor operator<(const Tensor& a, double b);
Tensor operator<=(const Tensor& a, double b);
Tensor operator>(const Tensor& a, double b);
Tensor operator>=(const Tensor& a, double b);
const Tensor& operator+=(const Tensor& self, const Tensor& other);  // add_
const Tensor& operator-=(const Tensor& self, const Tensor& other);
const Tensor& operator*=(const Tensor& self, const Tensor& other);
const Tensor& operator/=(const Tensor& self, const Tensor& other);
const Tensor& operator+=(const Tensor& self, double other);
const Tensor& operator-=(const Tensor& self, double other);
const Tensor& operator*=(const Tensor& self, double other);
const Tensor& operator/=(const Tensor& self, double other);

}  // namespace ember
