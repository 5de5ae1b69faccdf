// sgd.h — stochastic gradient descent with momentum, dampening, Nesterov momentum and weight
// decay (torch.optim.SGD; the formula is ember::sgd_step's in core-runtime's ops/optimizer.h).
//
// Options (defaults): lr (1e-3), momentum (0), dampening (0), weight_decay (0), nesterov (0),
// maximize (0). State per parameter: "momentum_buffer" when momentum != 0.
#pragma once
#include "ember/autodiff/optim/optimizer.h"

namespace ember::autodiff::optim {

class SGD : public Optimizer {
 public:
  explicit SGD(std::vector<Variable> params, const Options& options = {});

 protected:
  void check_options(const Options& options) const override;
  void update(const Options& options, const TensorList& params, const TensorList& grads,
              const std::vector<ParamState*>& states) override;
  void traced_update(size_t group, const std::vector<Variable>& params, const TensorList& grads,
                     const std::vector<ParamState*>& states) override;
};

}  // namespace ember::autodiff::optim
