// shape.cpp — numel, strides, broadcasting, dim wrapping.
#include "ember/shape.h"

#include <sstream>

#include "ember/error.h"

namespace ember {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

Strides contiguous_strides(const Shape& shape) {
  Strides strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i] > 0 ? shape[i] : 1;
  }
  return strides;
}

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t lo = ndim > 0 ? -ndim : -1, hi = ndim > 0 ? ndim - 1 : 0;  // scalars accept 0 / -1
  if (dim < lo || dim > hi)
    throw IndexError(op, "dim " + std::to_string(dim) + " is out of range for a tensor of " +
                             std::to_string(ndim) + " dims; expected a dim in [" +
                             std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return dim < 0 ? dim + (ndim > 0 ? ndim : 1) : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ShapeError(op, "shapes " + shape_str(a) + " and " + shape_str(b) +
                               " cannot be broadcast: dim " + std::to_string(i) + " is " +
                               std::to_string(da) + " vs " + std::to_string(db) +
                               "; sizes must match or be 1 (reshape or expand one operand)");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Strides broadcast_strides(const Shape& shape, const Strides& strides, const Shape& target) {
  Strides out(target.size(), 0);
  size_t lead = target.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    out[lead + i] = shape[i] == 1 && target[lead + i] != 1 ? 0 : strides[i];
  return out;
}

}  // namespace ember
