// infer.cpp — the shared shape/dtype rules of infer.h.
#include "infer.h"

#include <algorithm>

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

std::vector<TensorType> same_as_first(const std::vector<TensorType>& in, const Attrs&) {
  if (in.empty()) throw ValueError("infer", "no inputs");
  return {in[0]};
}

TensorType broadcast(const char* op, const TensorType& a, const TensorType& b) {
  same_device(op, {a, b});
  return TensorType{broadcast_shapes(a.shape, b.shape, op), promote_types(a.dtype, b.dtype),
                    a.device};
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
