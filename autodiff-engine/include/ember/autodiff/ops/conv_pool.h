// ops/conv_pool.h — builder functions of 2-D convolution and pooling (src/rules/conv_pool.cpp),
// with core-runtime's arguments (ember/ops/conv_pool.h). Pairs (stride, padding, ...) become
// 2-element int-list attributes; padding "same"/"valid" the string attribute padding_mode.
#pragma once
#include "ember/autodiff/ops/apply.h"
#include "ember/ops/conv_pool.h"

namespace ember::autodiff {

inline std::vector<int64_t> pair_attr(Size2 s) { return {s.h, s.w}; }
inline Attrs conv_attrs(Size2 stride, Padding2 padding, Size2 dilation, int64_t groups) {
  return {{"stride", pair_attr(stride)},
          {"padding", pair_attr(padding.size)},
          {"padding_mode", padding.mode},
          {"dilation", pair_attr(dilation)},
          {"groups", groups}};
}

// x [N, C, H, W], weight [O, C/groups, kh, kw], bias [O] (optional) -> [N, O, Ho, Wo]
template <class V>
if_handle<V> conv2d(const V& x, const V& weight, const V& bias = V(), Size2 stride = 1,
                    Padding2 padding = 0, Size2 dilation = 1, int64_t groups = 1) {
  return apply1<V>(EMBER_OP("conv2d"), {x, weight, bias},
                   conv_attrs(stride, padding, dilation, groups));
}
// grad [N, O, Ho, Wo], weight -> [N, C, H, W] = input_shape (attribute input_shape)
template <class V>
if_handle<V> conv2d_backward_input(const V& grad, const V& weight, const Shape& input_shape,
                                   Size2 stride = 1, Padding2 padding = 0, Size2 dilation = 1,
                                   int64_t groups = 1) {
  Attrs attrs = conv_attrs(stride, padding, dilation, groups);
  attrs.set("input_shape", input_shape);
  return apply1<V>(EMBER_OP("conv2d_backward_input"), {grad, weight}, std::move(attrs));
}
// grad [N, O, Ho, Wo], x -> [O, C/groups, kh, kw] = weight_shape (attribute weight_shape)
template <class V>
if_handle<V> conv2d_backward_weight(const V& grad, const V& x, const Shape& weight_shape,
                                    Size2 stride = 1, Padding2 padding = 0, Size2 dilation = 1,
                                    int64_t groups = 1) {
  Attrs attrs = conv_attrs(stride, padding, dilation, groups);
  attrs.set("weight_shape", weight_shape);
  return apply1<V>(EMBER_OP("conv2d_backward_weight"), {grad, x}, std::move(attrs));
}

// grad [N, O, Ho, Wo] -> [O]: summed over N, Ho and Wo (one kernel)
template <class V> if_handle<V> conv2d_backward_bias(const V& grad) {
  return apply1<V>(EMBER_OP("conv2d_backward_bias"), {grad});
}

inline Attrs max_pool_attrs(Size2 kernel_size, Size2 stride, Size2 padding, Size2 dilation,
                            bool ceil_mode) {
  if (!stride.given()) stride = kernel_size;
  return {{"kernel_size", pair_attr(kernel_size)},
          {"stride", pair_attr(stride)},
          {"padding", pair_attr(padding)},
          {"dilation", pair_attr(dilation)},
          {"ceil_mode", int64_t(ceil_mode)}};
}

// Op "max_pool2d": x [N, C, H, W] -> (values [N, C, Ho, Wo], window offsets [N, C, Ho, Wo]),
// attributes kernel_size, stride, padding, dilation, ceil_mode. The offsets are core-runtime's
// compact form (max_pool2d_with_offsets: uint8 for windows up to 256 elements), which is what
// the gradient rule saves; the int64 indices PyTorch returns are made from them only when asked
// for (op "max_pool2d_indices"), so a model that never asks keeps one byte per output.
template <class V>
std::pair<V, V> max_pool2d_with_offsets(const V& x, Size2 kernel_size, Size2 stride = {},
                                        Size2 padding = 0, Size2 dilation = 1,
                                        bool ceil_mode = false) {
  auto out = apply(EMBER_OP("max_pool2d"), std::vector<V>{x},
                   max_pool_attrs(kernel_size, stride, padding, dilation, ceil_mode));
  return {out[0], out[1]};
}
// offsets [N, C, Ho, Wo] -> int64 indices into each H*W plane of input_shape (-1 for a window
// with no input element); max_pool2d's attributes and input_shape. Not differentiable.
template <class V>
if_handle<V> max_pool2d_offsets_to_indices(const V& offsets, const Shape& input_shape,
                                           Size2 kernel_size, Size2 stride = {}, Size2 padding = 0,
                                           Size2 dilation = 1, bool ceil_mode = false) {
  Attrs attrs = max_pool_attrs(kernel_size, stride, padding, dilation, ceil_mode);
  attrs.set("input_shape", input_shape);
  return apply1<V>(EMBER_OP("max_pool2d_indices"), {offsets}, std::move(attrs));
}
// grad, offsets [N, C, Ho, Wo] -> [N, C, H, W] = input_shape; max_pool2d's attributes.
template <class V>
if_handle<V> max_pool2d_offsets_backward(const V& grad, const V& offsets, const Shape& input_shape,
                                         Size2 kernel_size, Size2 stride = {}, Size2 padding = 0,
                                         Size2 dilation = 1, bool ceil_mode = false) {
  Attrs attrs = max_pool_attrs(kernel_size, stride, padding, dilation, ceil_mode);
  attrs.set("input_shape", input_shape);
  return apply1<V>(EMBER_OP("max_pool2d_offsets_backward"), {grad, offsets}, std::move(attrs));
}
// x [N, C, H, W] -> (values [N, C, Ho, Wo], int64 indices into each H*W plane), as PyTorch's
// max_pool2d(return_indices=True). stride {}: kernel_size.
template <class V>
std::pair<V, V> max_pool2d_with_indices(const V& x, Size2 kernel_size, Size2 stride = {},
                                        Size2 padding = 0, Size2 dilation = 1,
                                        bool ceil_mode = false) {
  const Shape input_shape = x.shape();  // a copy: adding nodes may move a graph's values
  auto [values, offsets] =
      max_pool2d_with_offsets(x, kernel_size, stride, padding, dilation, ceil_mode);
  return {values, max_pool2d_offsets_to_indices(offsets, input_shape, kernel_size, stride, padding,
                                                dilation, ceil_mode)};
}
template <class V>
if_handle<V> max_pool2d(const V& x, Size2 kernel_size, Size2 stride = {}, Size2 padding = 0,
                        Size2 dilation = 1, bool ceil_mode = false) {
  return max_pool2d_with_offsets(x, kernel_size, stride, padding, dilation, ceil_mode).first;
}
// grad, indices [N, C, Ho, Wo] -> [N, C, H, W] = input_shape
template <class V>
if_handle<V> max_pool2d_backward(const V& grad, const V& indices, const Shape& input_shape) {
  return apply1<V>(EMBER_OP("max_pool2d_backward"), {grad, indices},
                   {{"input_shape", input_shape}});
}
inline Attrs avg_pool_attrs(Size2 kernel_size, Size2 stride, Size2 padding, bool ceil_mode,
                            bool count_include_pad) {
  if (!stride.given()) stride = kernel_size;
  return {{"kernel_size", pair_attr(kernel_size)},
          {"stride", pair_attr(stride)},
          {"padding", pair_attr(padding)},
          {"ceil_mode", int64_t(ceil_mode)},
          {"count_include_pad", int64_t(count_include_pad)}};
}
template <class V>
if_handle<V> avg_pool2d(const V& x, Size2 kernel_size, Size2 stride = {}, Size2 padding = 0,
                        bool ceil_mode = false, bool count_include_pad = true) {
  return apply1<V>(EMBER_OP("avg_pool2d"), {x},
                   avg_pool_attrs(kernel_size, stride, padding, ceil_mode, count_include_pad));
}
template <class V>
if_handle<V> avg_pool2d_backward(const V& grad, const Shape& input_shape, Size2 kernel_size,
                                 Size2 stride = {}, Size2 padding = 0, bool ceil_mode = false,
                                 bool count_include_pad = true) {
  Attrs attrs = avg_pool_attrs(kernel_size, stride, padding, ceil_mode, count_include_pad);
  attrs.set("input_shape", input_shape);
  return apply1<V>(EMBER_OP("avg_pool2d_backward"), {grad}, std::move(attrs));
}
template <class V> if_handle<V> adaptive_avg_pool2d(const V& x, Size2 output_size) {
  return apply1<V>(EMBER_OP("adaptive_avg_pool2d"), {x}, {{"output_size", pair_attr(output_size)}});
}
template <class V>
if_handle<V> adaptive_avg_pool2d_backward(const V& grad, const Shape& input_shape) {
  return apply1<V>(EMBER_OP("adaptive_avg_pool2d_backward"), {grad},
                   {{"input_shape", input_shape}});
}

}  // namespace ember::autodiff
