// conv_pool_kernels.h — the parameter structs of the conv_pool family's kernels, whose slots
// are listed in kernels/conv_pool.def (internal header).
//
// Every kernel receives contiguous NCHW tensors of one floating dtype (float16, bfloat16,
// float32, float64; max pooling's indices are int64, its window offsets
// uint8, int32 or int64) on one device, with output tensors already allocated at
// their final shapes. Each kernel overwrites its outputs entirely (zeroing them itself where it
// accumulates). Sizes the kernel needs (N, C, H, W, Ho, Wo, O, kh, kw) come from the shapes.
#pragma once
#include <cstdint>

#include "dispatch.h"
#include "ember/tensor.h"

namespace ember {

// pad_h/pad_w are the top/left padding. The bottom/right padding is implied by the output size
// (it is larger by one only for padding="same" with an even dilation * (kernel - 1)): an input
// index outside [0, H) or [0, W) reads as zero. For output position (oh, ow) and kernel tap
// (i, j) the input position is (oh * stride_h - pad_h + i * dilation_h,
//                               ow * stride_w - pad_w + j * dilation_w).
struct Conv2dParams {
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
};

// Window (oh, ow) covers input rows oh * stride_h - pad_h + i * dilation_h, i in [0, kernel_h),
// and likewise for columns. As for conv, the output shape carries ceil_mode.
struct Pool2dParams {
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;  // max pooling only; avg pooling uses 1
  bool count_include_pad = true;           // avg pooling only, see avg_pool2d in conv_pool.h
  // max pooling only: the forward records each max's offset in its window (conv_pool.h's
  // max_pool2d_with_offsets) instead of its int64 index in the plane.
  bool window_offsets = false;
};

}  // namespace ember
