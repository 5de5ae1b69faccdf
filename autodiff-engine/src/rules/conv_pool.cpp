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

// Every tensor input: one device, floating, one dtype.
void check_float_operands(const char* op, const std::string& who, const Types& in) {
  infer::same_device(op, in);
  for (const TensorType& t : in)
    if (!is_floating(t.dtype) || t.dtype != in[0].dtype)
      throw DTypeError(op, who + "; expected one floating dtype for all of them");
}

// ---- convolution ----
// The shape rules are core-runtime's (ember/ops/conv_pool.h), with the operands described as
// autodiff-engine's types.

// The output shape [N, O, Ho, Wo] of convolving x [N, C, H, W] with w [O, C / groups, kh, kw].
Shape conv_out_shape(const char* op, const std::string& who, const Shape& x, const Shape& w,
                     const ConvArgs& c) {
  return conv2d_shape(op, who, x, w, c.stride, c.padding, c.dilation, c.groups).out;
}

std::string operand_list(const std::vector<const char*>& names, const Types& in) {
  std::string s;
  for (size_t i = 0; i < in.size(); ++i)
    s += (i ? ", " : "") + std::string(names[i]) + " is " + in[i].str();
  return s;
}

// x [N, C, H, W], weight [O, C / groups, kh, kw], bias [O] (optional) -> [N, O, Ho, Wo]
Types conv2d_infer(const Types& in, const Attrs& a) {
  if (in.size() != 2 && in.size() != 3)
    throw ValueError("conv2d", "takes 2 or 3 inputs (x, weight, bias), got " +
                                   std::to_string(int64_t(in.size())));
  const std::string who = operand_list({"x", "weight", "bias"}, in);
  check_float_operands("conv2d", who, in);
  const Shape out = conv_out_shape("conv2d", who, in[0].shape, in[1].shape, conv_args("conv2d", a));
  if (in.size() == 3) check_conv2d_bias_shape("conv2d", who, in[2].shape, out[1]);
  return {TensorType{out, in[0].dtype, in[0].device}};
}

// grad [N, O, Ho, Wo], weight -> [N, C, H, W] = input_shape
Types conv2d_backward_input_infer(const Types& in, const Attrs& a) {
  const char* op = "conv2d_backward_input";
  infer::arity(op, in, 2);
  const Shape& x = a.ints("input_shape");
  const std::string who = operand_list({"grad", "weight"}, in) + ", input_shape is " + shape_str(x);
  check_float_operands(op, who, in);
  check_grad_shape(op, who, "grad", in[0].shape,
                   conv_out_shape(op, who, x, in[1].shape, conv_args(op, a)));
  return {TensorType{x, in[0].dtype, in[0].device}};
}

// grad [N, O, Ho, Wo], x [N, C, H, W] -> [O, C / groups, kh, kw] = weight_shape
Types conv2d_backward_weight_infer(const Types& in, const Attrs& a) {
  const char* op = "conv2d_backward_weight";
  infer::arity(op, in, 2);
  const Shape& w = a.ints("weight_shape");
  const std::string who = operand_list({"grad", "x"}, in) + ", weight_shape is " + shape_str(w);
  check_float_operands(op, who, in);
  check_grad_shape(op, who, "grad", in[0].shape,
                   conv_out_shape(op, who, in[1].shape, w, conv_args(op, a)));
  return {TensorType{w, in[0].dtype, in[0].device}};
}

// grad [N, O, Ho, Wo] -> [O]
Types conv2d_backward_bias_infer(const Types& in, const Attrs&) {
  const char* op = "conv2d_backward_bias";
  infer::arity(op, in, 1);
  const std::string who = operand_list({"grad"}, in);
  check_float_operands(op, who, in);
  return {TensorType{conv2d_backward_bias_shape(op, who, "grad", in[0].shape), in[0].dtype,
                     in[0].device}};
}

