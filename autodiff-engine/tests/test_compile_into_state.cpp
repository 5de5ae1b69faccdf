// test_compile_into_state.cpp — values computed into the state tensors a copy_ wrote them into:
// a training step's gradient lands in its .grad without the copy, the step computes the same bit
// for bit in its memory plan, and the copy stays wherever dropping it could change a value.
#include "compile_programs.h"

namespace ember::autodiff::compile::test {
namespace {

constexpr int64_t kBatch = 8, kWidth = 16;

// One linear layer's step as a trace makes it: the weight's gradient g is written into the
// w.grad state tensor by copy_ (through `into`, given the copy's destination and g, which returns
// the value to copy: g itself, or g accumulated onto the old gradient), and SGD reads w.grad.
// Returns the loss.
struct GradStep {
  Program p = program_with_graph();
  Val x, w, w_grad, g, copied;

  template <class Into> explicit GradStep(Into into) {
    Graph& graph = *p.graph;
    x = graph.input(f32({kBatch, kWidth}), "x");
    w = state_parameter(p, f32({kWidth, kWidth}), "w");
    w_grad = graph.parameter(f32({kWidth, kWidth}), "w.grad");
    p.state.push_back({w_grad.id, StateKind::Gradient, "w.grad"});
    Val h = linear(x, w);
    Val loss = mean(mul(h, h));
    g = grad({loss}, {w})[0];
    Val copy = graph.add("copy_", {w_grad, into(w_grad, g)})[0];
    p.state[1].final_value = copy.id;
    p.state[0].final_value = graph.add(sgd_update_op(), {w, copy}, {{"lr", 0.1}})[0].id;
    p.returned = {loss.id};
  }
};

// A GradStep's input x, drawn from `seed`.
std::vector<Tensor> random_input(uint64_t seed) {
  ember::manual_seed(seed);
  return {ember::randn({kBatch, kWidth})};
}

// The pass run over `p` with the allocations p's nodes make on `inputs` and `state`.
struct PassRun {
  std::vector<Tensor> inputs, state;
  Explain explain;
  NodeAllocations traced;
  Program q;

  PassRun(const Program& p, std::vector<Tensor> in, std::vector<Tensor> st)
      : inputs(std::move(in)), state(std::move(st)) {
    std::vector<Tensor> scratch_state = copies(state);
    traced = record_allocations(p, inputs, scratch_state);
    q = compute_into_state(p, traced, explain);
  }
  // A GradStep's program, with inputs and state drawn from `seed`.
  PassRun(const Program& p, uint64_t seed)
      : PassRun(p, random_input(seed), random_state(p, seed + 1)) {}

