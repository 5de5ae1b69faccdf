// cuda_graph.h — a compiled step on a GPU replayed as one captured CUDA graph (private to
// src/compile).
//
// A CUDA graph replays the same kernels on the same addresses with the same arguments. So the
// step's tensor arguments are copied into fixed buffers first, its state tensors must be the ones
// captured (the guards see to their identity; a .grad buffer made again is checked here), and the
// numbers the kernels take from the host — the learning rate and step count in the optimizers'
// hyper tensors — must be those captured: when any of these differs the graph is captured again,
// and a step whose numbers change at every call (Adam's step count) runs as the flat list, which
// explain() says. The returned values are copied out of the arena after each replay, outside the
// graph (an allocation inside a capture is refused).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ember/cuda.h"
#include "replay.h"

namespace ember::autodiff::compile {

class CudaGraphStep {
 public:
  // hyper: the values bound to the optimizers' hyper tensors (host numbers).
  CudaGraphStep(const Program& program, const Replay& replay, std::vector<ValueId> hyper);

  // Runs the step on env (inputs and state bound; see Replay::run): through the graph when it
  // can, else as the flat list. Returns false once the graph was given up (why() says why).
  bool run(std::vector<Tensor>& env);
  const std::string& why() const { return why_; }
  int64_t captures() const { return captures_; }

 private:
  // What the captured graph baked in: every bound state tensor's address (null for the inputs,
  // which are copied into fixed buffers, and for an undefined tensor), the arena's, and the
  // hyper numbers (their bits: a NaN equals itself). Compared at every call, so plain numbers
  // rather than text.
  struct Key {
    std::vector<const void*> addresses;
    std::vector<uint64_t> hyper;
    bool operator==(const Key& o) const { return addresses == o.addresses && hyper == o.hyper; }
    bool operator!=(const Key& o) const { return !(*this == o); }
  };
  Key key(const std::vector<Tensor>& env) const;
  void capture(std::vector<Tensor>& env);

  const Program& program_;
  const Replay& replay_;
  std::vector<ValueId> bound_;  // inputs and state values
  std::vector<ValueId> inputs_;
  std::vector<bool> is_input_;  // per bound_ entry
  std::vector<ValueId> hyper_;
  std::vector<Tensor> static_inputs_;
  std::vector<Tensor> captured_;  // the env of the capture: the arena's values at fixed addresses
  Key captured_key_;
  cuda::Graph graph_;
  int64_t calls_ = 0, captures_ = 0, recaptures_in_a_row_ = 0;
  bool given_up_ = false;
  std::string why_;
};

}  // namespace ember::autodiff::compile
