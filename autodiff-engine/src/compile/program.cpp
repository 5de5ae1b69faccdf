// program.cpp — the traced step's bookkeeping: state lookup, printing, deep copy, Explain.
#include "ember/autodiff/compile/program.h"

#include <sstream>

#include "rewrite.h"

namespace ember::autodiff::compile {

const char* state_kind_name(StateKind kind) {
  switch (kind) {
    case StateKind::Parameter:
      return "parameter";
    case StateKind::Gradient:
      return "gradient";
    case StateKind::Buffer:
      return "buffer";
    case StateKind::OptimizerState:
      return "optimizer state";
  }
  return "?";
}

const StateSlot* Program::state_of(ValueId value) const {
  for (const StateSlot& s : state)
    if (s.value == value) return &s;
  return nullptr;
}

std::string Program::str() const {
  std::ostringstream os;
  int inputs = 0;
  for (ValueId v = 0; v < graph->num_values(); ++v)
    if (graph->value(v).kind == ValueKind::Input) ++inputs;
  os << "program: " << inputs << " inputs, " << state.size() << " state tensors, "
     << graph->num_nodes() << " nodes, " << returned.size() << " returned\n";
  for (const StateSlot& s : state) {
    os << "  state " << graph->value_name(s.value) << ": " << state_kind_name(s.kind) << " '"
       << s.name << "'";
    if (s.final_value >= 0) os << " <- " << graph->value_name(s.final_value);
    os << "\n";
  }
  for (ValueId v : returned) os << "  returns " << graph->value_name(v) << "\n";
  for (const auto& [out, in] : reuse)
    os << "  " << graph->value_name(out) << " is written over " << graph->value_name(in) << "\n";
  os << graph->str();
  return os.str();
}

std::string bytes_text(int64_t bytes) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(2);
  if (bytes >= (int64_t(1) << 20)) os << double(bytes) / double(1 << 20) << " MiB";
  else if (bytes >= 1024) os << double(bytes) / 1024.0 << " KiB";
  else return std::to_string(bytes) + " B";
  os << " (" << bytes << " B)";
  return os.str();
}

Program clone(const Program& program) {
  Rewriter r(program);
  for (int32_t k = 0; k < program.graph->num_nodes(); ++k) r.copy(k);
  return r.finish();
}

Explain::Section& Explain::section(const std::string& pass) {
  for (Section& s : sections)
    if (s.pass == pass) return s;
  sections.push_back(Section{pass, {}});
  return sections.back();
}

void Explain::after(const std::string& pass, const Program& program) {
  section(pass);
  if (record_graphs) graphs.emplace_back(pass, program.graph->str());
}

std::string Explain::str() const {
  std::ostringstream os;
  for (const Section& s : sections) {
    os << "== " << s.pass << " ==\n";
    if (s.lines.empty()) os << "  (nothing)\n";
    for (const std::string& line : s.lines) os << "  " << line << "\n";
  }
  return os.str();
}

}  // namespace ember::autodiff::compile
