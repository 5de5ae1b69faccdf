// The vectorisable float exp of the CPU softmax kernels (src/cpu/vector_exp.h) against std::exp
// in double: every 1021st float bit pattern, the edges of the float range, inf and NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "cpu/vector_exp.h"

namespace ember::cpu::baseline {
namespace {

// |got - exp(x)| in units of the float spacing at exp(x) (the smallest subnormal below the
// normal range).
double ulp_error(float x, float got) {
  const double exact = std::exp(double(x));
  const float rounded = float(exact);
  const double ulp = rounded < std::numeric_limits<float>::min()
                         ? double(std::numeric_limits<float>::denorm_min())
                         : double(std::nextafter(rounded, INFINITY)) - double(rounded);
  return std::fabs(double(got) - exact) / ulp;
}

TEST(VectorExp, WithinOneAndAQuarterUlpAcrossTheFloats) {
  double worst = 0;
  float worst_x = 0;
  for (uint64_t b = 0; b <= 0xFFFFFFFFu; b += 1021) {
    const uint32_t bits = uint32_t(b);
    float x;
    std::memcpy(&x, &bits, sizeof x);
    if (std::isnan(x)) continue;
    const float want = float(std::exp(double(x)));
    const float got = exp_vectorisable(x);
    if (std::isinf(want) || want == 0.0f) {
      ASSERT_EQ(got, want) << "x = " << x;  // overflow to inf, underflow to 0, exactly
      continue;
    }
    const double err = ulp_error(x, got);
    if (err > worst) worst = err, worst_x = x;
  }
  EXPECT_LE(worst, 1.25) << "at x = " << worst_x;
}

TEST(VectorExp, SpecialValuesAndRangeEdges) {
  EXPECT_EQ(exp_vectorisable(0.0f), 1.0f);
  EXPECT_EQ(exp_vectorisable(-0.0f), 1.0f);
  EXPECT_EQ(exp_vectorisable(INFINITY), INFINITY);
  EXPECT_EQ(exp_vectorisable(-INFINITY), 0.0f);
  EXPECT_TRUE(std::isnan(exp_vectorisable(NAN)));
  EXPECT_EQ(exp_vectorisable(89.0f), INFINITY);  // past FLT_MAX
  EXPECT_EQ(exp_vectorisable(-110.0f), 0.0f);    // below the smallest subnormal
  for (float x : {88.7f, 88.72f, -87.3f, -95.0f, -103.9f, 1.0f, -1.0f, 0.3465f, -0.3466f})
    EXPECT_LE(ulp_error(x, exp_vectorisable(x)), 1.25) << "x = " << x;
  EXPECT_GT(exp_vectorisable(-100.0f), 0.0f);  // a subnormal result, not flushed to zero
}

}  // namespace
}  // namespace ember::cpu::baseline
