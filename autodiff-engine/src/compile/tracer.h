// tracer.h — recording a step while it runs eagerly (private to src/compile).
//
// The tracer knows every tensor the step touches by its view key (storage, offset, shape,
// strides, dtype) and which graph value it holds now. A tensor met for the first time is one of:
//   - an input: the step's arguments, registered before the step runs;
//   - state: a leaf Variable made before the step (parameter, buffer), a .grad, an optimizer's
//     buffer (declare_state): a Parameter value, bound to the live tensor at every replay;
//   - a constant: a leaf made inside the step from a tensor (a scalar operand, zeros(3)), or a
//     graph's constant;
// and anything else is an error: the step computed it in a way the tracer did not see. Each
// entry remembers its storage's version: a tensor written in place behind the tracer's back
// (another version when read) is an error too, never a silently stale value.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ember/autodiff/compile/compile.h"
#include "ember/autodiff/compile/memory_plan.h"
#include "ember/autodiff/compile/trace.h"
#include "ember/autodiff/variable.h"

namespace ember::autodiff::compile {

// How a replay binds one state slot: the live tensor, and for a gradient the Variable whose .grad
// it is (set to the bound buffer after the step when it was none).
struct StateBinding {
  StateGetter get;
  std::shared_ptr<VariableImpl> grad_of;  // gradients only
  bool guard_identity = true;             // false for write-only gradients and hyper tensors
  bool read = false;                      // the step reads the value it had before the step
  bool hyper = false;                     // an optimizer's host numbers, refilled by get()
};

struct Guard {
  std::string name;
  std::function<std::string()> read;
  std::string expected;
  bool quiet = false;
};

// Everything a trace yields: the program and how to bind it to the world.
struct TracedStep {
  Program program;
  std::vector<StateBinding> bindings;  // per program.state slot
  std::vector<std::function<void()>> host_effects;
  std::vector<Guard> guards;  // those registered while tracing (the built-in ones are added after)
  std::vector<std::shared_ptr<VariableImpl>> drop_grads;  // .grad set to none by the step
  NodeAllocations allocations;     // per traced node, what it asked the allocator for
  std::vector<std::string> notes;  // for explain(): how state and constants were classified
};

class Tracer {
 public:
  // Starts tracing on this thread. inputs: the step's tensor arguments.
  Tracer(const std::vector<Variable>& inputs, const std::vector<std::string>& input_names,
         const std::unordered_map<const VariableImpl*, std::string>& names);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  static Tracer* active();  // this thread's, or null
  int64_t id() const { return id_; }

  std::vector<Tensor> run(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs);
  void see_variable(const Variable& v);
  void see_constant(const Tensor& t);
  void declare_state(const Tensor& t, DeclaredKind kind, const std::string& what,
                     const VariableImpl* of, StateGetter get);
  void on_replay(std::function<void()> effect) {
    traced_.host_effects.push_back(std::move(effect));
  }
  void add_guard(const std::string& name, std::function<std::string()> read, bool quiet);
  void grad_dropped(const std::shared_ptr<VariableImpl>& p);
  void see_grad(const std::shared_ptr<VariableImpl>& p);
  void grad_written(const std::shared_ptr<VariableImpl>& p, const Tensor& grad);
  std::string name_of(const VariableImpl* p);
  void written_by_collective(const Tensor& t);

  // Ends the trace: the returned Variables' values become the program's returned values.
  TracedStep finish(const std::vector<Variable>& returned);

 private:
  using Key = std::tuple<const StorageImpl*, int64_t, Shape, Strides, DType>;
  struct Entry {
    ValueId value;
    std::weak_ptr<StorageImpl> storage;
    int64_t version;
  };
  static Key key_of(const Tensor& t);
  // The value `t` holds, or -1 when it was never seen; an error when its storage was written
  // behind the tracer's back since.
  ValueId find(const Tensor& t, const std::string& op);
  ValueId value_of(const Tensor& t, const std::string& op);  // find, or an error naming op
  void bind(const Tensor& t, ValueId value);                 // t holds value from now on
  // A new state slot of `type`, bound to t (undefined for a gradient the step creates).
  ValueId add_state(const Tensor& t, const TensorType& type, StateKind kind, std::string name,
                    StateBinding binding);
  int32_t grad_slot(const std::shared_ptr<VariableImpl>& p);

  int64_t id_;
  Tracer* outer_;
  std::unique_ptr<Graph> graph_;
  TracedStep traced_;
  std::map<Key, Entry> entries_;
  std::unordered_map<const VariableImpl*, std::string> names_;
  std::unordered_map<const VariableImpl*, int32_t> grad_slots_;  // p -> its .grad's slot
  std::vector<Tensor> slot_tensors_;  // per state slot: the tensor it was bound to when traced
  // .grad set to none and not written since / ever during the step
  std::map<const VariableImpl*, std::shared_ptr<VariableImpl>> dropped_;
  std::set<const VariableImpl*> ever_dropped_;
  std::set<std::string> guard_names_;
  int64_t unnamed_ = 0;
};

}  // namespace ember::autodiff::compile
