// test_tensor.cpp — the tensor itself: dtypes, views, copies, shape ops, printing, memory.
#include <sstream>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;

std::vector<double> iota(int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = double(i);
  return v;
}

TEST(DType, SizesNamesAndPromotion) {
  EXPECT_EQ(itemsize(DType::BFloat16), 2u);
  EXPECT_STREQ(dtype_name(DType::Int64), "int64");
  EXPECT_EQ(dtype_from_name("float64"), DType::Float64);
  EXPECT_EQ(promote_types(DType::Int32, DType::Float32), DType::Float32);
  EXPECT_EQ(promote_types(DType::UInt8, DType::Int8), DType::Int16);
  EXPECT_EQ(promote_types(DType::Bool, DType::Int16), DType::Int16);
  EXPECT_EQ(promote_types(DType::Float16, DType::BFloat16), DType::Float32);
  EXPECT_EQ(promote_types(DType::Int64, DType::Float16), DType::Float16);
  // A 0-d operand beside one with dims counts only by its kind (bool < integer < floating).
  EXPECT_EQ(result_type(DType::Float32, false, DType::Float64, true), DType::Float32);
  EXPECT_EQ(result_type(DType::Float64, true, DType::Float32, false), DType::Float32);
  EXPECT_EQ(result_type(DType::Int32, false, DType::Int64, true), DType::Int32);
  EXPECT_EQ(result_type(DType::Int32, false, DType::Float64, true), DType::Float64);
  EXPECT_EQ(result_type(DType::Float16, true, DType::Int64, false), DType::Float16);
  EXPECT_EQ(result_type(DType::Bool, false, DType::UInt8, true), DType::UInt8);
  EXPECT_EQ(result_type(DType::UInt8, false, DType::Int8, true), DType::UInt8);
  EXPECT_EQ(result_type(DType::Float16, false, DType::BFloat16, true), DType::Float16);
  EXPECT_EQ(result_type(DType::Int32, true, DType::Float64, true), DType::Float64);  // both 0-d
  EXPECT_EQ(result_type(DType::UInt8, false, DType::Int8, false), DType::Int16);     // both dims
  EXPECT_THROW(dtype_from_name("float128"), ValueError);
}

