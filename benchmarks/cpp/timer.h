// timer.h — the benchmark timer: warm-up calls, then repeated samples, reported as the median
// with the quartiles as spread (benchmarks/harness/timer.py is the same timer in Python, so both
// sides of every ratio are measured alike).
//
// One sample times `inner` back-to-back calls and divides by `inner`. During warm-up `inner`
// grows until a sample lasts at least min_sample_ms, so the clock's resolution and the cost of a
// CUDA synchronise stay out of the figure for tiny ops. sync() runs before the clock starts and
// before it stops (ember::synchronize on CUDA, nothing on the CPU): queued GPU work is counted.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace bench {

struct TimerOptions {
  int warmup = 3;            // calls not timed (first-touch page faults, caches, cuBLAS setup)
  int repeat = 20;           // timed samples
  double min_sample_ms = 1;  // a sample repeats the call until it lasts at least this long
};

struct TimeStats {
  double median_ms = 0, q1_ms = 0, q3_ms = 0, min_ms = 0;  // per call
  int samples = 0;
  int64_t inner = 1;  // calls per sample
};

// The q-quantile (0..1) of sorted values, interpolating linearly as numpy.quantile does.
inline double quantile(const std::vector<double>& sorted, double q) {
  double pos = q * double(sorted.size() - 1);
  size_t lo = size_t(pos);
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - double(lo)) * (sorted[hi] - sorted[lo]);
}

template <class Fn, class Sync>
TimeStats time_calls(Fn&& fn, Sync&& sync, const TimerOptions& opt) {
  using Clock = std::chrono::steady_clock;
  auto sample_ms = [&](int64_t inner) {
    sync();
    auto start = Clock::now();
    for (int64_t i = 0; i < inner; ++i) fn();
    sync();
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  };

  TimeStats s;
  for (int i = 0; i < opt.warmup; ++i) {
    double ms = sample_ms(s.inner);
    if (ms < opt.min_sample_ms)  // aim for twice the minimum, leaving room for noise
      s.inner = std::max<int64_t>(s.inner + 1, int64_t(double(s.inner) * 2 * opt.min_sample_ms /
                                                       std::max(ms, 1e-6)));
  }
  std::vector<double> per_call;
  for (int i = 0; i < opt.repeat; ++i) per_call.push_back(sample_ms(s.inner) / double(s.inner));
  std::sort(per_call.begin(), per_call.end());
  s.median_ms = quantile(per_call, 0.5);
  s.q1_ms = quantile(per_call, 0.25);
  s.q3_ms = quantile(per_call, 0.75);
  s.min_ms = per_call.front();
  s.samples = opt.repeat;
  return s;
}

}  // namespace bench
