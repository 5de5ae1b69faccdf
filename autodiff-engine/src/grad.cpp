// grad.cpp — the gradient driver (see grad.h): reverse over the nodes, one rule per node, and
// the generic work (accumulation, broadcast reduction, pruning, checks) done here once.
#include "ember/autodiff/grad.h"

#include <sstream>

#include "ember/autodiff/op.h"
#include "ember/autodiff/ops/apply.h"
#include "rules/infer.h"
#include "rules/join_gradients.h"

namespace ember::autodiff {

namespace {

bool differentiable(const Value& v) { return is_floating(v.type.dtype); }

// The sum of the gradients that reached one value: the pieces of a split joined by one cat
// (join_gradients.h), else one `add` node per extra use. The sum replaces the list, so asking
// again (a wrt value that is also an intermediate) gives it again.
Val sum_uses(Graph& g, std::vector<Val>& uses, ValueId of) {
  if (uses.empty()) return Val();
  int64_t dim = 0;
  if (const std::vector<Val> pieces = tiling_slice_gradients(uses, dim); !pieces.empty()) {
    g.set_provenance(-1, "d/d %" + std::to_string(of) + ": its " + std::to_string(uses.size()) +
                             " slices' gradients joined");
    uses.assign(1, apply1<Val>(op_def("cat"), pieces, {{"dim", dim}}));
    g.set_provenance(-1);
    return uses[0];
  }
  Val total = uses[0];
  if (uses.size() > 1) {
    // The note goes on the last add only, the one whose output is the sum.
    for (size_t k = 1; k < uses.size(); ++k) {
      if (k + 1 == uses.size())
        g.set_provenance(-1, "d/d %" + std::to_string(of) + ": sum over its " +
                                 std::to_string(uses.size()) + " uses");
      total = apply1<Val>(op_def("add"), {total, uses[k]});
    }
    g.set_provenance(-1);
    uses.assign(1, total);
  }
  return total;
}

std::string rule_error(const Graph& g, int32_t node, size_t input, const std::string& what) {
  const Node& n = g.node(node);
  std::ostringstream os;
  os << "the gradient rule of " << n.op->name << " (%" << n.outputs[0] << ") gave input " << input
     << " (%" << n.inputs[input] << ") a gradient of " << what;
  return os.str();
}

// Puts back the provenance a caller had set: a rule may call grad() on its own formula, and the
// nodes it adds after that still belong to the rule.
struct ProvenanceRestorer {
  Graph& g;
  int32_t node;
  std::string note;
  explicit ProvenanceRestorer(Graph& graph)
      : g(graph), node(graph.provenance()), note(graph.provenance_note()) {}
  ~ProvenanceRestorer() { g.set_provenance(node, note); }
};

}  // namespace

std::vector<Val> grad(const std::vector<Val>& outputs, const std::vector<Val>& wrt,
                      const std::vector<Val>& output_grads) {
  if (outputs.empty()) throw ValueError("grad", "no outputs to differentiate");
  Graph& g = *outputs[0].graph;
  ProvenanceRestorer restore(g);
  for (const auto* list : {&outputs, &wrt, &output_grads})
    for (const Val& v : *list)
      if (v.defined() && v.graph != &g)
        throw ValueError("grad", "outputs, wrt and output_grads must belong to one graph");
  if (!output_grads.empty() && output_grads.size() != outputs.size())
    throw ValueError("grad", "got " + std::to_string(output_grads.size()) +
                                 " output gradients for " + std::to_string(outputs.size()) +
                                 " outputs; give one per output, or none for scalar outputs");
  const int32_t num_nodes = g.num_nodes();  // the forward part: what gets differentiated

  // depends[v]: v is floating and computed from some wrt through differentiable ops.
  std::vector<char> depends(size_t(g.num_values()), 0);
  for (const Val& w : wrt)
    if (differentiable(w.value())) depends[size_t(w.id)] = 1;
  for (int32_t k = 0; k < num_nodes; ++k) {
    const Node& n = g.node(k);
    if (n.op->grad == nullptr) continue;
    bool any = false;
    for (ValueId in : n.inputs) any = any || depends[size_t(in)];
    if (!any) continue;
    for (ValueId out : n.outputs)
      if (differentiable(g.value(out))) depends[size_t(out)] = 1;
  }

  // Seeds: the given output gradients, or ones for one-element outputs.
  std::vector<std::vector<Val>> pending(size_t(g.num_values()));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Val& y = outputs[i];
    Val seed = output_grads.empty() ? Val() : output_grads[i];
    if (!seed.defined()) {
      if (y.type().numel() != 1)
        throw ValueError("grad", "output " + std::to_string(i) + " (%" + std::to_string(y.id) +
                                     ") is " + y.type().str() +
                                     ", not a single element, so its gradient is not implied: "
                                     "pass an output gradient of its shape");
      g.set_provenance(-1, "seed: d %" + std::to_string(y.id) + " / d %" + std::to_string(y.id) +
                               " = 1");
      seed = apply1<Val>(op_def("ones_like"), {y});
      g.set_provenance(-1);
    } else if (seed.shape() != y.shape() || seed.dtype() != y.dtype()) {
      throw ShapeError("grad", "the gradient of output " + std::to_string(i) + " is " +
                                   seed.type().str() + " but the output is " + y.type().str() +
                                   "; they must match");
    }
    if (depends[size_t(y.id)]) pending[size_t(y.id)].push_back(seed);
  }

