// elementwise.cpp — the elementwise family: each op's shape rule, core-runtime call and gradient
// rule side by side. Shapes: every op here maps [*] (or two broadcasting shapes) to [*].
#include "ember/ops/elementwise.h"

#include "ember/autodiff/ops.h"
#include "families.h"
#include "infer.h"

namespace ember::autodiff {

namespace {

using Types = std::vector<TensorType>;
using Tensors = std::vector<Tensor>;
using Grads = std::vector<Val>;

Types binary_infer(const Types& in, const Attrs&) {
  infer::arity("binary op", in, 2);
  return {infer::broadcast("binary op", in[0], in[1])};
}

}  // namespace

std::vector<OpDef> elementwise_ops() {
  return {
      // y = -x;  dx = -dy
      {"neg", infer::same_as_first,
       [](const Tensors& in, const Attrs&) -> Tensors { return {neg(in[0])}; },
       [](const GradContext& c) -> Grads { return {neg(c.dy())}; }},
      // y = tanh(x);  dx = dy (1 - y^2)
      {"tanh", infer::same_as_first,
       [](const Tensors& in, const Attrs&) -> Tensors { return {tanh(in[0])}; },
       [](const GradContext& c) -> Grads { return {tanh_backward(c.dy(), c.y())}; }},
      // gx = g (1 - y^2);  d/dg = gg (1 - y^2), d/dy = -2 g y gg
      {"tanh_backward", binary_infer,
       [](const Tensors& in, const Attrs&) -> Tensors { return {tanh_backward(in[0], in[1])}; },
       [](const GradContext& c) -> Grads {
         return {tanh_backward(c.dy(), c.x(1)), mul(c.dy() * c.x(0) * c.x(1), -2.0)};
       }},
      // y = a + b;  da = dy, db = dy (summed back over broadcast dims by the driver)
      {"add", binary_infer,
       [](const Tensors& in, const Attrs&) -> Tensors { return {add(in[0], in[1])}; },
       [](const GradContext& c) -> Grads {
         return {c.dy(), c.dy()};
       }},
      // y = a - b;  da = dy, db = -dy
      {"sub", binary_infer,
       [](const Tensors& in, const Attrs&) -> Tensors { return {sub(in[0], in[1])}; },
       [](const GradContext& c) -> Grads {
         return {c.dy(), neg(c.dy())};
       }},
      // y = a b;  da = dy b, db = dy a
      {"mul", binary_infer,
       [](const Tensors& in, const Attrs&) -> Tensors { return {mul(in[0], in[1])}; },
       [](const GradContext& c) -> Grads {
         return {c.needs_grad[0] ? c.dy() * c.x(1) : Val(),
                 c.needs_grad[1] ? c.dy() * c.x(0) : Val()};
       }},
      // y = x + s;  dx = dy
      {"add_scalar", infer::same_as_first,
       [](const Tensors& in, const Attrs& a) -> Tensors { return {add(in[0], a.f("value"))}; },
       [](const GradContext& c) -> Grads { return {c.dy()}; }},
      // y = x s;  dx = dy s
      {"mul_scalar", infer::same_as_first,
       [](const Tensors& in, const Attrs& a) -> Tensors { return {mul(in[0], a.f("value"))}; },
       [](const GradContext& c) -> Grads { return {mul(c.dy(), c.attrs.f("value"))}; }},
  };
}

}  // namespace ember::autodiff
