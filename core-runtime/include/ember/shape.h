// shape.h — shapes, strides and the small pure functions on them (broadcasting, dim wrapping).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ember {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;  // in elements, not bytes

int64_t shape_numel(const Shape& shape);
Strides contiguous_strides(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[2, 3]"

// Wraps a possibly negative dim into [0, ndim); throws IndexError naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

// NumPy broadcasting of two shapes; throws ShapeError naming `op` when they are incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Strides that view a tensor of (shape, strides) as `target` (which it broadcasts to): broadcast
// dims get stride 0. Assumes broadcast_shapes(shape, target) == target.
Strides broadcast_strides(const Shape& shape, const Strides& strides, const Shape& target);

}  // namespace ember
