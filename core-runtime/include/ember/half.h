// half.h — float16 and bfloat16 storage types. Arithmetic happens in float (see compute_t);
// these structs only convert, with round-to-nearest-even, on the host and on the GPU alike.
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define EMBER_HOST_DEVICE __host__ __device__
#else
#define EMBER_HOST_DEVICE
#endif

namespace ember {

namespace detail {
EMBER_HOST_DEVICE inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
EMBER_HOST_DEVICE inline float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
}  // namespace detail

struct Half {
  uint16_t bits = 0;
  Half() = default;
  EMBER_HOST_DEVICE Half(float f) : bits(from_float(f)) {}  // NOLINT: implicit like a scalar
  EMBER_HOST_DEVICE operator float() const { return to_float(bits); }

  EMBER_HOST_DEVICE static uint16_t from_float(float f) {
    uint32_t x = detail::float_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) return uint16_t(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: inf
    if (abs < 0x38800000u) {  // result is subnormal (or zero): scale by 2^24 and round
      float scaled = detail::bits_float(abs) * 16777216.0f;  // exact
      uint32_t m = uint32_t(scaled);
      float rem = scaled - float(m);
      if (rem > 0.5f || (rem == 0.5f && (m & 1u))) ++m;
      return uint16_t(sign | m);
    }
    uint32_t mant_odd = (abs >> 13) & 1u;
    abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
    return uint16_t(sign | (abs >> 13));
  }
  EMBER_HOST_DEVICE static float to_float(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) {  // zero or subnormal: mant * 2^-24
      float f = float(mant) * 5.9604644775390625e-8f;
      return sign ? -f : f;
    }
    if (exp == 31) return detail::bits_float(sign | 0x7f800000u | (mant << 13));
    return detail::bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  EMBER_HOST_DEVICE BFloat16(float f) : bits(from_float(f)) {}  // NOLINT
  EMBER_HOST_DEVICE operator float() const { return detail::bits_float(uint32_t(bits) << 16); }

  EMBER_HOST_DEVICE static uint16_t from_float(float f) {
    uint32_t x = detail::float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
    return uint16_t(x >> 16);
  }
};

}  // namespace ember
