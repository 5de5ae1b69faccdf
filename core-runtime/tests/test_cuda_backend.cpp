// test_cuda_backend.cpp — the CUDA backend's plumbing: copies between host and GPU for every
// dtype and layout (including copies large enough to cycle through the pinned staging buffers),
// fill_, device-to-device copies and casts, the caching allocator on the GPU, the elementwise
// engine's three kernels (vectorised, 32-bit strided, 64-bit strided), and behaviour on a machine
// without a GPU. Device-parameterised tests also run on the CPU, which checks the tests.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ember/cuda.h"
#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;

const DType kAllDTypes[] = {DType::Bool,    DType::UInt8,  DType::Int8,    DType::Int16,
                            DType::Int32,   DType::Int64,  DType::Float16, DType::BFloat16,
                            DType::Float32, DType::Float64};

// Values every dtype holds exactly: 0..99, halved for the floating types.
Tensor exact_values(const Shape& shape, DType dtype) {
  std::vector<double> v(size_t(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = double(i % 100) * (is_floating(dtype) ? 0.5 : 1.0);
  return Tensor::from_vector(v, shape).to(dtype);
}

void expect_equal(const Tensor& got, const Tensor& expected) {
  ASSERT_EQ(got.shape(), expected.shape()) << got.str() << " vs " << expected.str();
  EXPECT_EQ(got.dtype(), expected.dtype());
  EXPECT_EQ(got.to_vector<double>(), expected.to_vector<double>()) << got.str();
}

class CudaBackend : public test::DeviceTest {};
EMBER_INSTANTIATE_DEVICE_TEST(CudaBackend);

TEST_P(CudaBackend, RoundTripEveryDtype) {
  for (DType dt : kAllDTypes) {
    Tensor host = exact_values({3, 37}, dt);
    Tensor there = host.to(device());
    EXPECT_EQ(there.device(), device());
    expect_equal(there.to(Device()), host);
  }
}

TEST_P(CudaBackend, NonContiguousSourcesInBothDirections) {
  Tensor host = exact_values({6, 10}, DType::Float32);
  Tensor dev = host.to(device());
  // Host views copied to the device...
  expect_equal(host.t().to(device()), host.t().contiguous());
  expect_equal(host.slice(1, 1, 9, 3).to(device()), host.slice(1, 1, 9, 3).contiguous());
  expect_equal(host.select(0, 2).expand({4, 10}).to(device()),
               host.select(0, 2).expand({4, 10}).contiguous());
  // ...and device views copied to the host or within the device.
  expect_equal(dev.t().to(Device()), host.t().contiguous());
  expect_equal(dev.slice(0, 1, 6, 2).contiguous(), host.slice(0, 1, 6, 2).contiguous());
  expect_equal(dev.select(1, 3).unsqueeze(1).expand({6, 5}).clone(),
               host.select(1, 3).unsqueeze(1).expand({6, 5}).contiguous());
  expect_equal(dev.permute({1, 0}).reshape({60}), host.t().reshape({60}));
}

TEST_P(CudaBackend, LargeCopiesCycleThroughTheStagingBuffers) {
  // 20 MiB + 12 bytes of float32: more chunks than staging slots, and a ragged last chunk.
  std::vector<float> values(5'000'003);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i) * 0.25f;
  Tensor host = Tensor::from_vector(values, {int64_t(values.size())});
  Tensor back = host.to(device()).to(Device());
  EXPECT_EQ(back.to_vector<float>(), values);
  // A large non-contiguous source, cast on the way.
  Tensor m = exact_values({1500, 1001}, DType::Int16);
  expect_equal(m.t().to(device()).to(DType::Int32).to(Device()), m.t().to(DType::Int32));
}

TEST_P(CudaBackend, EmptyTensors) {
  for (const Shape& shape : {Shape{0}, Shape{3, 0}, Shape{0, 4, 2}}) {
    Tensor e = Tensor::empty(shape, DType::Float32, device());
    e.fill_(3);
    EXPECT_EQ(e.clone().shape(), shape);
    EXPECT_EQ(e.to(Device()).numel(), 0);
    EXPECT_EQ(Tensor::empty(shape, DType::Int64).to(device()).shape(), shape);
  }
}

TEST_P(CudaBackend, FillEveryDtypeWholeAndThroughStridedViews) {
  for (DType dt : kAllDTypes) {
    Tensor t = Tensor::empty({5, 7}, dt, device());
    t.fill_(2.5);
    double v = dt == DType::Bool ? 1.0 : is_floating(dt) ? 2.5 : 2.0;
    expect_close(t, std::vector<double>(35, v), 0, 0);
    t.zero_();
    t.select(1, 2).fill_(1);       // a column: stride 7
    t.slice(0, 1, 5, 3).fill_(1);  // rows 1 and 4
    std::vector<double> expected(35, 0.0);
    for (int r = 0; r < 5; ++r)
      for (int c = 0; c < 7; ++c)
        if (c == 2 || r == 1 || r == 4) expected[size_t(r * 7 + c)] = 1;
    expect_close(t, expected, 0, 0);
  }
}

TEST_P(CudaBackend, DeviceToDeviceCopiesWithBroadcastTailsAndMisalignment) {
  // 1000003 elements: the vectorised kernel's last n % 4 elements go through its scalar tail.
  Tensor src = test::random_tensor({1000003}, 1, DType::Float32, device());
  Tensor dst = Tensor::empty({1000003}, DType::Float32, device());
  dst.copy_(src);
  expect_equal(dst, src);
  // Views starting one element in: contiguous but not 16-byte aligned.
  Tensor a = src.slice(0, 1, 1000003);
  Tensor b = Tensor::empty({1000004}, DType::Float32, device()).slice(0, 1, 1000003);
  b.copy_(a.to(DType::Float64));
  expect_equal(b, a);
  // Broadcast a row into a transposed destination.
  Tensor row = exact_values({1, 9}, DType::Float32).to(device());
  Tensor grid = Tensor::empty({9, 4}, DType::Float32, device()).t();
  grid.copy_(row);
  expect_equal(grid, row.expand({4, 9}).contiguous());
}

TEST_P(CudaBackend, CastsOnTheDeviceMatchTheHost) {
  // Values in (-1, 120): every dtype converts them without overflow, and the truncation of
  // negative fractions and the rounding to half types are tested.
  Tensor values = test::random_tensor({257}, 7, DType::Float64, Device(), -0.99, 120.0);
  for (DType from : kAllDTypes) {
    Tensor src = values.to(from);
    Tensor there = src.to(device());
    for (DType to : kAllDTypes) expect_equal(there.to(to), src.to(to));
  }
}

TEST_P(CudaBackend, ManyDimsThatDoNotMerge) {
  // Reversing 10 dims leaves 10 dims that cannot merge: more than the strided kernel takes at
  // once, so the engine splits the outermost dim.
  Shape shape(10, 2);
  Tensor host = exact_values(shape, DType::Float32);
  std::vector<int64_t> reversed = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  expect_equal(host.to(device()).permute(reversed).contiguous(), host.permute(reversed).clone());
}

TEST_P(CudaBackend, CachingAllocatorReusesBlocksAndHonoursTheCap) {
  Device dev = device();
  // Start from an empty cache: a larger block cached by an earlier test could serve the request.
  empty_cache(dev);
  { Tensor warm = Tensor::empty({1 << 18}, DType::Float32, dev); }  // 1 MiB, now cached
  MemoryStats before = memory_stats(dev);
  {
    Tensor t = Tensor::empty({1 << 18}, DType::Float32, dev);
    EXPECT_EQ(memory_stats(dev).in_use, before.in_use + (1 << 20));
  }
  MemoryStats after = memory_stats(dev);
  EXPECT_EQ(after.in_use, before.in_use);
  EXPECT_EQ(after.allocations, before.allocations + 1);
  EXPECT_EQ(after.system_allocations, before.system_allocations);  // served from the cache
  set_memory_limit(after.in_use + (512 << 10), dev);
  expect_error<OutOfMemoryError>([&] { Tensor::empty({1 << 18}, DType::Float32, dev); },
                                 {"empty", "cannot allocate 1 MiB", dev.str(), "cap"});
  set_memory_limit(0, dev);
  empty_cache(dev);
  // What stays reserved is the free rest of segments that still hold a block in use.
  for (const SegmentInfo& seg : memory_snapshot(dev)) {
    bool any_allocated = false;
    for (const BlockInfo& b : seg.blocks) any_allocated = any_allocated || b.allocated;
    EXPECT_TRUE(any_allocated) << "a free segment of " << seg.size << " B stayed reserved";
  }
}

TEST_P(CudaBackend, SyncModeRunsTheSameWork) {
  set_cuda_sync_mode(true);
  Tensor t = exact_values({64, 3}, DType::Float32).to(device());
  expect_equal(t.t().contiguous().t(), t);
  set_cuda_sync_mode(false);
  if (device().is_cuda()) EXPECT_NE(cuda_current_stream(device().index), nullptr);
}

// Runs exp over a tensor whose storage is an address no GPU maps (from_blob takes any aligned
// pointer; below 64 KiB nothing is ever mapped), so the kernel faults. Prints the error's message
// to stderr and exits: 0 when it contains every string of `want`, 1 when it misses one, 2 when
// nothing was thrown. Runs in a death test's child process: the fault leaves the CUDA context
// unusable, and _Exit skips the destructors that would touch it.
[[noreturn]] void fault_in_exp(bool sync, const std::vector<std::string>& want) {
  set_cuda_sync_mode(sync);
  Tensor bad = from_blob(reinterpret_cast<void*>(uintptr_t(4096)), {4096}, DType::Float32,
                         Device("cuda:0"), [](void*) {});
  try {
    Tensor y = exp(bad);
    y.to_vector<float>();  // without sync mode the fault surfaces here, at the next sync
  } catch (const DeviceError& e) {
    const std::string msg = e.what();
    std::fprintf(stderr, "%s\n", msg.c_str());
    for (const std::string& w : want)
      if (msg.find(w) == std::string::npos) {
        std::fprintf(stderr, "missing: '%s'\n", w.c_str());
        std::_Exit(1);
      }
    std::_Exit(0);
  }
  std::_Exit(2);
}

// In sync mode (EMBER_CUDA_SYNC=1) a kernel's fault is reported by the op that launched it,
// with its operands; without it, by a later call whose message says how to find the op.
TEST_P(CudaBackend, SyncModeNamesTheOpWhoseKernelFaulted) {
  if (device().is_cpu()) GTEST_SKIP() << "a CUDA fault needs a GPU";
  // "threadsafe" re-executes the test binary for the child: a fork would inherit the parent's
  // CUDA context, which a child cannot use.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(fault_in_exp(true, {"exp: CUDA error", "operands [4096] float32 cuda:0",
                                  "restart the process"}),
              ::testing::ExitedWithCode(0), "exp: CUDA error");
  EXPECT_EXIT(fault_in_exp(false, {"CUDA error", "rerun with EMBER_CUDA_SYNC=1 to name it"}),
              ::testing::ExitedWithCode(0), "EMBER_CUDA_SYNC=1");
}

