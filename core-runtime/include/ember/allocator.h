// allocator.h — the caching allocator every device uses, its statistics and its memory cap.
//
// Memory comes from the system in segments and goes back to tensors as blocks cut from them;
// a freed block stays cached and is handed out again, so a training loop that allocates the same
// shapes every step stops calling malloc/cudaMalloc after the first step. The policy is PyTorch's
// CUDA caching allocator's, on every device (core-runtime/README.md explains it):
//   - a request rounds up to a multiple of 512 B;
//   - requests of at most 1 MiB share 2 MiB segments (the small pool); larger ones get a segment
//     of their own rounded to 2 MiB, or of 20 MiB below 10 MiB so that several fit (the large
//     pool);
//   - a request takes the smallest cached block of its pool that fits (best fit), split when the
//     rest is worth keeping (>= 512 B small, > 1 MiB large); a freed block merges with its free
//     neighbours in the segment, so the cache holds few large blocks rather than many small ones;
//   - a block above kMaxSplitSize is never split for a much smaller request (it would strand the
//     rest), only handed out whole to one within kLargeSegment of its size.
// A cap (EMBER_MEMORY_LIMIT=2GiB, or set_memory_limit) bounds the bytes of the blocks handed out
// (split ones count their own size), which is how a test shows that a model "fits on a 2 GiB
// card" on any machine; under a cap, segments are cut no larger than the request when the
// reserve would pass it.
//
// On a device with several streams (CUDA), each segment belongs to the stream it was allocated
// on and is reused only by later allocations on that stream, whose work queues behind its last
// use. A block also used on other streams (record_stream) waits, once freed, until events
// recorded on those streams at the free have completed.
//
// EMBER_LOG_ALLOC=1 logs every allocation and free to stderr, one line each: the bytes asked for
// (and the block that serves them), the device, the address and the op. The op is the `op` that
// allocate() is given, the one an out-of-memory error names (every front function passes its
// name, down to Tensor::empty); a free names the op of the allocation it returns:
//   [ember alloc] alloc 4000 B (block 4096 B, from the system) on cpu at 0x55d1c2e0a000 by ones
//   [ember alloc] free 4000 B (block 4096 B) on cpu at 0x55d1c2e0a000, allocated by ones
// The variable is read once, at the first allocation; set_allocation_logging changes it later.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ember/device.h"

namespace ember {

struct MemoryStats {
  int64_t in_use = 0;              // bytes of the blocks handed out to tensors now (allocated)
  int64_t peak = 0;                // highest in_use since the last reset_peak
  int64_t reserved = 0;            // bytes of the segments obtained from the system
  int64_t peak_reserved = 0;       // highest reserved since the last reset_peak
  int64_t segments = 0;            // segments held now
  int64_t free_blocks = 0;         // cached blocks (reserved - in_use, in pieces)
  int64_t largest_free_block = 0;  // the largest request the cache serves without the system
  int64_t allocations = 0;         // number of allocation requests served
  int64_t system_allocations = 0;  // how many of those reached malloc/cudaMalloc
  int64_t limit = 0;               // the cap in bytes; 0 = none
  int64_t awaiting_streams = 0;    // bytes freed but waiting for other streams' work on them
};

// One block of a segment, as memory_snapshot() reports it.
struct BlockInfo {
  uintptr_t address = 0;
  size_t size = 0;         // the block's bytes
  size_t requested = 0;    // the bytes asked for (allocated blocks)
  bool allocated = false;  // handed out (or awaiting other streams), else cached
  std::string op;          // the op that allocated it (allocated blocks)
};
// One segment: memory obtained from the system at once, cut into blocks in address order.
struct SegmentInfo {
  Device device;
  uintptr_t address = 0;
  size_t size = 0;
  bool small = false;  // of the pool of requests up to 1 MiB
  std::vector<BlockInfo> blocks;
};

// How a device obtains and returns raw memory; the caching layer sits on top.
class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  virtual void* allocate(size_t nbytes) = 0;  // returns nullptr when the system is out of memory
  virtual void deallocate(void* ptr) = 0;
  // Called before every allocation, cached or not: throws when the device cannot hand out memory
  // now (CUDA: while the current stream is being captured into a graph).
  virtual void check_can_allocate(size_t nbytes, const char* op) {}

  // Streams, as opaque handles, for a device that has several (CUDA); a device with one order of
  // work keeps these defaults. The calling thread's current stream:
  virtual void* current_stream() { return nullptr; }
  // An event marking the work queued on `stream` so far, and asking whether it has completed
  // (which also releases it: each event is asked until it says yes, or waited for, once).
  virtual void* record_event(void* stream) { return nullptr; }
  virtual bool event_completed(void* event) { return true; }
  virtual void wait_event(void* event) {}  // waits for it, then releases it
};

