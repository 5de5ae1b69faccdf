// printer.cpp — the text form of a graph (one typed line per node) and its Graphviz DOT.
#include <sstream>

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
    case ValueKind::Constant:
      return "const";
    case ValueKind::Computed:
      return "value";
  }
  return "?";
}

std::string typed(const Graph& g, ValueId id) {
  return g.value_name(id) + ":" + g.value(id).type.str();
}

// "# d/d %3, %4 via mul (%5)": which forward node's rule made a backward node.
std::string provenance_comment(const Graph& g, const Node& n) {
  if (n.grad_of < 0) return n.note.empty() ? "" : "    # " + n.note;
  const Node& fwd = g.node(n.grad_of);
  std::ostringstream os;
  os << "    # d/d ";
  bool first = true;
  for (ValueId in : fwd.inputs) {
    if (!is_floating(g.value(in).type.dtype)) continue;
    os << (first ? "" : ", ") << "%" << in;
    first = false;
  }
  os << " via " << fwd.op->name << " (%" << fwd.outputs[0] << ")";
  if (!n.note.empty()) os << ": " << n.note;
  return os.str();
}

}  // namespace

std::string Graph::str() const {
  std::ostringstream os;
  for (ValueId id = 0; id < num_values(); ++id) {
    const Value& v = values_[size_t(id)];
    if (v.kind != ValueKind::Computed) os << kind_name(v.kind) << " " << typed(*this, id) << "\n";
  }
  for (const Node& n : nodes_) {
    std::ostringstream line;
    for (size_t k = 0; k < n.outputs.size(); ++k)
      line << (k ? ", " : "") << typed(*this, n.outputs[k]);
    line << " = " << n.op->name << "(";
    for (size_t k = 0; k < n.inputs.size(); ++k) line << (k ? ", " : "") << "%" << n.inputs[k];
    line << ")";
    const std::string attrs = n.attrs.str();
    if (!attrs.empty()) line << " " << attrs;
    os << line.str() << provenance_comment(*this, n) << "\n";
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

// Nodes are boxes "n<index>" labelled with the op, its attributes and its outputs' types;
// inputs, parameters and constants are ellipses "v<id>". An edge runs from what made a value to
// each node reading it, labelled with the value. Backward nodes are filled, so the two halves
// of a training graph are told apart at a glance.
std::string Graph::to_dot() const {
  std::ostringstream os;
  os << "digraph ember {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n";
  for (ValueId id = 0; id < num_values(); ++id) {
    const Value& v = values_[size_t(id)];
    if (v.kind == ValueKind::Computed) continue;
    os << "  v" << id << " [shape=ellipse, label=\""
       << dot_escape(std::string(kind_name(v.kind)) + " " + typed(*this, id)) << "\"];\n";
  }
  for (size_t k = 0; k < nodes_.size(); ++k) {
    const Node& n = nodes_[k];
    std::string label = n.op->name;
    if (!n.attrs.items().empty()) label += "\\n" + dot_escape(n.attrs.str());
    for (ValueId out : n.outputs) label += "\\n" + dot_escape(typed(*this, out));
    os << "  n" << k << " [shape=box, label=\"" << label << "\"";
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