// Over 2^31 elements: the strided kernel's 64-bit version (2 GiB of uint8; GPU only).
TEST_P(CudaBackend, TensorsBeyond32BitIndexing) {
  if (device().is_cpu()) GTEST_SKIP() << "the CPU engine has no 32/64-bit split";
  const int64_t n = (int64_t(1) << 31) + 64;
  {
    Tensor big = Tensor::empty({n}, DType::UInt8, device());
    big.fill_(1);                     // contiguous: the vectorised kernel
    big.slice(0, 1, n - 2).fill_(7);  // misaligned: the strided kernel, 64-bit
    expect_close(big.slice(0, 0, 3), {1, 7, 7}, 0, 0);
    expect_close(big.slice(0, n - 4, n), {7, 7, 1, 1}, 0, 0);
  }
  empty_cache(device());
}

TEST(CudaWithoutGpu, ReportsNoDevicesAndClearErrors) {
  if (cuda_is_available()) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_EQ(cuda_device_count(), 0);
  expect_error<Error>([] { Tensor::empty({2}, DType::Float32, Device("cuda:0")); }, {"cuda:0"});
  expect_error<Error>(
      [] {
        Tensor::from_vector(std::vector<float>{1, 2}, {2}).to(Device("cuda"));
      },
      {"cuda:0"});
  expect_error<Error>([] { cuda_current_stream(0); }, {"cuda_current_stream", "cuda:0"});
  expect_error<Error>([] { synchronize(Device("cuda:0")); }, {"cuda:0"});
  // The CPU is unaffected.
  expect_close(Tensor::from_vector(std::vector<float>{1, 2}, {2}).clone(), {1, 2});
}

TEST(CudaSyncMode, CanBeSwitched) {
  bool was = cuda_sync_mode();
  set_cuda_sync_mode(!was);
  EXPECT_EQ(cuda_sync_mode(), !was);
  set_cuda_sync_mode(was);
}

}  // namespace
}  // namespace ember
