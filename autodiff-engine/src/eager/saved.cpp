// saved.cpp — which inputs and outputs of an op its gradient rule reads: all that eager mode
// keeps of a recorded op for backward. A value no rule reads is dropped with its last handle, as
// the forward moves on, rather than held until backward.
//
// The answer comes from the rule itself: the op is added to a small graph of its own, with the
// inputs that require grad as parameters and a gradient arriving at every floating output, and
// grad() appends the backward; the forward values its nodes take as inputs are those read. The
// real backward asks no more: fewer inputs may need a gradient there, and of an op with several
// outputs, gradients may reach only some (analysed with each output alone, see analyse). A
// training loop repeats a few signatures, so each is worked out once per thread.
#include <algorithm>
#include <unordered_map>

#include "ember/autodiff/grad.h"
#include "record.h"

namespace ember::autodiff {

namespace {

struct Signature {
  Attrs attrs;
  std::vector<TensorType> inputs;
  std::vector<char> requires_grad;
  bool operator==(const Signature& o) const {
    return inputs == o.inputs && requires_grad == o.requires_grad && attrs == o.attrs;
  }
};

// Marks in `saved` the forward values that the backward of `op` reads when gradients arrive at
// the floating outputs chosen by `seeded` (all of them when empty).
void mark_read(const OpDef& op, const Signature& sig, const std::vector<char>& seeded,
               SavedValues& saved) {
  Graph g;
  std::vector<Val> ins, wrt;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    ins.push_back(sig.requires_grad[i] ? g.parameter(sig.inputs[i]) : g.input(sig.inputs[i]));
    if (sig.requires_grad[i]) wrt.push_back(ins.back());
  }
  const std::vector<Val> outs = g.add(op, ins, sig.attrs);
  std::vector<Val> roots, seeds;
  for (size_t o = 0; o < outs.size(); ++o) {
    if (!is_floating(outs[o].type().dtype) || (!seeded.empty() && !seeded[o])) continue;
    roots.push_back(outs[o]);
    seeds.push_back(g.input(outs[o].type()));
  }
  if (roots.empty() || wrt.empty()) return;
  const int32_t forward_nodes = g.num_nodes();
  grad(roots, wrt, seeds);
  for (int32_t k = forward_nodes; k < g.num_nodes(); ++k) {
    for (ValueId v : g.node(k).inputs) {
      for (size_t i = 0; i < ins.size(); ++i) saved.inputs[i] |= char(v == ins[i].id);
      for (size_t o = 0; o < outs.size(); ++o) saved.outputs[o] |= char(v == outs[o].id);
    }
  }
}

// Gradients at every floating output, then at each one alone: a rule may read an output only
// when no gradient reaches it (to make zeros of its shape), which the backward of a step that
// uses one output of several does.
SavedValues analyse(const OpDef& op, const Signature& sig) {
  const size_t num_outputs = op.infer(sig.inputs, sig.attrs).size();
  SavedValues saved{std::vector<char>(sig.inputs.size(), 0), std::vector<char>(num_outputs, 0)};
  mark_read(op, sig, {}, saved);
  if (num_outputs > 1) {
    for (size_t o = 0; o < num_outputs; ++o) {
      std::vector<char> only(num_outputs, 0);
      only[o] = 1;
      mark_read(op, sig, only, saved);
    }
  }
  return saved;
}

constexpr size_t kSignaturesPerOp = 16;  // the most recent ones; a loop repeats a few
thread_local std::unordered_map<const OpDef*, std::vector<std::pair<Signature, SavedValues>>> known;

}  // namespace

SavedValues saved_values(const OpDef& op, const Attrs& attrs, const std::vector<Tensor>& inputs,
                         const std::vector<char>& requires_grad) {
  Signature sig{attrs, {}, requires_grad};
  for (const Tensor& t : inputs) sig.inputs.push_back(type_of(t));
  auto& entries = known[&op];
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!(entries[i].first == sig)) continue;
    std::rotate(entries.begin(), entries.begin() + long(i), entries.begin() + long(i) + 1);
    return entries.front().second;
  }
  SavedValues saved = analyse(op, sig);
  entries.insert(entries.begin(), {std::move(sig), saved});
  if (entries.size() > kSignaturesPerOp) entries.pop_back();
  return saved;
}

}  // namespace ember::autodiff
