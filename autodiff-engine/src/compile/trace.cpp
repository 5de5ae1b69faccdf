// trace.cpp — the tracer (tracer.h) and the hooks of trace.h that the rest of Ember calls.
#include <atomic>
#include <climits>

#include "../eager/record.h"
#include "ember/placement.h"
#include "tracer.h"

namespace ember::autodiff {

std::vector<Tensor> run_op(const OpDef& op, const std::vector<Tensor>& inputs, const Attrs& attrs) {
  if (compile::Tracer* t = compile::Tracer::active()) return t->run(op, inputs, attrs);
  return op.run(inputs, attrs);
}

namespace compile {

namespace {
thread_local Tracer* active_tracer = nullptr;
std::atomic<int64_t> next_trace_id{1};

StateKind state_kind(DeclaredKind kind) {
  switch (kind) {
    case DeclaredKind::Gradient:
      return StateKind::Gradient;
    case DeclaredKind::Buffer:
      return StateKind::Buffer;
    default:
      return StateKind::OptimizerState;
  }
}
}  // namespace

// ---- the hooks ----

bool tracing() { return active_tracer != nullptr; }
int64_t current_trace_id() { return active_tracer ? active_tracer->id() : 0; }

void check_capturable(const std::string& op, const std::string& what, const std::string& fix) {
  if (!active_tracer) return;
  throw CaptureError(op, what +
                             " cannot be captured in a compiled step: a replay runs no Python "
                             "and reads no value on the host. Fix: " +
                             fix);
}

void declare_state(const Tensor& tensor, DeclaredKind kind, const std::string& what,
                   const VariableImpl* of, StateGetter get) {
  if (active_tracer) active_tracer->declare_state(tensor, kind, what, of, std::move(get));
}
void on_replay(std::function<void()> effect) {
  if (active_tracer) active_tracer->on_replay(std::move(effect));
}
void add_guard(const std::string& name, std::function<std::string()> read, bool quiet) {
  if (active_tracer) active_tracer->add_guard(name, std::move(read), quiet);
}
void see_variable(const Variable& v) {
  if (active_tracer) active_tracer->see_variable(v);
}
void see_constant(const Tensor& t) {
  if (active_tracer) active_tracer->see_constant(t);
}
void grad_dropped(const std::shared_ptr<VariableImpl>& p) {
  if (active_tracer) active_tracer->grad_dropped(p);
}
void see_grad(const std::shared_ptr<VariableImpl>& p) {
  if (active_tracer) active_tracer->see_grad(p);
}
void grad_written(const std::shared_ptr<VariableImpl>& p, const Tensor& grad) {
  if (active_tracer) active_tracer->grad_written(p, grad);
}
void written_by_collective(const Tensor& t) {
  if (active_tracer) active_tracer->written_by_collective(t);
}
std::string name_of(const VariableImpl* p) {
  return active_tracer ? active_tracer->name_of(p) : "param";
}

// ---- the tracer ----

Tracer::Tracer(const std::vector<Variable>& inputs, const std::vector<std::string>& input_names,
               const std::unordered_map<const VariableImpl*, std::string>& names)
    : id_(next_trace_id++),
      outer_(active_tracer),
      graph_(std::make_unique<Graph>()),
      names_(names) {
  if (outer_)
    throw CaptureError("compile",
                       "a compiled step was called while another is being traced. "
                       "Fix: call the inner function directly (it is traced as part "
                       "of the outer step)");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i].data();
    const std::string name = i < input_names.size() ? input_names[i] : "input" + std::to_string(i);
    if (find(t, "compile") >= 0)
      throw ValueError("compile", "argument " + std::to_string(i) + " (" + name +
                                      ") is the same tensor as an earlier argument; pass each "
                                      "tensor once");
    bind(t, graph_->input(type_of(t), name).id);
  }
  active_tracer = this;
}

Tracer::~Tracer() { active_tracer = outer_; }

Tracer* Tracer::active() { return active_tracer; }

Tracer::Key Tracer::key_of(const Tensor& t) {
  return Key{t.storage().get(), t.offset(), t.shape(), t.strides(), t.dtype()};
}

ValueId Tracer::find(const Tensor& t, const std::string& op) {
  auto it = entries_.find(key_of(t));
  if (it == entries_.end()) return -1;
  if (it->second.storage.lock() != t.storage()) {  // a dead storage's address, reused
    entries_.erase(it);
    return -1;
  }
  if (it->second.version != t.version())
    throw CaptureError(op, "reads " + describe(t) + ", which was written in place (version " +
                               std::to_string(it->second.version) + " then, " +
                               std::to_string(t.version()) +
                               " now) by something the compiler did not see: a write through "
                               "another view of its memory, or a core-runtime call that is "
                               "not an op. Fix: write it with an op on the tensor itself "
                               "(copy_, an in-place operator), or outside the step");
  return it->second.value;
}

ValueId Tracer::value_of(const Tensor& t, const std::string& op) {
  const ValueId id = find(t, op);
  if (id >= 0) return id;
  throw CaptureError(op, "reads " + describe(t) +
                             ", a tensor the step neither received as an "
                             "argument nor made with an op the compiler records. Fix: pass it "
                             "to the step as an argument, or make it inside the step with ember "
                             "ops");
}

