// conv_pool.h — 2-D convolution and pooling on [N, C, H, W] tensors, each with the backward
// functions its gradient rule calls. Every op takes one floating dtype (float16, bfloat16,
// float32, float64) and one device; inputs may be non-contiguous.
//
// Output size of a sliding window (conv and pooling alike), per spatial dim:
//   out = floor((in + 2 * pad - dilation * (kernel - 1) - 1) / stride) + 1
#pragma once
#include <cstdint>
#include <limits>
#include <string>

#include "ember/tensor.h"

namespace ember {

// A (height, width) pair; one int means both: `stride = 2` or `stride = {2, 1}`. A
// default-constructed Size2 (`{}`) means "not given" where an op says so; it is no value a
// caller can pass, so that an explicit `stride = 0` is checked (and refused) like any other.
struct Size2 {
  static constexpr int64_t kNotGiven = std::numeric_limits<int64_t>::min();
  int64_t h = kNotGiven, w = kNotGiven;
  Size2() = default;
  Size2(int64_t both) : h(both), w(both) {}  // NOLINT: implicit, so `2` works
  Size2(int64_t h_, int64_t w_) : h(h_), w(w_) {}
  bool given() const { return h != kNotGiven || w != kNotGiven; }
};

// Convolution padding: ints (zeros added on each side), or a mode as in PyTorch:
//   "valid": no padding;
//   "same":  the output has the input's size (stride 1 only); when dilation * (kernel - 1) is
//            odd the extra row/column of padding goes at the bottom/right.
struct Padding2 {
  Size2 size;                             // explicit padding when mode is empty
  std::string mode;                       // "", "same" or "valid"
  Padding2(int both) : size(both) {}      // NOLINT: `padding = 1`
  Padding2(int64_t both) : size(both) {}  // NOLINT
  Padding2(int64_t h, int64_t w) : size(h, w) {}
  Padding2(const char* mode_) : size(0), mode(mode_) {}  // NOLINT: `padding = "same"`
};

// ---------------------------------------------------------------------------------------------
// Convolution (cross-correlation, as every DL framework computes it).
//   x:      [N, C, H, W]
//   weight: [O, C / groups, kh, kw]
//   bias:   [O] (optional)
//   -> out: [N, O, Ho, Wo]
// Channels are split into `groups` independent groups: group g maps input channels
// [g*C/g, (g+1)*C/g) to output channels [g*O/g, (g+1)*O/g). C and O must divide by groups.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              Size2 stride = 1, Padding2 padding = 0, Size2 dilation = 1, int64_t groups = 1);

// d(loss)/dx given grad_out [N, O, Ho, Wo] and weight: [N, C, H, W] = input_shape. The input
// shape is needed because with stride > 1 several input sizes give the same output size.
Tensor conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, const Shape& input_shape,
                             Size2 stride = 1, Padding2 padding = 0, Size2 dilation = 1,
                             int64_t groups = 1);

// d(loss)/dweight given grad_out [N, O, Ho, Wo] and the forward input x: [O, C / groups, kh, kw]
// = weight_shape.
Tensor conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, const Shape& weight_shape,
                              Size2 stride = 1, Padding2 padding = 0, Size2 dilation = 1,
                              int64_t groups = 1);

// d(loss)/dbias: grad_out [N, O, Ho, Wo] summed over N, Ho and Wo -> [O].
Tensor conv2d_backward_bias(const Tensor& grad_out);

// ---------------------------------------------------------------------------------------------
// Pooling. x: [N, C, H, W] -> [N, C, Ho, Wo], each plane (n, c) pooled on its own.
// stride defaults (`{}`) to kernel_size. padding must be at most half the kernel size.
// ceil_mode rounds the output size up instead of down (so a last, partial window is kept), as in
// PyTorch: a window that would start in the bottom/right padding is still dropped.

struct MaxPoolResult {
  Tensor values;   // [N, C, Ho, Wo], x's dtype
  Tensor indices;  // [N, C, Ho, Wo] int64: where each max came from, as h * W + w in its plane
};

// Window maximum; padding counts as -infinity. With ties the first (row-major) position wins;
// NaN propagates (the index is that of the window's first NaN).
MaxPoolResult max_pool2d(const Tensor& x, Size2 kernel_size, Size2 stride = {}, Size2 padding = 0,
                         Size2 dilation = 1, bool ceil_mode = false);

// grad_out and indices: [N, C, Ho, Wo] from max_pool2d -> [N, C, H, W] = input_shape, each
// grad_out element added at the input position its index names.
Tensor max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, const Shape& input_shape);

