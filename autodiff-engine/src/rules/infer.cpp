// infer.cpp — the shared shape/dtype rules of infer.h.
#include "infer.h"

#include <algorithm>
#include <cmath>

#include "ember/ops/elementwise.h"

namespace ember::autodiff::infer {

void arity(const char* op, const std::vector<TensorType>& in, size_t n) {
  if (in.size() != n)
    throw ValueError(op,
                     "takes " + std::to_string(n) + " inputs, got " + std::to_string(in.size()));
}

void same_device(const char* op, const std::vector<TensorType>& in) {
  for (const TensorType& t : in)
    if (t.device != in[0].device)
      throw DeviceError(op, "inputs on different devices: " + in[0].str() + " and " + t.str() +
                                ". Fix: move them to one device first");
}

void floating(const char* op, const std::vector<TensorType>& in, size_t i) {
  if (!is_floating(in[i].dtype))
    throw DTypeError(op, "input " + std::to_string(i) + " is " + in[i].str() +
                             "; expected a floating dtype");
}

std::string describe(const char* name, const TensorType& t) {
  return std::string(name) + " is " + t.str();
}

std::vector<TensorType> same_as_first(const std::vector<TensorType>& in, const Attrs&) {
  if (in.empty()) throw ValueError("infer", "no inputs");
  return {in[0]};
}

DType result_type(const TensorType& a, const TensorType& b) {
  return ember::result_type(a.dtype, a.dim() == 0, b.dtype, b.dim() == 0);
}

TensorType broadcast(const char* op, const TensorType& a, const TensorType& b) {
  same_device(op, {a, b});
  return TensorType{broadcast_shapes(a.shape, b.shape, op), result_type(a, b), a.device};
}

DType result_dtype(const char* op, DType t, DTypeRule rule, const std::string& operands) {
  switch (rule) {
    case DTypeRule::Promoted:
      return t;
    case DTypeRule::Numeric:  // core-runtime's rule (ember/ops/elementwise.h)
      return unary_result_dtype(op, UnaryDTypes::Numeric, t, [&] { return operands; });
    case DTypeRule::Floating:
      return unary_result_dtype(op, UnaryDTypes::Floating, t, [&] { return operands; });
    case DTypeRule::Integral:
      return binary_result_dtype(op, BinaryDTypes::Integral, t, [&] { return operands; });
    case DTypeRule::Bool:
      return DType::Bool;
  }
  return t;
}

DType scalar_dtype(DType t, double value) {
  if (is_floating(t)) return t;
  if (!std::isfinite(value) || std::floor(value) != value) return DType::Float32;
  return t == DType::Bool ? DType::Int64 : t;
}

TensorType unary(const char* op, const std::vector<TensorType>& in, DTypeRule rule) {
  arity(op, in, 1);
  TensorType t = in[0];
  t.dtype = result_dtype(op, t.dtype, rule, describe("x", in[0]));
  return t;
}

TensorType binary(const char* op, const std::vector<TensorType>& in, DTypeRule rule) {
  arity(op, in, 2);
  TensorType t = broadcast(op, in[0], in[1]);
  t.dtype = result_dtype(op, t.dtype, rule, describe("a", in[0]) + ", " + describe("b", in[1]));
  return t;
}

TensorType with_scalar(const char* op, const std::vector<TensorType>& in, const Attrs& attrs,
                       DTypeRule rule) {
  arity(op, in, 1);
  TensorType t = in[0];
  const DType promoted = promote_types(t.dtype, scalar_dtype(t.dtype, attrs.f("value")));
  t.dtype = result_dtype(op, promoted, rule, describe("x", in[0]));
  return t;
}

bool broadcastable(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  return true;
}

void broadcasts_to(const char* op, const char* name, const TensorType& from, const Shape& to) {
  if (!broadcastable(from.shape, to))
    throw ShapeError(op, describe(name, from) + ", which does not broadcast to " + shape_str(to) +
                             "; expected sizes equal to those of " + shape_str(to) + " or 1");
}

Shape reduce_shape(const char* op, const Shape& shape, const std::vector<int64_t>& dims,
                   bool keepdim) {
  const int64_t n = int64_t(shape.size());
  std::vector<char> reduced(shape.size(), dims.empty() ? 1 : 0);
  for (int64_t d : dims) {
    const int64_t w = wrap_dim_or_scalar(d, n, op, "x is " + shape_str(shape));
    if (n > 0) reduced[size_t(w)] = 1;
  }
  Shape out;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!reduced[i]) out.push_back(shape[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

}  // namespace ember::autodiff::infer
