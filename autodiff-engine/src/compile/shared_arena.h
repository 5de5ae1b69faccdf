// shared_arena.h — the one arena all plans of a compiled step place their buffers in (private to
// src/compile).
//
// A compiled step usually traces more than once: the first call sees no optimizer state and no
// gradients yet, the second sees them and traces again. Each plan needs an arena only while it
// replays, and a step replays one plan at a time, so the plans share one arena as large as the
// largest of them instead of each holding its own: the step's memory is that of one plan.
#pragma once
#include <cstdint>

#include "ember/tensor.h"

namespace ember::autodiff::compile {

class SharedArena {
 public:
  // The arena, at least `bytes` long, on `device`: the one held when it is large enough, else a
  // new one. The old one is let go of first, so the two are never held at once; buffers a plan
  // placed in it are gone by then (a replay keeps nothing in the arena between calls).
  const Tensor& at_least(int64_t bytes, Device device) {
    if (!arena_.defined() || arena_.nbytes() < bytes || arena_.device() != device) {
      arena_ = Tensor();
      arena_ = Tensor::empty({bytes}, DType::UInt8, device, "compile arena");
    }
    return arena_;
  }
  int64_t bytes() const { return arena_.defined() ? arena_.nbytes() : 0; }
  // Lets the arena go while the step traces again (an eager run that does not use it); the next
  // replay takes a new one.
  void release() { arena_ = Tensor(); }

 private:
  Tensor arena_;
};

}  // namespace ember::autodiff::compile
