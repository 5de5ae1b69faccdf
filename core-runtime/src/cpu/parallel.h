// parallel.h — parallel_for over an index range with OpenMP (serial when OpenMP is absent or the
// range is small enough that threading would cost more than it saves).
#pragma once
#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu/isa.h"

namespace ember::cpu::EMBER_CPU_ISA {

// Below this many elements of work a loop runs on one thread.
constexpr int64_t kParallelGrain = 32768;

inline int num_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Calls fn(begin, end) on disjoint chunks covering [0, n). `cost` is the work per index (in
// elements) so that few but heavy indices still spread over threads.
template <class F> void parallel_for(int64_t n, int64_t cost, F&& fn) {
  if (n <= 0) return;
  int threads = num_threads();
  if (threads <= 1 || n == 1 || n * std::max<int64_t>(cost, 1) < kParallelGrain) {
    fn(int64_t(0), n);
    return;
  }
#ifdef _OPENMP
  int64_t chunks = std::min<int64_t>(n, threads);
#pragma omp parallel for num_threads(int(chunks)) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
    fn(begin, end);
  }
#else
  fn(int64_t(0), n);
#endif
}

}  // namespace ember::cpu::EMBER_CPU_ISA
