// fused_kernel_test.h — what the fused-kernel tests share: the bit-for-bit comparison of a
// fused result with the unfused one, and a fixture giving each test a private kernel cache, so
// that the tests exercise the compiler.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

#include "ember/ember.h"
#include "scoped_env.h"

namespace ember::test {

// Both as float64 (every dtype converts exactly except int64 beyond 2^53, which these values
// never reach); NaN equals NaN, and a zero's sign counts in the exact comparison.
inline void expect_equal_bits(const Tensor& fused, const Tensor& unfused, const std::string& what) {
  ASSERT_EQ(fused.shape(), unfused.shape()) << what;
  ASSERT_EQ(fused.dtype(), unfused.dtype()) << what;
  const Tensor a = fused.to(DType::Float64).contiguous(),
               b = unfused.to(DType::Float64).contiguous();
  const double* x = a.data<double>();
  const double* y = b.data<double>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const bool same = (std::isnan(x[i]) && std::isnan(y[i])) ||
                      (x[i] == y[i] && std::signbit(x[i]) == std::signbit(y[i]));
    ASSERT_TRUE(same) << "element " << i << ": fused " << x[i] << ", unfused " << y[i] << "\n"
                      << what;
  }
}

// A private cache per test (EMBER_CACHE_DIR in a fresh folder, removed after).
class FusedKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/ember-fusion-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    folder_ = pattern;
    cache_.emplace("EMBER_CACHE_DIR", folder_);
  }
  void TearDown() override {
    cache_.reset();
    std::system(("rm -rf " + folder_).c_str());
  }
  std::string folder_;
  std::optional<ScopedEnv> cache_;
};

}  // namespace ember::test
