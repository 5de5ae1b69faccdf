// allocator.cpp — the caching allocator (one per device) and the memory cap.
#include "ember/allocator.h"

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
  // Small requests round to 512 B; large ones to 1/8 of their power of two, so a cached block is
  // reused for requests within ~12% of its size without wasting more than that.
  if (nbytes <= 512) return 512;
  size_t pow2 = 1;
  while (pow2 < nbytes) pow2 <<= 1;
  size_t step = std::max<size_t>(512, pow2 / 8);
  return (nbytes + step - 1) / step * step;
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
  // No device holds 2^62 bytes; refusing more up front also keeps round_size and the byte counts
  // below far from overflowing.
  if (nbytes > kLargestRequest) return fail("more than any device holds");
  raw_->check_can_allocate(nbytes, op);
  size_t size = round_size(nbytes);
  if (stats_.limit && stats_.in_use + int64_t(size) > stats_.limit) return fail("over the cap");

  collect_awaiting_locked(false);
  void* const stream = raw_->current_stream();
  void* ptr = nullptr;
  // Best fit among the stream's cached blocks, but never a block more than twice the request
  // (that would strand memory); blocks are not split, which keeps the allocator short and
  // readable.
  auto it = free_blocks_.lower_bound({stream, size});
  const bool cached =
      it != free_blocks_.end() && it->first.first == stream && it->first.second <= 2 * size;
  if (cached) {
    ptr = it->second;
    size = it->first.second;
    free_blocks_.erase(it);
  } else {
    ptr = raw_->allocate(size);
    if (!ptr) {  // the system is full: return the cache and retry once
      release_cached_locked();
      ptr = raw_->allocate(size);
    }
    if (!ptr) return fail("the device is out of memory");
    blocks_[ptr] = Block{size, stream, {}, 0, {}};
    stats_.reserved += int64_t(size);
    ++stats_.system_allocations;
  }
  stats_.in_use += int64_t(size);
  stats_.peak = std::max(stats_.peak, stats_.in_use);
  ++stats_.allocations;
  if (allocation_logging()) {
    Block& b = blocks_.at(ptr);
    b.requested = nbytes;
    b.op = op;
    std::fprintf(stderr, "[ember alloc] alloc %zu B (block %zu B, %s) on %s at %p by %s\n", nbytes,
                 size, cached ? "cached" : "from the system", name_.c_str(), ptr, op);
  }
  return ptr;
}

void CachingAllocator::deallocate(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  Block& b = blocks_.at(ptr);
  stats_.in_use -= int64_t(b.size);
  if (allocation_logging()) {
    if (b.op.empty())  // allocated while allocations were not logged
      std::fprintf(stderr, "[ember alloc] free block %zu B on %s at %p, allocated unlogged\n",
                   b.size, name_.c_str(), ptr);
    else
      std::fprintf(stderr, "[ember alloc] free %zu B (block %zu B) on %s at %p, allocated by %s\n",
                   b.requested, b.size, name_.c_str(), ptr, b.op.c_str());
  }
  b.op.clear();  // so that a later free never names an earlier allocation's op
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

std::map<void*, CachingAllocator::Block>::const_iterator CachingAllocator::find_locked(
    const void* ptr) const {
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

void CachingAllocator::cache_locked(void* ptr) {
  const Block& b = blocks_.at(ptr);
  free_blocks_.emplace(FreeKey{b.stream, b.size}, ptr);
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

void CachingAllocator::release_cached_locked() {
  collect_awaiting_locked(true);
  for (auto& [key, ptr] : free_blocks_) {
    raw_->deallocate(ptr);
    blocks_.erase(ptr);
    stats_.reserved -= int64_t(key.second);
  }
  free_blocks_.clear();
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak = stats_.in_use;
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

}  // namespace ember
