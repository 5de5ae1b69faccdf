// test_creation.cpp — zeros/ones/full, arange, linspace, eye and the *_like ops, on every device.
#include <cmath>
#include <limits>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;

class Creation : public test::DeviceTest {};
EMBER_INSTANTIATE_DEVICE_TEST(Creation);

const DType kAllDTypes[] = {DType::Bool,    DType::UInt8,  DType::Int8,    DType::Int16,
                            DType::Int32,   DType::Int64,  DType::Float16, DType::BFloat16,
                            DType::Float32, DType::Float64};

TEST_P(Creation, ConstantTensorsInEveryDtype) {
  for (DType dt : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor z = zeros({2, 3}, dt, device());
    Tensor o = ones({2, 3}, dt, device());
    Tensor f = full({4}, 3.0, dt, device());
    for (const Tensor& t : {z, o, f}) {
      EXPECT_EQ(t.dtype(), dt);
      EXPECT_EQ(t.device(), device());
      EXPECT_TRUE(t.is_contiguous());
    }
    expect_close(z, std::vector<double>(6, 0.0));
    expect_close(o, std::vector<double>(6, 1.0));
    expect_close(f, std::vector<double>(4, dt == DType::Bool ? 1.0 : 3.0));
  }
  expect_close(full({2, 2}, -2.5, DType::Float16, device()), {-2.5, -2.5, -2.5, -2.5});
  Tensor s = scalar_tensor(7.25, DType::Float64, device());
  EXPECT_EQ(s.dim(), 0);
  EXPECT_DOUBLE_EQ(s.item<double>(), 7.25);
  Tensor e = empty({3, 0}, DType::Int32, device());
  EXPECT_EQ(e.shape(), (Shape{3, 0}));
  EXPECT_EQ(zeros({0}, DType::Float32, device()).numel(), 0);
  EXPECT_EQ(ones({1, 1, 1}, DType::Float32, device()).item<float>(), 1.0f);
}

TEST_P(Creation, LikeVariantsFollowShapeDeviceAndDtype) {
  Tensor t = test::random_tensor({3, 4}, 1, DType::Float16, device()).t();  // non-contiguous
  Tensor z = zeros_like(t);
  EXPECT_EQ(z.shape(), (Shape{4, 3}));
  EXPECT_EQ(z.dtype(), DType::Float16);
  EXPECT_EQ(z.device(), device());
  EXPECT_TRUE(z.is_contiguous());
  expect_close(z, std::vector<double>(12, 0.0));
  Tensor o = ones_like(t, DType::Int32);
  EXPECT_EQ(o.dtype(), DType::Int32);
  expect_close(o, std::vector<double>(12, 1.0));
  Tensor f = full_like(t, 7.0, DType::Float64);
  expect_close(f, std::vector<double>(12, 7.0));
  Tensor e = empty_like(t);
  EXPECT_EQ(e.shape(), t.shape());
  EXPECT_EQ(e.dtype(), t.dtype());
  EXPECT_EQ(e.device(), device());
  expect_error<ValueError>([] { zeros_like(Tensor()); }, {"full_like", "undefined"});
}

TEST_P(Creation, ArangeDefaultsToInt64ForIntegralArguments) {
  Tensor a = arange(5, std::nullopt, device());
  EXPECT_EQ(a.dtype(), DType::Int64);
  EXPECT_EQ(a.device(), device());
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  Tensor b = arange(10, 0, -3, std::nullopt, device());
  EXPECT_EQ(b.to_vector<int64_t>(), (std::vector<int64_t>{10, 7, 4, 1}));
  Tensor c = arange(1, 2, 0.25, std::nullopt, device());
  EXPECT_EQ(c.dtype(), DType::Float32);
  expect_close(c, {1, 1.25, 1.5, 1.75});
  Tensor d = arange(0, 2.5, 1, std::nullopt, device());  // fractional end: float32
  EXPECT_EQ(d.dtype(), DType::Float32);
  expect_close(d, {0, 1, 2});
  EXPECT_EQ(arange(3, 3, 1, std::nullopt, device()).numel(), 0);
}