  for (int32_t k = num_nodes - 1; k >= 0; --k) {
    const Node node = g.node(k);  // a copy: rules append nodes, which may move g's storage
    if (node.op->grad == nullptr) continue;
    std::vector<bool> needs(node.inputs.size());
    bool any_needed = false;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      needs[i] = depends[size_t(node.inputs[i])] != 0;
      any_needed = any_needed || needs[i];
    }
    if (!any_needed) continue;
    std::vector<Val> douts;
    bool any_grad = false;
    for (ValueId out : node.outputs) {
      douts.push_back(sum_uses(g, pending[size_t(out)], out));
      any_grad = any_grad || douts.back().defined();
    }
    if (!any_grad) continue;  // pruned: nothing asked for flows through this node

    std::vector<Val> ins, outs;
    for (ValueId in : node.inputs) ins.push_back(g.val(in));
    for (ValueId out : node.outputs) outs.push_back(g.val(out));
    GradContext ctx{g, ins, outs, douts, needs, node.attrs};
    const int32_t first_rule_node = g.num_nodes();
    g.set_provenance(k);
    std::vector<Val> dins = node.op->grad(ctx);
    g.set_provenance(-1);
    if (dins.size() != node.inputs.size())
      throw Error("grad", "the gradient rule of " + node.op->name + " returned " +
                              std::to_string(dins.size()) + " gradients for " +
                              std::to_string(node.inputs.size()) + " inputs");

    for (size_t i = 0; i < dins.size(); ++i) {
      Val d = dins[i];
      if (!needs[i] || !d.defined()) continue;
      const TensorType& want = g.value(node.inputs[i]).type;
      if (d.dtype() != want.dtype)
        throw DTypeError("grad", rule_error(g, k, i, d.type().str()) + "; expected dtype " +
                                     short_dtype_name(want.dtype));
      if (d.shape() != want.shape) {
        if (!infer::broadcastable(want.shape, d.shape()))
          throw ShapeError("grad", rule_error(g, k, i, "shape " + shape_str(d.shape())) +
                                       "; expected " + shape_str(want.shape) +
                                       " (or a shape it broadcasts to)");
        g.set_provenance(k, "summed back to the input's shape " + shape_str(want.shape));
        d = apply1<Val>(op_def("sum_to"), {d}, {{"shape", want.shape}});
        g.set_provenance(-1);
      }
      if (d.value().node >= first_rule_node) g.mark_rule_gradient(d.id, node.inputs[i]);
      pending[size_t(node.inputs[i])].push_back(d);
    }
  }

  std::vector<Val> result;
  for (const Val& w : wrt) {
    result.push_back(sum_uses(g, pending[size_t(w.id)], w.id));
    if (result.back().defined() && result.back().value().node >= num_nodes)
      g.mark_gradient(result.back().id, w.id);
  }
  return result;
}

}  // namespace ember::autodiff
