// test_compile_rematerialize.cpp — rematerialisation: the plan fits the budget, the step computes
// the same bit for bit, each choice is reported with its FLOPs; an unmeetable budget is a
// BudgetError giving the smallest budget that works; random nodes and values whose inputs were
// overwritten are never recomputed.
#include "compile_programs.h"

namespace ember::autodiff::compile::test {
namespace {

int64_t peak_of(const Program& p) {
  Explain e;
  return plan_memory(p, output_allocations(p), e).planned_peak;
}

TEST(Rematerialize, FitsTheBudgetAndKeepsTheStepExact) {
  Program p = mlp_step(6, 32, 128);
  const int64_t full = peak_of(p);
  const int64_t budget = full * 6 / 10;
  Explain e;
  Program q = rematerialize(p, budget, {}, e);
  EXPECT_LE(peak_of(q), budget);
  EXPECT_GT(q.graph->num_nodes(), p.graph->num_nodes());  // nodes run twice
  EXPECT_NE(e.str().find("recompute %"), std::string::npos) << e.str();
  EXPECT_NE(e.str().find(" FLOPs"), std::string::npos);
  ember::manual_seed(8);
  std::vector<Tensor> inputs = {ember::randn({128, 32})};
  std::vector<Tensor> state = random_state(p, 9);
  expect_same_step(p, q, inputs, state);
  expect_same_planned_step(p, q, inputs, state);  // replayed in its plan, too
}

TEST(Rematerialize, ABudgetAlreadyMetChangesNothing) {
  Program p = mlp_step(2, 16, 8);
  Explain e;
  Program q = rematerialize(p, peak_of(p), {}, e);
  EXPECT_EQ(q.graph->num_nodes(), p.graph->num_nodes());
  EXPECT_NE(e.str().find("0 values recomputed"), std::string::npos) << e.str();
}

TEST(Rematerialize, AnUnmeetableBudgetGivesTheSmallestThatWorks) {
  Program p = mlp_step(4, 16, 64);
  Explain e;
  int64_t smallest = 0;
  try {
    rematerialize(p, 1024, {}, e);
    FAIL() << "no error";
  } catch (const BudgetError& err) {
    smallest = err.smallest();
    EXPECT_EQ(err.budget(), 1024);
    EXPECT_GT(smallest, 1024);
    EXPECT_LT(smallest, peak_of(p));
    EXPECT_NE(std::string(err.what()).find("memory_budget >= " + std::to_string(smallest)),
              std::string::npos)
        << err.what();
  }
  Explain again;
  Program q = rematerialize(p, smallest, {}, again);  // the smallest budget is met
  EXPECT_LE(peak_of(q), smallest);
  EXPECT_THROW(rematerialize(p, 0, {}, e), ValueError);
}

TEST(Rematerialize, NeverRecomputesRandomNodes) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({64, 64}), "x");
  Val w = state_parameter(p, f32({64, 64}), "w");
  Val h = x;
  for (int l = 0; l < 4; ++l) h = dropout(relu(linear(h, w)), 0.5);
  Val loss = mean(mul(h, h));
  Val dw = grad({loss}, {w})[0];
  p.state[0].final_value = g.add(sgd_update_op(), {w, dw}, {{"lr", 0.1}})[0].id;
  p.returned = {loss.id};
  Explain e;
  Program q;
  try {
    q = rematerialize(p, peak_of(p) * 7 / 10, {}, e);
  } catch (const BudgetError& err) {
    q = rematerialize(p, err.smallest(), {}, e);
  }
  EXPECT_EQ(count_op(q, "dropout"), count_op(p, "dropout"));
  EXPECT_GT(q.graph->num_nodes(), p.graph->num_nodes());
}

// a = exp(x); b = exp(a); ...; a overwritten in place; ...; b read again after the peak.
Program overwritten_input(bool write) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({1024}), "x");
  Val lr = g.input(f32({1024}), "lr");
  Val a = exp(x);
  Val b = exp(a);
  Val c = sum(b);
  if (write) g.add(sgd_update_op(), {a, lr}, {{"lr", 1.0}});
  Val big = exp(cat({x, x, x, x}, 0));  // the peak, while b waits
  Val e = sum(big);
  Val f = mul(b, b);
  p.returned = {add(add(c, e), sum(f)).id, sum(a).id};
  return p;
}

TEST(Rematerialize, NeverRecomputesFromAValueOverwrittenInPlace) {
  Program free = overwritten_input(false);
  Explain e1;
  Program q = rematerialize(free, peak_of(free) - 1024, {}, e1);  // b is recomputed
  EXPECT_EQ(count_op(q, "exp"), count_op(free, "exp") + 1) << e1.str();

  Program written = overwritten_input(true);
  Explain e2;
  EXPECT_THROW(rematerialize(written, peak_of(written) - 1024, {}, e2), BudgetError);
}

}  // namespace
}  // namespace ember::autodiff::compile::test
