// parallel.h — parallel_for over an index range on Ember's pool (thread_pool.h), serial when the
// range is too small for a second thread to pay for itself.
#pragma once
#include <algorithm>
#include <cstdint>

#include "cpu/isa.h"
#include "cpu/thread_pool.h"
#include "ember/threads.h"

namespace ember::cpu::EMBER_CPU_ISA {

// Work is counted in the cost of one element of a cheap elementwise op (an add: two loads, an
// add, a store). A loop runs on one thread unless every thread gets at least kParallelGrain of
// it. Measured on the 2-core development VM (Xeon, AVX-512) with parallel_for itself, at load
// 15-20 from other builds, the only state that machine was in:
// - one add of floats took 0.43 ns (32 K: 14 us), a scalar std::exp 2.7 ns (6x an add), one
//   step of a float sum 0.67 ns;
// - handing a loop to a worker that is still polling cost nothing measurable (2 threads were as
//   fast as 1 from 4 K adds up, neither faster: the second core was busy), and waking one that
//   sleeps cost the caller 55-60 us: the woken thread may take the caller's own core;
// - on an idle core a second thread halves a loop once the hand-over (a few microseconds to a
//   polling worker) is small beside it: 32 K adds a thread, 14 us, keeps it under a quarter.
constexpr int64_t kParallelGrain = 32768;

// The cost of one element, in those units, for the kernel families whose elements are not
// cheap, so that smaller tensors of them spread over threads.
namespace cost {
// add, mul, relu, compare, where, copy, fill; and a reduction's step, which reads an element and
// updates a running value (1.5x an add measured: counted as one).
constexpr int64_t kCheap = 1;
// exp, log, tanh, sigmoid, gelu, erf, sin, cos and their backwards: std::exp measured 6x an add;
// the libm calls (sin, erf) cost more, the vectorised exp (vector_exp.h) less.
constexpr int64_t kTranscendental = 8;
// A GEMM of m x n x k multiply-adds: OpenBLAS's kernels do 16 or more in an add's time (an
// estimate from its peak rate on AVX-512, not measured here).
constexpr int64_t gemm(int64_t m, int64_t n, int64_t k) {
  return std::max<int64_t>(m * n * k / 16, 1);
}
}  // namespace cost

// A loop of at least this many grains wakes workers that have gone to sleep; a smaller one is
// shared only with workers still polling after the previous loop (thread_pool.cpp), and runs on
// the caller alone when there are none. 16 grains (~220 us of adds) keeps the 55-60 us a wake-up
// cost on the busy machine to a quarter of the loop; on an idle one a wake-up costs less.
constexpr int64_t kWakeGrains = 16;

// How many chunks a loop is cut into per thread. More than one, so that when a worker is
// preempted mid-loop on a busy machine it holds back a small part of the work, not half of it;
// few, so that each chunk stays well above the grain.
constexpr int64_t kChunksPerThread = 4;

inline int num_threads() { return ember::get_num_threads(); }

// Calls fn(begin, end) on disjoint chunks covering [0, n), in any order and on any thread of the
// pool (the caller's included). `cost` is the work per index (cost::... units times elements),
// so that few but heavy indices still spread over threads. How [0, n) is cut depends on n, cost
// and the thread count only, never on timing. An exception fn throws reaches the caller.
template <class F> void parallel_for(int64_t n, int64_t cost, F&& fn) {
  if (n <= 0) return;
  const int64_t per_index = std::max<int64_t>(cost, 1);
  // The work in grains, saturating instead of overflowing for huge n * cost.
  const int64_t grains =
      n > INT64_MAX / per_index ? INT64_MAX / kParallelGrain : n * per_index / kParallelGrain;
  int64_t chunks = 1;
  if (grains >= 2 && !in_parallel_region())
    chunks = std::min({n, grains, int64_t(num_threads()) * kChunksPerThread});
  if (chunks <= 1 || num_threads() <= 1) {
    fn(int64_t(0), n);
    return;
  }
  auto chunk = [&](int64_t c) { fn(n * c / chunks, n * (c + 1) / chunks); };
  run_chunks(
      chunks, [](void* context, int64_t c) { (*static_cast<decltype(chunk)*>(context))(c); },
      &chunk, grains >= kWakeGrains);
}

}  // namespace ember::cpu::EMBER_CPU_ISA
