// creation.cpp — tensors made from another's type: zeros_like, ones_like, full_like. Their
// values do not depend on the input's, so they have no gradient (the input's is zero).
#include "ember/ops/creation.h"

#include "ember/autodiff/ops.h"
#include "families.h"
#include "infer.h"

namespace ember::autodiff {

namespace {

// x -> x's type, every element `value`, which x's dtype must hold.
Types full_like_infer(const Types& in, const Attrs& a) {
  infer::arity("full_like", in, 1);
  const double value = a.f("value");
  if (!dtype_holds(in[0].dtype, value))
    throw ValueError("full_like", infer::describe("x", in[0]) + "; value " + std::to_string(value) +
                                      " does not fit " + dtype_name(in[0].dtype) +
                                      ". Fix: pass a value it holds, or convert x first");
  return {in[0]};
}

}  // namespace

std::vector<OpDef> creation_ops() {
  return {
      {"zeros_like",
       [](const Types& in, const Attrs&) -> Types {
         return {infer::unary("zeros_like", in, infer::DTypeRule::Promoted)};
       },
       [](const Tensors& in, const Attrs&) -> Tensors { return {zeros_like(in[0])}; }},
      {"ones_like",
       [](const Types& in, const Attrs&) -> Types {
         return {infer::unary("ones_like", in, infer::DTypeRule::Promoted)};
       },
       [](const Tensors& in, const Attrs&) -> Tensors { return {ones_like(in[0])}; }},
      {"full_like", full_like_infer,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {full_like(in[0], a.f("value"))};
       }},
  };
}

}  // namespace ember::autodiff
