// compile_programs.h — small traced-step programs for the compiler's tests, built by hand the way
// tracing builds them: a forward, its backward from the gradient driver, an SGD update written in
// place into the parameters (an in-place op of the tests' own, as an optimizer's would be).
#pragma once
#include <gtest/gtest.h>

#include "ember/autodiff/autodiff.h"
#include "ember/autodiff/compile/memory_plan.h"
#include "ember/autodiff/compile/passes.h"
#include "ember/autodiff/compile/program.h"
#include "ember/ember.h"
#include "ember/placement.h"

namespace ember::autodiff::compile::test {

inline TensorType f32(Shape shape) { return TensorType{std::move(shape), DType::Float32, {}}; }

// A parameter that is also one of p's state slots (bound to the live tensor each call, written
// back when the step updates it), as tracing makes a model's weight.
inline Val state_parameter(Program& p, TensorType type, const std::string& name) {
  Val v = p.graph->parameter(std::move(type), name);
  p.state.push_back({v.id, StateKind::Parameter, name});
  return v;
}

// p -= lr * g, written into p: output 0 aliases input 0, as an optimizer's update does.
inline const OpDef& sgd_update_op() {
  static const OpDef def{"test_sgd_update",
                         [](const std::vector<TensorType>& in, const Attrs&) {
                           return std::vector<TensorType>{in[0]};
                         },
                         [](const std::vector<Tensor>& in, const Attrs& a) {
                           in[0].copy_(ember::sub(in[0], ember::mul(in[1], a.f("lr"))));
                           return std::vector<Tensor>{in[0]};
                         },
                         nullptr,
                         false,
                         /*in_place=*/true,
                         false};
  return def;
}

// An empty program with its graph, to build a test's program into.
inline Program program_with_graph() {
  Program p;
  p.graph = std::make_unique<Graph>();
  return p;
}

// The step of an MLP of `layers` linear+relu layers of `width`, batch `batch`: returns the loss,
// leaves each weight's gradient in its .grad (state, as tracing makes it) and updates every
// weight with SGD.
inline Program mlp_step(int layers, int64_t width, int64_t batch, double lr = 0.1) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({batch, width}), "x");
  std::vector<Val> weights;
  for (int l = 0; l < layers; ++l) {
    weights.push_back(g.parameter(f32({width, width}), std::to_string(l) + ".weight"));
    p.state.push_back({weights.back().id, StateKind::Parameter, std::to_string(l) + ".weight"});
  }
  Val h = x;
  for (int l = 0; l < layers; ++l) h = relu(linear(h, weights[size_t(l)]));
  Val loss = mean(mul(h, h));
  std::vector<Val> grads = grad({loss}, weights);
  for (int l = 0; l < layers; ++l) {
    Val updated = g.add(sgd_update_op(), {weights[size_t(l)], grads[size_t(l)]}, {{"lr", lr}})[0];
    p.state[size_t(l)].final_value = updated.id;
  }
  for (int l = 0; l < layers; ++l) {
    const std::string name = std::to_string(l) + ".weight.grad";
    Val slot = g.parameter(f32({width, width}), name);
    p.state.push_back({slot.id, StateKind::Gradient, name, grads[size_t(l)].id});
  }
  p.returned = {loss.id};
  return p;
}

// Runs a program on bound tensors: inputs in order, then state by slot; returns the returned
// values, and leaves the state tensors updated in place.
inline std::vector<Tensor> run_program(const Program& p, const std::vector<Tensor>& inputs,
                                       const std::vector<Tensor>& state) {
  std::vector<Tensor> bound(size_t(p.graph->num_values()));
  size_t next = 0;
  for (ValueId v = 0; v < p.graph->num_values(); ++v)
    if (p.graph->value(v).kind == ValueKind::Input) bound[size_t(v)] = inputs[next++];
  for (size_t s = 0; s < p.state.size(); ++s) bound[size_t(p.state[s].value)] = state[s];
  return run(*p.graph, bound, p.returned);
}

inline std::vector<Tensor> copies(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.clone());
  return out;
}

inline void expect_same(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  const std::vector<float> x = a.contiguous().to_vector<float>();
  const std::vector<float> y = b.contiguous().to_vector<float>();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], y[i]) << "element " << i;
}

// Runs `before` and `after` from the same starting state; expects the same returned values and
// the same state afterwards, bit for bit.
inline void expect_same_step(const Program& before, const Program& after,
                             const std::vector<Tensor>& inputs, const std::vector<Tensor>& state) {
  std::vector<Tensor> s1 = copies(state), s2 = copies(state);
  std::vector<Tensor> r1 = run_program(before, inputs, s1);
  std::vector<Tensor> r2 = run_program(after, inputs, s2);
  ASSERT_EQ(r1.size(), r2.size());
  for (size_t i = 0; i < r1.size(); ++i) expect_same(r1[i], r2[i]);
  for (size_t i = 0; i < s1.size(); ++i) expect_same(s1[i], s2[i]);
}

