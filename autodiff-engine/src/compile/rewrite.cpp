// rewrite.cpp — building a pass's new program, and the buffer analysis passes share.
#include "rewrite.h"

#include <algorithm>

#include "ember/autodiff/op.h"

namespace ember::autodiff::compile {

Rewriter::Rewriter(const Program& from)
    : from_(from),
      map_(size_t(from.graph->num_values()), -1),
      node_map_(size_t(from.graph->num_nodes()), -1) {
  to_.graph = std::make_unique<Graph>();
}

void Rewriter::catch_up(ValueId before) {
  const Graph& g = *from_.graph;
  for (; next_uncomputed_ < before; ++next_uncomputed_) {
    const Value& v = g.value(next_uncomputed_);
    Val now;
    if (v.kind == ValueKind::Input) now = to_.graph->input(v.type, v.name);
    else if (v.kind == ValueKind::Parameter) now = to_.graph->parameter(v.type, v.name);
    else if (v.kind == ValueKind::Buffer) now = to_.graph->buffer(v.type, v.name);
    else if (v.kind == ValueKind::Constant) now = to_.graph->constant(v.constant, v.name);
    else continue;
    map_[size_t(next_uncomputed_)] = now.id;
  }
}

std::vector<ValueId> Rewriter::add(int32_t k) {
  const Node& node = from_.graph->node(k);
  std::vector<ValueId> inputs;
  for (ValueId in : node.inputs) {
    const ValueId mapped = map_[size_t(in)];
    if (mapped < 0)
      throw Error("compile", "a pass left " + from_.graph->value_name(in) + ", read by node " +
                                 std::to_string(k) + " (" + node.op->name + "), without a value");
    inputs.push_back(mapped);
  }
  return add_new(*node.op, inputs, node.attrs, k, k);
}

void Rewriter::copy(int32_t k) {
  const Node& node = from_.graph->node(k);
  ValueId before = node.outputs.empty() ? 0 : node.outputs[0];
  for (ValueId in : node.inputs) before = std::max(before, in + 1);
  catch_up(before);
  node_map_[size_t(k)] = to_.graph->num_nodes();
  const std::vector<ValueId> outs = add(k);
  for (size_t o = 0; o < outs.size(); ++o) {
    map_[size_t(node.outputs[o])] = outs[o];
    copy_gradient_marks(node.outputs[o], outs[o]);
  }
}

// The printer's notes of which forward value's gradient a value is (Value::rule_grad_of,
// grad_of) follow the value into the rewritten graph, for the forward values that are still there.
void Rewriter::copy_gradient_marks(ValueId from, ValueId to) {
  const Value& v = from_.graph->value(from);
  for (ValueId of : v.rule_grad_of)
    if (map_[size_t(of)] >= 0) to_.graph->mark_rule_gradient(to, map_[size_t(of)]);
  for (ValueId of : v.grad_of)
    if (map_[size_t(of)] >= 0) to_.graph->mark_gradient(to, map_[size_t(of)]);
}

void Rewriter::replace(int32_t k, const OpDef& op, const std::vector<ValueId>& inputs,
                       Attrs attrs) {
  replace(k, op, inputs, std::move(attrs), from_.graph->node(k).outputs);
}

void Rewriter::replace(int32_t k, const OpDef& op, const std::vector<ValueId>& inputs, Attrs attrs,
                       const std::vector<ValueId>& stands_for) {
  const Node& node = from_.graph->node(k);
  ValueId before = node.outputs.empty() ? 0 : node.outputs[0];
  for (ValueId in : inputs) before = std::max(before, in + 1);
  catch_up(before);  // inputs, parameters and constants it reads exist, in their order
  std::vector<ValueId> mapped;
  for (ValueId in : inputs) {
    if (map_[size_t(in)] < 0)
      throw Error("compile", "a pass left " + from_.graph->value_name(in) + ", read by the node " +
                                 "replacing node " + std::to_string(k) + ", without a value");
    mapped.push_back(map_[size_t(in)]);
  }
  node_map_[size_t(k)] = to_.graph->num_nodes();
  const std::vector<ValueId> now = add_new(op, mapped, attrs, k, /*source=*/-1);
  for (size_t o = 0; o < stands_for.size() && o < now.size(); ++o) {
    map_[size_t(stands_for[o])] = now[o];
    copy_gradient_marks(stands_for[o], now[o]);
  }
}

std::vector<ValueId> Rewriter::copy_again(int32_t k) { return add(k); }

std::vector<ValueId> Rewriter::add_new(const OpDef& op, const std::vector<ValueId>& inputs,
                                       const Attrs& attrs, int32_t like, int32_t source) {
  const Node& node = from_.graph->node(like);
  std::vector<Val> in;
  for (ValueId id : inputs) in.push_back(to_.graph->val(id));
  const bool forward_known = node.grad_of >= 0 && node.grad_of < int32_t(node_map_.size()) &&
                             node_map_[size_t(node.grad_of)] >= 0;
  to_.graph->set_provenance(forward_known ? node_map_[size_t(node.grad_of)] : -1, node.note);
  std::vector<Val> outs = to_.graph->add(op, in, attrs);
  to_.graph->set_provenance(-1);
  to_.source_node.push_back(source < 0 ? -1 : from_.source_of(source));
  std::vector<ValueId> ids;
  for (const Val& v : outs) ids.push_back(v.id);
  return ids;
}

void Rewriter::stand_in(int32_t k, const std::vector<ValueId>& now) {
  const Node& node = from_.graph->node(k);
  for (size_t o = 0; o < node.outputs.size() && o < now.size(); ++o) {
    map_[size_t(node.outputs[o])] = now[o];
    copy_gradient_marks(node.outputs[o], now[o]);
  }
}

void Rewriter::drop(int32_t k, const std::vector<ValueId>& replacement) {
  const Node& node = from_.graph->node(k);
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    const ValueId r = o < replacement.size() ? replacement[o] : -1;
    map_[size_t(node.outputs[o])] = r < 0 ? -1 : map_[size_t(r)];
  }
}

