// plateau.h — lower the lr when a metric stops improving
// (torch.optim.lr_scheduler.ReduceLROnPlateau). Unlike the schedules of lr_scheduler.h it does
// not follow the epoch but a number the training loop measures (a validation loss):
//
//   optim::ReduceLROnPlateau plateau(opt, "min", /*factor=*/0.5, /*patience=*/3);
//   for (...) { train_epoch(opt); plateau.step(validation_loss()); }
//
// A metric is better than the best so far when it beats it by more than the threshold (mode
// "min": m < best (1 - threshold) with threshold_mode "rel", m < best - threshold with "abs";
// mode "max" mirrors it). After more than `patience` epochs in a row without improvement every
// group's lr becomes max(lr * factor, min_lr), unless that changes it by eps or less, and the
// count pauses for `cooldown` epochs. The numbers are PyTorch's.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ember/autodiff/optim/optimizer.h"

namespace ember::autodiff::optim {

// A plain copy of the schedule's state (PyTorch's state_dict, less the settings).
struct PlateauState {
  int64_t last_epoch = 0;
  double best = 0.0;
  int64_t num_bad_epochs = 0;
  int64_t cooldown_counter = 0;
  std::vector<double> last_lr;
};

class ReduceLROnPlateau {
 public:
  // min_lrs: one per group, or one for every group. The optimizer must outlive the schedule.
  ReduceLROnPlateau(Optimizer& optimizer, const std::string& mode = "min", double factor = 0.1,
                    int64_t patience = 10, double threshold = 1e-4,
                    const std::string& threshold_mode = "rel", int64_t cooldown = 0,
                    std::vector<double> min_lrs = {0.0}, double eps = 1e-8);
  ReduceLROnPlateau(const ReduceLROnPlateau&) = delete;
  ReduceLROnPlateau& operator=(const ReduceLROnPlateau&) = delete;

  void step(double metric);  // one epoch's metric
  const std::vector<double>& get_last_lr() const { return state_.last_lr; }
  int64_t last_epoch() const { return state_.last_epoch; }
  double best() const { return state_.best; }
  int64_t num_bad_epochs() const { return state_.num_bad_epochs; }
  bool in_cooldown() const { return state_.cooldown_counter > 0; }
  Optimizer& optimizer() const { return *optimizer_; }

  const PlateauState& state_dict() const { return state_; }
  void load_state_dict(const PlateauState& saved);  // ValueError when it does not fit

 private:
  bool is_better(double metric) const;
  void record_lrs();

  Optimizer* optimizer_;
  bool maximize_, relative_;
  double factor_, threshold_, eps_;
  int64_t patience_, cooldown_;
  std::vector<double> min_lrs_;
  PlateauState state_;
};

}  // namespace ember::autodiff::optim