void Tracer::bind(const Tensor& t, ValueId value) {
  entries_[key_of(t)] = Entry{value, t.storage(), t.version()};
}

std::vector<Tensor> Tracer::run(const OpDef& op, const std::vector<Tensor>& inputs,
                                const Attrs& attrs) {
  std::vector<Val> ins;
  ins.reserve(inputs.size());
  for (const Tensor& t : inputs) ins.push_back(graph_->val(value_of(t, op.name)));
  std::vector<Tensor> outs;
  std::vector<RecordedAllocation> allocations;
  {
    AllocationRecorder recorder;
    outs = op.run(inputs, attrs);
    allocations = recorder.allocations();
  }
  std::vector<Val> vals = graph_->add(op, ins, attrs);
  if (vals.size() != outs.size())
    throw Error(op.name, "the shape rule gives " + std::to_string(vals.size()) +
                             " outputs but the op produced " + std::to_string(outs.size()));
  for (size_t k = 0; k < outs.size(); ++k)
    if (outs[k].defined() && vals[k].type() != type_of(outs[k]))
      throw Error(op.name, "the shape rule gives output " + std::to_string(k) + " as " +
                               vals[k].type().str() + " but the op produced " +
                               type_of(outs[k]).str());
  // What the node asked the allocator for, in order: an output's buffer, or scratch.
  std::vector<AllocationRequest> requests;
  for (const RecordedAllocation& a : allocations) {
    AllocationRequest r{int64_t(a.nbytes), -1};
    for (size_t k = 0; k < outs.size() && !a.freed; ++k)
      if (outs[k].defined() && outs[k].storage()->data() == a.data) r.output = int32_t(k);
    requests.push_back(r);
  }
  traced_.allocations.push_back(std::move(requests));
  for (size_t k = 0; k < outs.size(); ++k)
    if (outs[k].defined()) bind(outs[k], vals[k].id);
  return outs;
}

void Tracer::see_variable(const Variable& v) {
  if (!v.defined()) return;
  const Tensor& t = v.data();
  if (find(t, "compile") >= 0) return;
  VariableImpl* impl = v.impl();
  if (impl->made_in_trace == id_) {
    // Made inside the step by a call the tracer did not see. From a tensor it knows (a view
    // made by core-runtime directly): its values would be stale at the next call.
    auto near = entries_.lower_bound(Key{t.storage().get(), INT64_MIN, {}, {}, DType::Bool});
    if (near != entries_.end() && std::get<0>(near->first) == t.storage().get())
      throw CaptureError("compile", "the step reads " + describe(t) +
                                        ", a view of a tensor it "
                                        "uses, made by a core-runtime call that is not an op. Fix: "
                                        "make the view with an ember op (slice, reshape, select)");
    // A Python number, or a tensor made from values known now: only a scalar is taken as a
    // constant of the step; anything larger may differ from call to call.
    if (t.numel() > 1)
      throw CaptureError("compile", "the step reads " + describe(t) +
                                        ", made inside the step "
                                        "by a call the compiler cannot see, whose values would be "
                                        "fixed into the compiled step. Fix: make it outside the "
                                        "step and pass it as an argument, or make it with an op "
                                        "from the step's tensors (zeros_like, full_like)");
    bind(t, graph_->constant(t).id);
    traced_.notes.push_back("constant " + type_of(t).str() +
                            ": a tensor made inside the step from values known when tracing");
    return;
  }
  if (impl->record)
    throw CaptureError(std::string(v.op_name()),
                       "the step reads " + describe(t) + ", computed before the step (by " +
                           v.op_name() +
                           ") with its history. Fix: detach() it before the "
                           "step, pass it as an argument, or compute it inside the step");
  const bool parameter = impl->requires_grad;
  std::shared_ptr<VariableImpl> held = v.impl_ptr();
  StateBinding b{[held] { return held->data; }, nullptr, true, true};
  add_state(t, type_of(t), parameter ? StateKind::Parameter : StateKind::Buffer, name_of(impl), b);
}

void Tracer::see_constant(const Tensor& t) {
  if (find(t, "compile") >= 0) return;
  bind(t, graph_->constant(t).id);
}

ValueId Tracer::add_state(const Tensor& t, const TensorType& type, StateKind kind, std::string name,
                          StateBinding binding) {
  for (const StateSlot& s : traced_.program.state)
    if (s.name == name) name += " (" + std::to_string(traced_.program.state.size()) + ")";
  const ValueId id = graph_->parameter(type, name).id;
  traced_.program.state.push_back(StateSlot{id, kind, name, -1});
  traced_.bindings.push_back(std::move(binding));
  slot_tensors_.push_back(t);
  if (t.defined()) bind(t, id);
  return id;
}

void Tracer::declare_state(const Tensor& t, DeclaredKind kind, const std::string& what,
                           const VariableImpl* of, StateGetter get) {
  if (find(t, what) >= 0) return;
  const std::string name = of ? what + " of " + name_of(of) : what;
  StateBinding b{std::move(get), nullptr, kind != DeclaredKind::Hyper, true,
                 kind == DeclaredKind::Hyper};
  add_state(t, type_of(t), state_kind(kind), name, std::move(b));
}

