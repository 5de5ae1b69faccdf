// elementwise_kernels.h — kernel tables of the elementwise family (internal header).
//
// Every kernel gets operands already broadcast to out's shape (stride-0 views) and already cast
// to the dtype it computes in, and writes into out through out's own strides (a caller's out may
// be any strided view), which it may alias with an input of identical layout (in-place ops). The
// per-element formulas live in ops/elementwise_math.h.
#pragma once
#include "dispatch.h"
#include "ember/tensor.h"

namespace ember {

// Unary ops. Neg/Abs/Sign/Relu/Clamp and the rounding ops Floor/Ceil/Round/Trunc run on any
// numeric dtype (rounding an integer is the identity), BitwiseNot on integers and bool, the rest
// on floating dtypes. Scalar parameters: LeakyRelu p0 = negative_slope; Elu p0 = alpha; Softplus p0
// = beta, p1 = threshold; Clamp p0 = min, p1 = max (+-infinity when absent).
enum class UnaryOp {
  Neg,
  Abs,
  Sign,
  Relu,
  Clamp,
  Exp,
  Log,
  Log1p,
  Sqrt,
  Rsqrt,
  Sin,
  Cos,
  Tanh,
  Sigmoid,
  LeakyRelu,
  Elu,
  Gelu,
  GeluTanh,
  Silu,
  Softplus,
  Erf,
  Floor,
  Ceil,
  Round,  // half to even
  Trunc,
  Reciprocal,
  BitwiseNot
};
// Binary arithmetic, out of the operands' dtype. Div needs a floating dtype, Pow, FloorDivide
// and Remainder a numeric one, the bitwise ops an integer or bool one.
enum class BinaryOp {
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Maximum,
  Minimum,
  FloorDivide,  // Python's a // b; integer division by zero gives 0
  Remainder,    // Python's a % b (the divisor's sign); integer remainder by zero gives 0
  BitwiseAnd,
  BitwiseOr,
  BitwiseXor
};
// Comparisons and logical ops: operands of one dtype, bool out.
enum class CompareOp { Eq, Ne, Lt, Le, Gt, Ge, LogicalAnd, LogicalOr, LogicalXor };
// Fused activation backward: out = grad * f'(x) (Sigmoid/Tanh: from the forward output y).
// Parameters as in UnaryOp.
enum class BackwardOp { Relu, LeakyRelu, Elu, Gelu, GeluTanh, Silu, Softplus, Sigmoid, Tanh };

const char* unary_op_name(UnaryOp op);  // "exp", ... for error messages
const char* binary_op_name(BinaryOp op);
const char* compare_op_name(CompareOp op);
const char* backward_op_name(BackwardOp op);

// x, out: same shape and dtype.
EMBER_KERNEL(unary_kernel, void(UnaryOp op, const Tensor& x, Tensor& out, double p0, double p1));
// a, b, out: same shape and dtype.
EMBER_KERNEL(binary_kernel, void(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out));
// a, b: same shape and dtype; out: that shape, bool.
EMBER_KERNEL(compare_kernel, void(CompareOp op, const Tensor& a, const Tensor& b, Tensor& out));
// grad, x, out: same shape and floating dtype.
EMBER_KERNEL(backward_kernel, void(BackwardOp op, const Tensor& grad, const Tensor& x, Tensor& out,
                                   double p0, double p1));
// cond (bool), a, b, out: same shape; a, b, out of one dtype. out = cond ? a : b.
EMBER_KERNEL(where_kernel, void(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out));

// ---- value tests and nan_to_num (0.2) ----
// Tests of a value's class: x of any dtype, bool out (integers and bool are always finite).
enum class PredicateOp { IsNan, IsInf, IsFinite };
const char* predicate_op_name(PredicateOp op);

// x, out: same shape; out bool.
EMBER_KERNEL(predicate_kernel, void(PredicateOp op, const Tensor& x, Tensor& out));
// x, out: same shape and dtype (any); NaN, +inf and -inf replaced by the given values, which the
// dtype holds. Integer and bool values are copied unchanged.
EMBER_KERNEL(nan_to_num_kernel,
             void(const Tensor& x, Tensor& out, double nan, double posinf, double neginf));

}  // namespace ember
