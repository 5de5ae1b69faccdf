// custom_function.h — ops whose forward and backward are the caller's own code (PyTorch's
// torch.autograd.Function): how a computation gets a gradient that no rule of op.h gives.
//
// The forward has already run (any code, on plain tensors); record_custom_function records it
// as one node, custom_function, of the history. That node's gradient rule adds one node,
// custom_function_backward, whose run calls CustomFunction::backward. So a backward graph
// through it prints and runs like any other:
//   %1:f32[3] = custom_function(%0) {function=Exp, id=7, saved_inputs=[], saved_outputs=[0], ...}
//   %3:f32[3] = custom_function_backward(%2, %1) {function=Exp, id=7, ...}    # d/d %0 via ...
// - Without create_graph the callback sees Variables without history, in no-grad mode.
// - With create_graph it sees the incoming gradients and the saved inputs and outputs as
//   Variables with their history, in the caller's grad mode, so the ops it runs on them are
//   recorded: the gradient is differentiable again exactly when the backward is written with
//   differentiable ops. A backward computed some other way (NumPy, say) returns gradients
//   without history, whose own gradient is missing.
// Each recorded call is a node of its own (the function's id is an attribute), so a backward
// through one builds its backward graph anew rather than reusing one from the cache.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ember/autodiff/variable.h"

namespace ember::autodiff {

class CustomFunction {
 public:
  virtual ~CustomFunction() = default;
  // For the printed graph and errors ("Exp").
  virtual std::string name() const = 0;
  // One gradient per input of record_custom_function (undefined: none, which counts as zero),
  // each of its input's shape, dtype and device. grad_outputs: one per output, zeros where no
  // gradient arrives, undefined for an output that is not floating. saved: the saved inputs,
  // then the saved outputs, in the order record_custom_function lists them.
  virtual std::vector<Variable> backward(const std::vector<Variable>& grad_outputs,
                                         const std::vector<Variable>& saved) = 0;
};

// Records `outputs`, which fn's forward computed from `inputs`, as one node of the history and
// returns them as Variables: with history when grad mode is on and some input requires grad,
// otherwise without. saved_inputs and saved_outputs number the inputs and outputs the backward
// reads (an in-place change of one before backward is an error, as for any op's saved tensors);
// the outputs numbered in non_differentiable get no history (indices, masks).
std::vector<Variable> record_custom_function(std::shared_ptr<CustomFunction> fn,
                                             const std::vector<Variable>& inputs,
                                             std::vector<Tensor> outputs,
                                             const std::vector<int64_t>& saved_inputs = {},
                                             const std::vector<int64_t>& saved_outputs = {},
                                             const std::vector<int64_t>& non_differentiable = {});

}  // namespace ember::autodiff
