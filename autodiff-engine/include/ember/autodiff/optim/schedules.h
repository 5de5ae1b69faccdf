// schedules.h — the learning-rate schedules of torch.optim.lr_scheduler, each a formula of the
// epoch e and the base lr b (the closed forms; step() reaches the same numbers from the current
// lr as PyTorch does, see lr_scheduler.h).
#pragma once
#include <map>

#include "ember/autodiff/optim/lr_scheduler.h"

namespace ember::autodiff::optim {

// b * gamma^floor(e / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  double next_lr(double lr, double base_lr) const override;
  std::optional<double> closed_form_lr(double base_lr) const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// b * gamma^(number of milestones <= e); a milestone listed twice counts twice.
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, const std::vector<int64_t>& milestones, double gamma = 0.1);

 protected:
  double next_lr(double lr, double base_lr) const override;
  std::optional<double> closed_form_lr(double base_lr) const override;

 private:
  std::map<int64_t, int64_t> milestones_;  // epoch -> how many times it is listed
  double gamma_;
};

// b * gamma^e.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 protected:
  double next_lr(double lr, double base_lr) const override;
  std::optional<double> closed_form_lr(double base_lr) const override;

 private:
  double gamma_;
};

// eta_min + (b - eta_min) (1 + cos(pi e / t_max)) / 2: half a cosine from b down to eta_min over
// t_max epochs (and back up over the next t_max, as PyTorch's recursive form continues).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min = 0.0);

 protected:
  double next_lr(double lr, double base_lr) const override;
  std::optional<double> closed_form_lr(double base_lr) const override;

 private:
  int64_t t_max_;
  double eta_min_;
};

// b * (start_factor + (end_factor - start_factor) min(e, total_iters) / total_iters): a linear
// warm-up (or cool-down) of the factor, then constant.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0,
           int64_t total_iters = 5);

 protected:
  double next_lr(double lr, double base_lr) const override;
  std::optional<double> closed_form_lr(double base_lr) const override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

}  // namespace ember::autodiff::optim
