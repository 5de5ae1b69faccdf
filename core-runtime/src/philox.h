// philox.h — Philox4x32-10, the counter-based random number generator of Salmon, Moraes, Dror
// and Shaw, "Parallel random numbers: as easy as 1, 2, 3" (SC 2011), on the host and the GPU.
//
// A counter-based generator has no state to carry from one number to the next: a 128-bit counter
// and a 64-bit key go in, 128 random bits come out, and any counter can be computed on its own.
// So element i of a random tensor can be produced by whichever thread, CPU core or GPU, handles
// element i, and every device produces the same stream for the same seed.
//
// Ember's streams: one random op call has a key (the seed) and a call number (the generator's
// offset). Philox block b of that call is philox4x32_10(counter = {b, offset}, key = seed), each
// 64-bit value split into two 32-bit words, low word first. Calls therefore never share a block,
// and a call can draw up to 2^64 blocks.
#pragma once
#include <cstdint>

#include "ember/half.h"  // EMBER_HOST_DEVICE

namespace ember {

struct Philox4 {
  uint32_t v[4];
};

// The ten-round Philox bijection of `counter` under `key`.
EMBER_HOST_DEVICE inline Philox4 philox4x32_10(Philox4 counter, uint32_t key0, uint32_t key1) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;    // round multipliers
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;  // key schedule increments
  uint32_t* c = counter.v;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key0 += kWeyl0;
      key1 += kWeyl1;
    }
    // Two 32x32 -> 64-bit products; their halves, mixed with the other words and the key.
    uint64_t p0 = uint64_t(kMul0) * c[0], p1 = uint64_t(kMul1) * c[2];
    uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    Philox4 next = {{hi1 ^ c[1] ^ key0, lo1, hi0 ^ c[3] ^ key1, lo0}};
    counter = next;
  }
  return counter;
}

// The random bits of one op call: block(b) is 4 x 32 random bits, a pure function of
// (seed, offset, b).
struct PhiloxStream {
  uint64_t seed;
  uint64_t offset;

  EMBER_HOST_DEVICE Philox4 block(uint64_t b) const {
    Philox4 counter = {{uint32_t(b), uint32_t(b >> 32), uint32_t(offset), uint32_t(offset >> 32)}};
    return philox4x32_10(counter, uint32_t(seed), uint32_t(seed >> 32));
  }
};

// ---- random bits -> numbers; exact integer-to-float conversions, identical on every device ----

// 24 random bits -> a float in [0, 1), a multiple of 2^-24.
EMBER_HOST_DEVICE inline float uniform_float(uint32_t x) { return float(x >> 8) * 0x1p-24f; }
// 24 random bits -> a float in (0, 1]: never 0, so that log() of it is finite.
EMBER_HOST_DEVICE inline float uniform_float_open0(uint32_t x) {
  return float((x >> 8) + 1) * 0x1p-24f;
}
// 53 random bits -> a double in [0, 1), and in (0, 1].
EMBER_HOST_DEVICE inline double uniform_double(uint32_t lo, uint32_t hi) {
  return double(((uint64_t(hi) << 32) | lo) >> 11) * 0x1p-53;
}
EMBER_HOST_DEVICE inline double uniform_double_open0(uint32_t lo, uint32_t hi) {
  return double((((uint64_t(hi) << 32) | lo) >> 11) + 1) * 0x1p-53;
}

// a * b + c with two roundings on every device. nvcc would otherwise fuse it into one
// fused multiply-add (one rounding), and the GPU's numbers would differ from the CPU's in the
// last bit. (The host build targets x86-64-v2, which has no FMA instruction, so it never fuses;
// a host build for an FMA target needs -ffp-contract=off to keep the two streams identical.)
EMBER_HOST_DEVICE inline double mul_add_unfused(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(__dmul_rn(a, b), c);
#else
  return a * b + c;
#endif
}

}  // namespace ember
