// plan.h — one traced step ready to replay: its program after the passes, the guards that say
// when it still applies, and the replay itself (private to src/compile).
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuda_graph.h"
#include "ember/autodiff/compile/compile.h"
#include "ember/autodiff/compile/memory_plan.h"
#include "replay.h"
#include "tracer.h"

namespace ember::autodiff::compile {

// A guard that does not hold: its name and the value the plan was traced with and has now.
struct GuardFailure {
  std::string name, traced, now;
  bool quiet = false;
  std::string str() const { return "'" + name + "' changed: " + traced + " -> " + now; }
};

// What identifies a tensor for the guards: its memory and layout (a state tensor) or its type.
struct TensorIdentity {
  const StorageImpl* storage = nullptr;
  int64_t offset = 0;
  Shape shape;
  Strides strides;
  DType dtype = DType::Float32;
  Device device;
  bool operator==(const TensorIdentity& o) const {
    return storage == o.storage && offset == o.offset && shape == o.shape && strides == o.strides &&
           dtype == o.dtype && device == o.device;
  }
};
TensorIdentity identity_of(const Tensor& t);  // undefined: all empty
std::string describe_identity(const TensorIdentity& id);

// The guards every plan has, read once per call: inputs, grad mode and the caller's own.
struct CallGuards {
  std::vector<std::pair<TensorType, bool>> inputs;  // type, requires_grad
  bool grad_mode = true;
  std::vector<std::pair<std::string, std::string>> extra;
};
CallGuards read_call_guards(const std::vector<Variable>& inputs, const CompileOptions& options);

// Whether the program has collective nodes (a data-parallel step's all-reduces), and explain()'s
// section on them (explain_collectives.cpp).
bool has_collectives(const Program& program);
void explain_collectives(const Program& program, Explain& explain);

class Plan {
 public:
  // Runs the passes (options.optimize) and the memory plan over the traced step.
  // arena: the compiled step's, shared by its plans.
  Plan(TracedStep traced, CallGuards guards, const CompileOptions& options,
       std::vector<std::string> input_names, std::shared_ptr<SharedArena> arena);

  // The first guard that no longer holds, or nothing when the plan applies to this call.
  std::optional<GuardFailure> check(const CallGuards& call) const;
  std::vector<Variable> replay(const std::vector<Variable>& inputs);

  const Program& program() const { return program_; }
  int64_t id = 0;  // the how-manieth trace made it
  const Explain& explain() const { return explain_; }

 private:
  Program program_;
  std::vector<StateBinding> bindings_;
  std::vector<std::function<void()>> host_effects_;
  std::vector<Guard> guards_;
  std::vector<std::shared_ptr<VariableImpl>> drop_grads_;
  CallGuards call_guards_;
  std::vector<TensorIdentity> state_identity_;  // per slot (guard_identity only)
  std::vector<std::string> input_names_;
  Explain explain_;
  std::unique_ptr<Replay> replay_;
  std::unique_ptr<CudaGraphStep> cuda_graph_;  // on a GPU, with a memory plan
  bool said_why_ = false;
};

}  // namespace ember::autodiff::compile
