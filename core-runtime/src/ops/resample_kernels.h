// resample_kernels.h — kernel tables of the resample family (interpolate and its gradient), and
// PyTorch's coordinate transforms, written once for every backend (internal header).
#pragma once
#include <cmath>
#include <cstdint>

#include "dispatch.h"
#include "ember/half.h"
#include "ember/tensor.h"

namespace ember {

enum class ResampleMode { Nearest, Bilinear };

// One spatial axis: `in` input positions resampled to `out`; scale_factor is the caller's
// (0 when the output size was given instead).
struct ResampleAxis {
  int64_t in, out;
  double scale_factor;
};

struct Resample {
  ResampleMode mode;
  bool align_corners;
  ResampleAxis h, w;
};

// The input step per output step, in Acc (float32 for float16/bfloat16/float32, float64 for
// float64), as PyTorch's area_pixel_compute_scale: a given scale factor enters as 1 / s.
template <class Acc> EMBER_HOST_DEVICE inline Acc source_step(const ResampleAxis& a, bool corners) {
  if (corners) return a.out > 1 ? Acc(a.in - 1) / Acc(a.out - 1) : Acc(0);
  return a.scale_factor > 0 ? Acc(1.0 / a.scale_factor) : Acc(a.in) / Acc(a.out);
}

// Nearest: floor(dst * step) with the step in float32 whatever the dtype (PyTorch's legacy
// nearest_neighbor_compute_source_index), clamped to the last input.
EMBER_HOST_DEVICE inline int64_t nearest_source(int64_t dst, const ResampleAxis& a) {
  const float step = source_step<float>(a, false);
  const int64_t src = int64_t(floorf(float(dst) * step));
  return src < a.in - 1 ? src : a.in - 1;
}

// Bilinear: output dst reads inputs i0 and i1 = min(i0 + 1, in - 1) with weights 1 - w1 and w1.
template <class Acc> struct LinearTaps {
  int64_t i0, i1;
  Acc w1;
};

template <class Acc>
EMBER_HOST_DEVICE inline LinearTaps<Acc> linear_source(int64_t dst, Acc step, int64_t in,
                                                       bool corners) {
  Acc src = corners ? step * Acc(dst) : step * (Acc(dst) + Acc(0.5)) - Acc(0.5);
  if (src < Acc(0)) src = Acc(0);
  const int64_t i0 = int64_t(src);  // src >= 0: truncation is floor
  return {i0, i0 < in - 1 ? i0 + 1 : i0, src - Acc(i0)};
}

}  // namespace ember
