// one_cycle_lr.h — the 1cycle policy (torch.optim.lr_scheduler.OneCycleLR; Smith and Topin 2017):
// the lr rises from max_lr / div_factor to max_lr over the first pct_start of total_steps, then
// anneals to max_lr / (div_factor * final_div_factor); the momentum (SGD's "momentum" or Adam's
// "beta1") moves the other way, between max_momentum and base_momentum. With three_phase the lr
// comes back down to its start symmetrically before the final anneal, as fast.ai does.
//
//   optim::SGD opt(params, {{"momentum", 0.9}});
//   optim::OneCycleLR schedule(opt, {0.1}, /*total_steps=*/1000);
//   for (...) { train_batch(opt); schedule.step(); }  // once per batch, total_steps times
//
// Phases end at steps pct_start * total_steps - 1 (and 2 pct_start total_steps - 2), then
// total_steps - 1, as in PyTorch; at step total_steps (after the last batch) the values stay at
// their end where PyTorch extrapolates the last phase, and stepping past total_steps is a
// ValueError. Each group's "initial_lr" is set to max_lr / div_factor (the schedule's base lr).
#pragma once
#include <array>
#include <string>

#include "ember/autodiff/optim/lr_scheduler.h"

namespace ember::autodiff::optim {

class OneCycleLR : public LRScheduler {
 public:
  // max_lrs, base_momenta and max_momenta: one value per group, or one for every group.
  // anneal_strategy: "cos" or "linear".
  OneCycleLR(Optimizer& optimizer, std::vector<double> max_lrs, int64_t total_steps,
             double pct_start = 0.3, const std::string& anneal_strategy = "cos",
             bool cycle_momentum = true, std::vector<double> base_momenta = {0.85},
             std::vector<double> max_momenta = {0.95}, double div_factor = 25.0,
             double final_div_factor = 1e4, bool three_phase = false);
  void step() override;
  int64_t total_steps() const { return total_steps_; }

 private:
  // A phase runs from the previous phase's end to end_step, between two of a group's values:
  // the lrs (0 initial, 1 max, 2 min) and the momenta (0 max, 1 base).
  struct Phase {
    double end_step;
    int start_lr, end_lr, start_momentum, end_momentum;
  };
  double anneal(double start, double end, double pct) const;

  int64_t total_steps_;
  bool cosine_, cycle_momentum_, use_beta1_ = false;
  std::vector<Phase> phases_;
  std::vector<std::array<double, 3>> lrs_;      // per group: initial, max, min
  std::vector<std::array<double, 2>> momenta_;  // per group: max, base
};

}  // namespace ember::autodiff::optim
