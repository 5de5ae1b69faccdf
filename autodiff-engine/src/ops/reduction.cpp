// reduction.cpp — the reduction family, and expand / sum_to, the two halves of broadcasting.
#include "ember/ops/reduction.h"

#include "ember/autodiff/ops.h"
#include "families.h"
#include "infer.h"

namespace ember::autodiff {

namespace {

using Types = std::vector<TensorType>;
using Tensors = std::vector<Tensor>;
using Grads = std::vector<Val>;

// The dims of `shape` that a broadcast to `target` added or stretched (sum_to's reduction).
std::vector<int64_t> broadcast_dims(const Shape& shape, const Shape& target) {
  std::vector<int64_t> dims;
  const size_t lead = target.size() - shape.size();
  for (size_t i = 0; i < target.size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && target[i] != 1)) dims.push_back(int64_t(i));
  return dims;
}

void check_broadcastable(const char* op, const Shape& from, const Shape& to) {
  if (broadcast_shapes(from, to, op) != to)
    throw ShapeError(op, shape_str(from) + " does not broadcast to " + shape_str(to));
}

// A gradient of the reduced shape, given back the reduced dims as 1s so it broadcasts to x.
Val unreduce(Val dy, const Shape& x_shape, const std::vector<int64_t>& dims, bool keepdim) {
  if (keepdim || dims.empty() || x_shape.empty()) return dy;  // already broadcasts to x
  Shape kept = infer::reduce_shape("sum", x_shape, dims, true);
  return reshape(dy, kept);
}

}  // namespace

std::vector<OpDef> reduction_ops() {
  return {
      // y = sum(x, dims);  dx = expand(dy with the dims kept as 1, x's shape)
      {"sum",
       [](const Types& in, const Attrs& a) -> Types {
         infer::arity("sum", in, 1);
         TensorType t = in[0];
         t.shape = infer::reduce_shape("sum", t.shape, a.ints("dims"), a.b("keepdim"));
         if (is_integral(t.dtype, true)) t.dtype = DType::Int64;
         return {t};
       },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {sum(in[0], a.ints("dims"), a.b("keepdim"))};
       },
       [](const GradContext& c) -> Grads {
         Val dy = unreduce(c.dy(), c.x().shape(), c.attrs.ints("dims"), c.attrs.b("keepdim"));
         return {expand(dy, c.x().shape())};
       }},
      // y = x broadcast to shape (a view);  dx = sum_to(dy, x's shape)
      {"expand",
       [](const Types& in, const Attrs& a) -> Types {
         infer::arity("expand", in, 1);
         check_broadcastable("expand", in[0].shape, a.ints("shape"));
         return {TensorType{a.ints("shape"), in[0].dtype, in[0].device}};
       },
       [](const Tensors& in, const Attrs& a) -> Tensors { return {in[0].expand(a.ints("shape"))}; },
       [](const GradContext& c) -> Grads { return {sum_to(c.dy(), c.x().shape())}; }, true},
      // y = x summed over the dims that broadcasting `shape` to x's shape adds or stretches;
      // dx = expand(dy, x's shape)
      {"sum_to",
       [](const Types& in, const Attrs& a) -> Types {
         infer::arity("sum_to", in, 1);
         check_broadcastable("sum_to", a.ints("shape"), in[0].shape);
         return {TensorType{a.ints("shape"), in[0].dtype, in[0].device}};
       },
       [](const Tensors& in, const Attrs& a) -> Tensors {
         const Shape& shape = a.ints("shape");
         if (in[0].shape() == shape) return {in[0]};
         return {sum(in[0], broadcast_dims(shape, in[0].shape()), true).reshape(shape)};
       },
       [](const GradContext& c) -> Grads { return {expand(c.dy(), c.x().shape())}; }},
  };
}

}  // namespace ember::autodiff
