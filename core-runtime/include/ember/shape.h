// shape.h — shapes, strides and the small pure functions on them (broadcasting, dim wrapping).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ember {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;  // in elements, not bytes

// Size arithmetic never wraps: each of these throws, naming `op`, ValueError for a negative size
// and ShapeError for a count that int64 cannot hold.
// The number of elements of `shape`.
int64_t shape_numel(const Shape& shape, const char* op = "numel");
// numel * itemsize: the bytes of a dense tensor of `shape`.
int64_t shape_nbytes(const Shape& shape, size_t itemsize, const char* op);
// How many elements of storage a view reaches: 1 + the offset of its last element
// (offset + sum of (size - 1) * stride), or 0 when it has no elements. Sizes, strides and the
// offset must be >= 0 (Ember has no negative strides).
int64_t storage_extent(const Shape& shape, const Strides& strides, int64_t offset, const char* op);
// a * b for sizes (a, b >= 0); `what` says in the error what was being computed.
int64_t checked_size_mul(int64_t a, int64_t b, const char* op, const char* what);

Strides contiguous_strides(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[2, 3]"

// Wraps a possibly negative dim into [0, ndim); throws IndexError naming `op` and `operand` (the
// tensor, e.g. "x is [2, 3] float32 cpu") when out of range. A 0-d tensor has no dims, so every
// dim is out of range for it (as in PyTorch's size(), select(), narrow(), split(), cat()).
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op, const std::string& operand = "");
// As wrap_dim, but a 0-d tensor accepts dim 0 and -1 as its one implicit dim (as PyTorch's
// reductions, softmax, transpose and squeeze do); they wrap to 0.
int64_t wrap_dim_or_scalar(int64_t dim, int64_t ndim, const char* op,
                           const std::string& operand = "");

// NumPy broadcasting of two shapes; throws ShapeError naming `op` when they are incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Strides that view a tensor of (shape, strides) as `target` (which it broadcasts to): broadcast
// dims get stride 0. Assumes broadcast_shapes(shape, target) == target.
Strides broadcast_strides(const Shape& shape, const Strides& strides, const Shape& target);

}  // namespace ember
