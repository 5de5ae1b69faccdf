// test_compile_dead_code.cpp — dead-code elimination: unread nodes go; state updates, returned
// values, writes into state and random nodes stay; the step computes the same.
#include "compile_programs.h"

namespace ember::autodiff::compile::test {
namespace {

TEST(DeadCode, RemovesWhatNothingReadsAndKeepsTheStep) {
  Program p = mlp_step(2, 8, 4);
  Graph& g = *p.graph;
  Val x = g.val(0);
  Val unused = exp(sum(x));  // two dead nodes
  (void)unused;
  const int32_t before = g.num_nodes();
  Explain e;
  Program q = dead_code_elimination(p, e);
  EXPECT_EQ(q.graph->num_nodes(), before - 2);
  EXPECT_EQ(count_op(q, "exp"), 0);
  EXPECT_NE(e.str().find("2 of " + std::to_string(before) + " nodes removed"), std::string::npos)
      << e.str();
  EXPECT_NE(e.str().find("= exp: never read"), std::string::npos);
  ember::manual_seed(1);
  expect_same_step(p, q, {ember::randn({4, 8})}, random_state(p, 2));
}

TEST(DeadCode, KeepsInPlaceWritesIntoStateEvenWithoutAFinalValue) {
  Program p = mlp_step(1, 4, 2);
  p.state[0].final_value = -1;  // the update is still a write into the parameter
  Explain e;
  Program q = dead_code_elimination(p, e);
  EXPECT_EQ(count_op(q, "test_sgd_update"), 1);
}

TEST(DeadCode, KeepsAnInPlaceWriteIntoABufferReadLaterAndDropsOneNeverRead) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({3}), "x");
  Val lr = g.input(f32({3}), "lr");
  Val a = exp(x);
  g.add(sgd_update_op(), {a, lr}, {{"lr", 1.0}});  // writes a; a read below sees it
  Val s = sum(a);
  Val b = exp(x);
  g.add(sgd_update_op(), {b, lr}, {{"lr", 1.0}});  // writes b; nothing reads b afterwards
  p.returned = {s.id};
  Explain e;
  Program q = dead_code_elimination(p, e);
  EXPECT_EQ(count_op(q, "test_sgd_update"), 1);
  EXPECT_EQ(count_op(q, "exp"), 1);
  expect_same_step(p, q, {ember::randn({3}), ember::randn({3})}, {});
}

TEST(DeadCode, KeepsRandomNodesTheyAdvanceTheGenerator) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({64}), "x");
  Val dropped = dropout(x, 0.5);  // never read
  (void)dropped;
  Val kept = dropout(x, 0.5);
  p.returned = {kept.id};
  Explain e;
  Program q = dead_code_elimination(p, e);
  EXPECT_EQ(count_op(q, "dropout"), 2);
  Tensor in = ember::randn({64});
  ember::manual_seed(7);
  Tensor r1 = run_program(p, {in}, {})[0];
  ember::manual_seed(7);
  Tensor r2 = run_program(q, {in}, {})[0];
  expect_same(r1, r2);
}

}  // namespace
}  // namespace ember::autodiff::compile::test
