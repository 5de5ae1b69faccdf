// allocator.cpp — the caching allocator (one per device) and the memory cap.
//
// Compiled mode places tensors inside an arena that is one block of this allocator
// (ember/placement.h); storage serves those requests from the arena before asking here, so
// allocate() and the statistics never see them: the arena's bytes are counted once, as one block.
#include "ember/allocator.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>

#include "core/parse.h"
#include "ember/backend.h"
#include "ember/error.h"

namespace ember {

namespace {
constexpr size_t kLargestRequest = size_t(1) << 62;

std::string human_bytes(int64_t b) {
  std::ostringstream os;
  os.precision(3);
  if (b >= (int64_t(1) << 30)) os << double(b) / double(int64_t(1) << 30) << " GiB";
  else if (b >= (1 << 20)) os << double(b) / double(1 << 20) << " MiB";
  else if (b >= (1 << 10)) os << double(b) / double(1 << 10) << " KiB";
  else os << b << " B";
  return os.str();
}

std::atomic<bool>& log_flag() {
  static std::atomic<bool> flag{[] {
    const char* env = std::getenv("EMBER_LOG_ALLOC");
    return env && *env != '\0' && std::strcmp(env, "0") != 0;
  }()};
  return flag;
}

struct Unit {
  const char* name;
  int64_t scale;
};
constexpr Unit kUnits[] = {{"", 1},
                           {"B", 1},
                           {"KB", 1000},
                           {"MB", 1000 * 1000},
                           {"GB", 1000 * 1000 * 1000},
                           {"TB", int64_t(1000) * 1000 * 1000 * 1000},
                           {"KiB", int64_t(1) << 10},
                           {"MiB", int64_t(1) << 20},
                           {"GiB", int64_t(1) << 30},
                           {"TiB", int64_t(1) << 40}};

std::optional<int64_t> unit_scale(const std::string& unit) {
  for (const Unit& u : kUnits)
    if (unit == u.name) return u.scale;
  return std::nullopt;
}

// whole.fraction * scale in bytes, rounded; nullopt when it does not fit int64.
std::optional<int64_t> scaled_bytes(int64_t whole, const std::string& fraction, int64_t scale) {
  int64_t bytes = 0;
  if (__builtin_mul_overflow(whole, scale, &bytes)) return std::nullopt;
  if (fraction.empty()) return bytes;
  // A fraction of one unit is below 2^40 bytes: long double rounds it exactly enough.
  const long double part = std::stold("0." + fraction) * static_cast<long double>(scale);
  if (__builtin_add_overflow(bytes, std::llround(part), &bytes)) return std::nullopt;
  return bytes;
}
}  // namespace

void set_allocation_logging(bool on) { log_flag().store(on, std::memory_order_relaxed); }
bool allocation_logging() { return log_flag().load(std::memory_order_relaxed); }

int64_t parse_bytes(const std::string& text, const char* source) {
  const std::string forms =
      "; expected digits, an optional fraction and an optional unit (B, KB, MB, GB, TB, KiB, MiB, "
      "GiB, TiB), e.g. '2GiB', '512MiB', '1.5GB' or '1000000'";
  size_t digits_end = 0;
  while (digits_end < text.size() && std::isdigit(static_cast<unsigned char>(text[digits_end])))
    ++digits_end;
  size_t fraction_end = digits_end;
  if (fraction_end < text.size() && text[fraction_end] == '.') {
    ++fraction_end;
    while (fraction_end < text.size() &&
           std::isdigit(static_cast<unsigned char>(text[fraction_end])))
      ++fraction_end;
  }
  const std::optional<int64_t> whole = parse_decimal(text.substr(0, digits_end));
  const std::string fraction =
      fraction_end > digits_end ? text.substr(digits_end + 1, fraction_end - digits_end - 1) : "";
  size_t unit_begin = fraction_end;
  while (unit_begin < text.size() && text[unit_begin] == ' ') ++unit_begin;  // "1.5 MB"
  const std::optional<int64_t> scale = unit_scale(text.substr(unit_begin));
  if (digits_end == 0 || !scale || (fraction_end > digits_end && fraction.empty()))
    throw ValueError(source, "cannot parse '" + text + "' as a size" + forms);
  const std::optional<int64_t> bytes = whole ? scaled_bytes(*whole, fraction, *scale) : whole;
  if (!bytes) throw ValueError(source, "'" + text + "' is more than 2^63 - 1 bytes" + forms);
  return *bytes;
}

CachingAllocator::CachingAllocator(Device device, RawAllocator* raw, bool page_locked)
    : device_(device),
      raw_(raw),
      page_locked_(page_locked),
      name_(device.str() + (page_locked ? " (pinned)" : "")) {
  // The cap bounds a device's memory; pinned host memory is the host's, and not capped.
  if (const char* env = std::getenv("EMBER_MEMORY_LIMIT"); env && !page_locked)
    stats_.limit = parse_bytes(env, "EMBER_MEMORY_LIMIT");
}

CachingAllocator::~CachingAllocator() {
  // Blocks still in use at exit (static tensors) are left to the OS; cached ones are returned.
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
}

size_t CachingAllocator::round_size(size_t nbytes) {
  return std::max(kMinBlock, (nbytes + kMinBlock - 1) / kMinBlock * kMinBlock);
}

size_t CachingAllocator::segment_size(size_t size) {
  if (size <= kSmallRequest) return kSmallSegment;
  if (size < kMinLargeAlone) return kLargeSegment;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

void* CachingAllocator::allocate(size_t nbytes, const char* op) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto fail = [&](const std::string& why) -> void* {
    throw OutOfMemoryError(op, "cannot allocate " + human_bytes(int64_t(nbytes)) + " on " + name_ +
                                   " (" + why + "): in use " + human_bytes(stats_.in_use) +
                                   ", peak " + human_bytes(stats_.peak) + ", reserved " +
                                   human_bytes(stats_.reserved) + ", cap " +
                                   (stats_.limit ? human_bytes(stats_.limit) : "none") +
                                   ". Reduce the batch size, free tensors, or raise the cap "
                                   "(EMBER_MEMORY_LIMIT / set_memory_limit)");
  };
  // No device holds 2^62 bytes; refusing more up front also keeps the sizes and the byte counts
  // below far from overflowing.
  if (nbytes > kLargestRequest) return fail("more than any device holds");
  raw_->check_can_allocate(nbytes, op);
  const size_t size = round_size(nbytes);
  if (stats_.limit && stats_.in_use + int64_t(size) > stats_.limit) return fail("over the cap");

  collect_awaiting_locked(false);
  void* const stream = raw_->current_stream();
  const bool small = size <= kSmallRequest;
  void* ptr = take_cached_locked(size, small, stream);
  const bool cached = ptr != nullptr;
  if (!ptr) {
    ptr = new_segment_locked(size, small, stream);
    if (!ptr) {  // the system is full: return the cache and retry once
      release_cached_locked();
      ptr = new_segment_locked(size, small, stream);
    }
    if (!ptr) return fail("the device is out of memory");
  }
  auto it = blocks_.find(ptr);
  split_locked(it, size);
  Block& b = it->second;
  if (stats_.limit && stats_.in_use + int64_t(b.size) > stats_.limit) {
    cache_locked(ptr);  // an oversize block, handed out whole, would pass the cap
    return fail("over the cap");
  }
  b.allocated = true;
  b.requested = nbytes;
  b.op = op;
  stats_.in_use += int64_t(b.size);
  stats_.peak = std::max(stats_.peak, stats_.in_use);
  ++stats_.allocations;
  if (allocation_logging())
    std::fprintf(stderr, "[ember alloc] alloc %zu B (block %zu B, %s) on %s at %p by %s\n", nbytes,
                 b.size, cached ? "cached" : "from the system", name_.c_str(), ptr, op);
  return ptr;
}

// The smallest cached block of the stream's pool that holds `size` bytes (removed from the
// cache), or null. A block above kMaxSplitSize serves only a request within kLargeSegment of its
// size: cut for a smaller one, its rest would be stranded. Larger blocks would be worse still.
void* CachingAllocator::take_cached_locked(size_t size, bool small, void* stream) {
  std::set<FreeKey>& free = pool(small);
  auto it = free.lower_bound(FreeKey{stream, size, nullptr});
  if (it == free.end() || std::get<0>(*it) != stream) return nullptr;
  const size_t found = std::get<1>(*it);
  if (found > kMaxSplitSize && (size <= kMaxSplitSize || found - size >= kLargeSegment))
    return nullptr;
  void* ptr = std::get<2>(*it);
  free.erase(it);
  return ptr;
}

// A new segment from the system for a block of `size` bytes, as one free block (not cached yet);
// null when the system is out of memory.
void* CachingAllocator::new_segment_locked(size_t size, bool small, void* stream) {
  size_t bytes = segment_size(size);
  // Under a cap, the reserve grows by no more than the request once it would pass the cap.
  if (stats_.limit && stats_.reserved + int64_t(bytes) > stats_.limit) bytes = size;
  void* ptr = raw_->allocate(bytes);
  if (!ptr) return nullptr;
  Block& b = blocks_[ptr];
  b.size = bytes;
  b.segment = ptr;
  b.stream = stream;
  b.small = small;
  stats_.reserved += int64_t(bytes);
  stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.reserved);
  ++stats_.segments;
  ++stats_.system_allocations;
  return ptr;
}

