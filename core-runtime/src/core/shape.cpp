// shape.cpp — numel, strides, broadcasting, dim wrapping.
#include "ember/shape.h"

#include <sstream>

#include "ember/error.h"

namespace ember {

namespace {
[[noreturn]] void throw_overflow(const char* op, const std::string& what) {
  throw ShapeError(op, what + " overflows int64 (more than 2^63 - 1); use smaller sizes");
}

void check_sizes(const Shape& shape, const char* op) {
  for (int64_t s : shape)
    if (s < 0)
      throw ValueError(op,
                       "shape " + shape_str(shape) + " has a negative size; sizes must be >= 0");
}
}  // namespace

int64_t checked_size_mul(int64_t a, int64_t b, const char* op, const char* what) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product))
    throw_overflow(op,
                   std::string(what) + " (" + std::to_string(a) + " * " + std::to_string(b) + ")");
  return product;
}

int64_t shape_numel(const Shape& shape, const char* op) {
  check_sizes(shape, op);
  // Zero sizes count as 1 in the overflow check: contiguous strides multiply the other sizes.
  int64_t n = 1;
  bool empty = false;
  for (int64_t s : shape) {
    empty |= s == 0;
    if (__builtin_mul_overflow(n, s == 0 ? 1 : s, &n))
      throw_overflow(op, "the number of elements of shape " + shape_str(shape));
  }
  return empty ? 0 : n;
}

int64_t shape_nbytes(const Shape& shape, size_t itemsize, const char* op) {
  int64_t nbytes = 0;
  if (__builtin_mul_overflow(shape_numel(shape, op), int64_t(itemsize), &nbytes))
    throw_overflow(op, "the byte size of shape " + shape_str(shape) + " with " +
                           std::to_string(itemsize) + "-byte elements");
  return nbytes;
}

int64_t storage_extent(const Shape& shape, const Strides& strides, int64_t offset, const char* op) {
  if (shape.size() != strides.size())
    throw ShapeError(op, "shape " + shape_str(shape) + " and strides " + shape_str(strides) +
                             " differ in length");
  for (int64_t s : strides)
    if (s < 0)
      throw ValueError(op, "strides " + shape_str(strides) +
                               " have a negative stride; Ember has no negative strides (copy "
                               "the data in the order you need instead)");
  if (offset < 0)
    throw ValueError(op, "storage offset " + std::to_string(offset) + " must be >= 0");
  if (shape_numel(shape, op) == 0) return 0;
  int64_t last = offset, step = 0;
  bool overflow = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    overflow |= __builtin_mul_overflow(shape[i] - 1, strides[i], &step);
    overflow |= __builtin_add_overflow(last, step, &last);
  }
  if (overflow || last == INT64_MAX)
    throw_overflow(op, "the storage reached by shape " + shape_str(shape) + " with strides " +
                           shape_str(strides) + " and offset " + std::to_string(offset));
  return last + 1;
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

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op, const std::string& operand) {
  const std::string who = operand.empty() ? "" : operand + "; ";
  if (ndim == 0)
    throw IndexError(op, who + "dimension specified as " + std::to_string(dim) +
                             " but tensor has no dimensions (it is 0-d); unsqueeze(0) or "
                             "reshape({1}) it first");
  if (dim < -ndim || dim >= ndim)
    throw IndexError(op, who + "dim " + std::to_string(dim) + " is out of range for a tensor of " +
                             std::to_string(ndim) + " dims; expected a dim in [" +
                             std::to_string(-ndim) + ", " + std::to_string(ndim - 1) + "]");
  return dim < 0 ? dim + ndim : dim;
}

int64_t wrap_dim_or_scalar(int64_t dim, int64_t ndim, const char* op, const std::string& operand) {
  return wrap_dim(dim, ndim == 0 ? 1 : ndim, op, operand);
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
