// adam.h — Adam (torch.optim.Adam) and AdamW, its variant with decoupled weight decay
// (torch.optim.AdamW); the formulas are ember::adam_step's in core-runtime's ops/optimizer.h.
//
// Options (defaults): lr (1e-3), beta1 (0.9), beta2 (0.999), eps (1e-8), weight_decay (0; AdamW
// 1e-2), maximize (0). PyTorch's betas=(b1, b2) are beta1 and beta2. State per parameter:
// "exp_avg" and "exp_avg_sq", and the step count.
#pragma once
#include <memory>
#include <unordered_map>
#include <utility>

#include "ember/autodiff/optim/optimizer.h"

namespace ember::autodiff::optim {

class Adam : public Optimizer {
 public:
  explicit Adam(std::vector<Variable> params, const Options& options = {});

 protected:
  Adam(std::string name, std::vector<Variable> params, const Options& options, double weight_decay,
       bool decoupled);
  void update(const Options& options, const TensorList& params, const TensorList& grads,
              const std::vector<ParamState*>& states) override;
  void traced_update(size_t group, const std::vector<Variable>& params, const TensorList& grads,
                     const std::vector<ParamState*>& states) override;

 private:
  bool decoupled_ = false;  // AdamW: p *= 1 - lr * weight_decay instead of g += weight_decay * p
  // Per parameter, the trace its last traced update was in and how many steps each of that
  // trace's updates lies before the trace's last step (a step that calls step() twice replays
  // two updates, both after the replay has advanced the step count twice).
  std::unordered_map<const VariableImpl*, std::pair<int64_t, std::vector<std::shared_ptr<int64_t>>>>
      steps_before_last_;
};

class AdamW : public Adam {
 public:
  explicit AdamW(std::vector<Variable> params, const Options& options = {});
};

}  // namespace ember::autodiff::optim
