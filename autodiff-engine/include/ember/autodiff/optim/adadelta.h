// adadelta.h — Adadelta (torch.optim.Adadelta; Zeiler 2012). Per element, with g = grad (or
// -grad when maximize) + weight_decay * p:
//   sq = rho * sq + (1 - rho) * g^2                       (square_avg)
//   delta = sqrt(acc + eps) / sqrt(sq + eps) * g
//   acc = rho * acc + (1 - rho) * delta^2                 (acc_delta)
//   p -= lr * delta
//
// Options (defaults): lr (1), rho (0.9), eps (1e-6), weight_decay (0), maximize (0). State per
// parameter: "square_avg" and "acc_delta", from zero. Composed of core-runtime's elementwise ops
// (src/optim/composed.h says why).
#pragma once
#include "ember/autodiff/optim/optimizer.h"

namespace ember::autodiff::optim {

class Adadelta : public Optimizer {
 public:
  explicit Adadelta(std::vector<Variable> params, const Options& options = {});

 protected:
  void check_options(const Options& options) const override;
  std::vector<std::string> buffer_names() const override { return {"square_avg", "acc_delta"}; }
  void update(const Options& options, const TensorList& params, const TensorList& grads,
              const std::vector<ParamState*>& states) override;
};

}  // namespace ember::autodiff::optim
