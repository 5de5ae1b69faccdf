// vector_exp.h — exp for float written so that the compiler vectorises the loops that call it
// (internal header).
//
// std::exp is a call into libm, and a loop that calls a function runs one element at a time. This
// exp is straight-line arithmetic, so a loop over it becomes SIMD code (4 floats per SSE
// instruction at -march=x86-64-v2). The method:
//   exp(x) = 2^n * exp(r),  n = round(x / ln 2),  r = x - n * ln 2,  |r| <= ln(2) / 2,
// where exp(r) is its Taylor series to r^7 (the first term left out, r^8 / 8!, is below 5.3e-9 of
// exp(r) for |r| <= 0.347, well under float's half-ulp of 6e-8), and 2^n is built directly in the
// exponent bits of a float. ln 2 is split into a high part exact in float and a small low part, so
// that n * ln 2 loses nothing when subtracted. The result is within 1.25 ulp of the exact value
// (tests/test_vector_exp.cpp; std::exp is within 1); inf, -inf and NaN give inf, 0 and NaN, as
// std::exp does.
#pragma once
#include <cmath>
#include <cstdint>

#include "cpu/isa.h"

namespace ember::cpu::EMBER_CPU_ISA {

// Always inlined: a loop that calls it out of line cannot be vectorised.
[[gnu::always_inline]] inline float exp_vectorisable(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693145751953125f;  // 15 significant bits: n * kLn2Hi is exact
  constexpr float kLn2Lo = 1.42860682030941723e-6f;
  constexpr float kMaxArg = 88.7228317f;      // exp(x) overflows float above this
  constexpr float kMinArg = -103.972076f;     // and rounds to 0 below this
  constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  // Clamped so that n stays in [-150, 128] (the selects at the end give the true results); a
  // NaN passes through both comparisons unchanged.
  float xc = x > kMaxArg ? kMaxArg : x;  // one comparison per select: each becomes a blend
  xc = xc < kMinArg ? kMinArg : xc;
  const float shifted = xc * kLog2e + kRoundMagic;  // n in the low bits of the significand
  const float n = shifted - kRoundMagic;
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.0f / 5040;  // Horner: 1 + r (1 + r (1/2 + r (1/6 + ... r (1/5040))))
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^n as two factors 2^(n/2) and 2^(n - n/2), each a normal float even for n = -150, so that
  // results down to the smallest subnormal round once, at the last multiply.
  // __builtin_bit_cast (GCC, Clang) reinterprets bits without the addressable temporary that
  // std::memcpy would need, which keeps the loop vectorisable. Unsigned: for a NaN argument the
  // arithmetic below wraps instead of overflowing.
  const uint32_t bits = __builtin_bit_cast(uint32_t, shifted);
  const int32_t ni = int32_t(bits - 0x4B400000u);  // n itself (kRoundMagic's bit pattern removed)
  const int32_t half = ni / 2;
  const float scale_a = __builtin_bit_cast(float, uint32_t(half + 127) << 23);
  const float scale_b = __builtin_bit_cast(float, uint32_t(ni - half + 127) << 23);
  float y = p * scale_a * scale_b;
  y = x > kMaxArg ? INFINITY : y;
  return x < kMinArg ? 0.0f : y;
}

// exp in the compute type C: the vectorisable float version, std::exp for double.
template <class C> [[gnu::always_inline]] inline C exp_c(C x) {
  if constexpr (sizeof(C) == sizeof(float)) return exp_vectorisable(x);
  else return std::exp(x);
}

}  // namespace ember::cpu::EMBER_CPU_ISA
