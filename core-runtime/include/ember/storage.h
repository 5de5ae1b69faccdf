// storage.h — a reference-counted block of device memory that tensors (and their views) share.
#pragma once
#include <cstddef>
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

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
};

using Storage = std::shared_ptr<StorageImpl>;

}  // namespace ember
