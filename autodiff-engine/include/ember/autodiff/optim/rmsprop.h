// rmsprop.h — RMSprop, plain or centered, with momentum and weight decay (torch.optim.RMSprop;
// the formula is ember::rmsprop_step's in core-runtime's ops/optimizer.h).
//
// Options (defaults): lr (1e-2), alpha (0.99), eps (1e-8), weight_decay (0), momentum (0),
// centered (0), maximize (0). State per parameter: "square_avg", with "momentum_buffer" when
// momentum > 0 and "grad_avg" when centered.
#pragma once
#include "ember/autodiff/optim/optimizer.h"

namespace ember::autodiff::optim {

class RMSprop : public Optimizer {
 public:
  explicit RMSprop(std::vector<Variable> params, const Options& options = {});
};

}  // namespace ember::autodiff::optim