TEST_P(Creation, ArangeValuesInEachDtype) {
  std::vector<double> ref;
  for (int i = 0; i < 10; ++i) ref.push_back(0.1 * i);
  expect_close(arange(0, 1, 0.1, DType::Float32, device()), ref, 1e-7, 1e-7);
  expect_close(arange(0, 1, 0.1, DType::Float64, device()), ref, 1e-15, 1e-15);
  expect_close(arange(-4, 4, 2, DType::Float16, device()), {-4, -2, 0, 2});
  expect_close(arange(-4, 4, 2, DType::BFloat16, device()), {-4, -2, 0, 2});
  EXPECT_EQ(arange(0, 6, 2, DType::Int8, device()).to_vector<int8_t>(),
            (std::vector<int8_t>{0, 2, 4}));
  // int64 beyond 2^53 is exact (computed in integers, not doubles).
  const double base = 9007199254740992.0;  // 2^53
  Tensor big = arange(base, base + 8, 2, DType::Int64, device());
  const int64_t b = int64_t(1) << 53;
  EXPECT_EQ(big.to_vector<int64_t>(), (std::vector<int64_t>{b, b + 2, b + 4, b + 6}));
  // Large enough to split across threads.
  Tensor many = arange(100000, DType::Int32, device());
  std::vector<int32_t> v = many.to_vector<int32_t>();
  ASSERT_EQ(v.size(), 100000u);
  for (int32_t i = 0; i < 100000; i += 997) EXPECT_EQ(v[size_t(i)], i);
  EXPECT_EQ(v.back(), 99999);
}

TEST_P(Creation, ArangeErrors) {
  expect_error<ValueError>([&] { arange(0, 5, 0, std::nullopt, device()); },
                           {"arange", "step is 0"});
  expect_error<ValueError>([&] { arange(0, -5, 1, std::nullopt, device()); },
                           {"arange", "inconsistent"});
  expect_error<ValueError>(
      [&] { arange(0, std::numeric_limits<double>::infinity(), 1, std::nullopt, device()); },
      {"arange", "end is inf", "finite"});
  expect_error<DTypeError>([&] { arange(3, DType::Bool, device()); }, {"arange", "bool"});
}

TEST_P(Creation, LinspaceHitsBothEndpoints) {
  expect_close(linspace(0, 1, 5, DType::Float32, device()), {0, 0.25, 0.5, 0.75, 1});
  Tensor l = linspace(-1, 1, 7, DType::Float64, device());
  std::vector<double> v = l.to_vector<double>();
  EXPECT_EQ(v.front(), -1.0);
  EXPECT_EQ(v.back(), 1.0);
  for (int i = 0; i < 7; ++i) EXPECT_NEAR(v[size_t(i)], -1 + 2.0 * i / 6, 1e-15);
  expect_close(linspace(3, 5, 1, DType::Float32, device()), {3});
  EXPECT_EQ(linspace(3, 5, 0, DType::Float32, device()).numel(), 0);
  EXPECT_EQ(linspace(0, 10, 4, DType::Int64, device()).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 3, 6, 10}));  // truncated toward zero
  expect_close(linspace(2, -2, 5, DType::BFloat16, device()), {2, 1, 0, -1, -2});
  const int64_t n = 100001;
  Tensor big = linspace(0, 1, n, DType::Float64, device());
  std::vector<double> bv = big.to_vector<double>();
  for (int64_t i = 0; i < n; i += 1237) EXPECT_NEAR(bv[size_t(i)], double(i) / (n - 1), 1e-15);
  EXPECT_EQ(bv.back(), 1.0);
  expect_error<ValueError>([&] { linspace(0, 1, -1, DType::Float32, device()); },
                           {"linspace", "steps is -1"});
}

TEST_P(Creation, Eye) {
  expect_close(eye(3, -1, DType::Float32, device()), {1, 0, 0, 0, 1, 0, 0, 0, 1});
  Tensor r = eye(2, 4, DType::Int64, device());
  EXPECT_EQ(r.shape(), (Shape{2, 4}));
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 0, 0, 1, 0, 0}));
  Tensor tall = eye(3, 2, DType::Bool, device());
  EXPECT_EQ(tall.to_vector<bool>(), (std::vector<bool>{true, false, false, true, false, false}));
  EXPECT_EQ(eye(0, -1, DType::Float32, device()).shape(), (Shape{0, 0}));
  const int64_t n = 300;
  std::vector<double> big = eye(n, -1, DType::Float16, device()).to_vector<double>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) ASSERT_EQ(big[size_t(i * n + j)], i == j ? 1.0 : 0.0);
  expect_error<ValueError>([&] { eye(-2, -1, DType::Float32, device()); }, {"eye", "n is -2"});
}

TEST_P(Creation, NegativeSizesAreValueErrors) {
  expect_error<ValueError>(
      [&] {
        zeros({2, -1}, DType::Float32, device());
      },
      {"zeros", "[2, -1]", "negative"});
  expect_error<ValueError>([&] { full({-3}, 1.0, DType::Float32, device()); }, {"full", "[-3]"});
  expect_error<ValueError>([&] { empty({-3}, DType::Float32, device()); }, {"empty", "[-3]"});
}

}  // namespace
}  // namespace ember