// y = conv2d(x, w) + b;  dx = conv2d_backward_input(dy, w), dw = conv2d_backward_weight(dy, x),
// db = conv2d_backward_bias(dy), dy summed over N, Ho, Wo. dw comes first: x is freed after it,
// and dx is not yet alive beside dw's scratch columns (the larger of the two).
Grads conv2d_grad(const GradContext& c) {
  const ConvArgs a = conv_args("conv2d", c.attrs);
  Grads grads(c.inputs.size());
  if (c.needs_grad[1])
    grads[1] = conv2d_backward_weight(c.dy(), c.x(0), c.x(1).shape(), a.stride, a.padding,
                                      a.dilation, a.groups);
  if (c.needs_grad[0])
    grads[0] = conv2d_backward_input(c.dy(), c.x(1), c.x(0).shape(), a.stride, a.padding,
                                     a.dilation, a.groups);
  if (grads.size() == 3 && c.needs_grad[2]) grads[2] = conv2d_backward_bias(c.dy());
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

// gb = g summed over N, Ho, Wo;  d/dg = gg [O] broadcast back to g's shape [N, O, Ho, Wo]
Grads conv2d_backward_bias_grad(const GradContext& c) {
  const Shape g = c.x().shape();  // a copy: adding nodes may move the graph's values
  return {expand(reshape(c.dy(), {1, g[1], 1, 1}), g)};
}

// ---- pooling ----

// The output shape [N, C, Ho, Wo] of pooling x [N, C, H, W].
Shape pool_out_shape(const char* op, const std::string& who, const Shape& x, const PoolArgs& p) {
  return pool2d_shape(op, who, x, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
}

// x [N, C, H, W] -> (values [N, C, Ho, Wo], window offsets [N, C, Ho, Wo])
Types max_pool2d_infer(const Types& in, const Attrs& a) {
  infer::arity("max_pool2d", in, 1);
  const std::string who = operand_list({"x"}, in);
  check_float_operands("max_pool2d", who, in);
  const PoolArgs p = pool_args("max_pool2d", a);
  const Shape out = pool_out_shape("max_pool2d", who, in[0].shape, p);
  return {TensorType{out, in[0].dtype, in[0].device},
          TensorType{out, max_pool2d_offsets_dtype(p.kernel), in[0].device}};
}

// Window offsets [N, C, Ho, Wo] of pooling input_shape, checked: the operands' description.
std::string check_offsets(const char* op, const std::vector<const char*>& names, const Types& in,
                          const Attrs& a) {
  const Shape& x = a.ints("input_shape");
  const std::string who = operand_list(names, in) + ", input_shape is " + shape_str(x);
  const PoolArgs p = pool_args(op, a);
  const TensorType& offsets = in.back();
  check_max_pool2d_offsets(op, who, offsets.shape, offsets.dtype, x, p.kernel, p.stride, p.padding,
                           p.dilation, p.ceil_mode);
  return who;
}

// grad, offsets [N, C, Ho, Wo] -> [N, C, H, W] = input_shape
Types max_pool2d_offsets_backward_infer(const Types& in, const Attrs& a) {
  const char* op = "max_pool2d_offsets_backward";
  infer::arity(op, in, 2);
  infer::same_device(op, in);
  const std::string who = check_offsets(op, {"grad", "offsets"}, in, a);
  if (!is_floating(in[0].dtype)) throw DTypeError(op, who + "; grad must be floating");
  check_grad_shape(op, who, "grad", in[0].shape, in[1].shape);
  return {TensorType{a.ints("input_shape"), in[0].dtype, in[0].device}};
}

// offsets [N, C, Ho, Wo] -> int64 indices [N, C, Ho, Wo]
Types max_pool2d_indices_infer(const Types& in, const Attrs& a) {
  const char* op = "max_pool2d_indices";
  infer::arity(op, in, 1);
  check_offsets(op, {"offsets"}, in, a);
  return {TensorType{in[0].shape, DType::Int64, in[0].device}};
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
  check_max_pool2d_backward_shapes(op, who, "grad", in[0].shape, in[1].shape, x);
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
  check_grad_shape(op, who, "grad", in[0].shape, pool_out_shape(op, who, x, pool_args(op, a)));
  return {TensorType{x, in[0].dtype, in[0].device}};
}

// x [N, C, H, W] -> [N, C, Ho, Wo] = output_size
Types adaptive_avg_pool2d_infer(const Types& in, const Attrs& a) {
  const char* op = "adaptive_avg_pool2d";
  infer::arity(op, in, 1);
  const std::string who = operand_list({"x"}, in);
  check_float_operands(op, who, in);
  const Shape out = adaptive_avg_pool2d_shape(op, who, in[0].shape, size2(op, a, "output_size"));
  return {TensorType{out, in[0].dtype, in[0].device}};
}

// grad [N, C, Ho, Wo] -> [N, C, H, W] = input_shape
Types adaptive_avg_pool2d_backward_infer(const Types& in, const Attrs& a) {
  const char* op = "adaptive_avg_pool2d_backward";
  infer::arity(op, in, 1);
  const Shape& x = a.ints("input_shape");
  const std::string who = operand_list({"grad"}, in) + ", input_shape is " + shape_str(x);
  check_float_operands(op, who, in);
  check_adaptive_avg_pool2d_backward_shapes(op, who, "grad", in[0].shape, x);
  return {TensorType{x, in[0].dtype, in[0].device}};
}

// (y, offsets) = max_pool2d(x);  dx = dy added where the offsets point: the rule reads only the
// offsets (one byte per output for windows up to 256 elements) and x's shape
Grads max_pool2d_grad(const GradContext& c) {
  const PoolArgs p = pool_args("max_pool2d", c.attrs);
  return {max_pool2d_offsets_backward(c.dy(0), c.y(1), c.x().shape(), p.kernel, p.stride, p.padding,
                                      p.dilation, p.ceil_mode)};
}

// gx = g added where the offsets point;  d/dg = gg read there: gather over each H*W plane at the
// offsets' int64 indices, as max_pool2d_backward_grad; offsets: none
Grads max_pool2d_offsets_backward_grad(const GradContext& c) {
  const PoolArgs p = pool_args("max_pool2d_offsets_backward", c.attrs);
  // Copies: adding nodes may move the graph's values, and with them their shapes.
  const Shape x = c.dy().shape(), g = c.x(0).shape();
  const Val indices = max_pool2d_offsets_to_indices(c.x(1), x, p.kernel, p.stride, p.padding,
                                                    p.dilation, p.ceil_mode);
  const Val planes = reshape(c.dy(), {x[0], x[1], x[2] * x[3]});
  const Val at = reshape(indices, {g[0], g[1], g[2] * g[3]});
  return {reshape(gather(planes, 2, at), g), Val()};
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
  MaxPoolOffsets r =
      max_pool2d_with_offsets(in[0], p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
  return {r.values, r.offsets};
}

Tensors run_max_pool2d_offsets_backward(const Tensors& in, const Attrs& attrs) {
  const PoolArgs p = pool_args("max_pool2d_offsets_backward", attrs);
  return {max_pool2d_offsets_backward(in[0], in[1], attrs.ints("input_shape"), p.kernel, p.stride,
                                      p.padding, p.dilation, p.ceil_mode)};
}

Tensors run_max_pool2d_indices(const Tensors& in, const Attrs& attrs) {
  const PoolArgs p = pool_args("max_pool2d_indices", attrs);
  return {max_pool2d_offsets_to_indices(in[0], attrs.ints("input_shape"), p.kernel, p.stride,
                                        p.padding, p.dilation, p.ceil_mode)};
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
      {"conv2d_backward_bias", conv2d_backward_bias_infer,
       [](const Tensors& in, const Attrs&) -> Tensors { return {conv2d_backward_bias(in[0])}; },
       conv2d_backward_bias_grad},
      {"max_pool2d", max_pool2d_infer, run_max_pool2d, max_pool2d_grad},
      {"max_pool2d_offsets_backward", max_pool2d_offsets_backward_infer,
       run_max_pool2d_offsets_backward, max_pool2d_offsets_backward_grad},
      {"max_pool2d_indices", max_pool2d_indices_infer, run_max_pool2d_indices},
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