// Max pooling's compact form, the one a gradient rule saves (autodiff-engine's max_pool2d): each
// max recorded as its offset in its window, i * kernel_w + j for window tap (i, j) (row-major, so
// ties and NaN pick as max_pool2d does), in the narrowest dtype of uint8, int32, int64 that holds
// kernel_h * kernel_w - 1 (max_pool2d_offsets_dtype). With a window of up to 256 elements (every
// usual pooling) that is one byte per output instead of int64 indices' eight: on a CNN the
// indices were twice the size of the float32 map they index. A window with no input element
// (possible with dilation) records 0, a tap in the padding, which routes no gradient, as -1 does
// in the int64 form. The geometry arguments are max_pool2d's, given again to every function here.
struct MaxPoolOffsets {
  Tensor values;   // [N, C, Ho, Wo], x's dtype
  Tensor offsets;  // [N, C, Ho, Wo], max_pool2d_offsets_dtype(kernel_size)
};
DType max_pool2d_offsets_dtype(Size2 kernel_size);
// max_pool2d's values, with offsets in place of indices.
MaxPoolOffsets max_pool2d_with_offsets(const Tensor& x, Size2 kernel_size, Size2 stride = {},
                                       Size2 padding = 0, Size2 dilation = 1,
                                       bool ceil_mode = false);
// max_pool2d_backward from offsets: grad_out and offsets [N, C, Ho, Wo] -> [N, C, H, W] =
// input_shape. An offset outside [0, kernel_h * kernel_w) is an IndexError.
Tensor max_pool2d_offsets_backward(const Tensor& grad_out, const Tensor& offsets,
                                   const Shape& input_shape, Size2 kernel_size, Size2 stride = {},
                                   Size2 padding = 0, Size2 dilation = 1, bool ceil_mode = false);
// The int64 indices max_pool2d returns, from offsets (-1 for a window with no input element).
Tensor max_pool2d_offsets_to_indices(const Tensor& offsets, const Shape& input_shape,
                                     Size2 kernel_size, Size2 stride = {}, Size2 padding = 0,
                                     Size2 dilation = 1, bool ceil_mode = false);

// Window mean. count_include_pad divides by the window size including padding (the window is
// still clipped at the padded border when ceil_mode makes it overhang); otherwise by the number of
// input elements it covers.
Tensor avg_pool2d(const Tensor& x, Size2 kernel_size, Size2 stride = {}, Size2 padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true);

// grad_out [N, C, Ho, Wo] -> [N, C, H, W] = input_shape, with avg_pool2d's arguments.
Tensor avg_pool2d_backward(const Tensor& grad_out, const Shape& input_shape, Size2 kernel_size,
                           Size2 stride = {}, Size2 padding = 0, bool ceil_mode = false,
                           bool count_include_pad = true);

// Mean over windows chosen to give an [Ho, Wo] = output_size result for any H, W (as PyTorch:
// output row i covers input rows [floor(i * H / Ho), ceil((i + 1) * H / Ho))).
Tensor adaptive_avg_pool2d(const Tensor& x, Size2 output_size);

// grad_out [N, C, Ho, Wo] -> [N, C, H, W] = input_shape.
Tensor adaptive_avg_pool2d_backward(const Tensor& grad_out, const Shape& input_shape);

// ---------------------------------------------------------------------------------------------
// Outputs the caller provides: each op above has a form that writes its result into `out` (or,
// for max_pool2d, into values and indices, MaxPoolResult's order) and returns it, with the same
// arguments. out must have exactly the result's shape, dtype and device (ShapeError, DTypeError,
// DeviceError; never resized or cast) and must not overlap an input (ValueError). The kernels
// write contiguous NCHW: a non-contiguous out receives a copy, a contiguous one is written
// directly.
const Tensor& conv2d_out(const Tensor& out, const Tensor& x, const Tensor& weight,
                         const Tensor& bias = Tensor(), Size2 stride = 1, Padding2 padding = 0,
                         Size2 dilation = 1, int64_t groups = 1);
const Tensor& conv2d_backward_input_out(const Tensor& out, const Tensor& grad_out,
                                        const Tensor& weight, const Shape& input_shape,
                                        Size2 stride = 1, Padding2 padding = 0, Size2 dilation = 1,
                                        int64_t groups = 1);
const Tensor& conv2d_backward_weight_out(const Tensor& out, const Tensor& grad_out, const Tensor& x,
                                         const Shape& weight_shape, Size2 stride = 1,
                                         Padding2 padding = 0, Size2 dilation = 1,
                                         int64_t groups = 1);
