// random_kernels.h — the distributions the CPU and CUDA kernels of the random ops share; the
// slots are in kernels/random.def (internal header).
//
// A distribution turns one Philox block (4 x 32 random bits, see philox.h) into kPerBlock
// consecutive output elements: 4 when an element needs 32 random bits, 2 when it needs 64.
// Element i of a call is dist(stream.block(i / kPerBlock), i % kPerBlock, i), a pure function of
// (seed, offset, i), whichever device or thread computes it.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "convert.h"
#include "dispatch.h"
#include "ember/tensor.h"
#include "philox.h"

namespace ember {

constexpr double kTwoPi = 6.28318530717958647693;

// Uniform on [low, low + range). float64 takes 53 random bits per element, other types 24.
template <class T> struct UniformDist {
  static constexpr int kPerBlock = std::is_same_v<T, double> ? 2 : 4;
  double low, range;
  EMBER_HOST_DEVICE T operator()(const Philox4& r, int j, int64_t) const {
    double u;
    if constexpr (std::is_same_v<T, double>) {
      u = uniform_double(r.v[2 * j], r.v[2 * j + 1]);
    } else {
      u = double(uniform_float(r.v[j]));
    }
    return convert<T>(mul_add_unfused(u, range, low));
  }
};

// Normal(mean, stddev^2) by Box-Muller: uniforms u1 in (0, 1] and u2 in [0, 1) give two
// independent standard normals r cos(2 pi u2) and r sin(2 pi u2), r = sqrt(-2 ln u1). Each pair
// of elements shares one (u1, u2): 2 pairs per block for 32-bit uniforms, 1 pair for float64's
// 64-bit ones.
template <class T> struct NormalDist {
  static constexpr int kPerBlock = std::is_same_v<T, double> ? 2 : 4;
  double mean, stddev;
  EMBER_HOST_DEVICE T operator()(const Philox4& r, int j, int64_t) const {
    double z;
    if constexpr (std::is_same_v<T, double>) {
      double radius = std::sqrt(-2.0 * std::log(uniform_double_open0(r.v[0], r.v[1])));
      double angle = kTwoPi * uniform_double(r.v[2], r.v[3]);
      z = j == 0 ? radius * std::cos(angle) : radius * std::sin(angle);
    } else {  // float math: 24-bit uniforms carry no more precision than that
      const int pair = j & ~1;
      float radius = std::sqrt(-2.0f * std::log(uniform_float_open0(r.v[pair])));
      float angle = float(kTwoPi) * uniform_float(r.v[pair + 1]);
      z = (j & 1) ? radius * std::sin(angle) : radius * std::cos(angle);
    }
    return convert<T>(mul_add_unfused(z, stddev, mean));
  }
};

// 1 with probability p: u < p for u = 32 random bits / 2^32, compared exactly in double.
// probs holds one p for every element (one_p) or one per element.
template <class T, class P> struct BernoulliDist {
  static constexpr int kPerBlock = 4;
  const P* probs;
  bool one_p;
  EMBER_HOST_DEVICE T operator()(const Philox4& r, int j, int64_t i) const {
    double p = double(compute_t<P>(probs[one_p ? 0 : i]));
    return convert<T>(double(r.v[j]) * 0x1p-32 < p);
  }
};

// Integers uniform on [low, low + range): 64 random bits modulo range (bias below range / 2^64).
template <class T> struct RandintDist {
  static constexpr int kPerBlock = 2;
  int64_t low;
  uint64_t range;
  EMBER_HOST_DEVICE T operator()(const Philox4& r, int j, int64_t) const {
    uint64_t bits = (uint64_t(r.v[2 * j + 1]) << 32) | r.v[2 * j];
    return convert<T>(int64_t(uint64_t(low) + bits % range));
  }
};

// 64 random bits per element: randperm's sort keys.
struct KeyDist {
  static constexpr int kPerBlock = 2;
  EMBER_HOST_DEVICE uint64_t operator()(const Philox4& r, int j, int64_t) const {
    return (uint64_t(r.v[2 * j + 1]) << 32) | r.v[2 * j];
  }
};

}  // namespace ember
