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

// One output of the first input's type (unary elementwise, x -> x).
std::vector<TensorType> same_as_first(const std::vector<TensorType>& in, const Attrs&);
// NumPy broadcasting of in[0] and in[1], dtype promoted (add, mul, ...).
TensorType broadcast(const char* op, const TensorType& a, const TensorType& b);
// The shape `shape` with the dims `dims` removed (or set to 1 when keepdim); dims empty = all.
Shape reduce_shape(const char* op, const Shape& shape, const std::vector<int64_t>& dims,
                   bool keepdim);

}  // namespace ember::autodiff::infer