const Tensor& conv2d_backward_bias_out(const Tensor& out, const Tensor& grad_out);
MaxPoolResult max_pool2d_out(const Tensor& values, const Tensor& indices, const Tensor& x,
                             Size2 kernel_size, Size2 stride = {}, Size2 padding = 0,
                             Size2 dilation = 1, bool ceil_mode = false);
const Tensor& max_pool2d_backward_out(const Tensor& out, const Tensor& grad_out,
                                      const Tensor& indices, const Shape& input_shape);
const Tensor& avg_pool2d_out(const Tensor& out, const Tensor& x, Size2 kernel_size,
                             Size2 stride = {}, Size2 padding = 0, bool ceil_mode = false,
                             bool count_include_pad = true);
const Tensor& avg_pool2d_backward_out(const Tensor& out, const Tensor& grad_out,
                                      const Shape& input_shape, Size2 kernel_size,
                                      Size2 stride = {}, Size2 padding = 0, bool ceil_mode = false,
                                      bool count_include_pad = true);
const Tensor& adaptive_avg_pool2d_out(const Tensor& out, const Tensor& x, Size2 output_size);
const Tensor& adaptive_avg_pool2d_backward_out(const Tensor& out, const Tensor& grad_out,
                                               const Shape& input_shape);

// ---------------------------------------------------------------------------------------------
// Shape rules: what the ops above check of their shapes and arguments, and the shape they give,
// from shapes alone, with the same typed errors (ShapeError, ValueError). The ops call them, and
// so does autodiff-engine's shape inference: each rule is written once, here. `op` names the op
// in errors and `who` describes its operands ("x is [2, 3, 8, 8] float32 cpu, ...").

// Convolving an input of shape x [N, C, H, W] with a weight of shape [O, C / groups, kh, kw]: the
// output shape and the padding added on each side ("same" pads one more at the bottom/right
// when the total is odd).
struct Conv2dShape {
  Shape out;  // [N, O, Ho, Wo]
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
};
Conv2dShape conv2d_shape(const char* op, const std::string& who, const Shape& x,
                         const Shape& weight, Size2 stride, const Padding2& padding, Size2 dilation,
                         int64_t groups);
// A convolution's bias: [out_channels] (weight.shape[0]).
void check_conv2d_bias_shape(const char* op, const std::string& who, const Shape& bias,
                             int64_t out_channels);
// conv2d_backward_bias of a gradient of shape grad [N, O, Ho, Wo] (named grad_name): [O].
Shape conv2d_backward_bias_shape(const char* op, const std::string& who, const char* grad_name,
                                 const Shape& grad);

// Pooling x [N, C, H, W] with a window of kernel_size: [N, C, Ho, Wo]. A stride not given (`{}`)
// is kernel_size; avg_pool2d passes dilation 1.
Shape pool2d_shape(const char* op, const std::string& who, const Shape& x, Size2 kernel_size,
                   Size2 stride, Size2 padding, Size2 dilation, bool ceil_mode);
// adaptive_avg_pool2d of x [N, C, H, W]: [N, C, output_size.h, output_size.w].
Shape adaptive_avg_pool2d_shape(const char* op, const std::string& who, const Shape& x,
                                Size2 output_size);

// A backward op's incoming gradient (named `grad_name` in messages): exactly the forward's output
// shape `expected` for these arguments.
void check_grad_shape(const char* op, const std::string& who, const char* grad_name,
                      const Shape& grad, const Shape& expected);
// max_pool2d_backward's grad and int64-typed indices: both [N, C, Ho, Wo], N and C from
// input_shape [N, C, H, W]. (The dtypes are the caller's to check.)
void check_max_pool2d_backward_shapes(const char* op, const std::string& who, const char* grad_name,
                                      const Shape& grad, const Shape& indices,
                                      const Shape& input_shape);
// Window offsets of shape `offsets` and dtype offsets_dtype for pooling input_shape with these
// arguments: exactly pool2d_shape's output, of max_pool2d_offsets_dtype(kernel_size).
void check_max_pool2d_offsets(const char* op, const std::string& who, const Shape& offsets,
                              DType offsets_dtype, const Shape& input_shape, Size2 kernel_size,
                              Size2 stride, Size2 padding, Size2 dilation, bool ceil_mode);
// adaptive_avg_pool2d_backward's grad [N, C, Ho, Wo] against input_shape [N, C, H, W]: N, C
// agree and every spatial size is >= 1.
void check_adaptive_avg_pool2d_backward_shapes(const char* op, const std::string& who,
                                               const char* grad_name, const Shape& grad,
                                               const Shape& input_shape);

}  // namespace ember
