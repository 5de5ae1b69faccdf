// op.h — an op's definition: its shape/dtype rule, its binding to core-runtime and its gradient
// rule, in one place. Each family of ops (src/rules/<family>.cpp) defines its OpDefs side by side;
// the registry (op_def) finds them by name.
//
// A gradient rule never computes numbers: given the forward node (its inputs, outputs and the
// gradients arriving at its outputs, all as Vals of the graph being differentiated) it *adds
// nodes* with the builder functions of ops.h and returns one gradient per input. The driver
// (grad.h) does the rest once for every op: summing the gradients of a value used more than once,
// reducing a broadcast gradient to its input's shape, pruning, stopping at detached values.
#pragma once
#include <string>
#include <vector>

#include "ember/autodiff/graph.h"

namespace ember::autodiff {

// What a gradient rule sees of the forward node it differentiates.
struct GradContext {
  Graph& graph;
  std::vector<Val> inputs;        // the forward node's inputs
  std::vector<Val> outputs;       // its outputs
  std::vector<Val> grad_outputs;  // the gradient arriving at each output; undefined = zero
  std::vector<bool> needs_grad;   // per input: whether its gradient is wanted at all
  const Attrs& attrs;

  Val x(size_t i = 0) const { return inputs[i]; }
  Val y(size_t i = 0) const { return outputs[i]; }
  Val dy(size_t i = 0) const { return grad_outputs[i]; }
};

// One gradient per input (undefined where there is none or it is not needed). A gradient may
// have the shape the input was broadcast to; the driver sums it back to the input's shape.
using GradRule = std::vector<Val> (*)(const GradContext& ctx);
// The types of the outputs for these input types and attributes; throws a typed core-runtime
// error (ShapeError, DTypeError, ...) saying what is wrong.
using InferRule = std::vector<TensorType> (*)(const std::vector<TensorType>& inputs,
                                              const Attrs& attrs);
// Computes the outputs with core-runtime.
using RunFn = std::vector<Tensor> (*)(const std::vector<Tensor>& inputs, const Attrs& attrs);

struct OpDef {
  std::string name;
  InferRule infer = nullptr;
  RunFn run = nullptr;
  GradRule grad = nullptr;  // nullptr: not differentiable (its outputs stop gradients)
  // Facts a memory planner needs: the first output is a view of the first input (shares its
  // storage), or the op writes into its first input.
  bool view = false;
  bool in_place = false;
  // Ops whose result depends on the generator (dropout's mask, rand): never merged or replayed
  // freely.
  bool random = false;
  // Ops that talk to the other processes of a group (all_reduce_start/_wait, src/rules/
  // collective.cpp): every rank must run the same ones in the same order, so compiler passes
  // never remove, merge, fold, fuse, recompute or move them.
  bool collective = false;
};

// Runs `op` on tensors: op.run, and while a step is being compiled, its node in the step's graph
// (compile/trace.h). Eager mode and the executor call ops only through here.
std::vector<Tensor> run_op(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs);

// The definition of an op by name; NotSupportedError naming the op when there is none.
const OpDef& op_def(const std::string& name);
// Every registered op, in registration order (for tests and documentation).
std::vector<const OpDef*> all_op_defs();

}  // namespace ember::autodiff
