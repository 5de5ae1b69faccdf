// composite_lr.cpp — SequentialLR and ChainedScheduler.
#include "ember/autodiff/optim/composite_lr.h"

#include <algorithm>

#include "ember/autodiff/compile/trace.h"

namespace ember::autodiff::optim {

namespace {
void check_parts(const char* name, const Optimizer& optimizer,
                 const std::vector<std::shared_ptr<LRScheduler>>& schedulers) {
  if (schedulers.empty()) throw ValueError(name, "no schedules; pass at least one");
  for (size_t i = 0; i < schedulers.size(); ++i) {
    if (!schedulers[i]) throw ValueError(name, "schedule " + std::to_string(i) + " is null");
    if (&schedulers[i]->optimizer() != &optimizer)
      throw ValueError(name, "schedule " + std::to_string(i) +
                                 " sets another optimizer's learning rates; make every schedule "
                                 "over the optimizer given here");
  }
}
}  // namespace

SequentialLR::SequentialLR(Optimizer& optimizer,
                           std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(optimizer), milestones_(std::move(milestones)) {
  check_parts("SequentialLR", optimizer, schedulers);
  if (milestones_.size() + 1 != schedulers.size())
    throw ValueError("SequentialLR", std::to_string(schedulers.size()) + " schedules need " +
                                         std::to_string(schedulers.size() - 1) +
                                         " milestones, not " + std::to_string(milestones_.size()));
  children_ = std::move(schedulers);
  // Each schedule's constructor took an initial step; undo them all (lr back to the base, each
  // schedule one epoch back) and take the first one's again, as PyTorch does.
  for (size_t i = 0; i < base_lrs_.size(); ++i) optimizer.set_lr(base_lrs_[i], i);
  auto rewind = [](auto& self, LRScheduler& s) -> void {
    if (s.children_.empty()) --s.last_epoch_;
    for (const auto& child : s.children_) self(self, *child);
  };
  rewind(rewind, *this);
  last_epoch_ = 0;
  LRScheduler& first = *children_[current()];
  first.initial_step();
  last_lr_ = first.get_last_lr();
}

void SequentialLR::step() {
  compile::check_capturable("LRScheduler.step", "a learning-rate schedule's step (host state)",
                            "call scheduler.step() outside the compiled step; the replay reads "
                            "the learning rate it sets at every call");
  ++last_epoch_;
  const size_t i = current();
  LRScheduler& current = *children_[i];
  if (i > 0 && milestones_[i - 1] == last_epoch_) current.update_lr(0);  // starts over
  else current.step();
  last_lr_ = current.get_last_lr();
}

size_t SequentialLR::current() const {
  return std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) -
         milestones_.begin();
}

ChainedScheduler::ChainedScheduler(Optimizer& optimizer,
                                   std::vector<std::shared_ptr<LRScheduler>> schedulers)
    : LRScheduler(optimizer) {
  check_parts("ChainedScheduler", optimizer, schedulers);
  children_ = std::move(schedulers);
  record_lrs();
}

void ChainedScheduler::step() {
  compile::check_capturable("LRScheduler.step", "a learning-rate schedule's step (host state)",
                            "call scheduler.step() outside the compiled step; the replay reads "
                            "the learning rate it sets at every call");
  for (const auto& s : children_) s->step();
  record_lrs();
}

}  // namespace ember::autodiff::optim
