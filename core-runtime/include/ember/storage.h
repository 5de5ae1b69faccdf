// storage.h — a reference-counted block of device memory that tensors (and their views) share.
// The storage carries a version counter, shared by every view of it, that each in-place write
// bumps.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "ember/device.h"

namespace ember {

class StorageImpl {
 public:
  StorageImpl(size_t nbytes, Device device, const char* op);  // allocates via allocator_for
  ~StorageImpl();
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  // How many in-place writes the memory has had. Only changes are meaningful: an autodiff engine
  // records the version of a tensor it saves for backward, and a different version later means
  // the saved value was overwritten.
  int64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  std::atomic<int64_t> version_{0};
};

using Storage = std::shared_ptr<StorageImpl>;

}  // namespace ember
