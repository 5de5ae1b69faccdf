// composite_lr.h — schedules made of schedules over one optimizer.
//
//   auto warmup = std::make_shared<optim::LinearLR>(opt, 0.1, 1.0, 5);
//   auto cosine = std::make_shared<optim::CosineAnnealingLR>(opt, 95);
//   optim::SequentialLR schedule(opt, {warmup, cosine}, {5});  // warm-up, then cosine
#pragma once
#include "ember/autodiff/optim/lr_scheduler.h"

namespace ember::autodiff::optim {

// torch.optim.lr_scheduler.SequentialLR: schedulers[i] runs from milestones[i - 1] (from 0 for
// the first); each starts over at its milestone (at its epoch 0, from the base lr).
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  void step() override;

 private:
  size_t current() const;  // which schedule runs at last_epoch_

  std::vector<int64_t> milestones_;
};

// torch.optim.lr_scheduler.ChainedScheduler: every step steps each schedule in turn, so their
// factors multiply (say, an exponential decay on top of a step decay).
class ChainedScheduler : public LRScheduler {
 public:
  ChainedScheduler(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers);
  void step() override;
};

}  // namespace ember::autodiff::optim
