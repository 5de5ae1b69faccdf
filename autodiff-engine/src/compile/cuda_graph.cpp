// cuda_graph.cpp — capture and replay of a compiled step as one CUDA graph (cuda_graph.h).
#include "cuda_graph.h"

#include <cstring>

#include "ember/ops/creation.h"

namespace ember::autodiff::compile {

CudaGraphStep::CudaGraphStep(const Program& program, const Replay& replay,
                             std::vector<ValueId> hyper)
    : program_(program), replay_(replay), hyper_(std::move(hyper)) {
  const Graph& g = *program.graph;
  for (ValueId id = 0; id < g.num_values(); ++id) {
    const ValueKind kind = g.value(id).kind;
    if (kind == ValueKind::Input) inputs_.push_back(id);
    if (kind == ValueKind::Input || kind == ValueKind::Parameter || kind == ValueKind::Buffer) {
      bound_.push_back(id);
      is_input_.push_back(kind == ValueKind::Input);
    }
  }
}

CudaGraphStep::Key CudaGraphStep::key(const std::vector<Tensor>& env) const {
  Key k;
  k.addresses.reserve(bound_.size() + 1);
  for (size_t b = 0; b < bound_.size(); ++b) {
    const Tensor& t = env[size_t(bound_[b])];
    k.addresses.push_back(is_input_[b] || !t.defined() ? nullptr : t.data_ptr());
  }
  k.addresses.push_back(replay_.arena_address());  // another plan may have grown the arena
  for (ValueId id : hyper_)
    for (double v : env[size_t(id)].to_vector<double>()) {
      uint64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      k.hyper.push_back(bits);
    }
  return k;
}

void CudaGraphStep::capture(std::vector<Tensor>& env) {
  static_inputs_.clear();
  for (ValueId id : inputs_) {
    Tensor fixed = empty_like(env[size_t(id)]);
    fixed.copy_(env[size_t(id)]);
    static_inputs_.push_back(fixed);
    env[size_t(id)] = fixed;
  }
  const int device = env[size_t(bound_.front())].device().index;
  cuda::Graph graph;
  graph.capture_begin(cuda::Stream::ember_stream(device));
  try {
    replay_.run(env, /*returned_outside=*/true);
  } catch (...) {
    graph.capture_end();
    throw;
  }
  graph.capture_end();
  graph_ = std::move(graph);
  captured_ = env;
  ++captures_;
}

bool CudaGraphStep::run(std::vector<Tensor>& env) {
  if (given_up_ || bound_.empty()) {
    replay_.run(env);
    return false;
  }
  if (++calls_ == 1) {  // a first run outside any capture sets up cuBLAS's workspace
    replay_.run(env);
    return true;
  }
  const Key now = key(env);
  if (!graph_.captured() || now != captured_key_) {
    if (graph_.captured() && ++recaptures_in_a_row_ >= 2) {
      given_up_ = true;
      why_ =
          "not replayed as a CUDA graph: numbers its kernels take from the host (the "
          "learning rate, a step count) or its state tensors changed at every call";
      replay_.run(env);
      return false;
    }
    try {
      capture(env);
    } catch (const Error& e) {
      given_up_ = true;
      why_ = std::string("not replayed as a CUDA graph: its capture failed: ") + e.what();
      replay_.run(env);
      return false;
    }
    captured_key_ = now;
  } else {
    recaptures_in_a_row_ = 0;
    for (size_t i = 0; i < inputs_.size(); ++i) static_inputs_[i].copy_(env[size_t(inputs_[i])]);
  }
  graph_.replay();
  for (size_t id = 0; id < env.size(); ++id)
    if (captured_[id].defined()) env[id] = captured_[id];
  replay_.copy_returned(env);
  return true;
}

}  // namespace ember::autodiff::compile
