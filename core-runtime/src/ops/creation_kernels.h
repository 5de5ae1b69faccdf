// creation_kernels.h — the per-element formulas that the CPU and CUDA kernels of the creation
// ops share; the slots are in kernels/creation.def (internal header).
#pragma once
#include <cstdint>
#include <type_traits>

#include "convert.h"
#include "dispatch.h"
#include "ember/tensor.h"

namespace ember {

// arange element i. Integer outputs with integral start and step are computed exactly in int64
// (a double holds integers only up to 2^53); everything else in double, then converted.
template <class T>
EMBER_HOST_DEVICE inline T arange_value(int64_t i, double start, double step, bool integral) {
  if constexpr (std::is_integral_v<T>) {
    if (integral) return T(int64_t(start) + int64_t(step) * i);
  }
  return convert<T>(start + step * double(i));
}

// linspace element i of n (n >= 2). Stepping forward from start for the first half and backward
// from end for the second makes both endpoints exact and the rounding symmetric.
EMBER_HOST_DEVICE inline double linspace_value(int64_t i, int64_t n, double start, double end) {
  const double step = (end - start) / double(n - 1);
  return i < n / 2 ? start + step * double(i) : end - step * double(n - 1 - i);
}

}  // namespace ember