// Cuts the free block at `it` to `size` bytes, caching the rest as a block of its own: always
// when the rest can hold a request (>= 512 B), so that a block counts only the bytes its tensor
// asked for (rounded), except an oversize block (see take_cached_locked), handed out whole.
void CachingAllocator::split_locked(Blocks::iterator it, size_t size) {
  Block& b = it->second;
  const size_t rest = b.size - size;
  if (rest < kMinBlock || size > kMaxSplitSize) return;
  void* tail = static_cast<char*>(it->first) + size;
  Block& t = blocks_[tail];  // std::map: `b` stays valid
  t.size = rest;
  t.segment = b.segment;
  t.stream = b.stream;
  t.small = b.small;
  b.size = size;
  pool(t.small).emplace(t.stream, t.size, tail);
}

void CachingAllocator::deallocate(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  Block& b = blocks_.at(ptr);
  stats_.in_use -= int64_t(b.size);
  if (allocation_logging())
    std::fprintf(stderr, "[ember alloc] free %zu B (block %zu B) on %s at %p, allocated by %s\n",
                 b.requested, b.size, name_.c_str(), ptr, b.op.c_str());
  if (b.other_streams.empty()) {
    cache_locked(ptr);
    return;
  }
  AwaitingBlock a{ptr, {}};
  for (void* s : b.other_streams) a.events.push_back(raw_->record_event(s));
  b.other_streams.clear();
  stats_.awaiting_streams += int64_t(b.size);
  awaiting_.push_back(std::move(a));
}

