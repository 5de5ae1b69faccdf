// random.cpp — CPU kernels of the random ops. Each output is a fresh contiguous tensor filled
// Philox block by Philox block; blocks are independent, so threads take disjoint ranges of them.
#include <algorithm>

#include "kernels.h"
#include "ops/random_kernels.h"

// From here on compiled for this file's instruction set; cpu/isa_begin.h says why the CPU
// backend's own headers come after it.
#include "cpu/isa_begin.h"
// The CPU backend's headers.
#include "cpu/parallel.h"
#include "cpu/workspace.h"

namespace ember::cpu::EMBER_CPU_ISA {

// out[i] = dist(stream.block(i / K), i % K, i) for i < n, K = Dist::kPerBlock.
template <class T, class Dist>
static void fill_random(T* out, int64_t n, PhiloxStream stream, const Dist& dist) {
  constexpr int K = Dist::kPerBlock;
  const int64_t blocks = (n + K - 1) / K;
  const int64_t full = n / K;  // blocks whose K elements are all in out
  parallel_for(blocks, 16 * K, [&](int64_t begin, int64_t end) {  // ~16x a copy per element
    for (int64_t b = begin; b < end; ++b) {
      const Philox4 r = stream.block(uint64_t(b));
      if (b < full) {
        // Unconditional and unrolled, the K elements share their common terms: a normal pair's
        // log and square root are computed once, its sine and cosine together.
        for (int j = 0; j < K; ++j) out[b * K + j] = dist(r, j, b * K + j);
        continue;
      }
      for (int j = 0; j < K; ++j) {
        const int64_t i = b * K + j;
        if (i < n) out[i] = dist(r, j, i);
      }
    }
  });
}

// out: [*] contiguous, floating.
static void uniform(Tensor& out, double low, double high, PhiloxStream stream) {
  dispatch_floating(out.dtype(), "uniform", [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_random(out.data<T>(), out.numel(), stream, UniformDist<T>{low, high - low});
  });
}

// out: [*] contiguous, floating.
static void normal(Tensor& out, double mean, double std, PhiloxStream stream) {
  dispatch_floating(out.dtype(), "normal", [&](auto tag) {
    using T = typename decltype(tag)::type;
    fill_random(out.data<T>(), out.numel(), stream, NormalDist<T>{mean, std});
  });
}

// probs: contiguous floating, 1 or out.numel() elements; out: [*] contiguous.
static void bernoulli(const Tensor& probs, Tensor& out, PhiloxStream stream) {
  dispatch_floating(probs.dtype(), "bernoulli", [&](auto ptag) {
    using P = typename decltype(ptag)::type;
    dispatch_all(out.dtype(), "bernoulli", [&](auto tag) {
      using T = typename decltype(tag)::type;
      BernoulliDist<T, P> dist{probs.data<P>(), probs.numel() == 1};
      fill_random(out.data<T>(), out.numel(), stream, dist);
    });
  });
}

// out: [*] contiguous, numeric.
static void randint(Tensor& out, int64_t low, int64_t high, PhiloxStream stream) {
  dispatch_numeric(out.dtype(), "randint", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RandintDist<T> dist{low, uint64_t(high) - uint64_t(low)};
    fill_random(out.data<T>(), out.numel(), stream, dist);
  });
}

// A random sort key and the position it was drawn for.
struct KeyIndex {
  uint64_t key;
  int64_t index;
  bool operator<(const KeyIndex& o) const {
    return key < o.key || (key == o.key && index < o.index);
  }
};

// out: [n] int64. Sorting (key, index) pairs orders equal keys by index, as the GPU's stable
// radix sort does. The keys are drawn into out itself (int64 and uint64 may alias), the pairs
// sorted in a workspace that the memory cap counts.
static void randperm(Tensor& out, PhiloxStream stream) {
  const int64_t n = out.numel();
  int64_t* p = out.data<int64_t>();
  uint64_t* keys = reinterpret_cast<uint64_t*>(p);
  fill_random(keys, n, stream, KeyDist{});
  Workspace<KeyIndex> pairs(n, "randperm");
  for (int64_t i = 0; i < n; ++i) pairs[i] = {keys[i], i};
  std::sort(pairs.data(), pairs.data() + n);
  for (int64_t i = 0; i < n; ++i) p[i] = pairs[i].index;
}

void register_random(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/random.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cpu::EMBER_CPU_ISA

#include "cpu/isa_end.h"
