// from_blob.h — a tensor over memory Ember did not allocate, as torch::from_blob: a NumPy array's
// buffer, a DLPack tensor, a user's own buffer or cudaMalloc'd pointer.
#pragma once
#include <functional>

#include "ember/tensor.h"

namespace ember {

// A tensor of `sizes` and `strides` (in elements) whose element 0 is at `data`, on `device` (a
// CUDA pointer for a CUDA device: every CUDA op then reads and writes it in place). Ember never
// copies the memory and its allocator does not count it. When the last tensor or view over it
// dies, `deleter(data)` runs, exactly once; on a CUDA device Ember first waits for the work it
// queued there. Without a deleter the caller keeps the memory alive for as long as any view.
//
// Throws ValueError for a negative size or stride, sizes and strides of different lengths, a
// null `data` with elements to hold, a `data` not aligned to the dtype's size, or an extent that
// overflows; DeviceError or NotSupportedError for an unavailable device. When it throws, the
// deleter is not called: the memory is still the caller's.
Tensor from_blob(void* data, const Shape& sizes, const Strides& strides, DType dtype,
                 Device device = Device(), std::function<void(void*)> deleter = nullptr);
// The same for a contiguous (row-major) layout.
Tensor from_blob(void* data, const Shape& sizes, DType dtype, Device device = Device(),
                 std::function<void(void*)> deleter = nullptr);

}  // namespace ember
