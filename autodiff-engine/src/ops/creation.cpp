// creation.cpp — tensors made from another's type: zeros_like, ones_like, full_like. Their
// values do not depend on the input's, so they have no gradient (the input's is zero).
#include "ember/ops/creation.h"

#include "ember/autodiff/ops.h"
#include "families.h"
#include "infer.h"

namespace ember::autodiff {

namespace {
using Tensors = std::vector<Tensor>;
}

std::vector<OpDef> creation_ops() {
  return {
      {"zeros_like", infer::same_as_first,
       [](const Tensors& in, const Attrs&) -> Tensors { return {zeros_like(in[0])}; }},
      {"ones_like", infer::same_as_first,
       [](const Tensors& in, const Attrs&) -> Tensors { return {ones_like(in[0])}; }},
      {"full_like", infer::same_as_first,
       [](const Tensors& in, const Attrs& a) -> Tensors {
         return {full_like(in[0], a.f("value"))};
       }},
  };
}

}  // namespace ember::autodiff
