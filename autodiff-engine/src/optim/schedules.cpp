// schedules.cpp — StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR and LinearLR: PyTorch's
// recursive forms (next_lr) beside its closed forms.
#include "ember/autodiff/optim/schedules.h"

#include <cmath>
#include <string>

namespace ember::autodiff::optim {

namespace {
constexpr double kPi = 3.14159265358979323846;

void check(bool ok, const char* schedule, const std::string& message) {
  if (!ok) throw ValueError(schedule, message);
}
}  // namespace

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  check(step_size > 0, "StepLR",
        "step_size is " + std::to_string(step_size) + "; pass a positive number of epochs");
  initial_step();
}
double StepLR::next_lr(double lr, double) const {
  return last_epoch_ == 0 || last_epoch_ % step_size_ != 0 ? lr : lr * gamma_;
}
std::optional<double> StepLR::closed_form_lr(double base_lr) const {
  return base_lr * std::pow(gamma_, double(last_epoch_ / step_size_));
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, const std::vector<int64_t>& milestones, double gamma)
    : LRScheduler(optimizer), gamma_(gamma) {
  for (int64_t m : milestones) ++milestones_[m];
  initial_step();
}
double MultiStepLR::next_lr(double lr, double) const {
  auto it = milestones_.find(last_epoch_);
  return it == milestones_.end() ? lr : lr * std::pow(gamma_, double(it->second));
}
std::optional<double> MultiStepLR::closed_form_lr(double base_lr) const {
  int64_t passed = 0;
  for (const auto& [epoch, count] : milestones_)
    if (epoch <= last_epoch_) passed += count;
  return base_lr * std::pow(gamma_, double(passed));
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma)
    : LRScheduler(optimizer), gamma_(gamma) {
  initial_step();
}
double ExponentialLR::next_lr(double lr, double) const { return initial_ ? lr : lr * gamma_; }
std::optional<double> ExponentialLR::closed_form_lr(double base_lr) const {
  return base_lr * std::pow(gamma_, double(last_epoch_));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t t_max, double eta_min)
    : LRScheduler(optimizer), t_max_(t_max), eta_min_(eta_min) {
  check(t_max > 0, "CosineAnnealingLR",
        "t_max is " + std::to_string(t_max) + "; pass a positive number of epochs");
  initial_step();
}
double CosineAnnealingLR::next_lr(double lr, double base_lr) const {
  const double e = double(last_epoch_), t = double(t_max_);
  if (initial_) return lr;
  // At the bottom of each cosine (e = t_max + 1, 3 t_max + 1, ...) the ratio below would divide
  // by zero; PyTorch steps up by the first increment of the next half cosine instead.
  if ((last_epoch_ - 1 - t_max_) % (2 * t_max_) == 0)
    return lr + (base_lr - eta_min_) * (1 - std::cos(kPi / t)) / 2;
  return (1 + std::cos(kPi * e / t)) / (1 + std::cos(kPi * (e - 1) / t)) * (lr - eta_min_) +
         eta_min_;
}
std::optional<double> CosineAnnealingLR::closed_form_lr(double base_lr) const {
  return eta_min_ + (base_lr - eta_min_) * (1 + std::cos(kPi * double(last_epoch_) / t_max_)) / 2;
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor,
                   int64_t total_iters)
    : LRScheduler(optimizer),
      start_factor_(start_factor),
      end_factor_(end_factor),
      total_iters_(total_iters) {
  check(start_factor > 0 && start_factor <= 1, "LinearLR",
        "start_factor is " + std::to_string(start_factor) + "; pass a factor in (0, 1]");
  check(end_factor >= 0 && end_factor <= 1, "LinearLR",
        "end_factor is " + std::to_string(end_factor) + "; pass a factor in [0, 1]");
  check(total_iters > 0, "LinearLR",
        "total_iters is " + std::to_string(total_iters) + "; pass a positive number of steps");
  initial_step();
}
double LinearLR::next_lr(double lr, double) const {
  if (last_epoch_ == 0) return lr * start_factor_;
  if (initial_ || last_epoch_ > total_iters_) return lr;
  // The ratio of the factor at e to the factor at e - 1.
  const double slope = end_factor_ - start_factor_;
  return lr * (1 + slope / (total_iters_ * start_factor_ + (last_epoch_ - 1) * slope));
}
std::optional<double> LinearLR::closed_form_lr(double base_lr) const {
  return base_lr *
         (start_factor_ + (end_factor_ - start_factor_) *
                              double(std::min(total_iters_, last_epoch_)) / double(total_iters_));
}

}  // namespace ember::autodiff::optim
