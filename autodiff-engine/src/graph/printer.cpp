// printer.cpp — the text form of a graph (one typed line per node) and its Graphviz DOT.
#include <sstream>
#include <string>
#include <vector>

#include "ember/autodiff/graph.h"
#include "ember/autodiff/op.h"

namespace ember::autodiff {

namespace {

const char* kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::Input:
      return "input";
    case ValueKind::Parameter:
      return "param";
    case ValueKind::Buffer:
      return "buffer";
    case ValueKind::Constant:
      return "const";
    case ValueKind::Computed:
      return "value";
  }
  return "?";
}

std::string typed(const Graph& g, ValueId id) {
  return "%" + std::to_string(id) + ":" + g.value(id).type.str();
}

// "param %1:f32[16,1,3,3]  0.weight": a value that no node computes, with its name.
std::string header(const Graph& g, ValueId id) {
  const Value& v = g.value(id);
  return std::string(kind_name(v.kind)) + " " + typed(g, id) +
         (v.name.empty() ? "" : "  " + v.name);
}

// "0.weight", or "%7" for a value without a name.
std::string label(const Graph& g, ValueId id) {
  const std::string& name = g.value(id).name;
  return name.empty() ? "%" + std::to_string(id) : name;
}

}  // namespace

// What a node of the backward says of itself: which gradient each output is, "d/d %7
// (0.weight)" for a rule's result for an input, "grad of 0.weight" for a final gradient, then the
// rule that made them ("via linear") and the driver's note. The other nodes a rule made say
// nothing: their line is read with the one that uses them.
std::string Graph::comment(int32_t index) const {
  const Node& n = node(index);
  std::string text;
  auto add = [&](const std::string& part, const char* separator) {
    text += (text.empty() ? "" : separator) + part;
  };
  for (ValueId out : n.outputs) {
    const Value& v = value(out);
    std::string part;
    for (size_t k = 0; k < v.grad_of.size(); ++k)
      part += (k ? ", " : "grad of ") + label(*this, v.grad_of[k]);
    for (size_t k = 0; k < v.rule_grad_of.size() && v.grad_of.empty(); ++k)
      part += (k ? ", " : "d/d ") + value_name(v.rule_grad_of[k]);
    if (!part.empty()) add(part, "; ");
  }
  if (!text.empty() && n.grad_of >= 0) text += " via " + node(n.grad_of).op->name;
  if (!n.note.empty()) add(n.note, "; ");
  return text;
}

std::string Graph::str() const {
  std::ostringstream os;
  for (ValueId id = 0; id < num_values(); ++id)
    if (values_[size_t(id)].kind != ValueKind::Computed) os << header(*this, id) << "\n";
  for (int32_t index = 0; index < num_nodes(); ++index) {
    const Node& n = nodes_[size_t(index)];
    std::ostringstream line;
    for (size_t k = 0; k < n.outputs.size(); ++k)
      line << (k ? ", " : "") << typed(*this, n.outputs[k]);
    line << " = " << n.op->name << "(";
    for (size_t k = 0; k < n.inputs.size(); ++k) line << (k ? ", " : "") << "%" << n.inputs[k];
    line << ")";
    const std::string attrs = n.attrs.str();
    if (!attrs.empty()) line << " " << attrs;
    const std::string remark = comment(index);
    os << line.str() << (remark.empty() ? "" : "    # " + remark) << "\n";
  }
  if (!outputs_.empty()) {
    os << "return ";
    for (size_t k = 0; k < outputs_.size(); ++k) os << (k ? ", " : "") << "%" << outputs_[k];
    os << "\n";
  }
  return os.str();
}

namespace {
std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}
}  // namespace

// Nodes are boxes "n<index>" labelled with the op, its attributes, its outputs' types and the
// comment of its text line; inputs, parameters, buffers and constants are ellipses "v<id>"
// labelled with their header line. An edge runs from what made a value to each node reading
// it, labelled with the value. Backward nodes are filled, so the two halves of a training graph
// are told apart at a glance.
std::string Graph::to_dot() const {
  std::ostringstream os;
  os << "digraph ember {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n";
  for (ValueId id = 0; id < num_values(); ++id) {
    const Value& v = values_[size_t(id)];
    if (v.kind == ValueKind::Computed) continue;
    os << "  v" << id << " [shape=ellipse, label=\"" << dot_escape(header(*this, id)) << "\"];\n";
  }
  for (size_t k = 0; k < nodes_.size(); ++k) {
    const Node& n = nodes_[k];
    std::string text = n.op->name;
    const std::string attrs = n.attrs.str();
    if (!attrs.empty()) text += "\\n" + dot_escape(attrs);
    for (ValueId out : n.outputs) text += "\\n" + dot_escape(typed(*this, out));
    const std::string remark = comment(int32_t(k));
    if (!remark.empty()) text += "\\n# " + dot_escape(remark);
    os << "  n" << k << " [shape=box, label=\"" << text << "\"";
    if (n.grad_of >= 0 || !n.note.empty()) os << ", style=filled, fillcolor=\"#fde2c8\"";
    os << "];\n";
  }
  auto source = [&](ValueId id) {
    const Value& v = values_[size_t(id)];
    return v.kind == ValueKind::Computed ? "n" + std::to_string(v.node) : "v" + std::to_string(id);
  };
  for (size_t k = 0; k < nodes_.size(); ++k)
    for (ValueId in : nodes_[k].inputs)
      os << "  " << source(in) << " -> n" << k << " [label=\"%" << in << "\"];\n";
  for (ValueId out : outputs_)
    os << "  out" << out << " [shape=plaintext, label=\"return %" << out << "\"];\n  "
       << source(out) << " -> out" << out << ";\n";
  os << "}\n";
  return os.str();
}

}  // namespace ember::autodiff