TEST(DType, HalfAndBFloat16RoundToNearestEven) {
  EXPECT_EQ(float(Half(1.0f)), 1.0f);
  EXPECT_EQ(float(Half(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(float(Half(65520.0f))));
  EXPECT_EQ(float(Half(1.0f + 1.0f / 2048)), 1.0f);  // tie goes to even
  EXPECT_EQ(float(Half(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);
  EXPECT_EQ(float(Half(5.9604645e-8f)), 5.9604645e-8f);  // smallest subnormal
  EXPECT_EQ(float(BFloat16(1.0f + 1.0f / 256)), 1.0f);   // tie to even
  EXPECT_EQ(float(BFloat16(3.0f)), 3.0f);
  EXPECT_TRUE(std::isnan(float(BFloat16(NAN))));
}

TEST(Views, TransposePermuteShareStorage) {
  Tensor a = Tensor::from_vector(iota(6), {2, 3}).to(DType::Float32);
  Tensor t = a.transpose(0, 1);
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_TRUE(t.shares_storage(a));
  expect_close(t, {0, 3, 1, 4, 2, 5});
  Tensor p = Tensor::from_vector(iota(24), {2, 3, 4}).permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(p.stride(0), 1);
  EXPECT_DOUBLE_EQ(p.select(0, 3).select(0, 1).select(0, 2).item<double>(), 1 * 12 + 2 * 4 + 3);
}

TEST(Views, SliceWithStepsAndNegativeIndices) {
  Tensor a = Tensor::from_vector(iota(10), {10});
  expect_close(a.slice(0, 1, 8, 3), {1, 4, 7});
  expect_close(a.slice(0, -3, Slice::kEnd), {7, 8, 9});
  expect_close(a.slice(0, -100, 2), {0, 1});
  EXPECT_EQ(a.slice(0, 5, 2).numel(), 0);
  EXPECT_DOUBLE_EQ(a.select(0, -1).item<double>(), 9);
  expect_close(a.narrow(0, 2, 3), {2, 3, 4});
  expect_error<IndexError>([&] { a.select(0, 10); }, {"select", "index 10", "[10] float64 cpu"});
  expect_error<ValueError>([&] { a.slice(0, 0, 5, 0); }, {"slice", "step 0"});
}

TEST(Views, ExpandSqueezeUnsqueezeFlatten) {
  Tensor a = Tensor::from_vector(iota(3), {3, 1});
  Tensor e = a.expand({2, 3, 4});
  EXPECT_EQ(e.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(e.stride(0), 0);
  EXPECT_EQ(e.stride(2), 0);
  EXPECT_DOUBLE_EQ(e.select(0, 1).select(0, 2).select(0, 3).item<double>(), 2);
  expect_error<ShapeError>([&] { a.expand({4, 4}); }, {"expand", "[3, 1] float64 cpu", "[4, 4]"});
  EXPECT_EQ(a.squeeze().shape(), (Shape{3}));
  EXPECT_EQ(a.squeeze(0).shape(), (Shape{3, 1}));
  EXPECT_EQ(a.unsqueeze(0).shape(), (Shape{1, 3, 1}));
  EXPECT_EQ(a.unsqueeze(-1).shape(), (Shape{3, 1, 1}));
  Tensor b = Tensor::from_vector(iota(24), {2, 3, 4});
  EXPECT_EQ(b.flatten(1).shape(), (Shape{2, 12}));
  EXPECT_EQ(b.flatten().shape(), (Shape{24}));
}

TEST(Views, ViewAndReshapeCopyOnlyWhenStridesForbid) {
  Tensor a = Tensor::from_vector(iota(12), {3, 4});
  Tensor v = a.view({2, -1});
  EXPECT_EQ(v.shape(), (Shape{2, 6}));
  EXPECT_TRUE(v.shares_storage(a));
  Tensor t = a.t();
  expect_error<ShapeError>([&] { t.view({12}); }, {"view", "[4, 3] float64 cpu", "reshape"});
  Tensor r = t.reshape({12});
  EXPECT_FALSE(r.shares_storage(a));
  expect_close(r, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  // Splitting a dim of a transposed tensor is still a view.
  Tensor s = Tensor::from_vector(iota(24), {4, 6}).t().view({2, 3, 4});
  EXPECT_DOUBLE_EQ(s.select(0, 1).select(0, 2).select(0, 3).item<double>(), 3 * 6 + 5);
  expect_error<ShapeError>([&] { a.view({5, -1}); }, {"view", "-1"});
  expect_error<ShapeError>([&] { a.view({5, 5}); }, {"view", "[5, 5]", "12 elements"});
}

TEST(Copies, CopyCastsBroadcastsAndWritesThroughViews) {
  Tensor a = Tensor::empty({2, 3}, DType::Int32);
  a.copy_(Tensor::from_vector(std::vector<double>{1.9, -2.7, 3.0}, {3}));
  expect_close(a, {1, -2, 3, 1, -2, 3});
  a.select(0, 1).fill_(7);
  expect_close(a, {1, -2, 3, 7, 7, 7});
  Tensor f = Tensor::from_vector(iota(6), {2, 3}).t().contiguous();
  EXPECT_TRUE(f.is_contiguous());
  expect_close(f, {0, 3, 1, 4, 2, 5});
  Tensor b = Tensor::from_vector(std::vector<double>{0, 0.5, -1}, {3}).to(DType::Bool);
  expect_close(b, {0, 1, 1});
  for (DType dt : {DType::UInt8, DType::Int8, DType::Int16, DType::Int64, DType::Float16,
                   DType::BFloat16, DType::Float32}) {
    expect_close(Tensor::from_vector(iota(5), {5}).to(dt), iota(5));
  }
  expect_error<ShapeError>([&] { a.copy_(Tensor::empty({4})); }, {"copy_", "[4] float32 cpu"});
}

TEST(Copies, EmptyAndScalarTensors) {
  Tensor z = Tensor::empty({0, 3});
  EXPECT_EQ(z.numel(), 0);
  z.fill_(1);
  EXPECT_EQ(z.clone().shape(), (Shape{0, 3}));
  Tensor s = Tensor::from_vector(std::vector<float>{2.5f}, {});
  EXPECT_EQ(s.dim(), 0);
  EXPECT_FLOAT_EQ(s.item<float>(), 2.5f);
  EXPECT_EQ(s.reshape({1, 1}).shape(), (Shape{1, 1}));
  expect_error<ValueError>([&] { z.item<float>(); }, {"item", "[0, 3]"});
}

TEST(ShapeOps, CatStackSplitChunk) {
  Tensor a = Tensor::from_vector(iota(6), {2, 3});
  Tensor b = Tensor::from_vector(iota(3), {1, 3});
  expect_close(cat({a, b}, 0), {0, 1, 2, 3, 4, 5, 0, 1, 2});
  expect_close(cat({a.t(), a.t()}, 1), {0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5});
  Tensor s = stack({b.squeeze(), b.squeeze()}, 1);
  EXPECT_EQ(s.shape(), (Shape{3, 2}));
  expect_close(s, {0, 0, 1, 1, 2, 2});
  auto parts = split(Tensor::from_vector(iota(7), {7}), 3);
  ASSERT_EQ(parts.size(), 3u);
  expect_close(parts[2], {6});
  auto chunks = chunk(Tensor::from_vector(iota(6), {6}), 4);
  ASSERT_EQ(chunks.size(), 3u);  // ceil(6/4) = 2 per chunk, like torch.chunk
  expect_close(chunks[1], {2, 3});
  expect_error<ShapeError>(
      [&] {
        cat({a, Tensor::from_vector(iota(4), {1, 4})});
      },
      {"cat", "[1, 4] float64 cpu", "[2, 3] float64 cpu"});
}

// cat and stack promote mixed dtypes as binary ops do (PyTorch's cat and stack).
TEST(Tensor, CatAndStackPromoteMixedDtypes) {
  Tensor i = Tensor::from_vector<int32_t>({1, 2}, {2});
  Tensor f = Tensor::from_vector<float>({0.5f}, {1});
  Tensor c = cat({i, f});
  EXPECT_EQ(c.dtype(), DType::Float32);
  expect_close(c, {1, 2, 0.5});
  Tensor u = Tensor::from_vector<uint8_t>({200}, {1});
  Tensor s8 = Tensor::from_vector<int8_t>({-3}, {1});
  Tensor us = cat({u, s8});
  EXPECT_EQ(us.dtype(), DType::Int16);
  EXPECT_EQ(us.to_vector<int16_t>(), (std::vector<int16_t>{200, -3}));
  Tensor st = stack({i, Tensor::from_vector<double>({3, 4}, {2})}, 1);
  EXPECT_EQ(st.dtype(), DType::Float64);
  expect_close(st, {1, 3, 2, 4});
  Tensor out = Tensor::empty({3}, DType::Float32);
  cat_out(out, {i, f});
  expect_close(out, {1, 2, 0.5});
  expect_error<DTypeError>(
      [&] {
        cat_out(Tensor::empty({3}, DType::Int32), {i, f});
      },
      {"cat", "float32"});
}

TEST(Printing, ShowsValuesDtypeAndDevice) {
  Tensor a = Tensor::from_vector(std::vector<int64_t>{1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(a.str(), "[2, 2] int64 cpu");
  std::string s = a.to_string();
  EXPECT_NE(s.find("[[1, 2],"), std::string::npos) << s;
  EXPECT_NE(s.find("dtype=int64"), std::string::npos) << s;
  EXPECT_NE(s.find("device=cpu"), std::string::npos) << s;
}

TEST(Memory, CachingAllocatorReusesBlocksAndTracksPeak) {
  Device cpu;
  empty_cache(cpu);
  MemoryStats before = memory_stats(cpu);
  {
    Tensor a = Tensor::empty({1 << 18});  // 1 MiB
    MemoryStats s = memory_stats(cpu);
    EXPECT_EQ(s.in_use - before.in_use, 1 << 20);
  }
  MemoryStats after_free = memory_stats(cpu);
  EXPECT_EQ(after_free.in_use, before.in_use);
  EXPECT_GE(after_free.reserved, before.reserved + (1 << 20));  // kept in the cache
  int64_t sys = after_free.system_allocations;
  { Tensor b = Tensor::empty({1 << 18}); }
  EXPECT_EQ(memory_stats(cpu).system_allocations, sys);  // served from the cache
  reset_peak_memory(cpu);
  EXPECT_EQ(memory_stats(cpu).peak, memory_stats(cpu).in_use);
}

TEST(Memory, CapRaisesOutOfMemoryNamingTheRequest) {
  Device cpu;
  set_memory_limit(memory_stats(cpu).in_use + (4 << 20), cpu);
  expect_error<OutOfMemoryError>([] { Tensor::empty({1 << 21}); },
                                 {"empty", "cannot allocate 8 MiB", "cap", "EMBER_MEMORY_LIMIT"});
  Tensor small = Tensor::empty({1 << 10});  // still fine under the cap
  EXPECT_EQ(small.numel(), 1 << 10);
  set_memory_limit(0, cpu);
  EXPECT_EQ(parse_bytes("2GiB"), int64_t(2) << 30);
  EXPECT_EQ(parse_bytes("1.5 MB"), 1500000);
  EXPECT_THROW(parse_bytes("lots"), ValueError);
}

TEST(Memory, AllocationLogNamesSizeDeviceAddressAndOp) {
  const bool was = allocation_logging();
  set_allocation_logging(true);
  testing::internal::CaptureStderr();
  std::string address;
  {
    Tensor x = ones({1000});  // 4000 B, from the op `ones`
    std::ostringstream os;
    os << x.data_ptr();
    address = os.str();
    Tensor y = add(x, x);
  }
  const std::string log = testing::internal::GetCapturedStderr();
  set_allocation_logging(false);
  testing::internal::CaptureStderr();
  { Tensor quiet = ones({1000}); }
  const std::string silent = testing::internal::GetCapturedStderr();
  set_allocation_logging(was);
  const std::string alloc = "[ember alloc] alloc 4000 B (block 4096 B, ";
  EXPECT_NE(log.find(alloc), std::string::npos) << log;
  EXPECT_NE(log.find("on cpu at " + address + " by ones\n"), std::string::npos) << log;
  EXPECT_NE(log.find(" by add\n"), std::string::npos) << log;
  EXPECT_NE(log.find("[ember alloc] free 4000 B (block 4096 B) on cpu at " + address +
                     ", allocated by ones\n"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find(", allocated by add\n"), std::string::npos) << log;
  EXPECT_EQ(silent.find("[ember alloc]"), std::string::npos) << silent;
}

TEST(Devices, ParsingAndUnavailableDevices) {
  EXPECT_EQ(Device("cuda:1").index, 1);
  EXPECT_EQ(Device("cpu").str(), "cpu");
  EXPECT_THROW(Device("tpu"), ValueError);
  if (!cuda_is_available()) {
    try {
      Tensor::empty({2}, DType::Float32, Device("cuda:0"));
      ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cuda:0"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ember