  // Why the pass kept the first copy_ it kept (the whole report when it kept none).
  std::string first_reason() const {
    const std::string text = explain.str(), mark = " kept: ";
    const size_t at = text.find(mark);
    if (at == std::string::npos) return text;
    const size_t from = at + mark.size();
    return text.substr(from, text.find('\n', from) - from);
  }
};

// Runs p as it is and q in its memory plan from the same state; expects the same loss and state.
void expect_same_in_plan(const Program& p, const Program& q, const NodeAllocations& traced,
                         const std::vector<Tensor>& inputs, const std::vector<Tensor>& state) {
  Explain e;
  const MemoryPlan plan = plan_memory(q, carry_allocations(q, traced), e);
  std::vector<Tensor> s1 = copies(state), s2 = copies(state);
  std::vector<void*> grad_memory;
  for (const Tensor& t : s2) grad_memory.push_back(t.data_ptr());
  const std::vector<Tensor> want = run_program(p, inputs, s1);
  int64_t misses = -1;
  const std::vector<Tensor> got = run_planned(q, plan, inputs, s2, &misses);
  EXPECT_EQ(misses, 0);
  expect_same(want[0], got[0]);
  for (size_t i = 0; i < s1.size(); ++i) {
    expect_same(s1[i], s2[i]);
    EXPECT_EQ(s2[i].data_ptr(), grad_memory[i]);  // updated where it is
  }
}

TEST(ComputeIntoState, TheGradientIsComputedInItsGradTensor) {
  GradStep step([](Val, Val g) { return g; });
  PassRun run(step.p, 1);
  EXPECT_EQ(count_op(step.p, "copy_"), 1);
  EXPECT_EQ(count_op(run.q, "copy_"), 0);
  const std::string text = run.explain.str();
  EXPECT_NE(text.find("computed in 'w.grad'"), std::string::npos) << text;
  EXPECT_NE(text.find("1 copies into state dropped"), std::string::npos) << text;
  // The plan serves the gradient's request inside w.grad, not in the arena.
  const MemoryPlan plan = plan_memory(run.q, carry_allocations(run.q, run.traced), run.explain);
  int in_state = 0;
  for (int32_t k = 0; k < run.q.graph->num_nodes(); ++k)
    for (const PlannedSlot& s : plan.slots(k)) in_state += s.in_state == run.q.state[1].value;
  EXPECT_EQ(in_state, 1);
  expect_same_in_plan(step.p, run.q, run.traced, run.inputs, run.state);
}

TEST(ComputeIntoState, AnAccumulationIsComputedOverTheOldGradient) {
  // g + w.grad, copied into w.grad: the add may write its output over w.grad's old contents.
  GradStep step([](Val old, Val g) { return add(old, g); });
  PassRun run(step.p, 3);
  EXPECT_EQ(count_op(run.q, "copy_"), 0) << run.explain.str();
  expect_same_in_plan(step.p, run.q, run.traced, run.inputs, run.state);
}

// The reason the pass gives for keeping the one copy_ of `step` (whose program the caller may have
// given more readers), which must compute the same with or without the pass.
std::string kept_because(GradStep& step) {
  PassRun run(step.p, 5);
  EXPECT_EQ(count_op(run.q, "copy_"), 1) << run.explain.str();
  expect_same_step(step.p, run.q, run.inputs, run.state);
  return run.first_reason();
}

TEST(ComputeIntoState, TheCopyStaysWhereDroppingItCouldChangeAValue) {
  {  // the gradient is read elsewhere too: a later write into w.grad would change what it reads
    GradStep step([](Val, Val g) { return g; });
    step.p.returned.push_back(sum(step.g).id);
    EXPECT_EQ(kept_because(step), "the value is read elsewhere too");
  }
  {  // w.grad's old contents are read after the gradient is computed, before the copy
    Val old_sum;
    GradStep step([&](Val old, Val g) {
      Val fresh = mul(g, 2.0);
      old_sum = sum(old);
      return fresh;
    });
    step.p.returned.push_back(old_sum.id);
    EXPECT_NE(kept_because(step).find("reads or writes the state tensor before the copy"),
              std::string::npos);
  }
  {  // the old gradient is read by a matmul, which may not write over its input
    GradStep step([](Val old, Val g) { return matmul(old, g); });
    EXPECT_EQ(kept_because(step), "matmul reads the state tensor's old contents");
  }
}

// A step that copies `copied(x, w.grad)` into `destination(w.grad)`: the reason the pass gives
// for keeping that copy (of x's type, [kWidth, kWidth]).
template <class Destination, class Copied>
std::string kept_in_small_step(Destination destination, Copied copied) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({kWidth, kWidth}), "x");
  Val slot = g.parameter(f32({kWidth, kWidth}), "w.grad");
  p.state.push_back({slot.id, StateKind::Gradient, "w.grad"});
  p.state[0].final_value = g.add("copy_", {destination(slot), copied(x, slot)})[0].id;
  ember::manual_seed(7);
  PassRun run(p, {ember::randn({kWidth, kWidth})}, {ember::randn({kWidth, kWidth})});
  EXPECT_EQ(count_op(run.q, "copy_"), 1) << run.explain.str();
  return run.first_reason();
}

TEST(ComputeIntoState, ACopyIntoAViewOrOfAnArgumentStays) {
  auto whole = [](Val slot) { return slot; };
  // copy_(transpose(w.grad), y): computing y in w.grad's memory would lay it out transposed.
  EXPECT_EQ(kept_in_small_step([](Val slot) { return transpose(slot, 0, 1); },
                               [](Val x, Val) { return exp(x); }),
            "it writes a view of the state tensor");
  // An argument's memory is the caller's.
  EXPECT_EQ(kept_in_small_step(whole, [](Val x, Val) { return x; }),
            "the value has no memory of its own (an argument, a view, or written in place)");
  // A view has none either.
  EXPECT_EQ(kept_in_small_step(whole, [](Val x, Val) { return transpose(exp(x), 0, 1); }),
            "the value has no memory of its own (an argument, a view, or written in place)");
}

}  // namespace
}  // namespace ember::autodiff::compile::test