// Binds inputs (in order) and state (by slot) into a table of values.
inline std::vector<Tensor> bind(const Program& p, const std::vector<Tensor>& inputs,
                                const std::vector<Tensor>& state) {
  std::vector<Tensor> env(size_t(p.graph->num_values()));
  size_t next = 0;
  for (ValueId v = 0; v < p.graph->num_values(); ++v) {
    const Value& value = p.graph->value(v);
    if (value.kind == ValueKind::Input) env[size_t(v)] = inputs[next++];
    if (value.kind == ValueKind::Constant) env[size_t(v)] = value.constant;
  }
  for (size_t s = 0; s < p.state.size(); ++s) env[size_t(p.state[s].value)] = state[s];
  return env;
}

// Runs p node by node, each under an AllocationRecorder, the way tracing records: a request
// that became an output's storage is that output, any other is scratch.
inline NodeAllocations record_allocations(const Program& p, const std::vector<Tensor>& inputs,
                                          const std::vector<Tensor>& state) {
  const Graph& g = *p.graph;
  std::vector<Tensor> env = bind(p, inputs, state);
  NodeAllocations all(size_t(g.num_nodes()));
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const Node& node = g.node(k);
    std::vector<Tensor> ins;
    for (ValueId in : node.inputs) ins.push_back(env[size_t(in)]);
    AllocationRecorder rec;
    std::vector<Tensor> outs = node.op->run(ins, node.attrs);
    for (const RecordedAllocation& a : rec.allocations()) {
      int32_t output = -1;
      for (size_t o = 0; o < outs.size(); ++o)
        if (outs[o].storage() && outs[o].storage()->data() == a.data && !a.freed)
          output = int32_t(o);
      all[size_t(k)].push_back({int64_t(a.nbytes), output});
    }
    for (size_t o = 0; o < outs.size(); ++o) env[size_t(node.outputs[o])] = outs[o];
  }
  return all;
}

// Runs p node by node with every request placed by the plan in one arena, as a replay does;
// returns the returned values, leaves the state updated, and counts the placement misses.
inline std::vector<Tensor> run_planned(const Program& p, const MemoryPlan& plan,
                                       const std::vector<Tensor>& inputs,
                                       const std::vector<Tensor>& state, int64_t* misses) {
  const Graph& g = *p.graph;
  Tensor arena = Tensor::empty({std::max<int64_t>(plan.planned_peak, 1)}, DType::UInt8);
  std::vector<Tensor> env = bind(p, inputs, state);
  *misses = 0;
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const Node& node = g.node(k);
    std::vector<PlacementSlot> slots;
    for (const PlannedSlot& s : plan.slots(k)) {
      const Tensor into = s.in_state < 0 ? Tensor() : env[size_t(s.in_state)];
      if (into.defined())
        slots.push_back(
            {into.offset() * int64_t(into.itemsize()), size_t(s.nbytes), into.storage()});
      else slots.push_back({s.offset, size_t(s.nbytes), Storage()});
    }
    std::vector<Tensor> ins;
    for (ValueId in : node.inputs) ins.push_back(env[size_t(in)]);
    PlacedAllocations place(arena.storage(), slots);
    std::vector<Tensor> outs = node.op->run(ins, node.attrs);
    *misses += place.misses();
    for (size_t o = 0; o < outs.size(); ++o) env[size_t(node.outputs[o])] = outs[o];
  }
  std::vector<Tensor> out;
  for (ValueId v : p.returned) out.push_back(env[size_t(v)].clone());
  return out;
}

// Runs `before` as it is and `after` replayed from its own memory plan (run_planned), each from
// a copy of `state`; expects the same returned values and the same state afterwards, bit for bit.
inline void expect_same_planned_step(const Program& before, const Program& after,
                                     const std::vector<Tensor>& inputs,
                                     const std::vector<Tensor>& state) {
  Explain pe;
  const MemoryPlan plan = plan_memory(after, output_allocations(after), pe);
  std::vector<Tensor> s1 = copies(state), s2 = copies(state);
  int64_t misses = 0;
  const std::vector<Tensor> want = run_program(before, inputs, s1);
  const std::vector<Tensor> got = run_planned(after, plan, inputs, s2, &misses);
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) expect_same(want[i], got[i]);
  for (size_t i = 0; i < s1.size(); ++i) expect_same(s1[i], s2[i]);
}

inline std::vector<Tensor> random_state(const Program& p, uint64_t seed) {
  ember::manual_seed(seed);
  std::vector<Tensor> out;
  for (const StateSlot& s : p.state) {
    const TensorType& t = p.graph->value(s.value).type;
    out.push_back(ember::mul(ember::randn(t.shape, t.dtype), 0.1));
  }
  return out;
}

inline int count_op(const Program& p, const std::string& op) {
  int n = 0;
  for (int32_t k = 0; k < p.graph->num_nodes(); ++k) n += p.graph->node(k).op->name == op;
  return n;
}

}  // namespace ember::autodiff::compile::test
