// lr_scheduler.h — the base of learning-rate schedules (torch.optim.lr_scheduler.LRScheduler).
//
// A schedule sets its optimizer's learning rates, one per group, once per epoch (or iteration):
//
//   optim::SGD opt(params, {{"lr", 0.1}});
//   optim::CosineAnnealingLR schedule(opt, /*t_max=*/100);  // sets lr for epoch 0
//   for (int epoch = 0; epoch < 100; ++epoch) { train(opt); schedule.step(); }
//
// The numbers are PyTorch's: step() computes each new lr from the group's current one (PyTorch's
// chainable get_lr), so several schedules can act on one optimizer (ChainedScheduler), and the
// closed forms serve where PyTorch uses them (SequentialLR restarting a schedule). Each group's
// first lr is kept in its options as "initial_lr", as in PyTorch; it is the schedule's base lr.
// The optimizer must outlive its schedules.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "ember/autodiff/optim/optimizer.h"

namespace ember::autodiff::optim {

// A plain copy of a schedule's state (PyTorch's scheduler state_dict). The optimizer's learning
// rates are the optimizer's state: restore both, the schedule first (its constructor sets lr).
struct SchedulerState {
  int64_t last_epoch = -1;
  int64_t step_count = 0;
  std::vector<double> base_lrs;
  std::vector<double> last_lr;
  std::vector<SchedulerState> children;  // the schedules a SequentialLR or ChainedScheduler runs
};

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  virtual void step();  // to the next epoch: sets every group's lr
  const std::vector<double>& get_last_lr() const { return last_lr_; }  // set by the last step
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return *optimizer_; }

  SchedulerState state_dict() const;
  void load_state_dict(const SchedulerState& saved);  // ValueError when it does not fit

 protected:
  explicit LRScheduler(Optimizer& optimizer);

  // Every schedule's constructor ends with this (the constructor of a base cannot call the
  // schedule's own next_lr): PyTorch's initial step to epoch 0.
  void initial_step();
  // A group's lr at last_epoch_, from its current lr and base lr (PyTorch's chainable get_lr).
  // The default keeps lr: schedules made of others override step() instead.
  virtual double next_lr(double lr, double /*base_lr*/) const { return lr; }
  // A group's lr at last_epoch_ from its base lr alone, where PyTorch has a closed form.
  virtual std::optional<double> closed_form_lr(double /*base_lr*/) const { return std::nullopt; }
  // To `epoch` (closed form where there is one), or to the next epoch when epoch is empty.
  void update_lr(std::optional<int64_t> epoch);
  // Sets last_lr_ from the optimizer's current learning rates.
  void record_lrs();

  Optimizer* optimizer_;
  std::vector<double> base_lrs_;
  std::vector<double> last_lr_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
  bool initial_ = false;                                // within initial_step
  std::vector<std::shared_ptr<LRScheduler>> children_;  // a composite schedule's parts

  friend class SequentialLR;  // restarts and rewinds the schedules it runs
};

}  // namespace ember::autodiff::optim