void Rewriter::constant_for(ValueId old_value, const Tensor& tensor) {
  catch_up(old_value);
  map_[size_t(old_value)] = to_.graph->constant(tensor, "folded").id;
}

Program Rewriter::finish() {
  catch_up(from_.graph->num_values());
  auto mapped = [&](ValueId v) { return v < 0 ? -1 : map_[size_t(v)]; };
  for (StateSlot s : from_.state) {
    s.value = mapped(s.value);
    s.final_value = mapped(s.final_value);
    to_.state.push_back(s);
  }
  for (ValueId v : from_.returned) to_.returned.push_back(mapped(v));
  for (ValueId v : from_.graph->outputs()) to_.graph->mark_output(to_.graph->val(mapped(v)));
  for (const auto& [out, in] : from_.reuse)
    if (mapped(out) >= 0 && mapped(in) >= 0) to_.reuse[mapped(out)] = mapped(in);
  return std::move(to_);
}

std::vector<ValueId> buffers(const Program& program) {
  const Graph& g = *program.graph;
  std::vector<ValueId> buffer(size_t(g.num_values()));
  for (ValueId v = 0; v < g.num_values(); ++v) buffer[size_t(v)] = v;
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const Node& node = g.node(k);
    if (node.op->view && !node.inputs.empty() && !node.outputs.empty())
      buffer[size_t(node.outputs[0])] = buffer[size_t(node.inputs[0])];
    if (node.op->in_place)
      for (size_t o = 0; o < node.outputs.size() && o < node.inputs.size(); ++o)
        buffer[size_t(node.outputs[o])] = buffer[size_t(node.inputs[o])];
    for (ValueId out : node.outputs) {
      auto it = program.reuse.find(out);
      if (it != program.reuse.end()) buffer[size_t(out)] = buffer[size_t(it->second)];
    }
  }
  return buffer;
}

bool is_returned_copy(const Program& program, const Node& node) {
  return node.op->name == "clone" && std::find(program.returned.begin(), program.returned.end(),
                                               node.outputs[0]) != program.returned.end();
}

std::vector<int32_t> last_reads(const Program& program, const std::vector<ValueId>& buffer) {
  const Graph& g = *program.graph;
  std::vector<int32_t> last(buffer.size(), -1);
  for (int32_t k = 0; k < g.num_nodes(); ++k)
    for (ValueId in : g.node(k).inputs) last[size_t(buffer[size_t(in)])] = k;
  return last;
}

std::vector<bool> outlives_step(const Program& program, const std::vector<ValueId>& buffer) {
  const Graph& g = *program.graph;
  std::vector<bool> out(buffer.size(), false);
  for (ValueId v = 0; v < g.num_values(); ++v)
    if (g.value(v).kind != ValueKind::Computed) out[size_t(buffer[size_t(v)])] = true;
  for (const StateSlot& s : program.state)
    if (s.final_value >= 0) out[size_t(buffer[size_t(s.final_value)])] = true;
  for (ValueId v : program.returned) out[size_t(buffer[size_t(v)])] = true;
  for (ValueId v : g.outputs()) out[size_t(buffer[size_t(v)])] = true;
  return out;
}

}  // namespace ember::autodiff::compile
