// infer.h — shape/dtype rules shared by many ops, and small checks for writing the rest.
#pragma once
#include <string>
#include <vector>

#include "ember/autodiff/op.h"

namespace ember::autodiff::infer {

// Throws ValueError unless exactly `n` inputs were given (`op` names the op).
void arity(const char* op, const std::vector<TensorType>& in, size_t n);
// Throws DeviceError unless every input is on one device.
void same_device(const char* op, const std::vector<TensorType>& in);
// Throws DTypeError unless in[i] is floating.
void floating(const char* op, const std::vector<TensorType>& in, size_t i);

// "x is f32[2,3]": how an operand is named in an error message.
std::string describe(const char* name, const TensorType& t);

// One output of the first input's type (unary elementwise, x -> x).
std::vector<TensorType> same_as_first(const std::vector<TensorType>& in, const Attrs&);
// NumPy broadcasting of in[0] and in[1], dtype promoted (add, mul, ...).
TensorType broadcast(const char* op, const TensorType& a, const TensorType& b);
// How an elementwise op's result dtype follows its operands' promoted dtype (core-runtime's rules,
// ember/ops/elementwise.h).
enum class DTypeRule {
  Promoted,  // the promoted dtype itself (add, mul, maximum)
  Numeric,   // the promoted dtype, which must not be bool (neg, abs, relu, sub, pow)
  Floating,  // the promoted dtype if floating, else float32 (exp, tanh, div)
  Integral,  // the promoted dtype, which must be an integer or bool (bitwise_and)
  Bool,      // bool (comparisons, logical ops)
};
// The result dtype for operands whose promoted dtype is `t`; a DTypeError naming the op and
// `operands` (see describe) when the rule refuses it.
DType result_dtype(const char* op, DType t, DTypeRule rule, const std::string& operands);
// The dtype a double scalar takes beside a tensor of dtype t (core-runtime's scalar rule: a
// floating tensor keeps its dtype; an integral value keeps an integer dtype, bool -> int64; a
// fractional value, inf or NaN gives float32).
DType scalar_dtype(DType t, double value);
// x [*] -> [*]: one input, dtype by `rule`.
TensorType unary(const char* op, const std::vector<TensorType>& in, DTypeRule rule);
// The dtype a and b are computed in: core-runtime's result_type (a 0-d operand beside one with
// dims counts only by its kind).
DType result_type(const TensorType& a, const TensorType& b);
// a, b -> the broadcast shape: two inputs on one device, dtype result_type(a, b) by `rule`.
TensorType binary(const char* op, const std::vector<TensorType>& in, DTypeRule rule);
// x [*] with the scalar attribute `value` -> [*], dtype promote_types(x, scalar_dtype) by `rule`.
TensorType with_scalar(const char* op, const std::vector<TensorType>& in, const Attrs& attrs,
                       DTypeRule rule);
// Throws ShapeError unless `from` (the operand `name`) broadcasts to `to` without growing.
// Whether `from` broadcasts to `to` by NumPy's rules (one way: `to` is not stretched).
bool broadcastable(const Shape& from, const Shape& to);
void broadcasts_to(const char* op, const char* name, const TensorType& from, const Shape& to);

// The shape `shape` with the dims `dims` removed (or set to 1 when keepdim); dims empty = all.
Shape reduce_shape(const char* op, const Shape& shape, const std::vector<int64_t>& dims,
                   bool keepdim);

}  // namespace ember::autodiff::infer
