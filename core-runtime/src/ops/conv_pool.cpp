// conv_pool.cpp — front functions of conv2d and the pooling ops: argument checks, output sizes,
// then the kernels of conv_pool_kernels.h on contiguous NCHW tensors. The checks of shapes and
// the output sizes are the public shape rules (conv_pool.h), which autodiff-engine's inference
// calls too.
#include "ember/ops/conv_pool.h"

#include <string>
#include <vector>

#include "kernels.h"
#include "ops/checks.h"
#include "ops/conv_pool_kernels.h"
#include "ops/out.h"

namespace ember {
namespace {

std::string str(int64_t v) { return std::to_string(v); }
std::string pair_str(Size2 s) {
  return s.given() ? "(" + str(s.h) + ", " + str(s.w) + ")" : "(not given)";
}

// kernel_size, stride, dilation, output_size: at least 1 in both dims.
void check_positive(const char* op, const char* what, Size2 s) {
  if (s.h < 1 || s.w < 1)
    throw ValueError(op, std::string(what) + " " + pair_str(s) +
                             " must be >= 1 in both dims; pass a positive int or (h, w) pair");
}

void check_4d(const char* op, const std::string& who, const char* name, const Shape& s,
              const char* layout) {
  if (s.size() != 4)
    throw ShapeError(op, who + "; " + name + " is " + shape_str(s) + ", expected 4-D " + layout +
                             (s.size() == 3 ? " (for one image use unsqueeze(0))" : ""));
}

// A convolution's input x against weight w: a 3-D x lacks the batch dim when it is one image
// [C, H, W] (its first dim is the channel count), and the channel dim when it is a batch of
// single-channel images [N, H, W].
void check_conv_input(const char* op, const std::string& who, const Shape& x, const Shape& w,
                      int64_t groups) {
  if (x.size() == 3 && w.size() == 4 && x[0] != w[1] * groups && w[1] * groups == 1)
    throw ShapeError(op, who + "; the input is " + shape_str(x) +
                             ", expected 4-D [N, C, H, W]; it looks like a batch of "
                             "single-channel images [N, H, W], add the channel dim with "
                             "unsqueeze(1)");
  check_4d(op, who, "the input", x, "[N, C, H, W]");
}

// Positions of a window of `kernel` taps `dilation` apart sliding by `stride` over `in` elements
// padded by pad_before and pad_after (conv2d.h's formula). ceil_mode rounds up, keeping a last
// partial window unless it would start in the trailing padding (as PyTorch).
int64_t window_count(int64_t in, int64_t kernel, int64_t stride, int64_t pad_before,
                     int64_t pad_after, int64_t dilation, bool ceil_mode) {
  const int64_t room = in + pad_before + pad_after - (dilation * (kernel - 1) + 1);
  int64_t out = (ceil_mode ? (room + stride - 1) / stride : room / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad_before) --out;
  return out;
}

// The tensors every op checks alike: defined, one device, one floating dtype.
void check_tensors(const char* op, std::initializer_list<Named> args) {
  check_same_device(op, args);
  check_floating(op, args);
  check_same_dtype(op, args);
}

std::string with_shape(const std::string& who, const char* name, const Shape& s) {
  return who + ", " + name + " is " + shape_str(s);
}

Conv2dParams conv_params(const Conv2dShape& g, Size2 stride, Size2 dilation, int64_t groups) {
  Conv2dParams p;
  p.stride_h = stride.h;
  p.stride_w = stride.w;
  p.pad_h = g.pad_top;  // the kernels pad the bottom and right by what the output shape leaves
  p.pad_w = g.pad_left;
  p.dilation_h = dilation.h;
  p.dilation_w = dilation.w;
  p.groups = groups;
  return p;
}

Pool2dParams pool_params(Size2 kernel, Size2 stride, Size2 padding, Size2 dilation) {
  if (!stride.given()) stride = kernel;
  return {kernel.h,  kernel.w,   stride.h,   stride.w, padding.h,
          padding.w, dilation.h, dilation.w, true};
}

}  // namespace

// ---- shape rules (conv_pool.h) ----

DType max_pool2d_offsets_dtype(Size2 kernel_size) {
  // Offsets run to kernel_h * kernel_w - 1 (the sizes are checked >= 1 by the ops; a product
  // past int64 is no window any input could hold).
  const double taps = double(kernel_size.h) * double(kernel_size.w);
  if (taps <= 256) return DType::UInt8;
  if (taps <= 2147483648.0) return DType::Int32;
  return DType::Int64;
}

Conv2dShape conv2d_shape(const char* op, const std::string& who, const Shape& x,
                         const Shape& weight, Size2 stride, const Padding2& padding, Size2 dilation,
                         int64_t groups) {
  check_conv_input(op, who, x, weight, groups);
  check_4d(op, who, "weight", weight, "[O, C / groups, kh, kw]");
  check_positive(op, "stride", stride);
  check_positive(op, "dilation", dilation);
  if (groups < 1)
    throw ValueError(op,
                     "groups (" + str(groups) + ") must be >= 1; pass 1 for a plain convolution");
  const int64_t C = x[1], O = weight[0], kh = weight[2], kw = weight[3];
  if (weight[1] * groups != C)
    throw ShapeError(op, who + "; the input has " + str(C) + " channels, but weight " +
                             shape_str(weight) + " with groups " + str(groups) + " expects " +
                             str(weight[1] * groups) +
                             " (weight.shape[1] * groups); weight must be [O, C / groups, kh, kw]");
  if (O % groups != 0)
    throw ShapeError(op, who + "; weight.shape[0] (" + str(O) +
                             " output channels) must divide by groups (" + str(groups) + ")");
  if (kh < 1 || kw < 1) throw ShapeError(op, who + "; the kernel must be at least 1 x 1");

  // The extent of the dilated kernel, and the padding on each side.
  const int64_t span_h = dilation.h * (kh - 1) + 1, span_w = dilation.w * (kw - 1) + 1;
  Conv2dShape g;
  if (padding.mode == "same") {
    if (stride.h != 1 || stride.w != 1)
      throw ValueError(op, "padding='same' needs stride 1, got stride " + pair_str(stride) +
                               "; give the padding as numbers instead");
    g.pad_top = (span_h - 1) / 2;  // an odd total puts the extra row at the bottom, as PyTorch
    g.pad_left = (span_w - 1) / 2;
    g.pad_bottom = span_h - 1 - g.pad_top;
    g.pad_right = span_w - 1 - g.pad_left;
  } else if (padding.mode == "valid" || padding.mode.empty()) {
    if (!padding.size.given() || padding.size.h < 0 || padding.size.w < 0)
      throw ValueError(op, "padding " + pair_str(padding.size) +
                               " must be >= 0 in both dims; pass 0 for none, or 'same'");
    g.pad_top = g.pad_bottom = padding.size.h;
    g.pad_left = g.pad_right = padding.size.w;
  } else {
    throw ValueError(op, "padding '" + padding.mode +
                             "' is not a mode; use numbers, 'same' or 'valid'");
  }
  const int64_t room_h = x[2] + g.pad_top + g.pad_bottom, room_w = x[3] + g.pad_left + g.pad_right;
  if (span_h > room_h || span_w > room_w)
    throw ShapeError(op, who + "; the kernel (" + str(span_h) + " x " + str(span_w) +
                             " with dilation) is larger than the padded input (" + str(room_h) +
                             " x " + str(room_w) + "); use a smaller kernel or more padding");
  g.out = {x[0], O, window_count(x[2], kh, stride.h, g.pad_top, g.pad_bottom, dilation.h, false),
           window_count(x[3], kw, stride.w, g.pad_left, g.pad_right, dilation.w, false)};
  return g;
}

void check_conv2d_bias_shape(const char* op, const std::string& who, const Shape& bias,
                             int64_t out_channels) {
  if (bias != Shape{out_channels})
    throw ShapeError(op, who + "; bias must be [" + str(out_channels) + "] (weight.shape[0])");
}

Shape conv2d_backward_bias_shape(const char* op, const std::string& who, const char* grad_name,
                                 const Shape& grad) {
  check_4d(op, who, grad_name, grad, "[N, O, Ho, Wo]");
  return {grad[1]};
}

Shape pool2d_shape(const char* op, const std::string& who, const Shape& x, Size2 kernel,
                   Size2 stride, Size2 padding, Size2 dilation, bool ceil_mode) {
  check_4d(op, who, "the input", x, "[N, C, H, W]");
  check_positive(op, "kernel_size", kernel);
  if (!stride.given()) stride = kernel;  // not given: the kernel size (an explicit 0 is refused)
  check_positive(op, "stride", stride);
  check_positive(op, "dilation", dilation);
  if (!padding.given() || padding.h < 0 || padding.w < 0 || 2 * padding.h > kernel.h ||
      2 * padding.w > kernel.w)
    throw ValueError(op, "padding " + pair_str(padding) +
                             " must be >= 0 and at most half of kernel_size " + pair_str(kernel) +
                             "; use padding <= kernel_size // 2 = " +
                             pair_str({kernel.h / 2, kernel.w / 2}));
  const int64_t H = x[2], W = x[3];
  const int64_t span_h = dilation.h * (kernel.h - 1) + 1, span_w = dilation.w * (kernel.w - 1) + 1;
  if (span_h > H + 2 * padding.h || span_w > W + 2 * padding.w)
    throw ShapeError(op, who + "; the window (" + str(span_h) + " x " + str(span_w) +
                             ") is larger than the padded input (" + str(H + 2 * padding.h) +
                             " x " + str(W + 2 * padding.w) + "); use a smaller kernel_size");
  return {x[0], x[1],
          window_count(H, kernel.h, stride.h, padding.h, padding.h, dilation.h, ceil_mode),
          window_count(W, kernel.w, stride.w, padding.w, padding.w, dilation.w, ceil_mode)};
}

Shape adaptive_avg_pool2d_shape(const char* op, const std::string& who, const Shape& x,
                                Size2 output_size) {
  check_4d(op, who, "x", x, "[N, C, H, W]");
  check_positive(op, "output_size", output_size);
  if (x[2] < 1 || x[3] < 1)
    throw ShapeError(op, who + "; H and W must be >= 1, there is nothing to average");
  return {x[0], x[1], output_size.h, output_size.w};
}

void check_grad_shape(const char* op, const std::string& who, const char* grad_name,
                      const Shape& grad, const Shape& expected) {
  if (grad != expected)
    throw ShapeError(op, who + "; " + grad_name + " must be " + shape_str(expected) +
                             ", the forward's output shape for these arguments");
}

void check_max_pool2d_backward_shapes(const char* op, const std::string& who, const char* grad_name,
                                      const Shape& grad, const Shape& indices,
                                      const Shape& input_shape) {
  check_4d(op, who, "input_shape", input_shape, "[N, C, H, W]");
  if (grad != indices || grad.size() != 4 || grad[0] != input_shape[0] || grad[1] != input_shape[1])
    throw ShapeError(op, who + "; " + grad_name +
                             " and indices must both be [N, C, Ho, Wo] with N, C from "
                             "input_shape");
}

void check_max_pool2d_offsets(const char* op, const std::string& who, const Shape& offsets,
                              DType offsets_dtype, const Shape& input_shape, Size2 kernel_size,
                              Size2 stride, Size2 padding, Size2 dilation, bool ceil_mode) {
  const Shape expected =
      pool2d_shape(op, who, input_shape, kernel_size, stride, padding, dilation, ceil_mode);
  if (offsets != expected)
    throw ShapeError(op, who + "; offsets must be " + shape_str(expected) +
                             ", max_pool2d's output shape for these arguments");
  const DType want = max_pool2d_offsets_dtype(kernel_size);
  if (offsets_dtype != want)
    throw DTypeError(op, who + "; offsets must be " + dtype_name(want) + " for a " +
                             str(kernel_size.h) + " x " + str(kernel_size.w) +
                             " window, as max_pool2d_with_offsets returns them");
}

void check_adaptive_avg_pool2d_backward_shapes(const char* op, const std::string& who,
                                               const char* grad_name, const Shape& grad,
                                               const Shape& input_shape) {
  check_4d(op, who, "input_shape", input_shape, "[N, C, H, W]");
  check_4d(op, who, grad_name, grad, "[N, C, Ho, Wo]");
  if (grad[0] != input_shape[0] || grad[1] != input_shape[1] || grad[2] < 1 || grad[3] < 1 ||
      input_shape[2] < 1 || input_shape[3] < 1)
    throw ShapeError(op, who + "; " + grad_name +
                             " must be [N, C, Ho, Wo] with N, C from input_shape, and every "
                             "spatial size >= 1");
}

namespace {

// ---------------------------------------------------------------------------------------------
// Each op_into takes `given`, the _out form's output (null: allocate it). Every kernel writes
// contiguous outputs (see write_contiguous).

Tensor conv2d_into(const Tensor& x, const Tensor& weight, const Tensor& bias, Size2 stride,
                   const Padding2& padding, Size2 dilation, int64_t groups, const Tensor* given) {
  const char* op = "conv2d";
  std::string who;
  if (bias.defined()) {
    check_tensors(op, {{"x", x}, {"weight", weight}, {"bias", bias}});
    who = operands({{"x", x}, {"weight", weight}, {"bias", bias}});
  } else {
    check_tensors(op, {{"x", x}, {"weight", weight}});
    who = operands({{"x", x}, {"weight", weight}});
  }
  const Conv2dShape g =
      conv2d_shape(op, who, x.shape(), weight.shape(), stride, padding, dilation, groups);
  if (bias.defined()) check_conv2d_bias_shape(op, who, bias.shape(), weight.size(0));
  Tensor out = output(op, given, g.out, x.dtype(), x.device(),
                      {{"x", x}, {"weight", weight}, {"bias", bias}});
  write_contiguous(op, out, [&](Tensor& dst) {
    conv2d_kernel(x.device())(x.contiguous(), weight.contiguous(),
                              bias.defined() ? bias.contiguous() : bias, dst,
                              conv_params(g, stride, dilation, groups));
  });
  return out;
}

Tensor conv2d_backward_input_into(const Tensor& grad_out, const Tensor& weight,
                                  const Shape& input_shape, Size2 stride, const Padding2& padding,
                                  Size2 dilation, int64_t groups, const Tensor* given) {
  const char* op = "conv2d_backward_input";
  check_tensors(op, {{"grad_out", grad_out}, {"weight", weight}});
  const std::string who = with_shape(operands({{"grad_out", grad_out}, {"weight", weight}}),
                                     "input_shape", input_shape);
  const Conv2dShape g =
      conv2d_shape(op, who, input_shape, weight.shape(), stride, padding, dilation, groups);
  check_grad_shape(op, who, "grad_out", grad_out.shape(), g.out);
  Tensor grad_x = output(op, given, input_shape, grad_out.dtype(), grad_out.device(),
                         {{"grad_out", grad_out}, {"weight", weight}});
  write_contiguous(op, grad_x, [&](Tensor& dst) {
    conv2d_backward_input_kernel(grad_out.device())(grad_out.contiguous(), weight.contiguous(), dst,
                                                    conv_params(g, stride, dilation, groups));
  });
  return grad_x;
}

Tensor conv2d_backward_weight_into(const Tensor& grad_out, const Tensor& x,
                                   const Shape& weight_shape, Size2 stride, const Padding2& padding,
                                   Size2 dilation, int64_t groups, const Tensor* given) {
  const char* op = "conv2d_backward_weight";
  check_tensors(op, {{"grad_out", grad_out}, {"x", x}});
  const std::string who =
      with_shape(operands({{"grad_out", grad_out}, {"x", x}}), "weight_shape", weight_shape);
  const Conv2dShape g =
      conv2d_shape(op, who, x.shape(), weight_shape, stride, padding, dilation, groups);
  check_grad_shape(op, who, "grad_out", grad_out.shape(), g.out);
  Tensor grad_w = output(op, given, weight_shape, grad_out.dtype(), grad_out.device(),
                         {{"grad_out", grad_out}, {"x", x}});
  write_contiguous(op, grad_w, [&](Tensor& dst) {
    conv2d_backward_weight_kernel(grad_out.device())(grad_out.contiguous(), x.contiguous(), dst,
                                                     conv_params(g, stride, dilation, groups));
  });
  return grad_w;
}

Tensor conv2d_backward_bias_into(const Tensor& grad_out, const Tensor* given) {
  const char* op = "conv2d_backward_bias";
  check_tensors(op, {{"grad_out", grad_out}});
  const Shape shape = conv2d_backward_bias_shape(op, operands({{"grad_out", grad_out}}), "grad_out",
                                                 grad_out.shape());
  Tensor grad_b =
      output(op, given, shape, grad_out.dtype(), grad_out.device(), {{"grad_out", grad_out}});
  write_contiguous(op, grad_b, [&](Tensor& dst) {
    conv2d_backward_bias_kernel(grad_out.device())(grad_out.contiguous(), dst);
  });
  return grad_b;
}

// ---------------------------------------------------------------------------------------------

MaxPoolResult max_pool2d_into(const Tensor& x, Size2 kernel_size, Size2 stride, Size2 padding,
                              Size2 dilation, bool ceil_mode, const Tensor* values_out,
                              const Tensor* indices_out) {
  const char* op = "max_pool2d";
  check_tensors(op, {{"x", x}});
  const Shape shape = pool2d_shape(op, operands({{"x", x}}), x.shape(), kernel_size, stride,
                                   padding, dilation, ceil_mode);
  const Pool2dParams params = pool_params(kernel_size, stride, padding, dilation);
  MaxPoolResult r;
  r.values = output(op, values_out, shape, x.dtype(), x.device(), {{"x", x}}, "values");
  r.indices = output(op, indices_out, shape, DType::Int64, x.device(),
                     {{"x", x}, {"values", r.values}}, "indices");
  write_contiguous(op, {r.values, r.indices}, [&](std::vector<Tensor>& dsts) {
    max_pool2d_kernel(x.device())(x.contiguous(), dsts[0], dsts[1], params);
  });
  return r;
}

Tensor max_pool2d_backward_into(const Tensor& grad_out, const Tensor& indices,
                                const Shape& input_shape, const Tensor* given) {
  const char* op = "max_pool2d_backward";
  check_same_device(op, {{"grad_out", grad_out}, {"indices", indices}});
  check_floating(op, {{"grad_out", grad_out}});
  const std::string who = with_shape(operands({{"grad_out", grad_out}, {"indices", indices}}),
                                     "input_shape", input_shape);
  if (indices.dtype() != DType::Int64)
    throw DTypeError(op, who + "; indices must be int64, as max_pool2d returns them");
  check_max_pool2d_backward_shapes(op, who, "grad_out", grad_out.shape(), indices.shape(),
                                   input_shape);
  Tensor grad_x = output(op, given, input_shape, grad_out.dtype(), grad_out.device(),
                         {{"grad_out", grad_out}, {"indices", indices}});
  write_contiguous(op, grad_x, [&](Tensor& dst) {
    max_pool2d_backward_kernel(grad_out.device())(grad_out.contiguous(), indices.contiguous(), dst);
  });
  return grad_x;
}

Tensor avg_pool2d_into(const Tensor& x, Size2 kernel_size, Size2 stride, Size2 padding,
                       bool ceil_mode, bool count_include_pad, const Tensor* given) {
  const char* op = "avg_pool2d";
  check_tensors(op, {{"x", x}});
  const Shape shape =
      pool2d_shape(op, operands({{"x", x}}), x.shape(), kernel_size, stride, padding, 1, ceil_mode);
  Pool2dParams params = pool_params(kernel_size, stride, padding, 1);
  params.count_include_pad = count_include_pad;
  Tensor out = output(op, given, shape, x.dtype(), x.device(), {{"x", x}});
  write_contiguous(op, out, [&](Tensor& dst) {
    avg_pool2d_kernel(x.device())(x.contiguous(), dst, params);
  });
  return out;
}

Tensor avg_pool2d_backward_into(const Tensor& grad_out, const Shape& input_shape, Size2 kernel_size,
                                Size2 stride, Size2 padding, bool ceil_mode, bool count_include_pad,
                                const Tensor* given) {
  const char* op = "avg_pool2d_backward";
  check_tensors(op, {{"grad_out", grad_out}});
  const std::string who =
      with_shape(operands({{"grad_out", grad_out}}), "input_shape", input_shape);
  const Shape shape =
      pool2d_shape(op, who, input_shape, kernel_size, stride, padding, 1, ceil_mode);
  Pool2dParams params = pool_params(kernel_size, stride, padding, 1);
  params.count_include_pad = count_include_pad;
  check_grad_shape(op, who, "grad_out", grad_out.shape(), shape);
  Tensor grad_x =
      output(op, given, input_shape, grad_out.dtype(), grad_out.device(), {{"grad_out", grad_out}});
  write_contiguous(op, grad_x, [&](Tensor& dst) {
    avg_pool2d_backward_kernel(grad_out.device())(grad_out.contiguous(), dst, params);
  });
  return grad_x;
}

Tensor adaptive_avg_pool2d_into(const Tensor& x, Size2 output_size, const Tensor* given) {
  const char* op = "adaptive_avg_pool2d";
  check_tensors(op, {{"x", x}});
  const Shape shape = adaptive_avg_pool2d_shape(op, operands({{"x", x}}), x.shape(), output_size);
  Tensor out = output(op, given, shape, x.dtype(), x.device(), {{"x", x}});
  write_contiguous(op, out, [&](Tensor& dst) {
    adaptive_avg_pool2d_kernel(x.device())(x.contiguous(), dst);
  });
  return out;
}

Tensor adaptive_avg_pool2d_backward_into(const Tensor& grad_out, const Shape& input_shape,
                                         const Tensor* given) {
  const char* op = "adaptive_avg_pool2d_backward";
  check_tensors(op, {{"grad_out", grad_out}});
  const std::string who =
      with_shape(operands({{"grad_out", grad_out}}), "input_shape", input_shape);
  check_adaptive_avg_pool2d_backward_shapes(op, who, "grad_out", grad_out.shape(), input_shape);
  Tensor grad_x =
      output(op, given, input_shape, grad_out.dtype(), grad_out.device(), {{"grad_out", grad_out}});
  write_contiguous(op, grad_x, [&](Tensor& dst) {
    adaptive_avg_pool2d_backward_kernel(grad_out.device())(grad_out.contiguous(), dst);
  });
  return grad_x;
}

}  // namespace

// Each op's out-of-place form passes no output (allocate); its _out form passes &out.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, Size2 stride,
              Padding2 padding, Size2 dilation, int64_t groups) {
  return conv2d_into(x, weight, bias, stride, padding, dilation, groups, nullptr);
}
const Tensor& conv2d_out(const Tensor& out, const Tensor& x, const Tensor& weight,
                         const Tensor& bias, Size2 stride, Padding2 padding, Size2 dilation,
                         int64_t groups) {
  conv2d_into(x, weight, bias, stride, padding, dilation, groups, &out);
  return out;
}

