// trace.h — what the rest of Ember tells the tracer of a compiled step (compile.h).
//
// While a step is traced (its first call runs eagerly and records), every op that runs on tensors
// passes through run_op (op.h), which adds it to the step's graph. A few places change tensors or
// host state without an op and report it here: eager mode (leaves it meets, .grad written or
// dropped), the optimizers (their state tensors, their step counts) and the Python bindings
// (reads of values on the host, which a replay cannot repeat: capture errors).
//
// Outside a trace every function here costs one thread-local read and does nothing.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "ember/error.h"
#include "ember/tensor.h"

namespace ember::autodiff {
class Variable;
struct VariableImpl;
}  // namespace ember::autodiff

namespace ember::autodiff::compile {

// Something a traced step does that a replay cannot repeat: reading a value on the host (.item(),
// printing, control flow on a tensor), or making a tensor from data the compiler cannot see.
// The message names the op and says how to fix the step. A NotSupportedError.
class CaptureError : public NotSupportedError {
 public:
  using NotSupportedError::NotSupportedError;
};

// Whether this thread is tracing a step now.
bool tracing();

// Throws CaptureError "`op`: `what` cannot be captured in a compiled step. Fix: `fix`" while a
// step is traced; does nothing otherwise.
void check_capturable(const std::string& op, const std::string& what, const std::string& fix);

// ---- state the tracer cannot find by itself ----

// How a replay finds the live tensor of a state slot each call.
using StateGetter = std::function<Tensor()>;

enum class DeclaredKind { Gradient, Buffer, OptimizerState, Hyper };

// `tensor` (met for the first time) is state: a replay binds `get()` in its place. `of` names the
// parameter it belongs to (for "exp_avg of 0.weight"), may be null. Hyper: a host tensor of live
// numbers that get() refills (never guarded by identity).
void declare_state(const Tensor& tensor, DeclaredKind kind, const std::string& what,
                   const VariableImpl* of, StateGetter get);

// Host work a replay must redo before its kernels run (an optimizer's step counts), in order.
void on_replay(std::function<void()> effect);

// A guard beside the built-in ones: the plan is replayed only while `read()` returns what it
// returned now. `quiet`: a change is expected once (state an optimizer creates on its first step),
// so retracing for it does not warn.
void add_guard(const std::string& name, std::function<std::string()> read, bool quiet = false);

// ---- eager mode's reports ----

// A leaf or other Variable is about to be read by an op (variable.cpp's apply).
void see_variable(const Variable& v);
// A Constant of a graph the executor runs (a rule's scalar, an index table).
void see_constant(const Tensor& t);
// p.grad was set to none (zero_grad) / is about to be read to accumulate into / now holds `grad`.
void grad_dropped(const std::shared_ptr<VariableImpl>& p);
void see_grad(const std::shared_ptr<VariableImpl>& p);
void grad_written(const std::shared_ptr<VariableImpl>& p, const Tensor& grad);
// `t`, made by a traced op that started a collective on it (all_reduce_start), was written by
// that collective since, which has now finished: it still holds that op's value, at its new
// version (not a write behind the tracer's back).
void written_by_collective(const Tensor& t);
// The name the user knows a parameter by ("0.weight"), or "param N".
std::string name_of(const VariableImpl* p);
// Marks Variables made while tracing (their tensors come from inside the step).
int64_t current_trace_id();

}  // namespace ember::autodiff::compile
