// lr_scheduler.cpp — what every schedule shares: base lrs, the step counter, state.
#include "ember/autodiff/optim/lr_scheduler.h"

#include "ember/autodiff/compile/trace.h"

namespace ember::autodiff::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(&optimizer) {
  for (ParamGroup& g : optimizer.param_groups()) {
    g.options.emplace("initial_lr", g.lr());  // kept when an earlier schedule set it
    base_lrs_.push_back(g.options.at("initial_lr"));
  }
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  initial_ = true;
  step();
  initial_ = false;
}

void LRScheduler::step() {
  compile::check_capturable("LRScheduler.step", "a learning-rate schedule's step (host state)",
                            "call scheduler.step() outside the compiled step; the replay reads "
                            "the learning rate it sets at every call");
  ++step_count_;
  update_lr(std::nullopt);
}

void LRScheduler::update_lr(std::optional<int64_t> epoch) {
  std::vector<ParamGroup>& groups = optimizer_->param_groups();
  if (groups.size() != base_lrs_.size())
    throw ValueError("LRScheduler.step", "the optimizer has " + std::to_string(groups.size()) +
                                             " parameter groups but the schedule was made for " +
                                             std::to_string(base_lrs_.size()) +
                                             "; add every group before making the schedule");
  last_epoch_ = epoch ? *epoch : last_epoch_ + 1;
  // Every new lr is computed before any is set, as next_lr reads the current ones.
  std::vector<double> lrs;
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::optional<double> closed = epoch ? closed_form_lr(base_lrs_[i]) : std::nullopt;
    lrs.push_back(closed ? *closed : next_lr(groups[i].lr(), base_lrs_[i]));
  }
  for (size_t i = 0; i < groups.size(); ++i) optimizer_->set_lr(lrs[i], i);
  record_lrs();
}

void LRScheduler::record_lrs() {
  last_lr_.clear();
  for (const ParamGroup& g : optimizer_->param_groups()) last_lr_.push_back(g.lr());
}

SchedulerState LRScheduler::state_dict() const {
  SchedulerState s{last_epoch_, step_count_, base_lrs_, last_lr_, {}};
  for (const auto& child : children_) s.children.push_back(child->state_dict());
  return s;
}

void LRScheduler::load_state_dict(const SchedulerState& saved) {
  if (saved.base_lrs.size() != base_lrs_.size() || saved.children.size() != children_.size())
    throw ValueError("LRScheduler.load_state_dict",
                     "the saved state has " + std::to_string(saved.base_lrs.size()) +
                         " groups and " + std::to_string(saved.children.size()) +
                         " sub-schedules but this schedule has " +
                         std::to_string(base_lrs_.size()) + " and " +
                         std::to_string(children_.size()) +
                         "; load a state saved from a schedule built the same way");
  // Children first: a failure there leaves this schedule as it was.
  for (size_t i = 0; i < children_.size(); ++i) children_[i]->load_state_dict(saved.children[i]);
  last_epoch_ = saved.last_epoch;
  step_count_ = saved.step_count;
  base_lrs_ = saved.base_lrs;
  last_lr_ = saved.last_lr;
}

}  // namespace ember::autodiff::optim
