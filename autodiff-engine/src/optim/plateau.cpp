// plateau.cpp — ReduceLROnPlateau: the improvement test, the patience and cooldown counts.
#include "ember/autodiff/optim/plateau.h"

#include <algorithm>
#include <cmath>

#include "ember/autodiff/compile/trace.h"

namespace ember::autodiff::optim {

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, const std::string& mode, double factor,
                                     int64_t patience, double threshold,
                                     const std::string& threshold_mode, int64_t cooldown,
                                     std::vector<double> min_lrs, double eps)
    : optimizer_(&optimizer),
      maximize_(mode == "max"),
      relative_(threshold_mode == "rel"),
      factor_(factor),
      threshold_(threshold),
      eps_(eps),
      patience_(patience),
      cooldown_(cooldown) {
  const char* name = "ReduceLROnPlateau";
  if (mode != "min" && mode != "max")
    throw ValueError(name, "mode is '" + mode + "'; pass 'min' (a loss) or 'max' (an accuracy)");
  if (threshold_mode != "rel" && threshold_mode != "abs")
    throw ValueError(name, "threshold_mode is '" + threshold_mode + "'; pass 'rel' or 'abs'");
  if (!(factor < 1.0 && factor >= 0.0))
    throw ValueError(name, "factor is " + std::to_string(factor) +
                               "; the lr is multiplied by it, so pass a value in [0, 1)");
  if (patience < 0 || cooldown < 0)
    throw ValueError(name, "patience and cooldown are counts of epochs; pass values >= 0");
  const size_t groups = optimizer.param_groups().size();
  if (min_lrs.size() == 1) min_lrs.assign(groups, min_lrs[0]);
  if (min_lrs.size() != groups)
    throw ValueError(name, "min_lr has " + std::to_string(min_lrs.size()) + " values for " +
                               std::to_string(groups) +
                               " parameter groups; pass one value, or one per group");
  min_lrs_ = std::move(min_lrs);
  state_.best = maximize_ ? -INFINITY : INFINITY;
  record_lrs();
}

bool ReduceLROnPlateau::is_better(double metric) const {
  const double best = state_.best;
  if (maximize_) return relative_ ? metric > best * (1 + threshold_) : metric > best + threshold_;
  return relative_ ? metric < best * (1 - threshold_) : metric < best - threshold_;
}

void ReduceLROnPlateau::step(double metric) {
  compile::check_capturable("LRScheduler.step", "a learning-rate schedule's step (host state)",
                            "call scheduler.step() outside the compiled step; the replay reads "
                            "the learning rate it sets at every call");
  std::vector<ParamGroup>& groups = optimizer_->param_groups();
  if (groups.size() != min_lrs_.size())
    throw ValueError("ReduceLROnPlateau.step",
                     "the optimizer has " + std::to_string(groups.size()) +
                         " parameter groups but the schedule was made for " +
                         std::to_string(min_lrs_.size()) +
                         "; add every group before making the schedule");
  ++state_.last_epoch;
  if (is_better(metric)) {
    state_.best = metric;
    state_.num_bad_epochs = 0;
  } else {
    ++state_.num_bad_epochs;
  }
  if (in_cooldown()) {
    --state_.cooldown_counter;
    state_.num_bad_epochs = 0;  // bad epochs in cooldown do not count
  }
  if (state_.num_bad_epochs > patience_) {
    for (size_t i = 0; i < groups.size(); ++i) {
      const double old_lr = groups[i].lr(), new_lr = std::max(old_lr * factor_, min_lrs_[i]);
      if (old_lr - new_lr > eps_) optimizer_->set_lr(new_lr, i);
    }
    state_.cooldown_counter = cooldown_;
    state_.num_bad_epochs = 0;
  }
  record_lrs();
}

void ReduceLROnPlateau::record_lrs() {
  state_.last_lr.clear();
  for (const ParamGroup& g : optimizer_->param_groups()) state_.last_lr.push_back(g.lr());
}

void ReduceLROnPlateau::load_state_dict(const PlateauState& saved) {
  if (saved.last_lr.size() != min_lrs_.size() || saved.num_bad_epochs < 0 ||
      saved.cooldown_counter < 0)
    throw ValueError("ReduceLROnPlateau.load_state_dict",
                     "the saved state has " + std::to_string(saved.last_lr.size()) +
                         " groups (or negative counts) but this schedule has " +
                         std::to_string(min_lrs_.size()) +
                         "; load a state saved from a schedule built the same way");
  state_ = saved;
}

}  // namespace ember::autodiff::optim
