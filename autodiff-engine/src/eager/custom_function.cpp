// custom_function.cpp — recording a custom function, and its two ops: custom_function (the
// recorded forward) and custom_function_backward (the call back into the caller's backward).
#include "ember/autodiff/custom_function.h"

#include <atomic>
#include <mutex>
#include <unordered_map>

#include "../rules/families.h"
#include "ember/autodiff/ops/creation.h"
#include "ember/ops/creation.h"
#include "record.h"

namespace ember::autodiff {

namespace {

// What a recorded call keeps: the function, its input and output types (the ops' shape rules
// read them) and, until the recording op takes them, the outputs. The record of the call owns
// it; while it lives, the ops find it by its id (an attribute, as nodes hold nothing else).
struct Call {
  int64_t id = 0;
  std::shared_ptr<CustomFunction> fn;
  std::vector<TensorType> input_types, output_types;
  std::vector<Tensor> pending_outputs;
  ~Call();
};

std::mutex calls_mutex;
std::unordered_map<int64_t, Call*> calls;
std::atomic<int64_t> next_id{0};

Call::~Call() {
  std::lock_guard<std::mutex> lock(calls_mutex);
  calls.erase(id);
}

Call& find_call(const Attrs& attrs) {
  std::lock_guard<std::mutex> lock(calls_mutex);
  auto it = calls.find(attrs.i("id"));
  if (it == calls.end())
    throw ValueError(attrs.s("function"),
                     "this call of the custom function was freed (a backward without "
                     "retain_graph already ran through it). Fix: pass retain_graph=true to the "
                     "first backward, or run the forward again");
  return *it->second;
}

std::vector<Val> custom_function_grad(const GradContext& c) {
  // [grads of the floating outputs (zeros where none arrives), saved inputs, saved outputs]
  std::vector<Val> ins;
  for (size_t o = 0; o < c.outputs.size(); ++o)
    if (is_floating(c.y(o).dtype()))
      ins.push_back(c.dy(o).defined() ? c.dy(o) : zeros_like(c.y(o)));
  for (int64_t k : c.attrs.ints("saved_inputs")) ins.push_back(c.x(size_t(k)));
  for (int64_t k : c.attrs.ints("saved_outputs")) ins.push_back(c.y(size_t(k)));
  std::vector<int64_t> needs;
  for (bool n : c.needs_grad) needs.push_back(n);
  Attrs attrs = c.attrs;
  attrs.set("needs", needs);
  std::vector<Val> outs = apply(EMBER_OP("custom_function_backward"), ins, attrs);
  std::vector<Val> grads(c.inputs.size());
  size_t next = 0;
  for (size_t k = 0; k < grads.size(); ++k)
    if (c.needs_grad[k]) grads[k] = outs[next++];
  return grads;
}

// The gradients of the inputs that need one, from the node's inputs (see custom_function_grad).
std::vector<Tensor> backward_tensors(const std::vector<Tensor>& in, const Attrs& attrs) {
  NoGradGuard no_grad;  // as PyTorch runs a backward that builds no graph
  std::vector<Variable> vars(in.begin(), in.end());
  std::vector<Tensor> out;
  for (const Variable& g : run_custom_backward(attrs, vars)) out.push_back(g.data());
  return out;
}

}  // namespace

std::vector<Variable> run_custom_backward(const Attrs& attrs, const std::vector<Variable>& in) {
  Call& call = find_call(attrs);
  const std::string op = attrs.s("function") + ".backward";
  std::vector<Variable> grad_outputs, saved;
  size_t next = 0;
  for (const TensorType& t : call.output_types)
    grad_outputs.push_back(is_floating(t.dtype) ? in[next++] : Variable());
  saved.assign(in.begin() + long(next), in.end());
  const std::vector<Variable> grads = call.fn->backward(grad_outputs, saved);
  if (grads.size() != call.input_types.size())
    throw ValueError(op, "returned " + std::to_string(grads.size()) + " gradients for " +
                             std::to_string(call.input_types.size()) +
                             " inputs; return one per input (undefined where there is none)");
  const std::vector<int64_t>& needs = attrs.ints("needs");
  std::vector<Variable> result;
  for (size_t k = 0; k < grads.size(); ++k) {
    if (!needs[k]) continue;
    const TensorType& want = call.input_types[k];
    if (!grads[k].defined()) {
      result.emplace_back(zeros(want.shape, want.dtype, want.device));
      continue;
    }
    if (type_of(grads[k].data()) != want)
      throw ShapeError(op, "the gradient of input " + std::to_string(k) + " is " +
                               type_of(grads[k].data()).str() + " but the input is " + want.str() +
                               "; return a gradient of the input's shape, dtype and device");
    result.push_back(grads[k]);
  }
  return result;
}

std::vector<Variable> record_custom_function(std::shared_ptr<CustomFunction> fn,
                                             const std::vector<Variable>& inputs,
                                             std::vector<Tensor> outputs,
                                             const std::vector<int64_t>& saved_inputs,
                                             const std::vector<int64_t>& saved_outputs,
                                             const std::vector<int64_t>& non_differentiable) {
  const std::string name = fn ? fn->name() : "custom function";
  if (!fn) throw ValueError(name, "the function is null");
  if (outputs.empty())
    throw ValueError(name, "the forward returned no tensor; return at least one");
  auto check_indices = [&](const std::vector<int64_t>& indices, size_t size, const char* what) {
    for (int64_t k : indices)
      if (k < 0 || size_t(k) >= size)
        throw IndexError(name, std::string(what) + " names number " + std::to_string(k) + " of " +
                                   std::to_string(size));
  };
  check_indices(saved_inputs, inputs.size(), "saved_inputs");
  check_indices(saved_outputs, outputs.size(), "saved_outputs");
  check_indices(non_differentiable, outputs.size(), "non_differentiable");

  auto call = std::make_shared<Call>();
  call->fn = std::move(fn);
  for (const Variable& v : inputs) {
    if (!v.defined()) throw ValueError(name, "an input is undefined");
    call->input_types.push_back(type_of(v.data()));
  }
  for (const Tensor& t : outputs) call->output_types.push_back(type_of(t));
  call->pending_outputs = std::move(outputs);
  {
    std::lock_guard<std::mutex> lock(calls_mutex);
    call->id = next_id++;
    calls[call->id] = call.get();
  }
  const Attrs attrs{{"function", name},
                    {"id", call->id},
                    {"saved_inputs", saved_inputs},
                    {"saved_outputs", saved_outputs}};
  std::vector<Variable> result = apply(EMBER_OP("custom_function"), inputs, attrs);
  for (const Variable& v : result)
    if (v.impl()->record) v.impl()->record->owner = call;  // else: nothing recorded, call freed
  for (int64_t k : non_differentiable) {
    VariableImpl& impl = *result[size_t(k)].impl();
    impl.record = nullptr;
    impl.requires_grad = false;
    impl.output = 0;
  }
  return result;
}

std::vector<OpDef> custom_function_ops() {
  using Types = std::vector<TensorType>;
  using Tensors = std::vector<Tensor>;
  OpDef forward{"custom_function",
                [](const Types&, const Attrs& a) -> Types { return find_call(a).output_types; },
                [](const Tensors&, const Attrs& a) -> Tensors {
                  Call& call = find_call(a);
                  if (call.pending_outputs.empty())
                    throw NotSupportedError(a.s("function"),
                                            "a custom function's forward is the caller's code, "
                                            "which the engine cannot run again");
                  Tensors outputs;
                  outputs.swap(call.pending_outputs);
                  return outputs;
                },
                custom_function_grad};
  OpDef backward{"custom_function_backward",
                 [](const Types&, const Attrs& a) -> Types {
                   const Call& call = find_call(a);
                   const std::vector<int64_t>& needs = a.ints("needs");
                   Types out;
                   for (size_t k = 0; k < needs.size(); ++k)
                     if (needs[k]) out.push_back(call.input_types[k]);
                   return out;
                 },
                 backward_tensors};
  return {forward, backward};
}

}  // namespace ember::autodiff