class CachingAllocator {
 public:
  // page_locked: the allocator of pinned host memory (its device is the CPU), which errors and
  // the allocation log call "cpu (pinned)" and EMBER_MEMORY_LIMIT does not cap.
  CachingAllocator(Device device, RawAllocator* raw, bool page_locked = false);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Throws OutOfMemoryError naming `op`, the request, in-use, peak and cap when it cannot serve.
  void* allocate(size_t nbytes, const char* op = "allocate");
  void deallocate(void* ptr);
  // The block holding ptr (a pointer allocate returned, or an address inside that block, still
  // in use) is also used by work on `stream`: see the top of this file.
  void record_stream(const void* ptr, void* stream);
  // Whether ptr lies in one of this allocator's blocks.
  bool contains(const void* ptr) const;
  bool page_locked() const { return page_locked_; }

  MemoryStats stats() const;
  std::vector<SegmentInfo> snapshot() const;
  void reset_peak();
  void set_limit(int64_t bytes);  // 0 removes the cap
  void empty_cache();             // returns every cached (unused) block to the system

  // The policy's sizes (see the top of this file).
  static constexpr size_t kMinBlock = 512;                    // the rounding of every request
  static constexpr size_t kSmallRequest = size_t(1) << 20;    // the small pool's largest request
  static constexpr size_t kSmallSegment = size_t(2) << 20;    // the small pool's segments
  static constexpr size_t kLargeSegment = size_t(20) << 20;   // segments of requests < 10 MiB
  static constexpr size_t kMinLargeAlone = size_t(10) << 20;  // from here a segment of its own
  static constexpr size_t kRoundLarge = size_t(2) << 20;      // the rounding of those segments
  static constexpr size_t kMaxSplitSize = size_t(256) << 20;  // larger blocks are not split
  static size_t round_size(size_t nbytes);  // the smallest block a request is served with
  static size_t segment_size(size_t size);  // the segment a new block of `size` is cut from

 private:
  struct Block {
    size_t size = 0;
    void* segment = nullptr;           // the start of its segment
    void* stream = nullptr;            // the stream its segment was allocated on
    bool allocated = false;            // handed out, or awaiting other streams' work
    bool small = false;                // of the small pool
    std::vector<void*> other_streams;  // streams recorded on it since its allocation
    size_t requested = 0;              // the request it serves now
    std::string op;                    // the op it was allocated by
  };
  struct AwaitingBlock {
    void* ptr;
    std::vector<void*> events;  // recorded on the other streams at the free
  };
  using FreeKey = std::tuple<void*, size_t, void*>;  // (stream, size, address)
  using Blocks = std::map<void*, Block>;

  Blocks::const_iterator find_locked(const void* ptr) const;
  std::set<FreeKey>& pool(bool small) { return small ? small_free_ : large_free_; }
  void* take_cached_locked(size_t size, bool small, void* stream);
  void* new_segment_locked(size_t size, bool small, void* stream);
  void split_locked(Blocks::iterator it, size_t size);
  void release_cached_locked();
  void collect_awaiting_locked(bool wait);
  void cache_locked(void* ptr);
  Device device_;
  RawAllocator* raw_;
  bool page_locked_;
  std::string name_;  // "cpu", "cuda:0", "cpu (pinned)": the allocator in messages
  mutable std::mutex mutex_;
  std::set<FreeKey> small_free_, large_free_;  // cached blocks per stream, by size: best fit
  Blocks blocks_;                        // every allocated, awaiting or cached block, by address
  std::vector<AwaitingBlock> awaiting_;  // freed, waiting for other streams' work
  MemoryStats stats_;
};

// The caching allocator of a device.
CachingAllocator& allocator_for(Device device);
MemoryStats memory_stats(Device device = Device());
void reset_peak_memory(Device device = Device());
void set_memory_limit(int64_t bytes, Device device = Device());
void empty_cache(Device device = Device());
// Every segment of the device's allocator and its blocks, in address order.
std::vector<SegmentInfo> memory_snapshot(Device device = Device());
// A short table of the statistics (allocated, reserved, their peaks, the fragmentation, the
// largest free block, the segments) and the ops holding the most bytes now.
std::string memory_summary(Device device = Device());
// The statistics of the pinned host memory of Tensor::pin_memory(): all zero where there is none
// (a build without CUDA, a machine without a GPU).
MemoryStats pinned_memory_stats();

// Whether every allocation and free is logged to stderr (see the top of this file); starts as
// EMBER_LOG_ALLOC says (set and not "0").
void set_allocation_logging(bool on);
bool allocation_logging();

// Parses "2GiB", "512MiB", "1.5 GB", "1000000" into bytes: digits, an optional fraction, an
// optional unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB). Anything else, or more than 2^63 - 1
// bytes, throws ValueError naming `source` (the variable or option the text came from).
int64_t parse_bytes(const std::string& text, const char* source = "parse_bytes");

}  // namespace ember
