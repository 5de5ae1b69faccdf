// elementwise.h — elementwise math: unary functions and activations (with their fused backward),
// binary arithmetic and comparisons with NumPy broadcasting, where and clamp.
//
// Result dtypes (PyTorch's rules):
// - Binary ops promote their operands with promote_types (int32 + float16 -> float16,
//   uint8 + int8 -> int16, ...). div is true division: integer / integer -> float32.
// - neg, abs, sign, relu and clamp keep the input dtype; every other unary op and activation
//   computes in floating point, so integer and bool inputs give float32.
// - Comparisons and logical ops give bool.
// - A double scalar acts like a Python number: it keeps a floating tensor's dtype; with an integer
//   or bool tensor an integral value (2, -3.0) keeps the tensor's integer dtype (bool -> int64)
//   and a fractional value (2.5), inf or NaN gives float32.
// Mixed dtypes are handled by casting each operand to the result dtype (Tensor::to) before the
// kernel runs; float16 and bfloat16 compute in float32 inside the kernel.
// Every op takes tensors of any layout (transposed, sliced, expanded) and returns a new
// contiguous tensor on the operands' device; operands must share one device.
#pragma once
#include <optional>
#include <string>

#include "ember/tensor.h"

namespace ember {

// ---- unary: x [*] -> [*] ----
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);  // -1, 0 or 1 (NaN stays NaN)
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);  // log(1 + x), accurate for small x
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);  // 1 / sqrt(x)
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);  // 1 / (1 + e^-x)

// ---- activations: x [*] -> [*] ----
Tensor relu(const Tensor& x);                                      // max(x, 0)
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);  // x > 0 ? x : slope x
Tensor elu(const Tensor& x, double alpha = 1.0);                   // x > 0 ? x : alpha (e^x - 1)
// x Phi(x) with Phi the standard normal CDF; approximate "none" uses erf, "tanh" the tanh formula.
Tensor gelu(const Tensor& x, const std::string& approximate = "none");
Tensor silu(const Tensor& x);  // x sigmoid(x)
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
// cond (bool), a, b broadcast together -> [broadcast shape], dtype promote_types(a, b).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// min(max(x, min), max) with either bound optional (at least one is required); NaN stays NaN.
// Dtype follows the scalar rule: an integer tensor with a fractional bound gives float32.
Tensor clamp(const Tensor& x, std::optional<double> min, std::optional<double> max = std::nullopt);

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
