// storage.h — a reference-counted block of device memory that tensors (and their views) share.
//
// The memory is either Ember's own, a block of the device's caching allocator, or external: a
// pointer another library allocated (NumPy, DLPack, a user's buffer) with the deleter that gives
// it back. Either way the storage carries a version counter, shared by every view of it, that
// each in-place write bumps.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "ember/device.h"

namespace ember {

class CachingAllocator;

class StorageImpl {
 public:
  using Deleter = std::function<void(void*)>;

  // Ember's own memory: nbytes from the device's caching allocator, returned to it at the end.
  StorageImpl(size_t nbytes, Device device, const char* op);
  // The same from another of Ember's caching allocators (the pinned host memory of pin_memory,
  // whose device is the CPU).
  StorageImpl(size_t nbytes, Device device, CachingAllocator& allocator, const char* op);
  // External memory at `data`, nbytes long, on `device`: the caching allocator never sees it (nor
  // counts it in its statistics). `deleter(data)` runs exactly once, when the storage dies; it
  // must not throw. An empty deleter leaves the memory to its owner, who must keep it alive.
  StorageImpl(void* data, size_t nbytes, Device device, Deleter deleter);
  ~StorageImpl();
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  bool is_external() const { return external_; }
  // The allocator own memory came from and goes back to; null for external memory.
  CachingAllocator* allocator() const { return allocator_; }

  // How many in-place writes the memory has had. Only changes are meaningful: an autodiff engine
  // records the version of a tensor it saves for backward, and a different version later means
  // the saved value was overwritten.
  int64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  bool external_ = false;
  CachingAllocator* allocator_ = nullptr;  // own memory only
  Deleter deleter_;                        // external memory only
  std::atomic<int64_t> version_{0};
};

using Storage = std::shared_ptr<StorageImpl>;

}  // namespace ember