void Tracer::add_guard(const std::string& name, std::function<std::string()> read, bool quiet) {
  if (!guard_names_.insert(name).second) return;  // the first (the step's start) counts
  std::string expected = read();
  traced_.guards.push_back(Guard{name, std::move(read), std::move(expected), quiet});
}

std::string Tracer::name_of(const VariableImpl* p) {
  auto it = names_.find(p);
  if (it != names_.end()) return it->second;
  const std::string name = (p->requires_grad ? "param " : "buffer ") + std::to_string(unnamed_++);
  names_[p] = name;
  return name;
}

void Tracer::written_by_collective(const Tensor& t) {
  auto it = entries_.find(key_of(t));
  if (it != entries_.end() && it->second.storage.lock() == t.storage())
    it->second.version = t.version();
}

// ---- gradients: a slot per parameter, written by copy_ nodes ----

void Tracer::grad_dropped(const std::shared_ptr<VariableImpl>& p) {
  dropped_[p.get()] = p;
  ever_dropped_.insert(p.get());
}

int32_t Tracer::grad_slot(const std::shared_ptr<VariableImpl>& p) {
  auto it = grad_slots_.find(p.get());
  return it == grad_slots_.end() ? -1 : it->second;
}

void Tracer::see_grad(const std::shared_ptr<VariableImpl>& p) {
  const Tensor& g = p->grad.data();
  if (find(g, "backward") >= 0) return;
  // The gradient the parameter had when the step began: the backward adds to it.
  std::shared_ptr<VariableImpl> held = p;
  StateBinding b{[held] { return held->grad.defined() ? held->grad.data() : Tensor(); }, held, true,
                 true};
  add_state(g, type_of(g), StateKind::Gradient, name_of(p.get()) + ".grad", std::move(b));
  grad_slots_[p.get()] = int32_t(traced_.program.state.size()) - 1;
}

void Tracer::grad_written(const std::shared_ptr<VariableImpl>& p, const Tensor& grad) {
  const ValueId value = value_of(grad, "backward");
  dropped_.erase(p.get());
  int32_t slot = grad_slot(p);
  if (slot < 0) {
    // A gradient the step creates: bound to the live .grad buffer at each replay.
    std::shared_ptr<VariableImpl> held = p;
    StateBinding b{[held] { return held->grad.defined() ? held->grad.data() : Tensor(); }, held,
                   false, false};
    add_state(Tensor(), type_of(grad), StateKind::Gradient, name_of(p.get()) + ".grad",
              std::move(b));
    slot = int32_t(traced_.program.state.size()) - 1;
    grad_slots_[p.get()] = slot;
    if (!ever_dropped_.count(p.get())) {
      // It was none when the step began and the step did not drop it: a replay is right only
      // while it still is (once it is not, the step accumulates into it and traces again).
      add_guard(
          name_of(p.get()) + ".grad",
          [held] {
            return held->grad.defined() ? describe(held->grad.data()) : std::string("none");
          },
          false);
    }
  }
  StateSlot& s = traced_.program.state[size_t(slot)];
  const ValueId dst = s.final_value >= 0 ? s.final_value : s.value;
  Val out = graph_->add(EMBER_OP("copy_"), {graph_->val(dst), graph_->val(value)})[0];
  traced_.allocations.emplace_back();  // writes into the .grad buffer: no allocation
  s.final_value = out.id;
  bind(grad, out.id);
}

TracedStep Tracer::finish(const std::vector<Variable>& returned) {
  Program& program = traced_.program;
  for (const Variable& v : returned) {
    // A copy, so that the caller gets a fresh tensor every call, never an arena buffer that the
    // next call overwrites (nor a state tensor the next call updates).
    const Tensor& t = v.data();
    Val fresh = graph_->add(EMBER_OP("clone"), {graph_->val(value_of(t, "return"))})[0];
    traced_.allocations.push_back({AllocationRequest{t.numel() * int64_t(t.itemsize()), 0}});
    program.returned.push_back(fresh.id);
    graph_->mark_output(fresh);
  }
  for (size_t i = 0; i < program.state.size(); ++i) {
    StateSlot& s = program.state[i];
    if (traced_.bindings[i].grad_of) continue;  // .grad slots are written by copy_ nodes
    const Tensor& t = slot_tensors_[i];
    if (!t.defined()) continue;
    const ValueId now = find(t, s.name);
    if (now < 0)
      throw CaptureError(s.name, "state " + describe(t) +
                                     " was written in a way the compiler "
                                     "could not follow (through a view, or by a core-runtime call "
                                     "that is not an op). Fix: write it with copy_ or an in-place "
                                     "operator on the tensor itself");
    if (now != s.value) s.final_value = now;
  }
  for (const auto& [p, held] : dropped_) traced_.drop_grads.push_back(held);
  program.graph = std::move(graph_);
  slot_tensors_.clear();
  entries_.clear();
  return std::move(traced_);
}

}  // namespace compile
}  // namespace ember::autodiff
