// compute_into_state.cpp — a value copied into a state tensor computed there in the first place
// (passes.h).
//
// A traced step ends each gradient with copy_(.grad, g): g is computed in a buffer of its own,
// then copied into the parameter's .grad tensor — one more kernel and one more buffer per
// parameter, where eager mode's backward simply hands the .grad its result. When nothing can tell
// the two apart, the node that computes g writes it straight into the .grad's memory: the copy_
// goes, program.reuse maps g to the state value, and the memory plan serves g's allocation inside
// that state tensor at every replay (PlannedRequest::in_state). Nothing can tell them apart when
//   - the copy_ writes the state tensor whole (not a view of it), and g is of its type, with
//     memory of its own that the node computing g allocates, of exactly its bytes;
//   - the copy_ is g's only reader (so no later write into the state changes what g's readers
//     see, nor a write into g what the state holds);
//   - no node between the two reads or writes the state, and the node computing g reads its old
//     contents only where it may write its output over them (may_write_over_input: an
//     accumulation, g = add(.grad, dw)).
// A replay whose state tensor cannot hold g (another layout) computes g elsewhere; the step's end
// then copies it in, as it copies every state tensor's final value that is not already there.
#include <algorithm>

#include "../rewrite.h"
#include "ember/autodiff/compile/passes.h"
#include "ember/autodiff/op.h"

namespace ember::autodiff::compile {

namespace {

struct Candidate {
  int32_t copy = -1;      // the copy_ node
  int32_t producer = -1;  // the node computing the copied value
  ValueId value = -1;     // the copied value
  ValueId state = -1;     // the state value whose tensor it is copied into
};

class Finder {
 public:
  Finder(const Program& program, const NodeAllocations& allocations)
      : p_(program),
        g_(*program.graph),
        allocations_(allocations),
        buffer_(buffers(program)),
        producer_(size_t(g_.num_values()), -1),
        readers_(size_t(g_.num_values()), 0) {
    for (int32_t k = 0; k < g_.num_nodes(); ++k) {
      for (ValueId out : g_.node(k).outputs) producer_[size_t(out)] = k;
      for (ValueId in : g_.node(k).inputs) ++readers_[size_t(in)];
    }
  }

  // Why copy_ node k must stay; empty when its value can be computed into the state instead.
  std::string why_kept(int32_t k, Candidate& c) const {
    const Node& copy = g_.node(k);
    const ValueId dst = copy.inputs[0], v = copy.inputs[1];
    c = {k, producer_[size_t(v)], v, buffer_[size_t(dst)]};
    if (!p_.state_of(c.state)) return "its destination is not a state tensor";
    if (!writes_whole(dst)) return "it writes a view of the state tensor";
    if (g_.value(v).type != g_.value(c.state).type) return "the value is of another type";
    if (g_.value(v).kind != ValueKind::Computed || buffer_[size_t(v)] != v)
      return "the value has no memory of its own (an argument, a view, or written in place)";
    const Node& producer = g_.node(c.producer);
    if (producer.op->collective || producer.op->in_place || producer.op->view)
      return "the value is computed by " + producer.op->name;
    if (!allocates_exactly(c.producer, v)) return "its node does not allocate it alone";
    if (readers_[size_t(v)] != 1) return "the value is read elsewhere too";
    for (const StateSlot& s : p_.state)
      if (s.final_value == v) return "the value is another state tensor's final value";
    if (std::count(p_.returned.begin(), p_.returned.end(), v)) return "the value is returned";
    for (int32_t j = c.producer + 1; j < k; ++j)
      if (touches(g_.node(j), c.state))
        return "node " + std::to_string(j) + " (" + g_.node(j).op->name +
               ") reads or writes the state tensor before the copy";
    for (size_t i = 0; i < producer.inputs.size(); ++i) {
      if (buffer_[size_t(producer.inputs[i])] != c.state) continue;
      if (!may_write_over_input(producer.op->name, int32_t(i)) ||
          !writes_whole(producer.inputs[i]) ||
          std::count_if(producer.inputs.begin(), producer.inputs.end(),
                        [&](ValueId in) { return buffer_[size_t(in)] == c.state; }) > 1)
        return producer.op->name + " reads the state tensor's old contents";
    }
    return "";
  }

 private:
  // Whether `v` is the state tensor's whole memory as it is: the state value itself, or what an
  // in-place node wrote over it (never a view).
  bool writes_whole(ValueId v) const {
    while (g_.value(v).kind == ValueKind::Computed) {
      const Node& node = g_.node(producer_[size_t(v)]);
      if (!node.op->in_place || node.inputs.empty()) return false;
      v = node.inputs[0];
    }
    return p_.state_of(v) != nullptr;
  }
  // Whether node k makes exactly one request for `v`, of v's bytes.
  bool allocates_exactly(int32_t k, ValueId v) const {
    const Node& node = g_.node(k);
    const int32_t o =
        int32_t(std::find(node.outputs.begin(), node.outputs.end(), v) - node.outputs.begin());
    const TensorType& t = g_.value(v).type;
    std::vector<int64_t> requests;  // the bytes of each request that became v
    for (const AllocationRequest& r : allocations_[size_t(k)])
      if (r.output == o) requests.push_back(r.nbytes);
    return requests.size() == 1 && requests[0] == t.numel() * int64_t(itemsize(t.dtype));
  }
  bool touches(const Node& node, ValueId state) const {
    for (ValueId in : node.inputs)
      if (buffer_[size_t(in)] == state) return true;
    for (ValueId out : node.outputs)
      if (buffer_[size_t(out)] == state) return true;
    return false;
  }

  const Program& p_;
  const Graph& g_;
  const NodeAllocations& allocations_;
  std::vector<ValueId> buffer_;
  std::vector<int32_t> producer_;  // value -> the node computing it (-1: none)
  std::vector<int32_t> readers_;   // value -> how many inputs read it
};

}  // namespace

Program compute_into_state(const Program& program, const NodeAllocations& allocations,
                           Explain& explain) {
  const char* pass = "computed into state";
  const Graph& g = *program.graph;
  const Finder finder(program, allocations);
  std::vector<Candidate> chosen;
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const Node& node = g.node(k);
    if (node.op->name != "copy_" || node.inputs.size() != 2) continue;
    Candidate c;
    const std::string why = finder.why_kept(k, c);
    const std::string copy = g.value_name(node.outputs[0]) + " = copy_(" +
                             g.value_name(node.inputs[0]) + ", " + g.value_name(c.value) + ")";
    if (!why.empty()) {
      explain.add(pass, copy + " kept: " + why);
      continue;
    }
    explain.add(pass, g.value_name(c.value) + " = " + g.node(c.producer).op->name +
                          "(...) computed in '" + program.state_of(c.state)->name + "' (" + copy +
                          " dropped)");
    chosen.push_back(c);
  }
  Rewriter r(program);
  size_t next = 0;
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    if (next < chosen.size() && chosen[next].copy == k) r.drop(k, {chosen[next++].value});
    else r.copy(k);
  }
  Program out = r.finish();
  for (const Candidate& c : chosen) out.reuse[r.map(c.value)] = r.map(c.state);
  explain.add(pass, std::to_string(chosen.size()) + " copies into state dropped");
  explain.after(pass, out);
  return out;
}

}  // namespace ember::autodiff::compile
