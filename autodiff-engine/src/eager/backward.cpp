// backward.cpp — from what eager mode recorded to gradients:
//   1. walk the records reachable from the roots (topological order) and describe their
//      structure: ops, attributes, wiring, the leaves' types;
//   2. find a cached backward graph for that structure, or build one: the forward graph of the
//      records, then grad() appends its backward (the rules of op.h);
//   3. bind the recorded tensors to the forward values the backward reads (checking that none
//      was changed in place since), run the backward nodes, and hand out the gradients.
#include <algorithm>
#include <cassert>
#include <memory>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "ember/autodiff/autocast.h"
#include "ember/autodiff/backward_observer.h"
#include "ember/autodiff/compile/trace.h"
#include "ember/autodiff/executor.h"
#include "ember/autodiff/grad.h"
#include "ember/autodiff/variable.h"
#include "ember/ops/elementwise.h"
#include "record.h"

namespace ember::autodiff {

namespace {

// ---- 1. the recorded structure ----

// A slot is a value of the recorded history: leaves first (0..L-1), then each record's outputs.
struct Structure {
  struct Op {
    const OpDef* op;
    Attrs attrs;
    std::vector<int32_t> inputs;  // slots
    bool operator==(const Op& o) const {
      return op == o.op && inputs == o.inputs && attrs == o.attrs;
    }
  };
  std::vector<TensorType> leaf_types;
  std::vector<char> leaf_requires_grad;
  std::vector<Op> ops;
  std::vector<int32_t> roots;       // slots
  std::vector<char> root_has_grad;  // a grad_output was given (else: seeded with ones)
  std::vector<int32_t> wanted;      // slots whose gradients are fetched

  bool operator==(const Structure& o) const {
    return leaf_types == o.leaf_types && leaf_requires_grad == o.leaf_requires_grad &&
           ops == o.ops && roots == o.roots && root_has_grad == o.root_has_grad &&
           wanted == o.wanted;
  }
};

// The history itself, slot by slot, beside its structure.
struct History {
  Structure structure;
  std::vector<std::shared_ptr<VariableImpl>> leaves;
  std::vector<std::shared_ptr<Record>> records;  // topological order
  std::vector<int32_t> first_slot;               // per record: the slot of its output 0
  std::unordered_map<const Record*, int32_t> record_index;
  std::unordered_map<const VariableImpl*, int32_t> leaf_slot;

