// test_placement.cpp — AllocationRecorder and PlacedAllocations (placement.h): what is recorded,
// in order; slots served in order from the arena; a size mismatch served normally as a miss; the
// caching allocator's counters untouched by placed requests; the cap covering the arena; other
// threads unaffected.
#include <thread>

#include "ember/placement.h"
#include "test_util.h"

namespace ember {
namespace {

// A CPU tensor of n float32s: a request of 4n bytes.
Tensor floats(int64_t n) { return Tensor::empty({n}, DType::Float32); }

TEST(AllocationRecorder, ListsRequestsInOrderAndWhichWereFreed) {
  Tensor kept;
  AllocationRecorder rec;
  {
    Tensor a = floats(10);
    kept = floats(3);
    Tensor b = floats(0);  // allocates nothing: not listed
  }
  ASSERT_EQ(rec.allocations().size(), 2u);
  EXPECT_EQ(rec.allocations()[0].nbytes, 40u);
  EXPECT_TRUE(rec.allocations()[0].freed);
  EXPECT_EQ(rec.allocations()[1].nbytes, 12u);
  EXPECT_FALSE(rec.allocations()[1].freed);
  EXPECT_EQ(rec.allocations()[1].data, kept.storage()->data());
  EXPECT_FALSE(rec.allocations()[1].placed);
}

TEST(AllocationRecorder, NestedRecordersBothSeeAndEndedOnesStop) {
  AllocationRecorder outer;
  {
    AllocationRecorder inner;
    Tensor a = floats(5);
    EXPECT_EQ(inner.allocations().size(), 1u);
  }
  Tensor b = floats(7);
  ASSERT_EQ(outer.allocations().size(), 2u);
  EXPECT_EQ(outer.allocations()[1].nbytes, 28u);
}

TEST(PlacedAllocations, ServesSlotsInOrderWithoutMovingTheCounters) {
  Tensor arena = Tensor::empty({1024}, DType::UInt8);
  char* base = static_cast<char*>(arena.storage()->data());
  const MemoryStats before = memory_stats();
  Tensor a, b;
  {
    PlacedAllocations place(arena.storage(), {{512, 40}, {0, 400}});
    AllocationRecorder rec;
    a = floats(10);
    b = floats(100);
    EXPECT_EQ(place.placed(), 2);
    EXPECT_EQ(place.misses(), 0);
    EXPECT_TRUE(place.done());
    ASSERT_EQ(rec.allocations().size(), 2u);
    EXPECT_TRUE(rec.allocations()[0].placed);
  }
  EXPECT_EQ(a.storage()->data(), base + 512);
  EXPECT_EQ(b.storage()->data(), base);
  const MemoryStats after = memory_stats();
  EXPECT_EQ(after.in_use, before.in_use);
  EXPECT_EQ(after.allocations, before.allocations);
  // The tensors work as any others, and keep the arena alive when it is dropped.
  a.fill_(2.0);
  arena = Tensor();
  EXPECT_EQ(a.to_vector<float>()[9], 2.0f);
  a = Tensor();
  b = Tensor();
  EXPECT_EQ(memory_stats().in_use, before.in_use - int64_t(CachingAllocator::round_size(1024)));
}

TEST(PlacedAllocations, ASizeMismatchIsServedNormallyAndTheSlotWaits) {
  Tensor arena = Tensor::empty({1024}, DType::UInt8);
  char* base = static_cast<char*>(arena.storage()->data());
  PlacedAllocations place(arena.storage(), {{0, 40}, {64, 8}});
  const int64_t allocations = memory_stats().allocations;
  Tensor odd = floats(3);  // 12 B, the next slot holds 40: a miss
  EXPECT_EQ(memory_stats().allocations, allocations + 1);
  EXPECT_FALSE(arena.storage()->data() <= odd.storage()->data() &&
               odd.storage()->data() < base + 1024);
  Tensor a = floats(10);
  Tensor b = floats(2);
  Tensor past = floats(2);  // no slot left: a miss too
  EXPECT_EQ(a.storage()->data(), base);
  EXPECT_EQ(b.storage()->data(), base + 64);
  EXPECT_EQ(place.placed(), 2);
  EXPECT_EQ(place.misses(), 2);
  EXPECT_EQ(memory_stats().allocations, allocations + 2);
}

TEST(PlacedAllocations, ASlotServedNormallyPassesItsRequestOn) {
  Tensor arena = Tensor::empty({1024}, DType::UInt8);
  char* base = static_cast<char*>(arena.storage()->data());
  PlacedAllocations place(arena.storage(), {{kServeNormally, 40}, {0, 40}});
  const int64_t allocations = memory_stats().allocations;
  Tensor returned = floats(10);  // of the slot's size, yet not placed
  Tensor a = floats(10);
  EXPECT_EQ(memory_stats().allocations, allocations + 1);
  EXPECT_NE(returned.storage()->data(), static_cast<void*>(base));
  EXPECT_EQ(a.storage()->data(), base);
  EXPECT_EQ(place.placed(), 2);
  EXPECT_EQ(place.misses(), 0);
}

TEST(PlacedAllocations, TheCapCoversTheArenaAndSlotsOutsideItAreRefused) {
  const int64_t limit = memory_stats().limit;
  const int64_t in_use = memory_stats().in_use;
  set_memory_limit(in_use + 4096);
  EXPECT_THROW(Tensor::empty({8192}, DType::UInt8), OutOfMemoryError);  // the arena must fit
  Tensor arena = Tensor::empty({4096}, DType::UInt8);
  {
    PlacedAllocations place(arena.storage(), {{0, 4096}, {0, 4096}});
    // Placed requests need no room under the cap: the arena already holds it.
    Tensor a = Tensor::empty({4096}, DType::UInt8);
    Tensor b = Tensor::empty({4096}, DType::UInt8);
    EXPECT_EQ(place.placed(), 2);
  }
  set_memory_limit(limit);
  EXPECT_THROW(PlacedAllocations(arena.storage(), {{4000, 100}}), ValueError);
  EXPECT_THROW(PlacedAllocations(arena.storage(), {{-2, 1}}), ValueError);  // -1: kServeNormally
  EXPECT_THROW(PlacedAllocations(nullptr, {}), ValueError);
}

TEST(PlacedAllocations, ASlotMayLieInAnotherStorage) {
  // A value computed into a tensor that outlives the step (a .grad): its slot names that
  // tensor's storage, at the tensor's byte offset.
  Tensor arena = Tensor::empty({1024}, DType::UInt8);
  Tensor grad = zeros({4, 10});
  Tensor row = grad.select(0, 2);  // 10 floats at byte 80
  const MemoryStats before = memory_stats();
  Tensor a, b;
  {
    PlacedAllocations place(arena.storage(), {{0, 40, Storage()}, {80, 40, row.storage()}});
    a = floats(10);
    b = floats(10);
    EXPECT_EQ(place.placed(), 2);
  }
  EXPECT_EQ(a.storage()->data(), arena.storage()->data());
  EXPECT_EQ(b.storage()->data(), row.data_ptr());
  EXPECT_EQ(memory_stats().allocations, before.allocations);
  b.fill_(3.0);
  EXPECT_EQ(grad.select(0, 2).to_vector<float>(), std::vector<float>(10, 3.0f));
  EXPECT_EQ(grad.select(0, 1).to_vector<float>(), std::vector<float>(10, 0.0f));
  grad = Tensor();  // b keeps the storage alive
  EXPECT_EQ(b.to_vector<float>()[9], 3.0f);

  // No arena: every slot in its own storage (or served normally).
  Tensor other = zeros({10});
  {
    PlacedAllocations place(nullptr, {{kServeNormally, 40, Storage()}, {0, 40, other.storage()}});
    Tensor normal = floats(10);
    Tensor inside = floats(10);
    EXPECT_NE(normal.data_ptr(), other.data_ptr());
    EXPECT_EQ(inside.data_ptr(), other.data_ptr());
  }
  EXPECT_THROW(PlacedAllocations(nullptr, {{0, 40, Storage()}}), ValueError);  // in no arena
  EXPECT_THROW(PlacedAllocations(arena.storage(), {{8, 40, other.storage()}}), ValueError);
  float host[4] = {};
  Storage external = std::make_shared<StorageImpl>(host, sizeof host, Device{}, nullptr);
  EXPECT_THROW(PlacedAllocations(arena.storage(), {{0, 16, external}}), ValueError);
}

TEST(PlacedAllocations, ADevicePlacementServesNothingAndShadowsTheOuterOne) {
  Tensor arena = Tensor::empty({1024}, DType::UInt8);
  PlacedAllocations outer(arena.storage(), {{0, 40}});
  {
    PlacedAllocations none(Device{});
    Tensor a = floats(10);
    EXPECT_NE(a.data_ptr(), arena.data_ptr());
    EXPECT_EQ(none.misses(), 1);
  }
  Tensor b = floats(10);
  EXPECT_EQ(b.data_ptr(), arena.data_ptr());
}

TEST(PlacedAllocations, OtherThreadsAllocateAsUsual) {
  Tensor arena = Tensor::empty({1024}, DType::UInt8);
  char* base = static_cast<char*>(arena.storage()->data());
  PlacedAllocations place(arena.storage(), {{0, 40}});
  void* elsewhere = nullptr;
  std::thread other([&] {
    AllocationRecorder rec;  // this thread's recorder sees only this thread's request
    Tensor t = floats(10);
    elsewhere = t.storage()->data();
    EXPECT_EQ(rec.allocations().size(), 1u);
    EXPECT_FALSE(rec.allocations()[0].placed);
  });
  other.join();
  EXPECT_NE(elsewhere, static_cast<void*>(base));
  EXPECT_EQ(place.placed(), 0);
  EXPECT_EQ(place.misses(), 0);
  Tensor mine = floats(10);
  EXPECT_EQ(mine.storage()->data(), base);
}

TEST(PlacedAllocations, InnerPlacementsShadowOuterOnes) {
  Tensor arena = Tensor::empty({1024}, DType::UInt8);
  char* base = static_cast<char*>(arena.storage()->data());
  PlacedAllocations outer(arena.storage(), {{0, 40}});
  {
    PlacedAllocations inner(arena.storage(), {{128, 40}});
    Tensor a = floats(10);
    EXPECT_EQ(a.storage()->data(), base + 128);
  }
  Tensor b = floats(10);
  EXPECT_EQ(b.storage()->data(), base);
}

}  // namespace
}  // namespace ember
