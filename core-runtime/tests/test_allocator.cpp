// test_allocator.cpp — the caching allocator's policy (segments, best fit, splitting, merging,
// oversize blocks), its statistics, snapshot and cap, on an allocator of its own over a raw
// allocator that hands out addresses and never memory: the allocator never touches its blocks,
// so sizes of hundreds of MiB cost nothing, and every figure below is exact.
#include <cstdint>

#include "test_util.h"

namespace ember {
namespace {

constexpr size_t KiB = size_t(1) << 10, MiB = size_t(1) << 20;

// Segments back to back in the address space: adjacent segments must still never merge.
class AddressRaw : public RawAllocator {
 public:
  void* allocate(size_t nbytes) override {
    void* p = reinterpret_cast<void*>(next_);
    next_ += nbytes;
    ++live;
    return p;
  }
  void deallocate(void*) override { --live; }
  int live = 0;

 private:
  uintptr_t next_ = uintptr_t(1) << 32;
};

struct Fixture : ::testing::Test {
  AddressRaw raw;
  CachingAllocator alloc{Device(), &raw};
  std::vector<SegmentInfo> snapshot() const { return alloc.snapshot(); }
};

using Allocator = Fixture;

TEST_F(Allocator, SmallRequestsShareOneTwoMiBSegment) {
  void* a = alloc.allocate(1000, "ones");
  void* b = alloc.allocate(100, "add");
  void* c = alloc.allocate(MiB, "mul");  // the small pool's largest request
  MemoryStats s = alloc.stats();
  EXPECT_EQ(s.system_allocations, 1);
  EXPECT_EQ(s.segments, 1);
  EXPECT_EQ(s.reserved, int64_t(2 * MiB));
  EXPECT_EQ(s.in_use, int64_t(1024 + 512 + MiB));  // each rounded to 512 B, no more
  EXPECT_EQ(s.largest_free_block, int64_t(2 * MiB - 1024 - 512 - MiB));
  const std::vector<SegmentInfo> snap = snapshot();
  ASSERT_EQ(snap.size(), 1u);
  EXPECT_TRUE(snap[0].small);
  ASSERT_EQ(snap[0].blocks.size(), 4u);  // three blocks and the free rest, in address order
  EXPECT_EQ(snap[0].blocks[0].op, "ones");
  EXPECT_EQ(snap[0].blocks[0].requested, 1000u);
  EXPECT_EQ(snap[0].blocks[1].op, "add");
  EXPECT_EQ(snap[0].blocks[2].op, "mul");
  EXPECT_FALSE(snap[0].blocks[3].allocated);
  EXPECT_EQ(snap[0].blocks[1].address, snap[0].blocks[0].address + 1024);
  for (void* p : {a, b, c}) alloc.deallocate(p);
  s = alloc.stats();
  EXPECT_EQ(s.in_use, 0);
  EXPECT_EQ(s.free_blocks, 1);  // merged back into one block
  EXPECT_EQ(s.largest_free_block, int64_t(2 * MiB));
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().reserved, 0);
  EXPECT_EQ(raw.live, 0);
}

TEST_F(Allocator, LargeRequestsSplitATwentyMiBSegmentAndMergeOnFree) {
  void* a = alloc.allocate(3 * MiB);
  void* b = alloc.allocate(5 * MiB);
  void* c = alloc.allocate(2 * MiB);
  EXPECT_EQ(alloc.stats().segments, 1);
  EXPECT_EQ(alloc.stats().reserved, int64_t(20 * MiB));
  EXPECT_EQ(alloc.stats().in_use, int64_t(10 * MiB));
  alloc.deallocate(a);
  alloc.deallocate(c);  // merges with the free rest after it
  MemoryStats s = alloc.stats();
  EXPECT_EQ(s.free_blocks, 2);
  EXPECT_EQ(s.largest_free_block, int64_t(12 * MiB));
  // Best fit: a 3 MiB request takes the 3 MiB hole, not the 12 MiB stretch.
  void* d = alloc.allocate(3 * MiB);
  EXPECT_EQ(d, a);
  alloc.deallocate(d);
  alloc.deallocate(b);  // joins both neighbours: the segment is one block again
  const std::vector<SegmentInfo> snap = snapshot();
  ASSERT_EQ(snap.size(), 1u);
  ASSERT_EQ(snap[0].blocks.size(), 1u);
  EXPECT_EQ(snap[0].blocks[0].size, 20 * MiB);
  EXPECT_EQ(alloc.stats().system_allocations, 1);
}

TEST_F(Allocator, RequestsFromTenMiBGetASegmentRoundedToTwoMiB) {
  void* a = alloc.allocate(11 * MiB + 1);
  EXPECT_EQ(alloc.stats().reserved, int64_t(12 * MiB));
  EXPECT_EQ(alloc.stats().in_use, int64_t(11 * MiB + 512));  // the rest is split off
  void* b = alloc.allocate(11 * MiB);  // the rest is too small: a segment of its own
  EXPECT_EQ(alloc.stats().segments, 2);
  alloc.deallocate(a);
  alloc.deallocate(b);
  // The segments lie back to back, yet each stays a block of its own.
  EXPECT_EQ(alloc.stats().free_blocks, 2);
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().reserved, 0);
  EXPECT_EQ(raw.live, 0);
}