  int32_t slot_of(const VariableImpl& v) const {
    if (v.record) {
      auto it = record_index.find(v.record.get());
      return it == record_index.end() ? -1 : first_slot[size_t(it->second)] + v.output;
    }
    auto it = leaf_slot.find(&v);
    return it == leaf_slot.end() ? -1 : it->second;
  }
};

[[noreturn]] void throw_freed(const Record& r) {
  throw ValueError("backward",
                   "the history passes through " + r.op->name +
                       ", whose saved tensors an earlier backward already freed: a second "
                       "backward through the same graph. Fix: pass retain_graph=true to the "
                       "first backward (or grad()), or run the forward again");
}

TensorType leaf_type(const VariableImpl& leaf) {
  return leaf.data.defined() ? type_of(leaf.data) : *leaf.stand_in_type;
}

// `printing`: records whose saved values a backward freed are walked too (their structure is
// all the printed graph needs).
History walk(const std::vector<Variable>& roots, bool printing = false) {
  History h;
  // Iterative post-order over records: a record is placed after every record it reads.
  std::vector<std::pair<std::shared_ptr<Record>, size_t>> stack;
  std::unordered_map<const Record*, char> seen;
  auto visit_value = [&](const std::shared_ptr<VariableImpl>& v) {
    if (!v->record) {
      if (h.leaf_slot.emplace(v.get(), int32_t(h.leaves.size())).second) h.leaves.push_back(v);
    } else if (!seen.count(v->record.get())) {
      if (v->record->released && !printing) throw_freed(*v->record);
      seen[v->record.get()] = 1;
      stack.emplace_back(v->record, 0);
    }
  };
  for (const Variable& r : roots) {
    visit_value(r.impl_ptr());
    while (!stack.empty()) {
      auto& [rec, next] = stack.back();
      if (next < rec->inputs.size()) {
        visit_value(rec->inputs[next++]);
        continue;
      }
      h.record_index[rec.get()] = int32_t(h.records.size());
      h.records.push_back(rec);
      stack.pop_back();
    }
  }
  const int32_t num_leaves = int32_t(h.leaves.size());
  int32_t next_slot = num_leaves;
  for (const auto& rec : h.records) {
    h.first_slot.push_back(next_slot);
    next_slot += int32_t(rec->output_types.size());
  }
  Structure& s = h.structure;
  for (const auto& leaf : h.leaves) {
    s.leaf_types.push_back(leaf_type(*leaf));
    s.leaf_requires_grad.push_back(leaf->requires_grad);
  }
  for (const auto& rec : h.records) {
    Structure::Op op{rec->op, rec->attrs, {}};
    for (const auto& in : rec->inputs) op.inputs.push_back(h.slot_of(*in));
    s.ops.push_back(std::move(op));
  }
  for (const Variable& r : roots) s.roots.push_back(h.slot_of(*r.impl()));
  return h;
}

// ---- 2. the backward graph of a structure, cached ----

struct BackwardGraph {
  Structure structure;
  Graph graph;
  int32_t num_forward_nodes = 0;
  std::vector<ValueId> slot_value;   // slot -> forward value
  std::vector<ValueId> seed_values;  // per root: the Input holding its grad_output, or -1
  std::vector<ValueId> wanted_grad;  // per wanted slot: its gradient's value, or -1 (unused)
  std::vector<char> read;            // per forward value: the backward nodes read it
};

// `named`: the leaves carry their names and buffers are told from inputs, for printing (the
// cached graphs serve every history of one structure, whatever its names).
std::unique_ptr<BackwardGraph> build(const History& h, bool named = false) {
  auto bg = std::make_unique<BackwardGraph>();
  const Structure& s = h.structure;
  bg->structure = s;
  Graph& g = bg->graph;
  for (size_t i = 0; i < s.leaf_types.size(); ++i) {
    const VariableImpl& leaf = *h.leaves[i];
    const std::string name = named ? leaf.name : "";
    Val v = s.leaf_requires_grad[i]   ? g.parameter(s.leaf_types[i], name)
            : named && leaf.is_buffer ? g.buffer(s.leaf_types[i], name)
                                      : g.input(s.leaf_types[i], name);
    bg->slot_value.push_back(v.id);
  }
  for (size_t k = 0; k < s.ops.size(); ++k) {
    std::vector<Val> ins;
    for (int32_t slot : s.ops[k].inputs) ins.push_back(g.val(bg->slot_value[size_t(slot)]));
    std::vector<Val> outs = g.add(*s.ops[k].op, ins, s.ops[k].attrs);
    [[maybe_unused]] const auto& recorded = h.records[k]->output_types;
    for (size_t o = 0; o < outs.size(); ++o) {
      // The op's shape rule and its front function share core-runtime's shape rules (the "shape
      // rules" sections of its headers), so the type inferred is the type the kernel produced.
      assert(o < recorded.size() && outs[o].type() == recorded[o]);
      bg->slot_value.push_back(outs[o].id);
    }
  }
  bg->num_forward_nodes = g.num_nodes();

  std::vector<Val> roots, seeds;
  for (size_t i = 0; i < s.roots.size(); ++i) {
    Val root = g.val(bg->slot_value[size_t(s.roots[i])]);
    roots.push_back(root);
    Val seed = s.root_has_grad[i] ? g.input(root.type(), "grad_output") : Val();
    seeds.push_back(seed);
    bg->seed_values.push_back(seed.defined() ? seed.id : -1);
  }
  std::vector<Val> wrt;
  for (int32_t slot : s.wanted) wrt.push_back(g.val(bg->slot_value[size_t(slot)]));
  for (const Val& d : grad(roots, wrt, seeds)) bg->wanted_grad.push_back(d.defined() ? d.id : -1);

  bg->read.assign(size_t(g.num_values()), 0);
  for (int32_t k = bg->num_forward_nodes; k < g.num_nodes(); ++k)
    for (ValueId in : g.node(k).inputs) bg->read[size_t(in)] = 1;
  for (ValueId d : bg->wanted_grad)
    if (d >= 0) bg->read[size_t(d)] = 1;  // a wanted gradient may be a forward value itself
  return bg;
}

thread_local std::vector<std::unique_ptr<BackwardGraph>> cache;  // most recent first
thread_local BackwardCacheStats stats;
constexpr size_t kCacheSize = 8;

const BackwardGraph& backward_graph(const History& h) {
  for (size_t i = 0; i < cache.size(); ++i) {
    if (cache[i]->structure == h.structure) {
      std::rotate(cache.begin(), cache.begin() + long(i), cache.begin() + long(i) + 1);
      ++stats.reused;
      return *cache.front();
    }
  }
  cache.insert(cache.begin(), build(h));
  if (cache.size() > kCacheSize) cache.pop_back();
  ++stats.built;
  return *cache.front();
}

// ---- 3. binding and running ----

// The record and output index of a slot that is not a leaf's.
std::pair<size_t, size_t> locate(const History& h, int32_t slot) {
  auto it = std::upper_bound(h.first_slot.begin(), h.first_slot.end(), slot);
  const size_t r = size_t(it - h.first_slot.begin()) - 1;
  return {r, size_t(slot - h.first_slot[r])};
}

// The tensor a slot holds: a leaf's data or a record's saved output (undefined when no rule
// reads it). `take`: the record lets go of it, so that the backward frees it after its last use.
Tensor slot_tensor(const History& h, int32_t slot, bool take = false) {
  if (slot < int32_t(h.leaves.size())) return h.leaves[size_t(slot)]->data;
  const auto [r, o] = locate(h, slot);
  Tensor& saved = h.records[r]->outputs[o];
  return take ? std::exchange(saved, Tensor()) : saved;
}

// A value the backward reads that was not saved: saved_values missed what a rule reads.
[[noreturn]] void throw_unsaved(const History& h, int32_t slot) {
  const auto [r, o] = locate(h, slot);
  throw Error("backward", "output " + std::to_string(o) + " of " + h.records[r]->op->name +
                              " is read by the backward but was not saved at the forward");
}

void check_versions(const History& h, const BackwardGraph& bg) {
  for (size_t r = 0; r < h.records.size(); ++r) {
    const Record& rec = *h.records[r];
    auto check = [&](int32_t slot, const Tensor& t, int64_t then, const char* role) {
      if (!bg.read[size_t(bg.slot_value[size_t(slot)])]) return;
      if (!t.defined()) throw_unsaved(h, slot);
      if (t.version() == then) return;
      std::ostringstream os;
      os << "a tensor saved for the gradient of " << rec.op->name << " (" << role << ", "
         << describe(t) << ") was changed in place after the op ran (version " << then << " then, "
         << t.version() << " now), so its gradient would be wrong. Fix: change a "
         << "clone() instead, or make the in-place change after backward";
      throw ValueError("backward", os.str());
    };
    const auto& ops = h.structure.ops[r];
    for (size_t i = 0; i < rec.inputs.size(); ++i)
      check(ops.inputs[i], slot_tensor(h, ops.inputs[i]), rec.input_versions[i],
            ("input " + std::to_string(i)).c_str());
    for (size_t o = 0; o < rec.outputs.size(); ++o)
      check(h.first_slot[r] + int32_t(o), rec.outputs[o], rec.output_versions[o],
            ("output " + std::to_string(o)).c_str());
  }
}

// The Variable of a slot, with its history (for create_graph).
Variable slot_variable(const History& h, int32_t slot) {
  if (slot < int32_t(h.leaves.size())) return Variable(h.leaves[size_t(slot)]);
  const auto [r, o] = locate(h, slot);
  const auto& rec = h.records[r];
  if (auto alive = rec->output_vars[o].lock()) return Variable(alive);
  auto impl = std::make_shared<VariableImpl>();
  impl->data = rec->outputs[o];
  impl->requires_grad = is_floating(impl->data.dtype());
  if (impl->requires_grad) {
    impl->record = rec;
    impl->output = int32_t(o);
  }
  return Variable(impl);
}

// The hooks of each value's gradient: value id of the gradient -> the Variable hooked.
std::unordered_map<ValueId, std::shared_ptr<VariableImpl>> hooked_gradients(
    const History& h, const BackwardGraph& bg) {
  std::unordered_map<ValueId, std::shared_ptr<VariableImpl>> out;
  for (size_t w = 0; w < h.structure.wanted.size(); ++w) {
    if (bg.wanted_grad[w] < 0) continue;
    Variable v = slot_variable(h, h.structure.wanted[w]);
    if (!v.impl()->hooks.empty()) out[bg.wanted_grad[w]] = v.impl_ptr();
  }
  return out;
}

Variable run_hooks(const VariableImpl& v, Variable grad) {
  for (const auto& entry : v.hooks) {
    Variable replaced = entry.second(grad);
    if (replaced.defined()) grad = std::move(replaced);
  }
  return grad;
}

// Runs the backward nodes and returns the gradient of each wanted slot (undefined: unused).
// Without retain_graph the records hand their saved values to the run, which frees each after
// the last node that reads it.
std::vector<Variable> run_backward(const History& h, const BackwardGraph& bg,
                                   const std::vector<Variable>& grad_outputs, bool retain_graph,
                                   bool create_graph) {
  check_versions(h, bg);
  const Graph& g = bg.graph;
  const auto hooked = hooked_gradients(h, bg);
  std::vector<Variable> result;
  if (!create_graph) {
    std::vector<Tensor> env(size_t(g.num_values()));
    for (size_t slot = 0; slot < bg.slot_value.size(); ++slot)
      if (bg.read[size_t(bg.slot_value[slot])])
        env[size_t(bg.slot_value[slot])] = slot_tensor(h, int32_t(slot), !retain_graph);
    for (size_t i = 0; i < bg.seed_values.size(); ++i)
      if (bg.seed_values[i] >= 0) env[size_t(bg.seed_values[i])] = grad_outputs[i].data();
    RunOptions options;
    options.first_node = bg.num_forward_nodes;
    if (!hooked.empty()) {
      options.on_value = [&](ValueId id, Tensor& t) {
        auto it = hooked.find(id);
        if (it != hooked.end()) t = run_hooks(*it->second, Variable(t)).data();
      };
    }
    std::vector<ValueId> fetch;
    for (ValueId d : bg.wanted_grad)
      if (d >= 0) fetch.push_back(d);
    std::vector<Tensor> grads = run(g, std::move(env), fetch, options);
    size_t next = 0;
    for (ValueId d : bg.wanted_grad)
      result.push_back(d >= 0 ? Variable(grads[next++]) : Variable());
    return result;
  }
  // create_graph: run the backward nodes on Variables, so that they are recorded in turn.
  std::vector<Variable> env(size_t(g.num_values()));
  for (size_t slot = 0; slot < bg.slot_value.size(); ++slot)
    if (bg.read[size_t(bg.slot_value[slot])])
      env[size_t(bg.slot_value[slot])] = slot_variable(h, int32_t(slot));
  for (size_t i = 0; i < bg.seed_values.size(); ++i)
    if (bg.seed_values[i] >= 0) env[size_t(bg.seed_values[i])] = grad_outputs[i];
  for (int32_t k = bg.num_forward_nodes; k < g.num_nodes(); ++k) {
    const Node& node = g.node(k);
    std::vector<Variable> ins;
    for (ValueId in : node.inputs) {
      if (!env[size_t(in)].defined() && g.value(in).kind == ValueKind::Constant)
        env[size_t(in)] = Variable(g.value(in).constant);
      ins.push_back(env[size_t(in)]);
    }
    std::vector<Variable> outs = node.op == &EMBER_OP("custom_function_backward")
                                     ? run_custom_backward(node.attrs, ins)
                                     : apply(*node.op, ins, node.attrs);
    for (size_t o = 0; o < outs.size(); ++o) {
      auto it = hooked.find(node.outputs[o]);
      env[size_t(node.outputs[o])] = it == hooked.end() ? outs[o] : run_hooks(*it->second, outs[o]);
    }
  }
  for (ValueId d : bg.wanted_grad) result.push_back(d >= 0 ? env[size_t(d)] : Variable());
  return result;
}

// A gradient a .grad may keep: dense and its own, since a clip or a user writes .grad in place.
// A rule may hand one tensor to two inputs (add's dy), return a broadcast view (sum's expand) or
// pass on a tensor the caller holds (a grad_output): those are copied. `g` is the only handle to
// its storage when nothing else shares it.
Variable owned_gradient(const Tensor& g) {
  const bool shared = g.storage().use_count() > 1;
  return Variable(shared || !g.is_contiguous() ? run_op(EMBER_OP("clone"), {g}, {})[0] : g);
}

// Frees what the records saved. Their structure stays for the printed graph; a leaf that does
// not require grad (a batch of data) is swapped for a stand-in holding only its type and name,
// so that the data is not kept alive by a loss that has been differentiated.
void release(const History& h) {
  std::unordered_map<const VariableImpl*, std::shared_ptr<VariableImpl>> stand_ins;
  for (const auto& rec : h.records) {
    rec->released = true;
    for (auto& in : rec->inputs) {
      if (in->record || in->requires_grad || !in->data.defined()) continue;
      auto& stand_in = stand_ins[in.get()];
      if (!stand_in) {
        stand_in = std::make_shared<VariableImpl>();
        stand_in->stand_in_type = std::make_shared<const TensorType>(type_of(in->data));
        stand_in->name = in->name;
        stand_in->is_buffer = in->is_buffer;
      }
      in = stand_in;
    }
    rec->outputs.clear();
    rec->owner.reset();
  }
}

void check_roots(const std::vector<Variable>& outputs, const std::vector<Variable>& grad_outputs,
                 const char* op) {
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    throw ValueError(op, "got " + std::to_string(grad_outputs.size()) + " grad_outputs for " +
                             std::to_string(outputs.size()) + " outputs");
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Variable& y = outputs[i];
    if (!y.defined()) throw ValueError(op, "output " + std::to_string(i) + " is undefined");
    if (!y.requires_grad())
      throw ValueError(op, "output " + std::to_string(i) + " (" + y.str() +
                               ") does not require grad and has no recorded history, so there "
                               "is nothing to differentiate. Fix: create the leaves with "
                               "requires_grad=true, and do not compute it under NoGradGuard");
    const bool given = i < grad_outputs.size() && grad_outputs[i].defined();
    if (!given && y.numel() != 1)
      throw ValueError(op, "output " + std::to_string(i) + " is " + y.str() +
                               ", not a single "
                               "element, so its gradient must be given. Fix: pass a grad_output "
                               "of shape " +
                               shape_str(y.shape()) +
                               " (ones for a plain sum), or "
                               "reduce it first, e.g. sum(y)");
    if (given && (grad_outputs[i].shape() != y.shape() || grad_outputs[i].dtype() != y.dtype() ||
                  grad_outputs[i].device() != y.device()))
      throw ShapeError(op, "grad_output " + std::to_string(i) + " is " + grad_outputs[i].str() +
                               " but output " + std::to_string(i) + " is " + y.str() +
                               "; they must have the same shape, dtype and device");
  }
}

History prepare(const std::vector<Variable>& outputs, const std::vector<Variable>& grad_outputs) {
  History h = walk(outputs);
  // A root's seed of ones is made from the root itself, which no rule of its own op may read.
  for (const Variable& y : outputs) {
    const VariableImpl& v = *y.impl();
    if (v.record && !v.record->outputs[size_t(v.output)].defined())
      v.record->outputs[size_t(v.output)] = v.data;
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    h.structure.root_has_grad.push_back(i < grad_outputs.size() && grad_outputs[i].defined());
  return h;
}

// Leaves that requires grad, intermediates that retain it, and anything hooked: the slots
// backward() fetches gradients for.
void want_accumulated(History& h) {
  std::vector<int32_t>& wanted = h.structure.wanted;
  for (size_t i = 0; i < h.leaves.size(); ++i)
    if (h.leaves[i]->requires_grad) wanted.push_back(int32_t(i));
  for (size_t r = 0; r < h.records.size(); ++r)
    for (size_t o = 0; o < h.records[r]->output_vars.size(); ++o) {
      auto v = h.records[r]->output_vars[o].lock();
      if (v && (v->retains_grad || !v->hooks.empty()))
        wanted.push_back(h.first_slot[r] + int32_t(o));
    }
}

// ---- observers (backward_observer.h)

std::mutex observers_mutex;
std::vector<BackwardObserver*> observers;

std::vector<BackwardObserver*> current_observers() {
  std::lock_guard<std::mutex> lock(observers_mutex);
  return observers;
}

// The leaves that requires grad and get a gradient, ordered by the node that computes it.
std::vector<const VariableImpl*> leaves_in_gradient_order(const History& h,
                                                          const BackwardGraph& bg) {
  std::vector<std::pair<int32_t, const VariableImpl*>> found;
  for (size_t w = 0; w < h.structure.wanted.size(); ++w) {
    const int32_t slot = h.structure.wanted[w];
    if (bg.wanted_grad[w] < 0 || slot >= int32_t(h.leaves.size())) continue;
    found.emplace_back(bg.graph.value(bg.wanted_grad[w]).node, h.leaves[size_t(slot)].get());
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const VariableImpl*> out;
  for (const auto& f : found) out.push_back(f.second);
  return out;
}

}  // namespace

void add_backward_observer(BackwardObserver* observer) {
  std::lock_guard<std::mutex> lock(observers_mutex);
  observers.push_back(observer);
}

void remove_backward_observer(BackwardObserver* observer) {
  std::lock_guard<std::mutex> lock(observers_mutex);
  observers.erase(std::remove(observers.begin(), observers.end(), observer), observers.end());
}

void Variable::backward(const Variable& grad_output, bool retain_graph, bool create_graph) const {
  const AutocastSuspend no_autocast;  // backward keeps the dtypes forward chose
  std::vector<Variable> outputs{*this};
  std::vector<Variable> grad_outputs;
  if (grad_output.defined()) grad_outputs.push_back(grad_output);
  check_roots(outputs, grad_outputs, "backward");
  History h = prepare(outputs, grad_outputs);
  want_accumulated(h);
  const BackwardGraph& bg = backward_graph(h);
  const std::vector<BackwardObserver*> watching =
      create_graph ? std::vector<BackwardObserver*>{} : current_observers();
  if (!watching.empty()) {
    const auto order = leaves_in_gradient_order(h, bg);
    for (BackwardObserver* o : watching) o->backward_begins(order);
  }
  std::vector<Variable> grads = run_backward(h, bg, grad_outputs, retain_graph, create_graph);
  for (size_t w = 0; w < grads.size(); ++w) {
    if (!grads[w].defined()) continue;
    Variable target = slot_variable(h, h.structure.wanted[w]);
    VariableImpl& impl = *target.impl();
    if (!impl.record && !impl.requires_grad) continue;
    if (impl.record && !impl.retains_grad) continue;  // only hooked: nothing to keep
    if (!impl.grad.defined()) {
      impl.grad = create_graph ? grads[w] : owned_gradient(grads[w].data());
    } else if (create_graph) {
      impl.grad = apply1<Variable>(op_def("add"), {impl.grad, grads[w]});
    } else {
      compile::see_grad(target.impl_ptr());
      impl.grad = Variable(run_op(EMBER_OP("add"), {impl.grad.data(), grads[w].data()}, {})[0]);
    }
    if (compile::tracing()) compile::grad_written(target.impl_ptr(), impl.grad.data());
  }
  for (BackwardObserver* o : watching) o->backward_ends();
  if (!retain_graph && !create_graph) release(h);
}

std::vector<Variable> grad(const std::vector<Variable>& outputs,
                           const std::vector<Variable>& inputs,
                           const std::vector<Variable>& grad_outputs, bool retain_graph,
                           bool create_graph, bool allow_unused) {
  const AutocastSuspend no_autocast;  // backward keeps the dtypes forward chose
  check_roots(outputs, grad_outputs, "grad");
  History h = prepare(outputs, grad_outputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !inputs[i].requires_grad())
      throw ValueError("grad", "input " + std::to_string(i) +
                                   (inputs[i].defined() ? " (" + inputs[i].str() + ")" : "") +
                                   " does not require grad, so it has no gradient");
    const int32_t slot = h.slot_of(*inputs[i].impl());
    if (slot < 0 && !allow_unused)
      throw ValueError("grad", "input " + std::to_string(i) + " (" + inputs[i].str() +
                                   ") was not used to compute the outputs. Fix: pass "
                                   "allow_unused=true to get an undefined gradient for it");
    h.structure.wanted.push_back(slot);
  }
  // Unused inputs have no slot: ask for the others, then put the holes back.
  std::vector<int32_t> asked = h.structure.wanted;
  h.structure.wanted.erase(std::remove(h.structure.wanted.begin(), h.structure.wanted.end(), -1),
                           h.structure.wanted.end());
  const BackwardGraph& bg = backward_graph(h);
  std::vector<Variable> found = run_backward(h, bg, grad_outputs, retain_graph, create_graph);
  std::vector<Variable> result;
  size_t next = 0;
  for (int32_t slot : asked) {
    result.push_back(slot < 0 ? Variable() : found[next++]);
    if (slot >= 0 && !result.back().defined() && !allow_unused)
      throw ValueError("grad", "input " + std::to_string(result.size() - 1) +
                                   " does not affect the outputs through any differentiable "
                                   "op. Fix: pass allow_unused=true to get an undefined "
                                   "gradient for it");
  }
  if (!retain_graph && !create_graph) release(h);
  return result;
}

namespace {
// The forward graph recorded up to v with its backward graph appended, with the leaves' names:
// built for the printer alone (neither taken from the cache nor put into it), from the
// structure, so that it prints after a backward freed the saved values too.
std::unique_ptr<BackwardGraph> recorded_graph(const Variable& v) {
  History h = walk({v}, /*printing=*/true);
  h.structure.root_has_grad.push_back(v.numel() != 1);  // a non-scalar's gradient is an input
  want_accumulated(h);
  return build(h, /*named=*/true);
}
}  // namespace

std::string Variable::graph_str() const {
  if (!requires_grad()) return "(no recorded history: " + str() + ")\n";
  return recorded_graph(*this)->graph.str();
}

std::string Variable::graph_dot() const {
  if (!requires_grad()) return "digraph ember {\n}\n";
  return recorded_graph(*this)->graph.to_dot();
}

BackwardCacheStats backward_cache_stats() { return stats; }

}  // namespace ember::autodiff
