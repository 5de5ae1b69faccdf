// program.h — a traced training step as the compiler's passes see it, and the report they write.
//
// A Program is one graph (graph.h) of the whole step — forward, loss, backward, optimizer update —
// plus what binds it to the world: the state tensors the step reads and updates in place
// (parameters, gradients, optimizer state, buffers) and the values it hands back. The graph's
// Input values are the step's tensor arguments, in order.
//
// Nodes are in execution order. A node whose OpDef has `in_place` writes its outputs into its
// inputs' storage (output i aliases input i); a `view` node's output aliases its input 0. So a
// value id names a buffer, and an in-place node changes what a later read of an alias sees:
// passes never move a read of a value past a node that overwrites it in place.
//
// Passes (passes.h) take a Program and return a new one (a Graph is neither copied nor moved, so
// each pass builds the graph it returns); each says what it did in an Explain.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/autodiff/graph.h"

namespace ember::autodiff::compile {

enum class StateKind { Parameter, Gradient, Buffer, OptimizerState };
const char* state_kind_name(StateKind kind);  // "parameter", "gradient", ...

// One live tensor the step reads and/or updates in place.
struct StateSlot {
  ValueId value;  // its Parameter value in `graph` (bound to the live tensor each call)
  StateKind kind;
  std::string name;          // "0.weight", "0.weight.grad", "exp_avg of 0.weight", ...
  ValueId final_value = -1;  // the value the tensor holds after the step (-1: unchanged)
};

struct Program {
  std::unique_ptr<Graph> graph;
  std::vector<StateSlot> state;
  std::vector<ValueId> returned;  // handed back to the caller, fresh tensors every call
  // Per node: the node of the traced program it was made from (a pass that removes nodes or
  // adds copies keeps this), so allocations recorded while tracing follow the node through the
  // passes (carry_allocations, memory_plan.h). -1: a node no traced node stands behind. Empty
  // means "node k came from traced node k" (a program straight from the trace).
  std::vector<int32_t> source_node;
  // In-place reuse (passes.h: reuse_in_place): a computed value -> the input of its node whose
  // buffer it is written into (that input's last read is that node). The memory plan gives both
  // one buffer; the kernel is one that may write its output over that input.
  std::unordered_map<ValueId, ValueId> reuse;

  int32_t source_of(int32_t node) const {
    return source_node.empty() ? node : source_node[size_t(node)];
  }
  // The kind of state bound to `value`, or nullptr when it is not a state value.
  const StateSlot* state_of(ValueId value) const;
  // "program: 3 inputs, 12 state tensors, 240 nodes, 1 returned value" and the graph's text.
  std::string str() const;
};

// A deep copy: the same values (same ids), nodes, state and returned values.
Program clone(const Program& program);

// What the passes decided, as text: one section per pass, in the order they ran. This is what
// `explain()` prints.
struct Explain {
  struct Section {
    std::string pass;                // "dead-code elimination", "memory plan", ...
    std::vector<std::string> lines;  // one decision or figure per line
  };
  std::vector<Section> sections;

  // The section of `pass` (created at the end when new), so a pass run twice writes on.
  Section& section(const std::string& pass);
  void add(const std::string& pass, std::string line) { section(pass).lines.push_back(line); }
  // "== dead-code elimination ==\n  removed %7 = mul(%3, %4): its value is never read\n..."
  std::string str() const;

  // When set, every pass also keeps the text of the graph it returns (for tutorials: the graph
  // before and after each pass), in the order the passes ran.
  bool record_graphs = false;
  std::vector<std::pair<std::string, std::string>> graphs;  // (pass, graph text after it)
  void after(const std::string& pass, const Program& program);
};

}  // namespace ember::autodiff::compile