Tensor conv2d_backward_input(const Tensor& grad_out, const Tensor& weight, const Shape& input_shape,
                             Size2 stride, Padding2 padding, Size2 dilation, int64_t groups) {
  return conv2d_backward_input_into(grad_out, weight, input_shape, stride, padding, dilation,
                                    groups, nullptr);
}
const Tensor& conv2d_backward_input_out(const Tensor& out, const Tensor& grad_out,
                                        const Tensor& weight, const Shape& input_shape,
                                        Size2 stride, Padding2 padding, Size2 dilation,
                                        int64_t groups) {
  conv2d_backward_input_into(grad_out, weight, input_shape, stride, padding, dilation, groups,
                             &out);
  return out;
}

Tensor conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, const Shape& weight_shape,
                              Size2 stride, Padding2 padding, Size2 dilation, int64_t groups) {
  return conv2d_backward_weight_into(grad_out, x, weight_shape, stride, padding, dilation, groups,
                                     nullptr);
}
const Tensor& conv2d_backward_weight_out(const Tensor& out, const Tensor& grad_out, const Tensor& x,
                                         const Shape& weight_shape, Size2 stride, Padding2 padding,
                                         Size2 dilation, int64_t groups) {
  conv2d_backward_weight_into(grad_out, x, weight_shape, stride, padding, dilation, groups, &out);
  return out;
}

