// The vectorisable float tanh, sigmoid, erf and log of the CPU elementwise kernels
// (src/cpu/vector_math.h) against the double-precision functions: every 1021st float bit pattern
// (subnormals, both signs, the whole range), every float around the places where a formula
// switches branch, and the special values, which must be what the C library gives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "cpu/vector_math.h"

namespace ember::cpu::baseline {
namespace {

// |got - exact| in units of the float spacing at exact (the smallest subnormal below the normal
// range).
double ulp_error(double exact, float got) {
  const float rounded = std::fabs(float(exact));
  const double ulp = rounded < std::numeric_limits<float>::min()
                         ? double(std::numeric_limits<float>::denorm_min())
                         : double(std::nextafter(rounded, INFINITY)) - double(rounded);
  return std::fabs(double(got) - exact) / ulp;
}

// The largest error of fn against ref over the floats x with `x_bits` from `first` to `last`
// in steps of `step`. Where the exact result rounds to an infinity, a zero or NaN, fn must give
// exactly that.
struct Worst {
  double ulps = 0;
  float x = 0;
};
template <class F, class Ref>
Worst sweep(F fn, Ref ref, uint64_t first, uint64_t last, uint64_t step) {
  Worst worst;
  for (uint64_t b = first; b <= last; b += step) {
    const uint32_t bits = uint32_t(b);
    float x;
    std::memcpy(&x, &bits, sizeof x);
    const double exact = ref(double(x));
    const float want = float(exact), got = fn(x);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << "x = " << x;
    } else if (std::isinf(want) || (want == 0.0f && exact == 0.0)) {
      EXPECT_EQ(got, want) << "x = " << x;
    } else if (const double err = ulp_error(exact, got); err > worst.ulps) {
      worst = {err, x};
    }
  }
  return worst;
}

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// The floats of both signs with magnitude in [lo, hi] (lo, hi >= 0): every one, or evenly spaced
// bit patterns where there are more than 2^20.
template <class F, class Ref> Worst sweep_both_signs(F fn, Ref ref, float lo, float hi) {
  const uint64_t step = std::max<uint64_t>(1, (bits_of(hi) - bits_of(lo)) >> 20);
  Worst pos = sweep(fn, ref, bits_of(lo), bits_of(hi), step);
  Worst neg = sweep(fn, ref, bits_of(-lo), bits_of(-hi), step);
  return pos.ulps > neg.ulps ? pos : neg;
}

template <class F, class Ref>
void expect_within(F fn, Ref ref, double ulps,
                   std::initializer_list<std::pair<float, float>> dense) {
  Worst all = sweep(fn, ref, 0, 0xFFFFFFFFu, 1021);
  EXPECT_LE(all.ulps, ulps) << "at x = " << all.x;
  for (auto [lo, hi] : dense) {
    Worst w = sweep_both_signs(fn, ref, lo, hi);
    EXPECT_LE(w.ulps, ulps) << "at x = " << w.x << " in +-[" << lo << ", " << hi << "]";
  }
}

float tanh_v(float x) { return tanh_vectorisable(x); }
float sigmoid_v(float x) { return sigmoid_vectorisable(x); }
float erf_v(float x) { return erf_vectorisable(x); }
float log_v(float x) { return log_vectorisable(x); }
double tanh_d(double x) { return std::tanh(x); }
double sigmoid_d(double x) { return 1 / (1 + std::exp(-x)); }
double erf_d(double x) { return std::erf(x); }
double log_d(double x) { return std::log(x); }

TEST(VectorMath, TanhWithinTwoUlp) {
  // The branch switch at 0.625, the smallest floats, where tanh reaches 1, where e^2x overflows.
  expect_within(tanh_v, tanh_d, 2.0, {{0.6f, 0.65f}, {0.0f, 1e-37f}, {8.5f, 9.5f}, {44.0f, 45.0f}});
}

TEST(VectorMath, SigmoidWithinTwoAndAHalfUlp) {
  // Around 0, and x < -88, where e^-x overflows float but the result is a subnormal.
  expect_within(sigmoid_v, sigmoid_d, 2.5, {{0.0f, 1e-3f}, {87.0f, 105.0f}});
}

TEST(VectorMath, ErfWithinOneAndAHalfUlp) {
  // The branch switch at 0.921875, the smallest floats, where erf rounds to 1 and the clamp at 4.
  expect_within(erf_v, erf_d, 1.5, {{0.9f, 0.95f}, {0.0f, 1e-37f}, {3.8f, 4.1f}});
}

TEST(VectorMath, LogWithinOneUlp) {
  // Around 1, the binade switches at sqrt(1/2) and sqrt(2), subnormals and the normal range's
  // edge, the largest floats.
  expect_within(log_v, log_d, 1.0,
                {{0.99f, 1.01f}, {0.70f, 0.72f}, {1.40f, 1.42f}, {0.0f, 2e-38f}, {3e38f, 3.4e38f}});
}

TEST(VectorMath, SpecialValuesAreTheCLibrarys) {
  const float inf = INFINITY, nan = NAN, tiny = std::numeric_limits<float>::denorm_min();
  for (float x : {0.0f, -0.0f, inf, -inf, tiny, -tiny}) {
    EXPECT_EQ(tanh_vectorisable(x), std::tanh(x)) << x;
    EXPECT_EQ(std::signbit(tanh_vectorisable(x)), std::signbit(std::tanh(x))) << x;
    EXPECT_EQ(erf_vectorisable(x), std::erf(x)) << x;
    EXPECT_EQ(std::signbit(erf_vectorisable(x)), std::signbit(std::erf(x))) << x;
  }
  EXPECT_EQ(sigmoid_vectorisable(inf), 1.0f);
  EXPECT_EQ(sigmoid_vectorisable(-inf), 0.0f);
  EXPECT_EQ(sigmoid_vectorisable(0.0f), 0.5f);
  EXPECT_EQ(sigmoid_vectorisable(-0.0f), 0.5f);
  EXPECT_GT(sigmoid_vectorisable(-100.0f), 0.0f);  // a subnormal, not 1 / (1 + inf)
  EXPECT_EQ(log_vectorisable(1.0f), 0.0f);
  EXPECT_EQ(log_vectorisable(0.0f), -inf);
  EXPECT_EQ(log_vectorisable(-0.0f), -inf);
  EXPECT_EQ(log_vectorisable(inf), inf);
  EXPECT_TRUE(std::isnan(log_vectorisable(-inf)));
  EXPECT_TRUE(std::isnan(log_vectorisable(-1.0f)));
  EXPECT_TRUE(std::isnan(log_vectorisable(-tiny)));
  EXPECT_NEAR(log_vectorisable(tiny), std::log(tiny), 1e-5);
  for (float f : {nan, -nan}) {
    EXPECT_TRUE(std::isnan(tanh_vectorisable(f)));
    EXPECT_TRUE(std::isnan(sigmoid_vectorisable(f)));
    EXPECT_TRUE(std::isnan(erf_vectorisable(f)));
    EXPECT_TRUE(std::isnan(log_vectorisable(f)));
  }
}

}  // namespace
}  // namespace ember::cpu::baseline
