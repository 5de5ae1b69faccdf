// normalization_kernels.h — the mean/variance accumulator every backend builds its statistics
// with; the normalization family's slots are in kernels/normalization.def (internal header).
//
// Layouts the front functions hand to kernels (all contiguous unless said otherwise):
//   batch norm: x, y, dy, dx viewed as [N, C, S] (S = product of the trailing dims); per-channel
//               tensors [C]; statistics in the compute dtype (float32 for half types).
//   layer norm: x, y, dy, dx viewed as [M, D] (M rows of D normalised values); weight, bias [D];
//               mean, rstd [M] in the compute dtype.
#pragma once
#include <cstdint>

#include "dispatch.h"
#include "ember/half.h"
#include "ember/tensor.h"

namespace ember {

// Count, mean and M2 (sum of squared deviations from the mean) of a set of values. combine()
// merges the statistics of two disjoint sets (Chan, Golub & LeVeque), so a backend may build them
// from pieces in any order — chunks on a CPU thread, threads of a warp, warps of a block — and
// still read the data once. var = m2 / n (biased) or m2 / (n - 1) (unbiased).
template <class Acc> struct MeanM2 {
  Acc n = 0;  // a float count: exact up to 2^24 for float, and only ever used in ratios
  Acc mean = 0;
  Acc m2 = 0;

  EMBER_HOST_DEVICE void combine(const MeanM2& o) {
    if (o.n == 0) return;
    if (n == 0) {
      *this = o;
      return;
    }
    Acc total = n + o.n;
    Acc delta = o.mean - mean;
    mean += delta * (o.n / total);
    m2 += o.m2 + delta * delta * (n * (o.n / total));
    n = total;
  }
  // Welford's update: combine() with a set of one value.
  EMBER_HOST_DEVICE void add(Acc x) {
    n += 1;
    Acc delta = x - mean;
    mean += delta / n;
    m2 += delta * (x - mean);
  }
};

}  // namespace ember
