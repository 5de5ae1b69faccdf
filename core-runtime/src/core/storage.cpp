// storage.cpp — storage owns one allocator block, or wraps external memory with its deleter, and
// gives it back when the last tensor lets go.
#include "ember/storage.h"

#include <utility>

#include "ember/allocator.h"
#include "ember/backend.h"
#include "ember/placement.h"

namespace ember {

StorageImpl::StorageImpl(size_t nbytes, Device device, const char* op)
    : nbytes_(nbytes), device_(device) {
  if (nbytes == 0) return;  // an empty tensor of any device, present or not
  // A placement on this thread (placement.h) may serve the request from its arena.
  bool placed = false;
  if (PlacedAllocations* placement = detail::current_placement()) {
    Storage owner;
    data_ = placement->take(nbytes, device, owner);
    placed = data_ != nullptr;
    if (placed) allocator_ = owner->allocator();  // the arena's (or storage's) that contains it
  }
  if (!data_) {
    allocator_ = &allocator_for(device);
    data_ = allocator_->allocate(nbytes, op);
  }
  detail::record_allocation(RecordedAllocation{nbytes, device, data_, placed, false});
}

StorageImpl::StorageImpl(size_t nbytes, Device device, CachingAllocator& allocator, const char* op)
    : nbytes_(nbytes), device_(device), allocator_(&allocator) {
  if (nbytes > 0) data_ = allocator.allocate(nbytes, op);
}

StorageImpl::StorageImpl(void* data, size_t nbytes, Device device, Deleter deleter)
    : data_(data),
      nbytes_(nbytes),
      device_(device),
      external_(true),
      deleter_(std::move(deleter)) {}

StorageImpl::~StorageImpl() {
  if (!external_) {
    if (data_) detail::record_free(data_);
    // A placed block is the arena's: it is only let go of (placement.h).
    if (data_ && !detail::release_placed(data_)) allocator_->deallocate(data_);
    return;
  }
  if (!deleter_) return;
  // Ember's kernels run asynchronously on an accelerator, and the owner may reuse the memory as
  // soon as it has it back: wait for the work queued on it first. (Own blocks need no wait: the
  // caching allocator hands them only to later work on the same stream.)
  if (!device_.is_cpu()) {
    try {
      backend_for(device_, "free external memory").synchronize(device_.index);
    } catch (...) {  // a destructor must not throw; a failed device cannot use the memory anyway
    }
  }
  deleter_(data_);
}

}  // namespace ember