CachingAllocator::Blocks::const_iterator CachingAllocator::find_locked(const void* ptr) const {
  auto it = blocks_.upper_bound(const_cast<void*>(ptr));  // the first block after ptr
  if (it == blocks_.begin()) return blocks_.end();
  --it;
  const auto start = reinterpret_cast<uintptr_t>(it->first);
  return reinterpret_cast<uintptr_t>(ptr) < start + it->second.size ? it : blocks_.end();
}

bool CachingAllocator::contains(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return find_locked(ptr) != blocks_.end();
}

void CachingAllocator::record_stream(const void* ptr, void* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = find_locked(ptr);
  if (found == blocks_.end())
    throw ValueError("record_stream", "the address is in no block of the " + name_ +
                                          " allocator; only its own memory can be recorded");
  Block& b = blocks_.at(found->first);
  if (stream == b.stream) return;  // its own stream orders its reuse already
  for (void* s : b.other_streams)
    if (s == stream) return;
  b.other_streams.push_back(stream);
}

// Returns a block to the cache, merged with its free neighbours in the segment: the cache then
// holds one block per free stretch, which serves the largest request it can.
void CachingAllocator::cache_locked(void* ptr) {
  auto it = blocks_.find(ptr);
  it->second.allocated = false;
  it->second.op.clear();
  it->second.requested = 0;
  auto mergeable = [&](Blocks::iterator n) {
    return n != blocks_.end() && !n->second.allocated && n->second.segment == it->second.segment;
  };
  auto uncache = [&](Blocks::iterator n) {
    pool(n->second.small).erase(FreeKey{n->second.stream, n->second.size, n->first});
  };
  if (auto next = std::next(it); mergeable(next)) {
    uncache(next);
    it->second.size += next->second.size;
    blocks_.erase(next);
  }
  if (it != blocks_.begin()) {
    if (auto prev = std::prev(it); mergeable(prev)) {
      uncache(prev);
      prev->second.size += it->second.size;
      blocks_.erase(it);
      it = prev;
    }
  }
  pool(it->second.small).emplace(it->second.stream, it->second.size, it->first);
}

// Moves the awaiting blocks whose events have all completed (all of them, waiting, with `wait`)
// to the cache. A completed event is released as it is asked, so it is dropped from the list.
void CachingAllocator::collect_awaiting_locked(bool wait) {
  for (size_t i = 0; i < awaiting_.size();) {
    std::vector<void*>& events = awaiting_[i].events;
    for (size_t e = 0; e < events.size();) {
      if (wait) raw_->wait_event(events[e]);
      if (wait || raw_->event_completed(events[e])) {
        events[e] = events.back();
        events.pop_back();
      } else {
        ++e;
      }
    }
    if (!events.empty()) {
      ++i;
      continue;
    }
    stats_.awaiting_streams -= int64_t(blocks_.at(awaiting_[i].ptr).size);
    cache_locked(awaiting_[i].ptr);
    awaiting_[i] = std::move(awaiting_.back());
    awaiting_.pop_back();
  }
}

