// formula_grad.h — a gradient rule for a fused backward op, by differentiating its formula.
//
// A fused backward op (batch_norm_backward, layer_norm_backward, cross_entropy_backward) runs one
// fast kernel, but its derivative is long to write by hand. Its rule instead writes the same
// formula with primitive ops (each with a rule of its own) and hands that to grad(): the second
// derivative is the derivative of the first derivative's own formula, and every higher order
// follows the same way.
#pragma once
#include <vector>

#include "ember/autodiff/grad.h"
#include "ember/autodiff/op.h"

namespace ember::autodiff {

// The gradient of sum_i <formula[i], c.dy(i)> with respect to each input of c that needs one;
// formula[i] recomputes the node's output i from its inputs. Outputs that receive no gradient
// are left out.
inline std::vector<Val> grad_of_formula(const GradContext& c, const std::vector<Val>& formula) {
  std::vector<Val> outs, seeds, wrt;
  for (size_t i = 0; i < formula.size(); ++i) {
    if (!c.dy(i).defined()) continue;
    outs.push_back(formula[i]);
    seeds.push_back(c.dy(i));
  }
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.needs_grad[i]) wrt.push_back(c.x(i));
  std::vector<Val> found = grad(outs, wrt, seeds);
  std::vector<Val> result(c.inputs.size());
  for (size_t i = 0, k = 0; i < c.inputs.size(); ++i)
    if (c.needs_grad[i]) result[i] = found[k++];
  return result;
}

}  // namespace ember::autodiff
