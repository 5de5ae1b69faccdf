// vector_math.h — tanh, sigmoid, erf and log for float written, like exp in vector_exp.h, as
// straight-line arithmetic so that the loops calling them vectorise (internal header).
//
// Each function computes every branch of its formula and picks the result with selects (which
// become blends), so a lane's branch never stops the loop from vectorising; NaN, +-inf and
// subnormals give what the C library gives. The polynomials are minimax fits (Lawson's algorithm
// in double against a 40-digit reference, then rounded to float) in the error that matters: the
// relative error of the function's result. The arithmetic is plain float operations, so the
// result has the same bits at every vector width (the build fuses no multiply-adds). Each bound
// below is what tests/test_vector_math.cpp checks against the double-precision functions over a
// dense sweep of the floats, with the largest error found over every 61st float beside it; ulp
// is the spacing of floats at the exact result (the smallest subnormal below the normal range).
#pragma once
#include <cmath>
#include <cstdint>

#include "cpu/isa.h"
#include "cpu/vector_exp.h"

namespace ember::cpu::EMBER_CPU_ISA {

// |x| with the sign of s (std::copysign without the library call).
[[gnu::always_inline]] inline float with_sign_of(float x, float s) {
  const uint32_t sign = __builtin_bit_cast(uint32_t, s) & 0x80000000u;
  return __builtin_bit_cast(float, __builtin_bit_cast(uint32_t, x) | sign);
}

// tanh within 2 ulp (largest found 1.30; glibc's tanhf: 2.08). For |x| < 0.625, x + x^3 P(x^2) (P's
// relative error 4e-9); above, 1 - 2 / (e^(2|x|) + 1): the division's operand is below 0.45 there,
// so its error costs under 1 ulp of the result, and e^(2|x|) = inf past 44 gives exactly 1.
[[gnu::always_inline]] inline float tanh_vectorisable(float x) {
  const float a = std::fabs(x);
  const float s = x * x;
  float p = -5.70498733e-3f;
  p = p * s + 2.06390880e-2f;
  p = p * s - 5.37397154e-2f;
  p = p * s + 1.33314416e-1f;
  p = p * s - 3.33332807e-1f;
  const float small = a + a * s * p;  // of |x|, which keeps tanh(-0) = -0 below
  const float large = 1.0f - 2.0f / (exp_vectorisable(2.0f * a) + 1.0f);
  return with_sign_of(a < 0.625f ? small : large, x);  // NaN takes the second: NaN
}

// 1 / (1 + e^-x) within 2.5 ulp (largest found 2.30: exp's error, then two roundings), as
// e^x / (1 + e^x) for x < 0 so that e^-|x| never overflows: the tiny results for x < -88 come out
// as the subnormals they are instead of 1 / inf = 0.
[[gnu::always_inline]] inline float sigmoid_vectorisable(float x) {
  const float e = exp_vectorisable(-std::fabs(x));
  return (x >= 0.0f ? 1.0f : e) / (1.0f + e);  // -0 counts as >= 0: 1/2; NaN: NaN / NaN
}

// erf within 1.5 ulp (largest found 1.21; glibc's erff: 0.89). For |x| < 0.921875, x + x Q(x^2)
// (Q's relative error 1.6e-8 of erf); above, 1 - e^R(|x|) with R a fit of log(erfc): an error there
// shrinks by erfc/erf, below 0.24, on the way to the result. |x| is clamped to 4, past which erf
// rounds to +-1, so that R sees no inf.
[[gnu::always_inline]] inline float erf_vectorisable(float x) {
  const float s = x * x;
  float q = -5.99087973e-4f;
  q = q * s + 4.99318633e-3f;
  q = q * s - 2.67666206e-2f;
  q = q * s + 1.12818167e-1f;
  q = q * s - 3.76124948e-1f;
  q = q * s + 1.28379151e-1f;
  const float small = x + x * q;
  float t = std::fabs(x);
  t = t > 4.0f ? 4.0f : t;  // NaN stays NaN
  float r = 1.95720728e-4f;
  r = r * t - 3.04109347e-3f;
  r = r * t + 2.22184528e-2f;
  r = r * t - 1.03914030e-1f;
  r = r * t - 6.37202263e-1f;
  r = r * t - 1.12766373e+0f;
  r = r * t - 1.98554524e-4f;
  const float large = 1.0f - exp_vectorisable(r);
  return t < 0.921875f ? small : with_sign_of(large, x);  // NaN takes the first: NaN
}

// log within 1 ulp (largest found 0.82). x = 2^k m with m in [sqrt(1/2), sqrt(2)), so f = m - 1 is
// exact and in [-0.29, 0.42]; log(x) = k ln 2 + f - f^2/2 + f^3 P(f), ln 2 split as in exp so that
// k ln 2 rounds once. Subnormal x is first scaled by 2^23 into the normal range.
[[gnu::always_inline]] inline float log_vectorisable(float x) {
  const bool tiny = x < 1.17549435e-38f;  // FLT_MIN: the normal range starts here
  const float xs = tiny ? x * 8388608.0f : x;
  // k is how many binades x lies above [sqrt(1/2), sqrt(2)) (0x3F3504F3 is sqrt(1/2)); taking
  // k from the exponent bits leaves m (>> of a negative int is arithmetic in GCC and Clang).
  const uint32_t bits = __builtin_bit_cast(uint32_t, xs);
  const uint32_t above = bits - 0x3F3504F3u;
  const int32_t k = (int32_t(above) >> 23) - (tiny ? 23 : 0);
  const float m = __builtin_bit_cast(float, bits - (above & 0xFF800000u));
  const float f = m - 1.0f;
  float p = -7.63449445e-2f;
  p = p * f + 1.27615765e-1f;
  p = p * f - 1.31601825e-1f;
  p = p * f + 1.42017588e-1f;
  p = p * f - 1.66233569e-1f;
  p = p * f + 2.00012267e-1f;
  p = p * f - 2.50008196e-1f;
  p = p * f + 3.33333313e-1f;
  const float kf = float(k);
  constexpr float kLn2Hi = 0.693359375f;  // 8 significant bits: k * kLn2Hi is exact
  constexpr float kLn2Lo = -2.12194440e-4f;
  const float f2 = f * f;
  float y = f2 * f * p + kf * kLn2Lo;
  y = y - 0.5f * f2;
  y = (f + y) + kf * kLn2Hi;
  y = x < 0.0f ? NAN : y;  // -inf too
  y = x == 0.0f ? -INFINITY : y;
  y = x == INFINITY ? INFINITY : y;
  return x != x ? x : y;
}

}  // namespace ember::cpu::EMBER_CPU_ISA
