// compile.h — compiled mode: trace a whole training step once, replay it.
//
//   auto step = compile::compile([&](const std::vector<Variable>& in) {
//     opt.zero_grad();
//     Variable loss = cross_entropy(model(in[0]), in[1]);
//     loss.backward();
//     opt.step();
//     return std::vector<Variable>{loss};
//   });
//   for (...) Variable loss = step({x, y})[0];  // 1st call traces (and runs), later calls replay
//   std::cout << step.explain();                 // every decision, as text
//
// The first call runs the function eagerly while the tracer (trace.h) records everything it does
// to tensors — forward, the backward graph the engine builds, gradient accumulation into .grad,
// in-place writes, batch norm's running statistics, the optimizer's update — as nodes of one
// graph (program.h). Tensors the step did not make are inputs (its arguments) or state
// (parameters, gradients, buffers, optimizer state), bound to the live tensors at every call, so
// a state tensor changed between calls (load_state_dict, p.data.mul_) is read as it is now.
// Returned tensors are fresh every call. The optimizer's learning rate and step count are read
// live too: a schedule may change the learning rate between calls without a new trace.
//
// Later calls whose guards hold replay the program in C++: a flat list of kernel calls, no
// Python between them, every allocation placed in one planned arena (memory_plan.h). Guards:
// each input's shape, dtype, device and requires_grad; the identity and layout of every state
// tensor; grad mode; what the optimizers and the caller add (training mode, Python arguments).
// A changed guard traces again (up to kMaxPlans plans are kept) and warns once per guard.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ember/autodiff/compile/program.h"
#include "ember/autodiff/compile/trace.h"
#include "ember/autodiff/variable.h"

namespace ember::autodiff::compile {

using StepFn = std::function<std::vector<Variable>(const std::vector<Variable>&)>;

struct CompileOptions {
  std::string name = "step";  // how warnings and explain() name the step
  // Bytes the step's arena may take (0: no limit): above it, forward values are recomputed in
  // the backward pass (rematerialisation) until the plan fits, or BudgetError says what can.
  int64_t memory_budget = 0;
  std::vector<std::string> input_names;  // per argument ("x", "y"); "input0", ... otherwise
  // The names the user knows state by ("model.0.weight"): a parameter's .grad and optimizer
  // state are named after it.
  std::vector<std::pair<Variable, std::string>> state_names;
  // Guards of the caller's own, read at every call: (name, value) pairs (Python: each module's
  // training mode, the non-tensor arguments).
  std::function<std::vector<std::pair<std::string, std::string>>()> guards;
  // Receives each retrace warning (once per guard); default: printed to stderr.
  std::function<void(const std::string&)> warn;
  // On CUDA, replay as one captured CUDA graph when the program allows it (explain() says).
  bool cuda_graph = true;
  // Run the passes (dead code, common subexpressions, constant folding, in-place reuse) and the
  // memory plan. Off: the traced graph is replayed as it is, every node allocating as in eager.
  bool optimize = true;
  // Fuse chains of elementwise ops into generated kernels (passes.h: fuse_elementwise), when
  // optimize is on. EMBER_FUSION=0 turns it off too.
  bool fuse = true;
};

class Plan;         // one traced program with its guards and replay (src/compile/plan.h)
class SharedArena;  // the arena the plans share (src/compile/shared_arena.h)

class CompiledStep {
 public:
  static constexpr size_t kMaxPlans = 8;

  explicit CompiledStep(StepFn fn, CompileOptions options = {});
  ~CompiledStep();
  CompiledStep(CompiledStep&&) noexcept;
  CompiledStep& operator=(CompiledStep&&) noexcept;

  // Replays the plan whose guards hold, or traces a new one (running the step eagerly).
  std::vector<Variable> operator()(const std::vector<Variable>& inputs);

  // Every decision of the newest plan (trace, guards, passes, memory plan, replay) as text.
  std::string explain() const;
  // The newest plan's graph after the passes, as the typed text of Graph::str().
  std::string graph() const;
  // The newest plan's program (after passes); ValueError before the first call.
  const Program& program() const;
  // The generated source of the newest plan's fused group `group` (explain()'s "group N"), and
  // how many fused groups it has.
  std::string source(int group) const;
  int fused_groups() const;

  int64_t traces() const { return traces_; }
  int64_t replays() const { return replays_; }
  size_t plans() const { return plans_.size(); }
  // Whether the last call replayed (false: it traced).
  bool last_call_replayed() const { return last_replayed_; }
  // Which plan the last call used: 1 for the first traced, 2 for the next, ...
  int64_t plan_id() const { return plan_id_; }

 private:
  std::vector<std::pair<std::string, std::string>> read_guards(
      const std::vector<Variable>& inputs) const;

  StepFn fn_;
  CompileOptions options_;
  std::vector<std::unique_ptr<Plan>> plans_;  // most recently used first
  std::shared_ptr<SharedArena> arena_;        // one for all plans: they never replay at once
  std::vector<std::string> warned_;           // guards already warned about
  std::vector<std::string> retraces_;         // why each trace after the first happened
  int64_t traces_ = 0, replays_ = 0;
  bool last_replayed_ = false;
  int64_t plan_id_ = 0;
};

// A compiled step over a function of Variables (see the top of this file).
CompiledStep compile(StepFn fn, CompileOptions options = {});

}  // namespace ember::autodiff::compile
