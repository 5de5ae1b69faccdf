// test_from_blob.cpp — tensors over external memory: the deleter's single call, reads and writes
// through the memory on every device, allocator statistics, and the layout checks.
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;

class FromBlob : public test::DeviceTest {};

// Device memory Ember did not hand out as a tensor: the storage of `owner`, which the deleter
// keeps alive and counts its calls in `deleted` (as a DLPack or NumPy deleter would release the
// producer's array).
Tensor wrap(const Tensor& owner, const Shape& sizes, const Strides& strides,
            const std::shared_ptr<int>& deleted) {
  return from_blob(owner.data_ptr(), sizes, strides, owner.dtype(), owner.device(),
                   [owner, deleted](void* p) {
                     EXPECT_EQ(p, owner.data_ptr());
                     ++*deleted;
                   });
}

TEST_P(FromBlob, DeleterRunsOnceAfterTheLastViewDies) {
  auto deleted = std::make_shared<int>(0);
  Tensor owner = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {6}, device());
  Tensor t = wrap(owner, {2, 3}, {3, 1}, deleted);
  EXPECT_TRUE(t.storage()->is_external());
  EXPECT_FALSE(owner.storage()->is_external());
  Tensor view = t.t().select(0, 1);
  { Tensor copy = t; }
  t = Tensor();
  EXPECT_EQ(*deleted, 0) << "a view is still alive";
  expect_close(view, {2, 5});
  view = Tensor();
  EXPECT_EQ(*deleted, 1);
}

TEST_P(FromBlob, OpsReadAndWriteThroughTheMemory) {
  auto deleted = std::make_shared<int>(0);
  Tensor owner = Tensor::from_vector(std::vector<float>{0, 1, 2, 3, 4, 5}, {6}, device());
  {
    Tensor t = wrap(owner, {2, 3}, {3, 1}, deleted);
    expect_close(add(t, 1.0), {1, 2, 3, 4, 5, 6});
    expect_close(matmul(t, t.t()), {5, 14, 14, 50});
    const int64_t v0 = t.version();
    mul_(t, 2.0);
    EXPECT_GT(t.version(), v0);
    const int64_t v1 = t.version();
    t.select(1, 0).fill_(-1);  // a strided view of external memory
    EXPECT_GT(t.version(), v1);
  }
  EXPECT_EQ(*deleted, 1);
  expect_close(owner, {-1, 2, 4, -1, 8, 10});  // the writes landed in the wrapped memory
}

TEST_P(FromBlob, StridedLayoutsAndOffsets) {
  auto deleted = std::make_shared<int>(0);
  std::vector<double> values(12);
  for (size_t i = 0; i < values.size(); ++i) values[i] = double(i);
  Tensor owner = Tensor::from_vector(values, {12}, device());
  // A column-major [3, 4] over the whole buffer, then every other element from element 1.
  Tensor col_major = wrap(owner, {3, 4}, {1, 3}, deleted);
  EXPECT_FALSE(col_major.is_contiguous());
  expect_close(col_major, {0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11});
  Tensor odd = from_blob(owner.select(0, 1).data_ptr(), {5}, {2}, DType::Float64, device());
  expect_close(odd, {1, 3, 5, 7, 9});
  EXPECT_EQ(odd.storage()->nbytes(), 9 * sizeof(double));  // element 0 to the end of element 4
  Tensor broadcast = from_blob(owner.data_ptr(), {2, 3}, {0, 1}, DType::Float64, device());
  expect_close(broadcast, {0, 1, 2, 0, 1, 2});
}

TEST_P(FromBlob, TheAllocatorDoesNotCountIt) {
  Tensor owner = Tensor::empty({1 << 16}, DType::Float32, device());
  const MemoryStats before = memory_stats(device());
  {
    Tensor t = from_blob(owner.data_ptr(), {1 << 16}, DType::Float32, device());
    EXPECT_EQ(memory_stats(device()).in_use, before.in_use);
    EXPECT_EQ(memory_stats(device()).allocations, before.allocations);
  }
  EXPECT_EQ(memory_stats(device()).in_use, before.in_use);
  EXPECT_EQ(memory_stats(device()).reserved, before.reserved);
}

EMBER_INSTANTIATE_DEVICE_TEST(FromBlob);

TEST(FromBlobChecks, HostMemoryWithoutADeleterStaysTheCallers) {
  std::vector<int32_t> buffer{1, 2, 3, 4};
  {
    Tensor t = from_blob(buffer.data(), {4}, DType::Int32);
    add_(t, 10.0);
  }
  EXPECT_EQ(buffer, (std::vector<int32_t>{11, 12, 13, 14}));
}

TEST(FromBlobChecks, BadLayoutsThrowAndLeaveTheMemoryToTheCaller) {
  std::vector<float> buffer(8);
  float* p = buffer.data();
  int deleted = 0;
  auto count = [&](void*) { ++deleted; };
  const int64_t big = int64_t(1) << 40;
  expect_error<ValueError>(
      [&] {
        from_blob(p, {2, -1}, DType::Float32, Device(), count);
      },
      {"from_blob", "sizes [2, -1]", "dim 1 is negative"});
  expect_error<ValueError>(
      [&] {
        from_blob(p, {2, 2}, {-1, 1}, DType::Float32, Device(), count);
      },
      {"from_blob", "strides [-1, 1]", ">= 0"});
  expect_error<ValueError>(
      [&] {
        from_blob(p, {2, 2}, {1}, DType::Float32, Device(), count);
      },
      {"from_blob", "differ in length"});
  expect_error<ValueError>(
      [&] {
        from_blob(p, {big, big}, {big, 1}, DType::Float32, Device(), count);
      },
      {"from_blob", "more than 2^63 bytes"});
  expect_error<ValueError>(
      [&] {
        from_blob(p, {big, big, big}, DType::Float32, Device(), count);
      },
      {"from_blob", "more than 2^63 bytes"});
  const int64_t max = std::numeric_limits<int64_t>::max();
  expect_error<ValueError>([&] { from_blob(p, {2}, {max}, DType::Float32, Device(), count); },
                           {"from_blob", "more than 2^63 bytes"});
  expect_error<ValueError>([&] { from_blob(p, {max}, {1}, DType::Float32, Device(), count); },
                           {"from_blob", "more than 2^63 bytes"});
  expect_error<ValueError>([&] { from_blob(nullptr, {2}, DType::Float32, Device(), count); },
                           {"from_blob", "data is null"});
  expect_error<ValueError>(
      [&] { from_blob(reinterpret_cast<char*>(p) + 1, {2}, DType::Float32, Device(), count); },
      {"from_blob", "not aligned to the 4 bytes of a float32"});
  EXPECT_EQ(deleted, 0);
  // No elements: any pointer, null included, is a valid empty tensor.
  EXPECT_EQ(from_blob(nullptr, {0, 3}, DType::Float32).numel(), 0);
}

TEST(FromBlobChecks, AnUnavailableDeviceIsReported) {
  if (cuda_is_available()) GTEST_SKIP() << "this machine has a GPU";
  float x = 0;
  EXPECT_THROW(from_blob(&x, {1}, DType::Float32, Device("cuda:0")), Error);
}

}  // namespace
}  // namespace ember
