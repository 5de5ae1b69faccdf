// test_util.h — helpers shared by the core-runtime tests: devices to run on, random inputs from
// an independent generator (std::mt19937, not Ember's), and value comparison.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ember/ember.h"

namespace ember::test {

// Sets (or unsets: nullopt) an environment variable for the life of the object, restoring what
// was there before.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// Tests parameterised by device run on device 0 of every backend of ember/backends.def ("cpu",
// "cuda:0"); a backend that is not compiled in, or finds no device here, skips visibly.
class DeviceTest : public ::testing::TestWithParam<Device> {
 protected:
  void SetUp() override {
    const DeviceType type = GetParam().type;
    if (device_count(type) == 0)
      GTEST_SKIP() << "no " << kDeviceTypeNames[int(type)]
                   << " device here (compiled in: " << backend_compiled(type) << ")";
  }
  Device device() const { return GetParam(); }
};

inline std::vector<Device> test_devices() {
  std::vector<Device> devices;
  for (int t = 0; t < kNumDeviceTypes; ++t) devices.push_back(Device(DeviceType(t), 0));
  return devices;
}

// "cpu", "cuda0": a device as a test name.
inline std::string device_name(const ::testing::TestParamInfo<Device>& info) {
  const Device& d = info.param;
  return kDeviceTypeNames[int(d.type)] + (d.is_cpu() ? "" : std::to_string(d.index));
}

#define EMBER_INSTANTIATE_DEVICE_TEST(Suite)                                                   \
  INSTANTIATE_TEST_SUITE_P(Devices, Suite, ::testing::ValuesIn(::ember::test::test_devices()), \
                           ::ember::test::device_name)

// Uniform values in [lo, hi) from a seeded std::mt19937.
inline std::vector<double> random_values(int64_t n, uint32_t seed, double lo = -1.0,
                                         double hi = 1.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(size_t(std::max<int64_t>(n, 0)));
  for (double& x : v) x = dist(gen);
  return v;
}

// A tensor of `shape` with random values, created as float64 on the host and then cast/moved.
inline Tensor random_tensor(const Shape& shape, uint32_t seed, DType dtype = DType::Float32,
                            Device device = Device(), double lo = -1.0, double hi = 1.0) {
  return Tensor::from_vector(random_values(shape_numel(shape), seed, lo, hi), shape)
      .to(device, dtype);
}

// Asserts every element of `t` (cast to double) is within atol + rtol*|expected| of `expected`.
inline void expect_close(const Tensor& t, const std::vector<double>& expected, double atol = 1e-5,
                         double rtol = 1e-5) {
  std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), expected.size()) << "for " << t.str();
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " of " << t.str();
      continue;
    }
    EXPECT_NEAR(got[i], expected[i], atol + rtol * std::fabs(expected[i]))
        << "element " << i << " of " << t.str();
  }
}

inline void expect_close(const Tensor& t, const Tensor& expected, double atol = 1e-5,
                         double rtol = 1e-5) {
  ASSERT_EQ(t.shape(), expected.shape()) << t.str() << " vs " << expected.str();
  expect_close(t, expected.to_vector<double>(), atol, rtol);
}

// The unit roundoff u of a floating dtype: rounding a real in its normal range to it errs by at
// most u * |value| (float16 2^-11, bfloat16 2^-8, float32 2^-24, float64 2^-53). A kernel that
// computes a half type in float and rounds once is within u * |exact| plus float's own error;
// one that accumulated in the half type would be off by sqrt(n) to n times u.
inline double unit_roundoff(DType t) {
  switch (t) {
    case DType::Float16:
      return 0x1p-11;
    case DType::BFloat16:
      return 0x1p-8;
    case DType::Float32:
      return 0x1p-24;
    default:
      return 0x1p-53;
  }
}

// f applied to each element of t (in double): the reference of an elementwise op.
inline std::vector<double> map_ref(const Tensor& t, const std::function<double(double)>& f) {
  std::vector<double> v = t.to_vector<double>();
  for (double& x : v) x = f(x);
  return v;
}

// t equals expected exactly, element by element (a NaN matching a NaN).
inline void expect_exact(const Tensor& t, const std::vector<double>& expected) {
  std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), expected.size()) << t.str();
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(expected[i]))
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i << " of " << t.str();
    else EXPECT_EQ(got[i], expected[i]) << "element " << i << " of " << t.str();
  }
}

// Tolerance of an elementwise result of a dtype computed in double and rounded once (half types
// keep 11 / 8 bits; float32's own libm and the vectorised exp differ by a few ulps).
inline double elementwise_tol(DType t) {
  switch (t) {
    case DType::Float16:
      return 2e-3;
    case DType::BFloat16:
      return 1.6e-2;
    case DType::Float32:
      return 2e-6;
    default:
      return 1e-12;
  }
}

// Waits for every test device. A check that needs device data (an index out of range found by
// a CUDA kernel) raises at the next synchronising point rather than in the op (ember/cuda.h), so
// an expected error counts as fn's when it surfaces here.
inline void synchronize_devices() {
  for (const Device& d : test_devices()) synchronize(d);
}

// Runs `fn` and synchronises, expects E, and checks that the message contains every string in
// `parts`.
template <class E, class F> void expect_error(F&& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    synchronize_devices();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    std::string msg = e.what();
    for (const auto& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

// A pooling case of the pooling tests: input shape, window and its geometry.
struct PoolCase {
  Shape x;
  Size2 kernel, stride, padding, dilation;
  bool ceil_mode;
};

// Output length of a pooling window, written out from PyTorch's documented rule.
inline int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const double len = double(in + 2 * p - d * (k - 1) - 1) / double(s);
  int64_t out = int64_t(ceil_mode ? std::ceil(len) : std::floor(len)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

}  // namespace ember::test