TEST_F(Allocator, OversizeBlocksAreNotSplitForSmallerRequests) {
  void* big = alloc.allocate(300 * MiB);
  alloc.deallocate(big);
  void* small = alloc.allocate(12 * MiB);  // would strand 288 MiB: a new segment instead
  EXPECT_NE(small, big);
  EXPECT_EQ(alloc.stats().segments, 2);
  void* near = alloc.allocate(290 * MiB);  // within 20 MiB: the whole block
  EXPECT_EQ(near, big);
  EXPECT_EQ(alloc.stats().in_use, int64_t(312 * MiB));
  alloc.deallocate(near);
  alloc.deallocate(small);
}

TEST_F(Allocator, CapCountsSplitBlocksAndBoundsTheSegments) {
  alloc.set_limit(int64_t(4 * MiB));
  // Under the cap a new segment is cut to the request: 20 MiB would pass it.
  void* a = alloc.allocate(3 * MiB / 2);
  EXPECT_EQ(alloc.stats().reserved, int64_t(3 * MiB / 2));
  alloc.deallocate(a);
  alloc.set_limit(0);
  void* seg = alloc.allocate(3 * MiB);  // a 20 MiB segment, with 17 MiB cached
  alloc.deallocate(seg);
  alloc.set_limit(int64_t(4 * MiB));
  void* b = alloc.allocate(3 * MiB / 2);
  void* c = alloc.allocate(3 * MiB / 2);  // 3 MiB in use, both cut from cached segments
  EXPECT_EQ(alloc.stats().in_use, int64_t(3 * MiB));
  EXPECT_EQ(alloc.stats().system_allocations, 2);
  try {
    alloc.allocate(3 * MiB / 2, "conv2d");  // the cache has room; the cap does not
    ADD_FAILURE() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("over the cap"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("conv2d"), std::string::npos) << e.what();
  }
  EXPECT_EQ(alloc.stats().in_use, int64_t(3 * MiB));  // the failed request left nothing behind
  alloc.deallocate(b);
  void* d = alloc.allocate(3 * MiB / 2);  // fits again
  alloc.deallocate(c);
  alloc.deallocate(d);
  alloc.set_limit(0);
}

TEST_F(Allocator, PeaksOfAllocatedAndReserved) {
  void* a = alloc.allocate(4 * MiB);
  void* b = alloc.allocate(4 * MiB);
  alloc.deallocate(a);
  alloc.deallocate(b);
  alloc.empty_cache();
  MemoryStats s = alloc.stats();
  EXPECT_EQ(s.peak, int64_t(8 * MiB));
  EXPECT_EQ(s.peak_reserved, int64_t(20 * MiB));
  EXPECT_EQ(s.reserved, 0);
  alloc.reset_peak();
  EXPECT_EQ(alloc.stats().peak, 0);
  EXPECT_EQ(alloc.stats().peak_reserved, 0);
}

TEST(AllocatorSummary, NamesTheStatisticsAndTheOpsHoldingMemory) {
  Tensor x = ones({1 << 16});  // 256 KiB from `ones`
  const std::string text = memory_summary(Device());
  for (const char* part : {"allocated", "reserved", "largest free block", "segments", "ones"})
    EXPECT_NE(text.find(part), std::string::npos) << part << "\n" << text;
  bool found = false;
  for (const SegmentInfo& seg : memory_snapshot(Device()))
    for (const BlockInfo& b : seg.blocks)
      found = found || (b.allocated && b.op == "ones" && b.requested == size_t(x.nbytes()) &&
                        b.address == reinterpret_cast<uintptr_t>(x.data_ptr()));
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace ember
