// placement.cpp — this thread's allocation recorders and placements (see placement.h). Storage
// asks current_placement() before the caching allocator, and reports each request and free.
#include "ember/placement.h"

#include <atomic>
#include <mutex>
#include <string>
#include <unordered_map>

#include "ember/error.h"

namespace ember {

namespace {
// The active recorders of this thread (every one sees every request), and the innermost
// placement (each shadows the one before it until it ends).
thread_local std::vector<AllocationRecorder*> t_recorders;
thread_local PlacedAllocations* t_placement = nullptr;

// Every placed block alive, by address, with the storage (the arena) it keeps alive. Two may
// share an address (a plan overlays buffers whose lives do not meet, and in-place reuse writes an
// output over its input). Any thread may free a placed tensor, hence the lock; `g_placed` spares
// every other free the lock while there are none.
std::atomic<int64_t> g_placed{0};
std::mutex g_placed_mutex;
std::unordered_multimap<const void*, Storage>& placed_blocks() {
  static auto* blocks = new std::unordered_multimap<const void*, Storage>();  // never destroyed:
  return *blocks;  // placed tensors may outlive static destruction
}
}  // namespace

AllocationRecorder::AllocationRecorder() { t_recorders.push_back(this); }

AllocationRecorder::~AllocationRecorder() {
  for (size_t k = t_recorders.size(); k-- > 0;) {
    if (t_recorders[k] == this) {
      t_recorders.erase(t_recorders.begin() + std::ptrdiff_t(k));
      break;
    }
  }
}

void AllocationRecorder::on_free(const void* data) {
  // The latest request at that address: an address is reused once its memory was freed.
  for (size_t k = allocations_.size(); k-- > 0;) {
    if (allocations_[k].data == data && !allocations_[k].freed) {
      allocations_[k].freed = true;
      return;
    }
  }
}

PlacedAllocations::PlacedAllocations(Storage arena, std::vector<PlacementSlot> slots)
    : arena_(std::move(arena)), slots_(std::move(slots)) {
  const char* op = "PlacedAllocations";
  auto own = [](const Storage& s) { return s && !s->is_external(); };
  if (arena_ && !own(arena_))
    throw ValueError(op,
                     "the arena must be the storage of a tensor allocated from Ember's caching "
                     "allocator (so that the memory cap covers it); got external memory");
  bool found_device = bool(arena_);
  if (arena_) device_ = arena_->device();
  for (size_t k = 0; k < slots_.size(); ++k) {
    const PlacementSlot& s = slots_[k];
    if (s.offset == kServeNormally) continue;
    const Storage& in = s.storage ? s.storage : arena_;
    const std::string where = "slot " + std::to_string(k) + " (" + std::to_string(s.nbytes) +
                              " B at offset " + std::to_string(s.offset) + ")";
    if (!in)
      throw ValueError(op, where +
                               " lies in the arena, and there is none; allocate an arena as "
                               "large as the plan's peak");
    if (!own(in))
      throw ValueError(op, where +
                               " lies in external memory; expected memory of Ember's caching "
                               "allocator");
    if (!found_device) device_ = in->device(), found_device = true;
    if (in->device() != device_)
      throw ValueError(op, where + " lies on " + in->device().str() + ", the others on " +
                               device_.str() + "; expected one device");
    const int64_t size = int64_t(in->nbytes());
    if (s.offset < 0 || s.offset + int64_t(s.nbytes) > size)
      throw ValueError(op, where + " does not lie inside the " +
                               std::string(s.storage ? "storage" : "arena") + " of " +
                               std::to_string(size) + " B; " +
                               (s.storage ? "place it inside that storage"
                                          : "allocate an arena as large as the plan's peak"));
  }
  if (!found_device)
    throw ValueError(op,
                     "got no arena and no slot with a storage of its own: nothing to serve "
                     "requests from");
  outer_ = t_placement;
  t_placement = this;
}

PlacedAllocations::PlacedAllocations(Device device) : device_(device) {
  outer_ = t_placement;
  t_placement = this;
}

PlacedAllocations::~PlacedAllocations() {
  // Placements end in the reverse order they began (they are scoped), so this one is innermost.
  t_placement = outer_;
}

void* PlacedAllocations::take(size_t nbytes, Device device, Storage& owner) {
  if (device != device_) return nullptr;
  if (next_ == slots_.size() || slots_[next_].nbytes != nbytes) {
    ++misses_;
    return nullptr;
  }
  ++placed_;
  const PlacementSlot& slot = slots_[next_++];
  if (slot.offset == kServeNormally) return nullptr;
  owner = slot.storage ? slot.storage : arena_;
  void* data = static_cast<char*>(owner->data()) + slot.offset;
  {
    std::lock_guard<std::mutex> lock(g_placed_mutex);
    placed_blocks().emplace(data, owner);
  }
  g_placed.fetch_add(1, std::memory_order_relaxed);
  return data;
}

namespace detail {

PlacedAllocations* current_placement() { return t_placement; }

void record_allocation(const RecordedAllocation& a) {
  for (AllocationRecorder* r : t_recorders) r->on_allocate(a);
}

bool release_placed(const void* data) {
  if (g_placed.load(std::memory_order_relaxed) == 0) return false;
  Storage arena;  // let go of after the lock: the arena's own free comes back here
  {
    std::lock_guard<std::mutex> lock(g_placed_mutex);
    auto it = placed_blocks().find(data);
    if (it == placed_blocks().end()) return false;
    arena = std::move(it->second);
    placed_blocks().erase(it);
  }
  g_placed.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

void record_free(const void* data) {
  for (AllocationRecorder* r : t_recorders) r->on_free(data);
}

}  // namespace detail

}  // namespace ember
