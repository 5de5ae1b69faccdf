// variable.h — eager mode: a Variable is a tensor that remembers how it was made.
//
// Ops on Variables run at once (ops.h) and, while grad mode is on and some input requires grad,
// are recorded: the result points at a record of the op, its attributes and its inputs.
// backward() turns what was recorded into a forward Graph, asks the gradient driver for its
// backward graph (the rules of op.h add its nodes), runs that graph and accumulates .grad on the
// leaves. A training loop records the same structure every step, so the backward graph built for
// one structure is kept and reused while the structure repeats.
//
//   Variable w(randn({3, 2}), /*requires_grad=*/true);
//   Variable loss = sum(tanh(matmul(x, w)));
//   std::cout << loss.graph_str();  // the recorded forward and its backward graph
//   loss.backward();                // w.grad() is d loss / d w
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/autodiff/graph.h"
#include "ember/autodiff/ops/apply.h"

namespace ember::autodiff {

struct Record;
struct VariableImpl;

// A hook sees the gradient of the Variable it is registered on when backward computes it, and
// may return a replacement (undefined: keep it).
using GradHook = std::function<Variable(const Variable& grad)>;

// What register_hook returns: remove() unregisters that hook (PyTorch's RemovableHandle). It
// does not keep the Variable alive; removing twice, or after the Variable died, does nothing.
class HookHandle {
 public:
  HookHandle() = default;
  HookHandle(std::weak_ptr<VariableImpl> impl, int64_t id) : impl_(std::move(impl)), id_(id) {}
  void remove();

 private:
  std::weak_ptr<VariableImpl> impl_;
  int64_t id_ = -1;
};

class Variable {
 public:
  Variable() = default;  // undefined
  // A leaf: a tensor that no recorded op made. requires_grad asks for its .grad (floating only).
  Variable(Tensor data, bool requires_grad = false);  // NOLINT: a Tensor converts to a constant

  bool defined() const { return impl_ != nullptr; }
  const Tensor& data() const;  // the tensor itself (shares storage)
  const Shape& shape() const { return data().shape(); }
  DType dtype() const { return data().dtype(); }
  Device device() const { return data().device(); }
  int64_t dim() const { return data().dim(); }
  int64_t size(int64_t d) const { return data().size(d); }
  int64_t numel() const { return data().numel(); }

  // A name for printed graphs ("0.weight": nn.Module names its parameters and buffers); a
  // buffer (state a model reads but does not train) prints as `buffer`, other leaves as `param`
  // (requires grad) or `input`. Only a leaf's name is printed. Costs nothing per op.
  const std::string& name() const;
  const Variable& set_name(std::string name, bool is_buffer = false) const;

  bool requires_grad() const;
  // Leaves only (a recorded result requires grad when an input does): ValueError otherwise.
  Variable& set_requires_grad(bool requires_grad);
  bool is_leaf() const;         // made by no recorded op
  const char* op_name() const;  // the recorded op that made it, "" for a leaf

  // The accumulated gradient (undefined until a backward reaches it). Leaves accumulate by
  // default; an intermediate only after retain_grad().
  const Variable& grad() const;
  void set_grad(Variable grad) const;
  void zero_grad() const;  // drops .grad (like PyTorch's set_to_none)
  void retain_grad() const;
  HookHandle register_hook(GradHook hook) const;  // hooks run in registration order

  // Differentiates this Variable with respect to every leaf that requires grad and accumulates
  // into their .grad. Without grad_output the Variable must hold one element. retain_graph
  // keeps the recorded state for another backward; create_graph records the backward itself so
  // it can be differentiated again.
  void backward(const Variable& grad_output = Variable(), bool retain_graph = false,
                bool create_graph = false) const;

  Variable detach() const;  // same data, no history, requires_grad false

  // In place (no history): only on Variables that do not require grad, or under no_grad, as in
  // PyTorch (a training step's parameter update). Bumps the storage's version counter.
  const Variable& copy_(const Variable& src) const;

  // The recorded forward graph that led here with its backward graph: as text, and as Graphviz
  // DOT (an empty digraph for a Variable without history). After a backward that freed the
  // saved values the structure is still there, so the graph still prints.
  std::string graph_str() const;
  std::string graph_dot() const;
  std::string str() const { return data().str(); }

  VariableImpl* impl() const { return impl_.get(); }
  explicit Variable(std::shared_ptr<VariableImpl> impl) : impl_(std::move(impl)) {}
  const std::shared_ptr<VariableImpl>& impl_ptr() const { return impl_; }

 private:
  std::shared_ptr<VariableImpl> impl_;
};

// The gradients of `outputs` (weighted by grad_outputs; may be empty for one-element outputs)
// with respect to `inputs`, returned rather than accumulated. An input that the outputs do not
// depend on gets an undefined Variable when allow_unused, a ValueError otherwise.
std::vector<Variable> grad(const std::vector<Variable>& outputs,
                           const std::vector<Variable>& inputs,
                           const std::vector<Variable>& grad_outputs = {},
                           bool retain_graph = false, bool create_graph = false,
                           bool allow_unused = false);

// Grad mode: whether ops on Variables are recorded. Per thread, on by default.
bool grad_enabled();
void set_grad_enabled(bool enabled);
class NoGradGuard {
 public:
  NoGradGuard() : previous_(grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// How many backward graphs were built and how many were reused from the cache (per thread):
// the benchmark and the tests read these.
struct BackwardCacheStats {
  int64_t built = 0;
  int64_t reused = 0;
};
BackwardCacheStats backward_cache_stats();

}  // namespace ember::autodiff
