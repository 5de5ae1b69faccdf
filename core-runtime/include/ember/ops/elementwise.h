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
// Each op but the in-place ones and operators has an `_out` form (at the end; the schemas' ops:
// beside their op):
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

// ---- binary: a [*], b [*] broadcast -> [broadcast shape], the ops of binary.def ----
// add, sub (bool - bool is an error: use logical_xor), mul, div (true division), pow (integer pow
// is exact; a negative integer exponent gives 1/a^|b| truncated toward zero), maximum and minimum
// (NaN in either operand gives NaN), floor_divide and remainder (Python's // and %: the quotient
// rounds toward -infinity, the remainder takes the divisor's sign, -7 // 2 = -4, -7 % 2 = 1,
// 7 % -2 = -1, a == b * (a // b) + a % b; integer division by zero gives 0 as NumPy's, floating
// division by zero +-inf and NaN), bitwise_and/or/xor (integer and bool operands, bool & bool ->
// bool; a floating one is a DTypeError), the comparisons eq, ne, lt, le, gt, ge (operands compared
// in their promoted dtype) and logical_and/or/xor (nonzero and NaN read as true), -> bool. Each is
//   Tensor name(const Tensor& a, const Tensor& b);
//   const Tensor& name_out(const Tensor& out, const Tensor& a, const Tensor& b);
// and, as binary.def's scalar column says, the same with a double on the right (Right) or on
// either side (Both), which follows the scalar rule above.
#define EMBER_BINARY_SCALAR_None(name)
#define EMBER_BINARY_SCALAR_Right(name)   \
  Tensor name(const Tensor& a, double b); \
  const Tensor& name##_out(const Tensor& out, const Tensor& a, double b);
#define EMBER_BINARY_SCALAR_Both(name)                                    \
  EMBER_BINARY_SCALAR_Right(name) Tensor name(double a, const Tensor& b); \
  const Tensor& name##_out(const Tensor& out, double a, const Tensor& b);
#define EMBER_BINARY_OP(name, Formula, dtypes, scalar, api, doc)                 \
  Tensor name(const Tensor& a, const Tensor& b);                                 \
  const Tensor& name##_out(const Tensor& out, const Tensor& a, const Tensor& b); \
  EMBER_BINARY_SCALAR_##scalar(name)
#include "ember/ops/binary.def"
#undef EMBER_BINARY_OP
#undef EMBER_BINARY_SCALAR_None
#undef EMBER_BINARY_SCALAR_Right
#undef EMBER_BINARY_SCALAR_Both

// The result dtype of a binary.def op whose operands promote to t (its dtypes column: Promoted,
// Numeric, Floating, Integral, Bool), shared with autodiff-engine's inference. `who()` describes
// the operands; it is called only to build the DTypeError naming `op`.
enum class BinaryDTypes { Promoted, Numeric, Floating, Integral, Bool };
[[noreturn]] void throw_two_bools(const char* op, const std::string& who);
[[noreturn]] void throw_not_integral(const char* op, const std::string& who);
template <class Who>
DType binary_result_dtype(const char* op, BinaryDTypes rule, DType t, Who&& who) {
  switch (rule) {
    case BinaryDTypes::Promoted:
      return t;
    case BinaryDTypes::Numeric:
      if (t == DType::Bool) throw_two_bools(op, who());
      return t;
    case BinaryDTypes::Floating:
      return is_floating(t) ? t : DType::Float32;
    case BinaryDTypes::Integral:
      if (is_floating(t)) throw_not_integral(op, who());
      return t;
    case BinaryDTypes::Bool:
      return DType::Bool;
  }
  return t;
}

Tensor bitwise_not(const Tensor& x);  // ~x; logical not for bool
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

const Tensor& bitwise_not_out(const Tensor& out, const Tensor& x);
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
