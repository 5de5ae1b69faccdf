// record.h — what eager mode keeps of each op it recorded (private to src/eager).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ember/autodiff/op.h"
#include "ember/autodiff/variable.h"

namespace ember::autodiff {

// One recorded op: enough to rebuild its node of the forward graph and to bind the tensors
// gradient rules read. The inputs are held for their history: a leaf as itself, a recorded value
// as a stand-in with its record but no data, so that a value is kept only when a rule reads it.
// The outputs only as tensors, since a Variable holds its record and a record holding its
// Variables would be a cycle: an output is saved (defined) when its own op's rule or a later
// op's rule reads it (a later op's record saves its inputs here, in their producer's record).
struct Record {
  const OpDef* op = nullptr;
  Attrs attrs;
  std::vector<std::shared_ptr<VariableImpl>> inputs;
  std::vector<TensorType> output_types;
  std::vector<Tensor> outputs;  // saved values; undefined where no rule reads one
  std::vector<std::weak_ptr<VariableImpl>> output_vars;  // for hooks and retain_grad
  // Storage versions when recorded: a saved tensor changed in place since is an error.
  std::vector<int64_t> input_versions, output_versions;
  // A backward without retain_graph freed the saved outputs. The inputs stay, for the printed
  // graph, but a leaf that does not require grad is swapped for a stand-in without its data.
  bool released = false;
  std::shared_ptr<void> owner;  // what a custom function's call keeps (custom_function.cpp)
};

struct VariableImpl {
  Tensor data;
  bool requires_grad = false;
  std::shared_ptr<Record> record;  // null for a leaf
  int32_t output = 0;              // which output of the record this is
  Variable grad;
  bool retains_grad = false;
  std::vector<std::pair<int64_t, GradHook>> hooks;  // (id, hook) in registration order
  int64_t next_hook_id = 0;
  // The trace (compile/trace.h) that was running when this leaf was made from a tensor, 0 if
  // none: its tensor came from inside the step.
  int64_t made_in_trace = 0;
  std::string name;        // for printed graphs (Variable::set_name)
  bool is_buffer = false;  // printed as a buffer, not an input
  // A released record's stand-in for a leaf (Record::released) has no data, only its type.
  std::shared_ptr<const TensorType> stand_in_type;
};

// Per input and per output of an op: whether its gradient rule reads the value (saved.cpp).
struct SavedValues {
  std::vector<char> inputs, outputs;
};
SavedValues saved_values(const OpDef& op, const Attrs& attrs, const std::vector<Tensor>& inputs,
                         const std::vector<char>& requires_grad);

// Runs a custom_function_backward node on Variables: with create_graph the caller's backward
// sees them with their history (custom_function.h).
std::vector<Variable> run_custom_backward(const Attrs& attrs, const std::vector<Variable>& inputs);

}  // namespace ember::autodiff
