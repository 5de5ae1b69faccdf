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
#include "ember/autodiff/ops/movement.h"

namespace ember::autodiff {

// The gradient of sum_i <formula(inputs)[i], c.dy(i)> with respect to each input of c that needs
// one, where formula(inputs) recomputes the node's outputs from its inputs. The formula sees each
// input through an identity node (a stand-in), so grad() gives its partial derivatives only: no
// path from one input to another is followed (batch_norm_backward's save_mean is computed from
// its x, and the forward op's own rule already carries that path). Outputs that receive no
// gradient are left out.
template <class Formula>
std::vector<Val> grad_of_formula(const GradContext& c, const Formula& formula) {
  std::vector<Val> stand_ins;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    stand_ins.push_back(c.needs_grad[i] ? reshape(c.x(i), c.x(i).shape()) : c.x(i));
  const std::vector<Val> recomputed = formula(stand_ins);
  std::vector<Val> outs, seeds, wrt;
  for (size_t i = 0; i < recomputed.size(); ++i) {
    if (!c.dy(i).defined()) continue;
    outs.push_back(recomputed[i]);
    seeds.push_back(c.dy(i));
  }
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.needs_grad[i]) wrt.push_back(stand_ins[i]);
  std::vector<Val> found = grad(outs, wrt, seeds);
  std::vector<Val> result(c.inputs.size());
  for (size_t i = 0, k = 0; i < c.inputs.size(); ++i)
    if (c.needs_grad[i]) result[i] = found[k++];
  return result;
}

}  // namespace ember::autodiff