Tensor conv2d_backward_bias(const Tensor& grad_out) {
  return conv2d_backward_bias_into(grad_out, nullptr);
}
const Tensor& conv2d_backward_bias_out(const Tensor& out, const Tensor& grad_out) {
  conv2d_backward_bias_into(grad_out, &out);
  return out;
}

MaxPoolResult max_pool2d(const Tensor& x, Size2 kernel_size, Size2 stride, Size2 padding,
                         Size2 dilation, bool ceil_mode) {
  return max_pool2d_into(x, kernel_size, stride, padding, dilation, ceil_mode, nullptr, nullptr);
}
MaxPoolResult max_pool2d_out(const Tensor& values, const Tensor& indices, const Tensor& x,
                             Size2 kernel_size, Size2 stride, Size2 padding, Size2 dilation,
                             bool ceil_mode) {
  return max_pool2d_into(x, kernel_size, stride, padding, dilation, ceil_mode, &values, &indices);
}

Tensor max_pool2d_backward(const Tensor& grad_out, const Tensor& indices,
                           const Shape& input_shape) {
  return max_pool2d_backward_into(grad_out, indices, input_shape, nullptr);
}
const Tensor& max_pool2d_backward_out(const Tensor& out, const Tensor& grad_out,
                                      const Tensor& indices, const Shape& input_shape) {
  max_pool2d_backward_into(grad_out, indices, input_shape, &out);
  return out;
}

