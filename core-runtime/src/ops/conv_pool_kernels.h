// conv_pool_kernels.h — kernel tables of the conv_pool family (internal header).
//
// Every kernel receives contiguous NCHW tensors of one floating dtype (float16, bfloat16,
// float32, float64; indices are int64) on one device, with output tensors already allocated at
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

// out[n, o, oh, ow] = bias[o] + sum_{c in group(o), i, j} x[n, c, ih, iw] * weight[o, c', i, j]
//   x: [N, C, H, W], weight: [O, C / groups, kh, kw], bias: [O] or undefined (no bias),
//   out: [N, O, Ho, Wo]
EMBER_KERNEL(conv2d_kernel, void(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                 Tensor& out, const Conv2dParams& p));
// grad_x = d(sum(grad_out * conv2d(x, weight)))/dx
//   grad_out: [N, O, Ho, Wo], weight: [O, C / groups, kh, kw], grad_x: [N, C, H, W]
EMBER_KERNEL(conv2d_backward_input_kernel, void(const Tensor& grad_out, const Tensor& weight,
                                                Tensor& grad_x, const Conv2dParams& p));
// grad_weight = d(sum(grad_out * conv2d(x, weight)))/dweight
//   grad_out: [N, O, Ho, Wo], x: [N, C, H, W], grad_weight: [O, C / groups, kh, kw]
EMBER_KERNEL(conv2d_backward_weight_kernel, void(const Tensor& grad_out, const Tensor& x,
                                                 Tensor& grad_weight, const Conv2dParams& p));
// grad_bias[o] = sum_{n, oh, ow} grad_out[n, o, oh, ow]
//   grad_out: [N, O, Ho, Wo], grad_bias: [O]
EMBER_KERNEL(conv2d_backward_bias_kernel, void(const Tensor& grad_out, Tensor& grad_bias));

// Window (oh, ow) covers input rows oh * stride_h - pad_h + i * dilation_h, i in [0, kernel_h),
// and likewise for columns. As for conv, the output shape carries ceil_mode.
struct Pool2dParams {
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;  // max pooling only; avg pooling uses 1
  bool count_include_pad = true;           // avg pooling only, see avg_pool2d in conv_pool.h
};

// out[n, c, oh, ow] = max over the window's in-bounds positions (the first NaN if there is one;
// on ties the first in row-major order), indices[n, c, oh, ow] = its ih * W + iw.
//   x: [N, C, H, W], out and indices (int64): [N, C, Ho, Wo]
EMBER_KERNEL(max_pool2d_kernel,
             void(const Tensor& x, Tensor& out, Tensor& indices, const Pool2dParams& p));
// grad_x[n, c].flat[indices[n, c, oh, ow]] += grad_out[n, c, oh, ow], grad_x zeroed first.
//   grad_out and indices (int64): [N, C, Ho, Wo], grad_x: [N, C, H, W]
EMBER_KERNEL(max_pool2d_backward_kernel,
             void(const Tensor& grad_out, const Tensor& indices, Tensor& grad_x));

// out[n, c, oh, ow] = sum of the window's in-bounds inputs / divisor, where the divisor is
// (min(hstart + kernel_h, H + pad_h) - hstart) * (same for w) with count_include_pad, else the
// number of in-bounds positions (hstart = oh * stride_h - pad_h).
//   x: [N, C, H, W], out: [N, C, Ho, Wo]
EMBER_KERNEL(avg_pool2d_kernel, void(const Tensor& x, Tensor& out, const Pool2dParams& p));
//   grad_out: [N, C, Ho, Wo], grad_x: [N, C, H, W]
EMBER_KERNEL(avg_pool2d_backward_kernel,
             void(const Tensor& grad_out, Tensor& grad_x, const Pool2dParams& p));

// Output row oh averages input rows [floor(oh * H / Ho), ceil((oh + 1) * H / Ho)); same for
// columns.
//   x: [N, C, H, W], out: [N, C, Ho, Wo]
EMBER_KERNEL(adaptive_avg_pool2d_kernel, void(const Tensor& x, Tensor& out));
//   grad_out: [N, C, Ho, Wo], grad_x: [N, C, H, W]
EMBER_KERNEL(adaptive_avg_pool2d_backward_kernel, void(const Tensor& grad_out, Tensor& grad_x));

}  // namespace ember
