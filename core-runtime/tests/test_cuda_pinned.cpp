// test_cuda_pinned.cpp — pinned host memory: Tensor::pin_memory and is_pinned, copies from it to a
// GPU (non_blocking ones queued without the host waiting), and the pinned block's return to its
// cache when the last view dies, not before its queued copies have read it. The CUDA cases skip
// without a GPU; what a build or a machine without CUDA answers is checked everywhere else.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "ember/cuda.h"
#include "test_util.h"

namespace ember {
namespace {

using test::expect_error;

const Device kGpu(DeviceType::CUDA, 0);

#define EMBER_REQUIRE_GPU() \
  if (!cuda_is_available()) \
  GTEST_SKIP() << "no CUDA device here (compiled in: " << cuda_compiled() << ")"

TEST(Pinned, WithoutAGpuPinningIsATypedErrorAndNothingIsPinned) {
  if (cuda_is_available()) GTEST_SKIP() << "a CUDA device is present: see PinnedCuda";
  const Tensor x = ones({2, 3});
  EXPECT_FALSE(x.is_pinned());
  EXPECT_FALSE(Tensor().is_pinned());
  if (cuda_compiled())
    expect_error<DeviceError>([&] { x.pin_memory(); },
                              {"pin_memory", "[2, 3] float32 cpu", "no CUDA device"});
  else
    expect_error<NotSupportedError>([&] { x.pin_memory(); },
                                    {"pin_memory", "[2, 3] float32 cpu", "without CUDA"});
  EXPECT_EQ(pinned_memory_stats().in_use, 0);
  // non_blocking changes nothing for a copy that stays on the host
  EXPECT_EQ(x.to(Device(), true).data_ptr(), x.data_ptr());
  EXPECT_EQ(x.to(Device(), DType::Float64, true).to_vector<double>(), x.to_vector<double>());
}

TEST(PinnedCuda, PinMemoryRoundTripsAndMarksThePinnedStorage) {
  EMBER_REQUIRE_GPU();
  const Tensor x = test::random_tensor({5, 3}, 1).t();  // [3, 5], not contiguous
  const Tensor p = x.pin_memory();
  EXPECT_TRUE(p.is_pinned());
  EXPECT_FALSE(x.is_pinned());
  EXPECT_TRUE(p.device().is_cpu());
  EXPECT_TRUE(p.is_contiguous());
  EXPECT_EQ(p.shape(), x.shape());
  EXPECT_EQ(p.to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(p.pin_memory().data_ptr(), p.data_ptr());  // pinned already: itself
  EXPECT_TRUE(p.slice(1, 1, 4).is_pinned());           // and its views
  EXPECT_FALSE(p.clone().is_pinned());                 // a copy is ordinary memory
  // the blocking copy, and back
  EXPECT_EQ(p.to(kGpu).to(Device()).to_vector<float>(), x.to_vector<float>());
  // a non_blocking copy, then a synchronisation
  const Tensor g = p.to(kGpu, true);
  EXPECT_EQ(g.device(), kGpu);
  synchronize(kGpu);
  EXPECT_EQ(g.to(Device()).to_vector<float>(), x.to_vector<float>());
  // a kernel queued after the copy on the same stream sees its data
  EXPECT_EQ(add(p.to(kGpu, DType::Float64, true), 1.0).to(Device()).to_vector<double>(),
            add(x.to(DType::Float64), 1.0).to_vector<double>());
  expect_error<DeviceError>([&] { g.pin_memory(); }, {"pin_memory", "cuda:0", "not on the CPU"});
}

TEST(PinnedCuda, NonBlockingCopyReturnsBeforeTheGpuIsDone) {
  EMBER_REQUIRE_GPU();
  // Keep the stream busy with a long product, then queue the copy: had the copy waited for the
  // GPU, the stream would be idle when it returned.
  // Everything is allocated first: a cudaMalloc may wait for the device itself.
  const Tensor a = ones({8192, 8192}, DType::Float32, kGpu);
  const Tensor src = full({1 << 20}, 3.0).pin_memory();
  const Tensor dst = Tensor::empty({1 << 20}, DType::Float32, kGpu);
  Tensor busy = Tensor::empty({8192, 8192}, DType::Float32, kGpu);
  synchronize(kGpu);
  matmul_out(busy, a, a);
  dst.copy_(src, true);
  EXPECT_FALSE(cuda::current_stream(0).query());
  synchronize(kGpu);
  EXPECT_EQ(sum(dst).item<double>(), 3.0 * (1 << 20));
}

TEST(PinnedCuda, AFreedSourceIsNotReusedBeforeItsCopyHasRun) {
  EMBER_REQUIRE_GPU();
  // Each source dies as soon as its copy is queued; the next pin_memory of the same size would
  // take its block from the cache and overwrite it if the block did not wait for the copy.
  const Tensor a = ones({4096, 4096}, DType::Float32, kGpu);
  std::vector<Tensor> copies;
  for (int k = 0; k < 16; ++k) {
    const Tensor busy = matmul(a, a);  // work ahead of the copy on the stream
    copies.push_back(full({1 << 20}, double(k)).pin_memory().to(kGpu, true));
  }
  synchronize(kGpu);
  for (int k = 0; k < 16; ++k) {
    const Tensor host = copies[size_t(k)].to(Device());
    EXPECT_EQ(amin(host).item<double>(), double(k)) << k;
    EXPECT_EQ(amax(host).item<double>(), double(k)) << k;
  }
}

TEST(PinnedCuda, ThePinnedBlockGoesBackWhenTheLastViewDies) {
  EMBER_REQUIRE_GPU();
  synchronize(kGpu);
  const MemoryStats before = pinned_memory_stats();
  Tensor view;
  {
    const int64_t host_before = memory_stats(Device()).in_use;
    const Tensor p = full({1000}, 1.0).pin_memory();  // 4000 B: one 4096 B block
    EXPECT_EQ(pinned_memory_stats().in_use, before.in_use + 4096);
    EXPECT_EQ(memory_stats(Device()).in_use, host_before);  // not the CPU allocator's memory
    view = p.slice(0, 10, 20);
  }
  EXPECT_EQ(pinned_memory_stats().in_use, before.in_use + 4096);  // the view keeps it
  EXPECT_EQ(amax(view).item<double>(), 1.0);
  view = Tensor();
  const MemoryStats after = pinned_memory_stats();
  EXPECT_EQ(after.in_use, before.in_use);
  // Cached, not returned to the system: the reserve does not shrink (the block may have been cut
  // from a segment an earlier pinning left in the cache, so it need not grow either).
  EXPECT_GE(after.reserved, std::max<int64_t>(before.reserved, 4096));
  const int64_t system = after.system_allocations;
  EXPECT_TRUE(ones({1000}).pin_memory().is_pinned());
  EXPECT_EQ(pinned_memory_stats().system_allocations, system);  // served from the cache
}

}  // namespace
}  // namespace ember
