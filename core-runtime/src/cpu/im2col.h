// im2col.h — the unrolling that turns a convolution into a matrix product (internal header).
//
// For one image and one channel group, im2col copies every input value each output position
// reads into a column matrix
//   col: [C * kh * kw, Ho * Wo],  col[(c * kh + i) * kw + j][oh * Wo + ow] = x[c][ih][iw]
//   with ih = oh * stride_h - pad_h + i * dilation_h, iw = ow * stride_w - pad_w + j * dilation_w,
// and 0 where (ih, iw) falls in the padding. Then conv = weight [O, C * kh * kw] @ col.
// col2im is its adjoint: it adds each column entry back onto the input position it came from,
// which is the last step of the gradient with respect to the input.
#pragma once
#include <algorithm>
#include <cstdint>

#include "cpu/isa.h"
#include "ops/conv_pool_kernels.h"

namespace ember::cpu::EMBER_CPU_ISA {

// Sizes of one (image, group) slice of a convolution.
struct ConvSlice {
  int64_t channels, height, width;  // input: [channels, height, width]
  int64_t kh, kw;                   // kernel
  int64_t out_h, out_w;             // output positions
};

// The output columns [lo, hi) whose input column ow * stride - pad + offset lies in [0, size).
inline void valid_range(int64_t out, int64_t stride, int64_t pad, int64_t offset, int64_t size,
                        int64_t& lo, int64_t& hi) {
  const int64_t shift = offset - pad;  // input column = ow * stride + shift
  lo = shift >= 0 ? 0 : std::min(out, (-shift + stride - 1) / stride);
  hi = size - shift <= 0 ? 0 : std::min(out, (size - shift - 1) / stride + 1);
  hi = std::max(hi, lo);
}

// Calls fn(in_row, col_row, lo, hi, iw0) for every (channel, tap, output row) of col, whose rows
// lie ld apart (ld >= out_h * out_w: several images' columns side by side), with
// offsets in elements: col[col_row + ow] for ow in [lo, hi) reads x[in_row + ow * stride_w + iw0];
// the other entries of that row of Wo are padding, as are all of them when in_row is -1.
template <class Fn>
void for_each_col_row(const ConvSlice& s, const Conv2dParams& p, int64_t ld, Fn&& fn) {
  for (int64_t c = 0; c < s.channels; ++c)
    for (int64_t i = 0; i < s.kh; ++i)
      for (int64_t j = 0; j < s.kw; ++j) {
        int64_t lo, hi;
        valid_range(s.out_w, p.stride_w, p.pad_w, j * p.dilation_w, s.width, lo, hi);
        const int64_t iw0 = j * p.dilation_w - p.pad_w;
        const int64_t col_rows = ((c * s.kh + i) * s.kw + j) * ld;
        for (int64_t oh = 0; oh < s.out_h; ++oh) {
          const int64_t ih = oh * p.stride_h - p.pad_h + i * p.dilation_h;
          const int64_t in_row = ih >= 0 && ih < s.height ? (c * s.height + ih) * s.width : -1;
          fn(in_row, col_rows + oh * s.out_w, lo, hi, iw0);
        }
      }
}

// x: [channels, height, width] -> col: [channels * kh * kw, out_h * out_w], rows ld apart.
// A row is a short copy, with a padding entry at one end or none: the fills are called only where
// there is padding, and stride 1 is one memmove (a strided element loop cost twice as much).
template <class T>
void im2col(const ConvSlice& s, const Conv2dParams& p, const T* x, T* col, int64_t ld) {
  const int64_t sw = p.stride_w, wo = s.out_w;
  for_each_col_row(s, p, ld,
                   [&](int64_t in_row, int64_t col_row, int64_t lo, int64_t hi, int64_t iw0) {
                     T* out = col + col_row;
                     if (in_row < 0) {
                       std::fill(out, out + wo, T(0));
                       return;
                     }
                     const T* in = x + in_row + lo * sw + iw0;  // x at output column lo
                     if (lo > 0) std::fill(out, out + lo, T(0));
                     if (sw == 1) std::copy(in, in + (hi - lo), out + lo);
                     else
                       for (int64_t k = 0; k < hi - lo; ++k) out[lo + k] = in[k * sw];
                     if (hi < wo) std::fill(out + hi, out + wo, T(0));
                   });
}

// col: [channels * kh * kw, out_h * out_w], rows ld apart, added onto x: [channels, height, width]
template <class T>
void col2im_add(const ConvSlice& s, const Conv2dParams& p, const T* col, int64_t ld, T* x) {
  const int64_t sw = p.stride_w;
  for_each_col_row(s, p, ld,
                   [&](int64_t in_row, int64_t col_row, int64_t lo, int64_t hi, int64_t iw0) {
                     if (in_row < 0) return;
                     T* in = x + in_row + lo * sw + iw0;  // x at output column lo
                     const T* out = col + col_row + lo;
                     if (sw == 1)
                       for (int64_t k = 0; k < hi - lo; ++k) in[k] += out[k];
                     else
                       for (int64_t k = 0; k < hi - lo; ++k) in[k * sw] += out[k];
                   });
}

}  // namespace ember::cpu::EMBER_CPU_ISA
