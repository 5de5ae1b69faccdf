// adagrad.h — Adagrad (torch.optim.Adagrad; Duchi et al. 2011). At step t (1 on the first), per
// element, with g = grad (or -grad when maximize) + weight_decay * p:
//   sum += g^2                                            (sum)
//   p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + eps)
//
// Options (defaults): lr (1e-2), lr_decay (0), weight_decay (0), initial_accumulator_value (0),
// eps (1e-10), maximize (0). State per parameter: "sum", from initial_accumulator_value.
// Composed of core-runtime's elementwise ops (src/optim/composed.h says why).
#pragma once
#include "ember/autodiff/optim/optimizer.h"

namespace ember::autodiff::optim {

class Adagrad : public Optimizer {
 public:
  explicit Adagrad(std::vector<Variable> params, const Options& options = {});

 protected:
  void check_options(const Options& options) const override;
  std::vector<std::string> buffer_names() const override { return {"sum"}; }
  void update(const Options& options, const TensorList& params, const TensorList& grads,
              const std::vector<ParamState*>& states) override;
};

}  // namespace ember::autodiff::optim
