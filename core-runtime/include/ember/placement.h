// placement.h — recording which allocations an op makes, and serving them from a planned arena.
//
// A compiled step runs the same ops on the same shapes every time, so the allocations each op
// asks for are known after one run. Two tools, both scoped (RAII) and both for the calling thread
// only (other threads allocate as usual while they are alive):
//   - AllocationRecorder logs every request of device memory the thread makes while it lives:
//     the bytes, the device, the pointer it got and whether it was freed again before the
//     recorder ended. Run an op under one and you know its allocations, in order.
//   - PlacedAllocations serves the thread's next requests on one device, in order, from given
//     offsets of an arena: a tensor the caller allocated beforehand from the caching allocator
//     (so the memory cap still applies to the arena as a whole). A request of exactly the next
//     slot's bytes gets that slot; any other request (another size, or one past the last slot) is
//     a miss and is served normally by the caching allocator. The slot then waits for the next
//     request. A slot at offset kServeNormally passes its request (of its size) to the caching
//     allocator on purpose: a request the plan leaves out of the arena. A slot may also lie in
//     another storage than the arena (a tensor that outlives the step, such as a parameter's
//     .grad, which an op's output is then computed in). The caching allocator's counters (in use,
//     peak, allocations) do not move for a placed request: its memory is the arena's (or that
//     storage's), counted once when it was allocated.
// A placed tensor keeps the storage it lies in alive; nothing is freed when it dies. (The hook is
// in storage.cpp: the caching allocator itself never sees a placed request.) Two placed tensors
// may share bytes (that is what a memory plan is for): whoever gives the slots says which may.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ember/device.h"
#include "ember/export.h"
#include "ember/storage.h"

namespace ember {

struct RecordedAllocation {
  size_t nbytes = 0;     // the bytes asked for (not rounded)
  Device device;         // the device the memory is on
  void* data = nullptr;  // where it was served
  bool placed = false;   // served by a PlacedAllocations slot rather than the caching allocator
  bool freed = false;    // freed again while the recorder was alive
};

class EMBER_API AllocationRecorder {
 public:
  AllocationRecorder();   // starts recording this thread's requests (recorders may nest)
  ~AllocationRecorder();  // stops
  AllocationRecorder(const AllocationRecorder&) = delete;
  AllocationRecorder& operator=(const AllocationRecorder&) = delete;

  // Every request since construction, in order. Requests of 0 bytes allocate nothing and are
  // not listed.
  const std::vector<RecordedAllocation>& allocations() const { return allocations_; }

  // Called by storage (internal): a request was served / memory at `data` was freed.
  void on_allocate(const RecordedAllocation& a) { allocations_.push_back(a); }
  void on_free(const void* data);

 private:
  std::vector<RecordedAllocation> allocations_;
};

// One place: `nbytes` (exactly the request it serves) at `offset` bytes of the arena, or of
// `storage` when that is set; or kServeNormally: that request is served by the caching
// allocator, not counted as a miss.
constexpr int64_t kServeNormally = -1;
struct PlacementSlot {
  int64_t offset = 0;
  size_t nbytes = 0;
  Storage storage;  // the memory the slot lies in; null: the arena
};

class EMBER_API PlacedAllocations {
 public:
  // arena: the storage of a tensor the caller allocated; every slot must lie inside it or inside
  // its own storage, which must be Ember's own memory on the same device (ValueError naming the
  // slot otherwise). The arena may be null when no slot lies in it. Serves this thread's requests
  // on that device.
  PlacedAllocations(Storage arena, std::vector<PlacementSlot> slots);
  // No slots: every request on `device` is served normally (shadowing an outer placement, for
  // requests its plan did not count).
  explicit PlacedAllocations(Device device);
  ~PlacedAllocations();
  PlacedAllocations(const PlacedAllocations&) = delete;
  PlacedAllocations& operator=(const PlacedAllocations&) = delete;

  int64_t placed() const { return placed_; }  // requests served from a slot (kServeNormally too)
  int64_t misses() const { return misses_; }  // requests served normally instead
  bool done() const { return next_ == slots_.size(); }  // every slot was used

  // Called by storage (internal): the slot's address for a request of `nbytes` on `device`, or
  // null when the request is not this placement's (another device) or is a miss. `owner` is
  // set to the storage the address lies in.
  void* take(size_t nbytes, Device device, Storage& owner);
  const Storage& arena() const { return arena_; }

 private:
  Storage arena_;
  Device device_;
  std::vector<PlacementSlot> slots_;
  size_t next_ = 0;
  int64_t placed_ = 0;
  int64_t misses_ = 0;
  PlacedAllocations* outer_ = nullptr;  // the placement this one shadows on this thread
};

namespace detail {
// The hooks storage calls for memory of the device's own caching allocator.
// The innermost PlacedAllocations of this thread serving `device`, or null.
EMBER_API PlacedAllocations* current_placement();
EMBER_API void record_allocation(const RecordedAllocation& a);
// Whether `data` is a placed block (then forgotten, and its arena let go of): storage frees it
// no further.
EMBER_API bool release_placed(const void* data);
EMBER_API void record_free(const void* data);
}  // namespace detail

}  // namespace ember