// Returns every segment that is one free block to the system; segments with a block in use stay.
void CachingAllocator::release_cached_locked() {
  collect_awaiting_locked(true);
  for (std::set<FreeKey>* free : {&small_free_, &large_free_}) {
    for (auto f = free->begin(); f != free->end();) {
      auto it = blocks_.find(std::get<2>(*f));
      auto next = std::next(it);
      const bool whole = it->first == it->second.segment &&
                         (next == blocks_.end() || next->second.segment != it->second.segment);
      if (!whole) {
        ++f;
        continue;
      }
      raw_->deallocate(it->first);
      stats_.reserved -= int64_t(it->second.size);
      --stats_.segments;
      blocks_.erase(it);
      f = free->erase(f);
    }
  }
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  MemoryStats s = stats_;
  s.free_blocks = int64_t(small_free_.size() + large_free_.size());
  for (const std::set<FreeKey>* free : {&small_free_, &large_free_})
    for (const FreeKey& f : *free)
      s.largest_free_block = std::max(s.largest_free_block, int64_t(std::get<1>(f)));
  return s;
}

std::vector<SegmentInfo> CachingAllocator::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<SegmentInfo> out;
  for (const auto& [ptr, b] : blocks_) {
    if (ptr == b.segment) {
      out.emplace_back();
      out.back().device = device_;
      out.back().address = reinterpret_cast<uintptr_t>(ptr);
      out.back().small = b.small;
    }
    SegmentInfo& seg = out.back();  // blocks_ is in address order: a segment's blocks follow it
    seg.size += b.size;
    seg.blocks.push_back(
        BlockInfo{reinterpret_cast<uintptr_t>(ptr), b.size, b.requested, b.allocated, b.op});
  }
  return out;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak = stats_.in_use;
  stats_.peak_reserved = stats_.reserved;
}

void CachingAllocator::set_limit(int64_t bytes) {
  if (bytes < 0) throw ValueError("set_memory_limit", "limit must be >= 0 bytes (0 = no cap)");
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.limit = bytes;
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
}

CachingAllocator& allocator_for(Device device) {
  return backend_for(device, "allocator").allocator(device.index);
}
MemoryStats memory_stats(Device device) { return allocator_for(device).stats(); }
void reset_peak_memory(Device device) { allocator_for(device).reset_peak(); }
void set_memory_limit(int64_t bytes, Device device) { allocator_for(device).set_limit(bytes); }
void empty_cache(Device device) { allocator_for(device).empty_cache(); }
std::vector<SegmentInfo> memory_snapshot(Device device) { return allocator_for(device).snapshot(); }

std::string memory_summary(Device device) {
  const MemoryStats s = memory_stats(device);
  std::map<std::string, int64_t> by_op;  // the bytes of the blocks each op holds now
  for (const SegmentInfo& seg : memory_snapshot(device))
    for (const BlockInfo& b : seg.blocks)
      if (b.allocated) by_op[b.op] += int64_t(b.size);
  std::vector<std::pair<int64_t, std::string>> top;
  for (const auto& [op, bytes] : by_op) top.emplace_back(bytes, op);
  std::sort(top.rbegin(), top.rend());
  char line[128];
  std::string out = "memory summary of " + device.str() + "\n";
  auto row = [&](const char* what, const std::string& now, const std::string& peak) {
    std::snprintf(line, sizeof line, "  %-30s %12s %12s\n", what, now.c_str(), peak.c_str());
    out += line;
  };
  row("", "now", "peak");
  row("allocated (tensors)", human_bytes(s.in_use), human_bytes(s.peak));
  row("reserved (segments)", human_bytes(s.reserved), human_bytes(s.peak_reserved));
  row("cached (reserved - allocated)", human_bytes(s.reserved - s.in_use), "");
  row("largest free block", human_bytes(s.largest_free_block), "");
  row("segments / free blocks", std::to_string(s.segments) + " / " + std::to_string(s.free_blocks),
      "");
  row("cap", s.limit ? human_bytes(s.limit) : "none", "");
  out += "  allocated by op now:\n";
  for (size_t i = 0; i < top.size() && i < 8; ++i)
    row(top[i].second.c_str(), human_bytes(top[i].first), "");
  return out;
}

}  // namespace ember
