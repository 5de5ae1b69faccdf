// storage.cpp — storage owns one allocator block and returns it when the last tensor lets go.
#include "ember/storage.h"

#include "ember/allocator.h"

namespace ember {

StorageImpl::StorageImpl(size_t nbytes, Device device, const char* op)
    : nbytes_(nbytes), device_(device) {
  if (nbytes > 0) data_ = allocator_for(device).allocate(nbytes, op);
}

StorageImpl::~StorageImpl() {
  if (data_) allocator_for(device_).deallocate(data_);
}

}  // namespace ember