Tensor avg_pool2d(const Tensor& x, Size2 kernel_size, Size2 stride, Size2 padding, bool ceil_mode,
                  bool count_include_pad) {
  return avg_pool2d_into(x, kernel_size, stride, padding, ceil_mode, count_include_pad, nullptr);
}
const Tensor& avg_pool2d_out(const Tensor& out, const Tensor& x, Size2 kernel_size, Size2 stride,
                             Size2 padding, bool ceil_mode, bool count_include_pad) {
  avg_pool2d_into(x, kernel_size, stride, padding, ceil_mode, count_include_pad, &out);
  return out;
}

Tensor avg_pool2d_backward(const Tensor& grad_out, const Shape& input_shape, Size2 kernel_size,
                           Size2 stride, Size2 padding, bool ceil_mode, bool count_include_pad) {
  return avg_pool2d_backward_into(grad_out, input_shape, kernel_size, stride, padding, ceil_mode,
                                  count_include_pad, nullptr);
}
const Tensor& avg_pool2d_backward_out(const Tensor& out, const Tensor& grad_out,
                                      const Shape& input_shape, Size2 kernel_size, Size2 stride,
                                      Size2 padding, bool ceil_mode, bool count_include_pad) {
  avg_pool2d_backward_into(grad_out, input_shape, kernel_size, stride, padding, ceil_mode,
                           count_include_pad, &out);
  return out;
}

