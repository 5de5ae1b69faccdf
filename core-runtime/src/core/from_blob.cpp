// from_blob.cpp — tensors over external memory: check the layout, compute how many bytes it
// spans, and wrap the pointer in an external storage.
#include "ember/from_blob.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "ember/backend.h"

namespace ember {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// a * b + c for non-negative operands, or -1 when it would not fit in int64.
int64_t checked_mul_add(int64_t a, int64_t b, int64_t c) {
  if (a != 0 && b > (kInt64Max - c) / a) return -1;
  return a * b + c;
}

[[noreturn]] void throw_too_large(const Shape& sizes, const Strides& strides, const char* op) {
  throw ValueError(op, "sizes " + shape_str(sizes) + " with strides " + shape_str(strides) +
                           " span more than 2^63 bytes; check the sizes and strides");
}

// Bytes from element 0 to the end of the farthest element of a (sizes, strides) layout:
// (1 + sum((size - 1) * stride)) * itemsize, 0 when a size is 0. Sizes and strides are
// non-negative and of one length. Throws ValueError when it does not fit in int64.
int64_t extent_bytes(const Shape& sizes, const Strides& strides, size_t itemsize, const char* op) {
  for (int64_t s : sizes)
    if (s == 0) return 0;
  int64_t elements = 1;
  for (size_t i = 0; i < sizes.size() && elements >= 0; ++i)
    elements = checked_mul_add(sizes[i] - 1, strides[i], elements);
  const int64_t bytes = elements < 0 ? -1 : checked_mul_add(elements, int64_t(itemsize), 0);
  if (bytes < 0) throw_too_large(sizes, strides, op);
  return bytes;
}

void check_layout(const Shape& sizes, const Strides& strides, const char* op) {
  const std::string layout = "sizes " + shape_str(sizes) + " and strides " + shape_str(strides);
  if (sizes.size() != strides.size())
    throw ValueError(op, layout + " differ in length; give one stride per dim");
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i] < 0 || strides[i] < 0)
      throw ValueError(op, layout + ": dim " + std::to_string(i) +
                               " is negative; sizes and strides must be >= 0");
}

// Row-major strides of sizes (as contiguous_strides), checked: a negative size or strides beyond
// int64 throw ValueError.
Strides checked_contiguous_strides(const Shape& sizes, const char* op) {
  check_layout(sizes, Strides(sizes.size(), 0), op);
  Strides strides(sizes.size());
  int64_t stride = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = stride;
    stride = checked_mul_add(stride, std::max<int64_t>(sizes[i], 1), 0);
    if (stride < 0) throw_too_large(sizes, strides, op);
  }
  return strides;
}

}  // namespace

Tensor from_blob(void* data, const Shape& sizes, const Strides& strides, DType dtype, Device device,
                 std::function<void(void*)> deleter) {
  const char* op = "from_blob";
  check_layout(sizes, strides, op);
  const int64_t nbytes = extent_bytes(sizes, strides, itemsize(dtype), op);
  if (!data && nbytes > 0)
    throw ValueError(op, "data is null but sizes " + shape_str(sizes) +
                             " hold elements; pass the address of the memory");
  if (reinterpret_cast<uintptr_t>(data) % itemsize(dtype) != 0)
    throw ValueError(op, std::string("data is not aligned to the ") +
                             std::to_string(itemsize(dtype)) + " bytes of a " + dtype_name(dtype) +
                             "; pass an aligned address or copy the data first");
  backend_for(device, op);  // the device exists
  auto storage = std::make_shared<StorageImpl>(data, size_t(nbytes), device, std::move(deleter));
  return Tensor(std::move(storage), sizes, strides, 0, dtype);
}

Tensor from_blob(void* data, const Shape& sizes, DType dtype, Device device,
                 std::function<void(void*)> deleter) {
  Strides strides = checked_contiguous_strides(sizes, "from_blob");
  return from_blob(data, sizes, strides, dtype, device, std::move(deleter));
}

}  // namespace ember
