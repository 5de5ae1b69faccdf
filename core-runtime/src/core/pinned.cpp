// pinned.cpp — pinned (page-locked) host memory: Tensor::pin_memory, is_pinned and their
// statistics. The memory and its caching allocator belong to the backend that copies from it
// (CUDA: cudaHostAlloc); this file only asks for it and reports when there is none.
#include <memory>

#include "ember/allocator.h"
#include "ember/backend.h"
#include "ember/tensor.h"

namespace ember {
namespace {

// The pinned allocator of the CUDA backend, or null (not compiled in, no device present).
CachingAllocator* find_pinned_allocator() {
  Backend* cuda = find_backend(DeviceType::CUDA);
  return cuda ? cuda->pinned_allocator() : nullptr;
}

CachingAllocator& pinned_allocator(const char* op, const Tensor& x) {
  if (!find_backend(DeviceType::CUDA))
    throw NotSupportedError(op, describe(x) +
                                    ": Ember was built without CUDA, and pinned (page-locked) "
                                    "host memory only serves copies to a GPU. Fix: use the "
                                    "tensor as it is, or build Ember with CUDA");
  CachingAllocator* pinned = find_pinned_allocator();
  if (!pinned)
    throw DeviceError(op, describe(x) +
                              ": no CUDA device is present (or no driver), and pinning host "
                              "memory needs one. Fix: use the tensor as it is on a machine "
                              "without a GPU");
  return *pinned;
}

}  // namespace

Tensor Tensor::pin_memory() const {
  const char* op = "pin_memory";
  if (!defined()) throw ValueError(op, "the tensor is undefined");
  if (!device().is_cpu())
    throw DeviceError(op, describe(*this) +
                              " is not on the CPU; only host memory can be pinned. Fix: pin "
                              "the CPU tensor before copying it to the GPU");
  if (is_pinned()) return *this;
  CachingAllocator& allocator = pinned_allocator(op, *this);
  const int64_t bytes = shape_nbytes(shape_, itemsize(), op);
  auto storage = std::make_shared<StorageImpl>(size_t(bytes), Device(), allocator, op);
  Tensor out(storage, shape_, contiguous_strides(shape_), 0, dtype_);
  out.copy_(*this);
  return out;
}

bool Tensor::is_pinned() const {
  if (!storage_ || !storage_->allocator()) return false;
  return storage_->allocator()->page_locked();
}

MemoryStats pinned_memory_stats() {
  CachingAllocator* pinned = find_pinned_allocator();
  return pinned ? pinned->stats() : MemoryStats{};
}

}  // namespace ember