Tensor adaptive_avg_pool2d(const Tensor& x, Size2 output_size) {
  return adaptive_avg_pool2d_into(x, output_size, nullptr);
}
const Tensor& adaptive_avg_pool2d_out(const Tensor& out, const Tensor& x, Size2 output_size) {
  adaptive_avg_pool2d_into(x, output_size, &out);
  return out;
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad_out, const Shape& input_shape) {
  return adaptive_avg_pool2d_backward_into(grad_out, input_shape, nullptr);
}
const Tensor& adaptive_avg_pool2d_backward_out(const Tensor& out, const Tensor& grad_out,
                                               const Shape& input_shape) {
  adaptive_avg_pool2d_backward_into(grad_out, input_shape, &out);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Max pooling's window offsets (conv_pool.h): the forward, its backward and the int64 indices.
MaxPoolOffsets max_pool2d_with_offsets(const Tensor& x, Size2 kernel_size, Size2 stride,
                                       Size2 padding, Size2 dilation, bool ceil_mode) {
  const char* op = "max_pool2d_with_offsets";
  check_tensors(op, {{"x", x}});
  const Shape shape = pool2d_shape(op, operands({{"x", x}}), x.shape(), kernel_size, stride,
                                   padding, dilation, ceil_mode);
  Pool2dParams params = pool_params(kernel_size, stride, padding, dilation);
  params.window_offsets = true;
  MaxPoolOffsets r{Tensor::empty(shape, x.dtype(), x.device(), op),
                   Tensor::empty(shape, max_pool2d_offsets_dtype(kernel_size), x.device(), op)};
  max_pool2d_kernel(x.device())(x.contiguous(), r.values, r.offsets, params);
  return r;
}

Tensor max_pool2d_offsets_backward(const Tensor& grad_out, const Tensor& offsets,
                                   const Shape& input_shape, Size2 kernel_size, Size2 stride,
                                   Size2 padding, Size2 dilation, bool ceil_mode) {
  const char* op = "max_pool2d_offsets_backward";
  check_same_device(op, {{"grad_out", grad_out}, {"offsets", offsets}});
  check_floating(op, {{"grad_out", grad_out}});
  const std::string who = with_shape(operands({{"grad_out", grad_out}, {"offsets", offsets}}),
                                     "input_shape", input_shape);
  check_max_pool2d_offsets(op, who, offsets.shape(), offsets.dtype(), input_shape, kernel_size,
                           stride, padding, dilation, ceil_mode);
  check_grad_shape(op, who, "grad_out", grad_out.shape(), offsets.shape());
  Tensor grad_x = Tensor::empty(input_shape, grad_out.dtype(), grad_out.device(), op);
  max_pool2d_offsets_backward_kernel(
      grad_out.device())(grad_out.contiguous(), offsets.contiguous(), grad_x,
                         pool_params(kernel_size, stride, padding, dilation));
  return grad_x;
}

Tensor max_pool2d_offsets_to_indices(const Tensor& offsets, const Shape& input_shape,
                                     Size2 kernel_size, Size2 stride, Size2 padding, Size2 dilation,
                                     bool ceil_mode) {
  const char* op = "max_pool2d_offsets_to_indices";
  check_defined(op, {{"offsets", offsets}});
  const std::string who = with_shape(operands({{"offsets", offsets}}), "input_shape", input_shape);
  check_max_pool2d_offsets(op, who, offsets.shape(), offsets.dtype(), input_shape, kernel_size,
                           stride, padding, dilation, ceil_mode);
  Tensor indices = Tensor::empty(offsets.shape(), DType::Int64, offsets.device(), op);
  max_pool2d_offsets_to_indices_kernel(
      offsets.device())(offsets.contiguous(), indices, input_shape[2], input_shape[3],
                        pool_params(kernel_size, stride, padding, dilation));
  return indices;
}

}  // namespace ember
