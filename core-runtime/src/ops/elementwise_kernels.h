// elementwise_kernels.h — the op enums of the elementwise family's kernels, whose slots are
// listed in kernels/elementwise.def (internal header).
//
// Every kernel gets operands already broadcast to out's shape (stride-0 views) and already cast
// to the dtype it computes in, and writes into out through out's own strides (a caller's out may
// be any strided view), which it may alias with an input of identical layout (in-place ops). The
// per-element formulas live in ops/elementwise_math.h.
#pragma once
#include "dispatch.h"
#include "ember/tensor.h"

namespace ember {

// Unary ops: one enumerator per line of ember/ops/unary.def (whose dtypes column says which
// dtypes each runs on), then the ops with scalar parameters or rules of their own. LeakyRelu and
// Elu run on floating dtypes, Clamp on any numeric dtype, BitwiseNot on integers and bool.
// Scalar parameters: LeakyRelu p0 = negative_slope; Elu p0 = alpha; Softplus p0 = beta,
// p1 = threshold; Clamp p0 = min, p1 = max (+-infinity when absent).
enum class UnaryOp {
#define EMBER_UNARY_OP(name, Formula, dtypes, cost, api, doc) Formula,
#include "ember/ops/unary.def"
#undef EMBER_UNARY_OP
  Clamp,
  LeakyRelu,
  Elu,
  Gelu,
  GeluTanh,
  Softplus,
  BitwiseNot
};
// Binary ops: one enumerator per line of ember/ops/binary.def, whose dtypes column says which
// dtypes each runs on. The kernel's out has the operands' dtype, or bool for the ops whose
// functor returns bool (the comparisons and logical ops).
enum class BinaryOp {
#define EMBER_BINARY_OP(name, Formula, dtypes, scalar, api, doc) Formula,
#include "ember/ops/binary.def"
#undef EMBER_BINARY_OP
};
// Fused activation backward: out = grad * f'(x) (Sigmoid/Tanh: from the forward output y).
// Parameters as in UnaryOp.
enum class BackwardOp { Relu, LeakyRelu, Elu, Gelu, GeluTanh, Silu, Softplus, Sigmoid, Tanh };

const char* unary_op_name(UnaryOp op);  // "exp", ... for error messages
const char* binary_op_name(BinaryOp op);
const char* backward_op_name(BackwardOp op);

// ---- value tests (isnan, isinf, isfinite) ----
// Tests of a value's class: x of any dtype, bool out (integers and bool are always finite).
enum class PredicateOp { IsNan, IsInf, IsFinite };
const char* predicate_op_name(PredicateOp op);

}  // namespace ember
