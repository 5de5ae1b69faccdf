// conv_pool.cpp — 2-D convolution and pooling, and their backward ops, each with a gradient rule
// of its own (so grad of grad works through every one). Tensors are [N, C, H, W].
//
// The backward ops are linear in their gradient input (and conv's in both inputs), so their
// rules are the adjoints: conv2d_backward_input is conv2d's adjoint in x, hence its own
// gradient in g is conv2d again, and so on.
#include "ember/ops/conv_pool.h"

#include "ember/autodiff/ops.h"
#include "families.h"
#include "infer.h"

namespace ember::autodiff {

namespace {

using Types = std::vector<TensorType>;
using Tensors = std::vector<Tensor>;
using Grads = std::vector<Val>;

std::string pair_str(Size2 s) {
  return s.given() ? "(" + std::to_string(s.h) + ", " + std::to_string(s.w) + ")" : "(not given)";
}

// ---- attributes back to core-runtime's arguments ----

Size2 size2(const char* op, const Attrs& a, const char* name) {
  const std::vector<int64_t>& v = a.ints(name);
  if (v.size() != 2)
    throw ValueError(op, std::string("attribute ") + name + " must hold 2 ints (h, w), got " +
                             std::to_string(int64_t(v.size())));
  return {v[0], v[1]};
}

struct ConvArgs {
  Size2 stride;
  Padding2 padding;
  Size2 dilation;
  int64_t groups;
};

ConvArgs conv_args(const char* op, const Attrs& a) {
  const std::string& mode = a.s("padding_mode");
  const Size2 pad = size2(op, a, "padding");
  return {size2(op, a, "stride"), mode.empty() ? Padding2(pad.h, pad.w) : Padding2(mode.c_str()),
          size2(op, a, "dilation"), a.i("groups")};
}

struct PoolArgs {
  Size2 kernel, stride, padding, dilation;
  bool ceil_mode;
};

// max_pool2d's attributes, or avg_pool2d's (which have no dilation). The builders resolved a
// stride not given to the kernel size; a stride of 0 here is an error of the caller's.
PoolArgs pool_args(const char* op, const Attrs& a) {
  return {size2(op, a, "kernel_size"), size2(op, a, "stride"), size2(op, a, "padding"),
          a.has("dilation") ? size2(op, a, "dilation") : Size2(1), a.b("ceil_mode")};
}

// ---- output sizes: the one formula of conv and pooling alike ----

// Positions of a window of `kernel` taps `dilation` apart, sliding by `stride` over `in`
// elements padded by pad_before and pad_after:
//   out = floor((in + pads - dilation * (kernel - 1) - 1) / stride) + 1
// ceil_mode rounds up instead, keeping a last partial window unless it would start in the
// trailing padding (as PyTorch). The window must fit in the padded input.
int64_t window_count(int64_t in, int64_t kernel, int64_t stride, int64_t pad_before,
                     int64_t pad_after, int64_t dilation, bool ceil_mode) {
  const int64_t room = in + pad_before + pad_after - (dilation * (kernel - 1) + 1);
  int64_t out = (ceil_mode ? (room + stride - 1) / stride : room / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad_before) --out;
  return out;
}

// A convolution's padding on each side, per dim: explicit, "valid" (none) or "same" (the
// output keeps the input's size; an odd total puts the extra row/column at the bottom/right).
struct SidePads {
  int64_t top, bottom, left, right;
};

SidePads side_pads(const char* op, const ConvArgs& c, int64_t span_h, int64_t span_w) {
  const Padding2& p = c.padding;
  if (p.mode == "same") {
    if (c.stride.h != 1 || c.stride.w != 1)
      throw ValueError(op, "padding='same' needs stride 1, got stride " + pair_str(c.stride) +
                               "; give the padding as numbers instead");
    const int64_t top = (span_h - 1) / 2, left = (span_w - 1) / 2;
    return {top, span_h - 1 - top, left, span_w - 1 - left};
  }
  if (p.mode == "valid") return {0, 0, 0, 0};
  if (!p.mode.empty())
    throw ValueError(op, "padding '" + p.mode + "' is not a mode; use numbers, 'same' or 'valid'");
  if (p.size.h < 0 || p.size.w < 0)
    throw ValueError(op, "padding " + pair_str(p.size) +
                             " must be >= 0 in both dims; pass 0 for none, or 'same'");
  return {p.size.h, p.size.h, p.size.w, p.size.w};
}

void check_4d(const char* op, const std::string& who, const char* name, const Shape& s,
              const char* layout) {
  if (s.size() != 4)
    throw ShapeError(op, who + "; " + name + " is " + shape_str(s) + ", expected 4-D " + layout +
                             (s.size() == 3 ? " (for one image use unsqueeze(0))" : ""));
}

// A convolution's input x against weight w: a 3-D x lacks the batch dim when it is one image
// [C, H, W] (its first dim is the channel count), and the channel dim when it is a batch of
// single-channel images [N, H, W]. As core-runtime says it.
void check_conv_input(const char* op, const std::string& who, const Shape& x, const Shape& w,
                      int64_t groups) {
  if (x.size() == 3 && w.size() == 4 && x[0] != w[1] * groups && w[1] * groups == 1)
    throw ShapeError(op, who + "; the input is " + shape_str(x) +
                             ", expected 4-D [N, C, H, W]; it looks like a batch of "
                             "single-channel images [N, H, W], add the channel dim with "
                             "unsqueeze(1)");
  check_4d(op, who, "the input", x, "[N, C, H, W]");
}

void check_positive(const char* op, const char* what, Size2 s) {
  if (s.h < 1 || s.w < 1)
    throw ValueError(op, std::string(what) + " " + pair_str(s) +
                             " must be >= 1 in both dims; pass a positive int or (h, w) pair");
}

// Every tensor input: one device, floating, one dtype.
void check_float_operands(const char* op, const std::string& who, const Types& in) {
  infer::same_device(op, in);
  for (const TensorType& t : in)
    if (!is_floating(t.dtype) || t.dtype != in[0].dtype)
      throw DTypeError(op, who + "; expected one floating dtype for all of them");
}

// ---- convolution ----

// The output shape [N, O, Ho, Wo] of convolving x [N, C, H, W] with w [O, C / groups, kh, kw];
// throws what core-runtime would. `who` lists the operands for messages.
Shape conv_out_shape(const char* op, const std::string& who, const Shape& x, const Shape& w,
                     const ConvArgs& c) {
  check_conv_input(op, who, x, w, c.groups);
  check_4d(op, who, "weight", w, "[O, C / groups, kh, kw]");
  check_positive(op, "stride", c.stride);
  check_positive(op, "dilation", c.dilation);
  if (c.groups < 1)
    throw ValueError(op, "groups (" + std::to_string(c.groups) +
                             ") must be >= 1; pass 1 for a plain convolution");
  if (w[1] * c.groups != x[1])
    throw ShapeError(op, who + "; the input has " + std::to_string(x[1]) +
                             " channels, but weight " + shape_str(w) + " with groups " +
                             std::to_string(c.groups) + " expects " +
                             std::to_string(w[1] * c.groups) +
                             " (weight.shape[1] * groups). Fix: weight " +
                             "must be [O, C / groups, kh, kw]");
  if (w[0] % c.groups != 0)
    throw ShapeError(op, who + "; weight.shape[0] (" + std::to_string(w[0]) +
                             " output channels) must divide by groups (" +
                             std::to_string(c.groups) + ")");
  if (w[2] < 1 || w[3] < 1) throw ShapeError(op, who + "; the kernel must be at least 1 x 1");
  const int64_t span_h = c.dilation.h * (w[2] - 1) + 1, span_w = c.dilation.w * (w[3] - 1) + 1;
  const SidePads p = side_pads(op, c, span_h, span_w);
  const int64_t room_h = x[2] + p.top + p.bottom, room_w = x[3] + p.left + p.right;
  if (span_h > room_h || span_w > room_w)
    throw ShapeError(op, who + "; the kernel (" + std::to_string(span_h) + " x " +
                             std::to_string(span_w) +
                             " with dilation) is larger than the padded input (" +
                             std::to_string(room_h) + " x " + std::to_string(room_w) +
                             "); use a smaller kernel or more padding");
  return {x[0], w[0], window_count(x[2], w[2], c.stride.h, p.top, p.bottom, c.dilation.h, false),
          window_count(x[3], w[3], c.stride.w, p.left, p.right, c.dilation.w, false)};
}

std::string operand_list(const std::vector<const char*>& names, const Types& in) {
  std::string s;
  for (size_t i = 0; i < in.size(); ++i)
    s += (i ? ", " : "") + std::string(names[i]) + " is " + in[i].str();
  return s;
}

void check_grad_shape(const char* op, const std::string& who, const Shape& grad,
                      const Shape& expected) {
  if (grad != expected)
    throw ShapeError(op, who + "; grad must be " + shape_str(expected) +
                             ", the forward's output shape for these arguments");
}

// x [N, C, H, W], weight [O, C / groups, kh, kw], bias [O] (optional) -> [N, O, Ho, Wo]
Types conv2d_infer(const Types& in, const Attrs& a) {
  if (in.size() != 2 && in.size() != 3)
    throw ValueError("conv2d", "takes 2 or 3 inputs (x, weight, bias), got " +
                                   std::to_string(int64_t(in.size())));
  const std::string who = operand_list({"x", "weight", "bias"}, in);
  check_float_operands("conv2d", who, in);
  const Shape out = conv_out_shape("conv2d", who, in[0].shape, in[1].shape, conv_args("conv2d", a));
  if (in.size() == 3 && in[2].shape != Shape{out[1]})
    throw ShapeError("conv2d",
                     who + "; bias must be [" + std::to_string(out[1]) + "] (weight.shape[0])");
  return {TensorType{out, in[0].dtype, in[0].device}};
}

// grad [N, O, Ho, Wo], weight -> [N, C, H, W] = input_shape
Types conv2d_backward_input_infer(const Types& in, const Attrs& a) {
  const char* op = "conv2d_backward_input";
  infer::arity(op, in, 2);
  const Shape& x = a.ints("input_shape");
  const std::string who = operand_list({"grad", "weight"}, in) + ", input_shape is " + shape_str(x);
  check_float_operands(op, who, in);
  check_grad_shape(op, who, in[0].shape, conv_out_shape(op, who, x, in[1].shape, conv_args(op, a)));
  return {TensorType{x, in[0].dtype, in[0].device}};
}

// grad [N, O, Ho, Wo], x [N, C, H, W] -> [O, C / groups, kh, kw] = weight_shape
Types conv2d_backward_weight_infer(const Types& in, const Attrs& a) {
  const char* op = "conv2d_backward_weight";
  infer::arity(op, in, 2);
  const Shape& w = a.ints("weight_shape");
  const std::string who = operand_list({"grad", "x"}, in) + ", weight_shape is " + shape_str(w);
  check_float_operands(op, who, in);
  check_grad_shape(op, who, in[0].shape, conv_out_shape(op, who, in[1].shape, w, conv_args(op, a)));
  return {TensorType{w, in[0].dtype, in[0].device}};
}

// y = conv2d(x, w) + b;  dx = conv2d_backward_input(dy, w), dw = conv2d_backward_weight(dy, x),
// db = dy summed over N, Ho, Wo. dw comes first: x is freed after it, and dx is not yet alive
// beside dw's scratch columns (the larger of the two).
Grads conv2d_grad(const GradContext& c) {
  const ConvArgs a = conv_args("conv2d", c.attrs);
  Grads grads(c.inputs.size());
  if (c.needs_grad[1])
    grads[1] = conv2d_backward_weight(c.dy(), c.x(0), c.x(1).shape(), a.stride, a.padding,
                                      a.dilation, a.groups);
  if (c.needs_grad[0])
    grads[0] = conv2d_backward_input(c.dy(), c.x(1), c.x(0).shape(), a.stride, a.padding,
                                     a.dilation, a.groups);
  if (grads.size() == 3 && c.needs_grad[2]) grads[2] = sum(c.dy(), {0, 2, 3});
  return grads;
}

// gx = conv2d's adjoint in x applied to g, linear in g and w: with gg [N, C, H, W],
// d/dg = conv2d(gg, w), d/dw = conv2d_backward_weight(g, gg)
Grads conv2d_backward_input_grad(const GradContext& c) {
  const ConvArgs a = conv_args("conv2d_backward_input", c.attrs);
  const Val g = c.x(0), w = c.x(1), gg = c.dy();
  Val dg, dw;
  if (c.needs_grad[0]) dg = conv2d(gg, w, Val(), a.stride, a.padding, a.dilation, a.groups);
  if (c.needs_grad[1])
    dw = conv2d_backward_weight(g, gg, w.shape(), a.stride, a.padding, a.dilation, a.groups);
  return {dg, dw};
}

// gw = conv2d's adjoint in w applied to g, linear in g and x: with gg [O, C / groups, kh, kw],
// d/dg = conv2d(x, gg), d/dx = conv2d_backward_input(g, gg)
Grads conv2d_backward_weight_grad(const GradContext& c) {
  const ConvArgs a = conv_args("conv2d_backward_weight", c.attrs);
  const Val g = c.x(0), x = c.x(1), gg = c.dy();
  Val dg, dx;
  if (c.needs_grad[0]) dg = conv2d(x, gg, Val(), a.stride, a.padding, a.dilation, a.groups);
  if (c.needs_grad[1])
    dx = conv2d_backward_input(g, gg, x.shape(), a.stride, a.padding, a.dilation, a.groups);
  return {dg, dx};
}

// ---- pooling ----

// The output shape [N, C, Ho, Wo] of pooling x [N, C, H, W]; throws what core-runtime would.
Shape pool_out_shape(const char* op, const std::string& who, const Shape& x, const PoolArgs& p) {
  check_4d(op, who, "the input", x, "[N, C, H, W]");
  check_positive(op, "kernel_size", p.kernel);
  check_positive(op, "stride", p.stride);
  check_positive(op, "dilation", p.dilation);
  if (p.padding.h < 0 || p.padding.w < 0 || 2 * p.padding.h > p.kernel.h ||
      2 * p.padding.w > p.kernel.w)
    throw ValueError(op, "padding " + pair_str(p.padding) +
                             " must be >= 0 and at most half of kernel_size " + pair_str(p.kernel) +
                             "; use padding <= kernel_size // 2 = " +
                             pair_str({p.kernel.h / 2, p.kernel.w / 2}));
  const int64_t span_h = p.dilation.h * (p.kernel.h - 1) + 1;
  const int64_t span_w = p.dilation.w * (p.kernel.w - 1) + 1;
  if (span_h > x[2] + 2 * p.padding.h || span_w > x[3] + 2 * p.padding.w)
    throw ShapeError(op, who + "; the window (" + std::to_string(span_h) + " x " +
                             std::to_string(span_w) + ") is larger than the padded input (" +
                             std::to_string(x[2] + 2 * p.padding.h) + " x " +
                             std::to_string(x[3] + 2 * p.padding.w) +
                             "); use a smaller kernel_size");
  auto count = [&](int64_t in, int64_t k, int64_t s, int64_t pad, int64_t d) {
    return window_count(in, k, s, pad, pad, d, p.ceil_mode);
  };
  return {x[0], x[1], count(x[2], p.kernel.h, p.stride.h, p.padding.h, p.dilation.h),
          count(x[3], p.kernel.w, p.stride.w, p.padding.w, p.dilation.w)};
}

// x [N, C, H, W] -> (values [N, C, Ho, Wo], int64 indices [N, C, Ho, Wo])
Types max_pool2d_infer(const Types& in, const Attrs& a) {
  infer::arity("max_pool2d", in, 1);
  const std::string who = operand_list({"x"}, in);
  check_float_operands("max_pool2d", who, in);
  const Shape out = pool_out_shape("max_pool2d", who, in[0].shape, pool_args("max_pool2d", a));
  return {TensorType{out, in[0].dtype, in[0].device}, TensorType{out, DType::Int64, in[0].device}};
}

// grad [N, C, Ho, Wo], indices int64 [N, C, Ho, Wo] -> [N, C, H, W] = input_shape
Types max_pool2d_backward_infer(const Types& in, const Attrs& a) {
  const char* op = "max_pool2d_backward";
  infer::arity(op, in, 2);
  infer::same_device(op, in);
  const Shape& x = a.ints("input_shape");
  const std::string who =
      operand_list({"grad", "indices"}, in) + ", input_shape is " + shape_str(x);
  if (!is_floating(in[0].dtype)) throw DTypeError(op, who + "; grad must be floating");
  if (in[1].dtype != DType::Int64)
    throw DTypeError(op, who + "; indices must be int64, as max_pool2d returns them");
  check_4d(op, who, "input_shape", x, "[N, C, H, W]");
  const Shape& g = in[0].shape;
  if (g != in[1].shape || g.size() != 4 || g[0] != x[0] || g[1] != x[1])
    throw ShapeError(op, who +
                             "; grad and indices must both be [N, C, Ho, Wo] with N, C from "
                             "input_shape");
  return {TensorType{x, in[0].dtype, in[0].device}};
}

// x [N, C, H, W] -> [N, C, Ho, Wo]
Types avg_pool2d_infer(const Types& in, const Attrs& a) {
  infer::arity("avg_pool2d", in, 1);
  const std::string who = operand_list({"x"}, in);
  check_float_operands("avg_pool2d", who, in);
  const Shape out = pool_out_shape("avg_pool2d", who, in[0].shape, pool_args("avg_pool2d", a));
  return {TensorType{out, in[0].dtype, in[0].device}};
}

// grad [N, C, Ho, Wo] -> [N, C, H, W] = input_shape
Types avg_pool2d_backward_infer(const Types& in, const Attrs& a) {
  const char* op = "avg_pool2d_backward";
  infer::arity(op, in, 1);
  const Shape& x = a.ints("input_shape");
  const std::string who = operand_list({"grad"}, in) + ", input_shape is " + shape_str(x);
  check_float_operands(op, who, in);
  check_grad_shape(op, who, in[0].shape, pool_out_shape(op, who, x, pool_args(op, a)));
  return {TensorType{x, in[0].dtype, in[0].device}};
}

// x [N, C, H, W] -> [N, C, Ho, Wo] = output_size
Types adaptive_avg_pool2d_infer(const Types& in, const Attrs& a) {
  const char* op = "adaptive_avg_pool2d";
  infer::arity(op, in, 1);
  const std::string who = operand_list({"x"}, in);
  check_float_operands(op, who, in);
  const Shape& x = in[0].shape;
  check_4d(op, who, "x", x, "[N, C, H, W]");
  const Size2 out = size2(op, a, "output_size");
  check_positive(op, "output_size", out);
  if (x[2] < 1 || x[3] < 1)
    throw ShapeError(op, who + "; H and W must be >= 1, there is nothing to average");
  return {TensorType{{x[0], x[1], out.h, out.w}, in[0].dtype, in[0].device}};
}

// grad [N, C, Ho, Wo] -> [N, C, H, W] = input_shape
Types adaptive_avg_pool2d_backward_infer(const Types& in, const Attrs& a) {
  const char* op = "adaptive_avg_pool2d_backward";
  infer::arity(op, in, 1);
  const Shape& x = a.ints("input_shape");
  const std::string who = operand_list({"grad"}, in) + ", input_shape is " + shape_str(x);
  check_float_operands(op, who, in);
  check_4d(op, who, "input_shape", x, "[N, C, H, W]");
  const Shape& g = in[0].shape;
  check_4d(op, who, "grad", g, "[N, C, Ho, Wo]");
  if (g[0] != x[0] || g[1] != x[1] || g[2] < 1 || g[3] < 1 || x[2] < 1 || x[3] < 1)
    throw ShapeError(op, who +
                             "; grad must be [N, C, Ho, Wo] with N, C from input_shape, and "
                             "every spatial size >= 1");
  return {TensorType{x, in[0].dtype, in[0].device}};
}

// (y, indices) = max_pool2d(x);  dx = dy added at the indices: max_pool2d_backward(dy, indices)
Grads max_pool2d_grad(const GradContext& c) {
  return {max_pool2d_backward(c.dy(0), c.y(1), c.x().shape())};
}

// gx = g added at the indices;  d/dg = gg read at the indices: gather over each H*W plane
// (gg [N, C, H*W], indices [N, C, Ho*Wo]), back to [N, C, Ho, Wo]; indices: none
Grads max_pool2d_backward_grad(const GradContext& c) {
  // Copies: adding nodes may move the graph's values, and with them their shapes.
  const Shape x = c.dy().shape(), g = c.x(0).shape();
  const Val planes = reshape(c.dy(), {x[0], x[1], x[2] * x[3]});
  const Val at = reshape(c.x(1), {g[0], g[1], g[2] * g[3]});
  return {reshape(gather(planes, 2, at), g), Val()};
}

// y = avg_pool2d(x);  dx = avg_pool2d_backward(dy) with the same arguments
Grads avg_pool2d_grad(const GradContext& c) {
  const PoolArgs p = pool_args("avg_pool2d", c.attrs);
  return {avg_pool2d_backward(c.dy(), c.x().shape(), p.kernel, p.stride, p.padding, p.ceil_mode,
                              c.attrs.b("count_include_pad"))};
}

// gx = avg_pool2d's adjoint applied to g;  d/dg = avg_pool2d(gg) with the same arguments
Grads avg_pool2d_backward_grad(const GradContext& c) {
  const PoolArgs p = pool_args("avg_pool2d_backward", c.attrs);
  return {avg_pool2d(c.dy(), p.kernel, p.stride, p.padding, p.ceil_mode,
                     c.attrs.b("count_include_pad"))};
}

// y = adaptive_avg_pool2d(x);  dx = adaptive_avg_pool2d_backward(dy)
Grads adaptive_avg_pool2d_grad(const GradContext& c) {
  return {adaptive_avg_pool2d_backward(c.dy(), c.x().shape())};
}

// gx = adaptive_avg_pool2d's adjoint applied to g;  d/dg = adaptive_avg_pool2d(gg, g's Ho, Wo)
Grads adaptive_avg_pool2d_backward_grad(const GradContext& c) {
  return {adaptive_avg_pool2d(c.dy(), Size2(c.x().size(2), c.x().size(3)))};
}

// ---- the core-runtime calls ----

Tensors run_conv2d(const Tensors& in, const Attrs& attrs) {
  const ConvArgs a = conv_args("conv2d", attrs);
  return {conv2d(in[0], in[1], in.size() == 3 ? in[2] : Tensor(), a.stride, a.padding, a.dilation,
                 a.groups)};
}

Tensors run_conv2d_backward_input(const Tensors& in, const Attrs& attrs) {
  const ConvArgs a = conv_args("conv2d_backward_input", attrs);
  return {conv2d_backward_input(in[0], in[1], attrs.ints("input_shape"), a.stride, a.padding,
                                a.dilation, a.groups)};
}

Tensors run_conv2d_backward_weight(const Tensors& in, const Attrs& attrs) {
  const ConvArgs a = conv_args("conv2d_backward_weight", attrs);
  return {conv2d_backward_weight(in[0], in[1], attrs.ints("weight_shape"), a.stride, a.padding,
                                 a.dilation, a.groups)};
}

Tensors run_max_pool2d(const Tensors& in, const Attrs& attrs) {
  const PoolArgs p = pool_args("max_pool2d", attrs);
  MaxPoolResult r = max_pool2d(in[0], p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
  return {r.values, r.indices};
}

Tensors run_avg_pool2d(const Tensors& in, const Attrs& attrs) {
  const PoolArgs p = pool_args("avg_pool2d", attrs);
  return {
      avg_pool2d(in[0], p.kernel, p.stride, p.padding, p.ceil_mode, attrs.b("count_include_pad"))};
}

Tensors run_avg_pool2d_backward(const Tensors& in, const Attrs& attrs) {
  const PoolArgs p = pool_args("avg_pool2d_backward", attrs);
  return {avg_pool2d_backward(in[0], attrs.ints("input_shape"), p.kernel, p.stride, p.padding,
                              p.ceil_mode, attrs.b("count_include_pad"))};
}

}  // namespace

std::vector<OpDef> conv_pool_ops() {
  return {
      {"conv2d", conv2d_infer, run_conv2d, conv2d_grad},
      {"conv2d_backward_input", conv2d_backward_input_infer, run_conv2d_backward_input,
       conv2d_backward_input_grad},
      {"conv2d_backward_weight", conv2d_backward_weight_infer, run_conv2d_backward_weight,
       conv2d_backward_weight_grad},
      {"max_pool2d", max_pool2d_infer, run_max_pool2d, max_pool2d_grad},
      {"max_pool2d_backward", max_pool2d_backward_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {max_pool2d_backward(in[0], in[1], a.ints("input_shape"))};
       },
       max_pool2d_backward_grad},
      {"avg_pool2d", avg_pool2d_infer, run_avg_pool2d, avg_pool2d_grad},
      {"avg_pool2d_backward", avg_pool2d_backward_infer, run_avg_pool2d_backward,
       avg_pool2d_backward_grad},
      {"adaptive_avg_pool2d", adaptive_avg_pool2d_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {adaptive_avg_pool2d(in[0], size2("adaptive_avg_pool2d", a, "output_size"))};
       },
       adaptive_avg_pool2d_grad},
      {"adaptive_avg_pool2d_backward", adaptive_avg_pool2d_backward_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {adaptive_avg_pool2d_backward(in[0], a.ints("input_shape"))};
       },
       adaptive_avg_pool2d_backward_grad},
  };
}

}  // namespace ember::autodiff
