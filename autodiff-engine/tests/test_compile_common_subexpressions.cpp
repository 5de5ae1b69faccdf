// test_compile_common_subexpressions.cpp — CSE: equal nodes merge; random and in-place nodes
// never do, nor nodes whose inputs were overwritten in place in between.
#include "compile_programs.h"

namespace ember::autodiff::compile::test {
namespace {

TEST(CommonSubexpressions, MergesTheSameOpAttributesAndInputs) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({2, 3}), "x");
  Val a = sum(exp(x), {1});
  Val b = sum(exp(x), {1});  // exp merges, then this sum too
  Val c = sum(exp(x), {0});  // other attributes: its sum stays
  Val d = leaky_relu(x, 0.1);
  Val e2 = leaky_relu(x, 0.2);  // another slope: stays
  Val out = add(add(a, b), add(sum(c), sum(add(d, e2))));
  p.returned = {out.id};
  Explain e;
  Program q = common_subexpressions(p, e);
  EXPECT_EQ(count_op(q, "exp"), 1);
  EXPECT_EQ(count_op(q, "sum"), count_op(p, "sum") - 1);
  EXPECT_EQ(count_op(q, "leaky_relu"), 2);
  EXPECT_NE(e.str().find("3 nodes merged"), std::string::npos) << e.str();
  expect_same_step(p, q, {ember::randn({2, 3})}, {});
}

TEST(CommonSubexpressions, NeverMergesRandomNodes) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({100}), "x");
  Val out = add(dropout(x, 0.5), dropout(x, 0.5));
  p.returned = {out.id};
  Explain e;
  Program q = common_subexpressions(p, e);
  EXPECT_EQ(count_op(q, "dropout"), 2);
}

TEST(CommonSubexpressions, RespectsInPlaceWrites) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({4}), "x");
  Val lr = g.input(f32({4}), "lr");
  Val a = exp(x);
  Val s1 = sum(a);
  g.add(sgd_update_op(), {a, lr}, {{"lr", 1.0}});  // a changes here
  Val s2 = sum(a);                                 // same op and input, other contents
  Val y = exp(x);                                  // would merge with a, which is written
  Val out = add(add(s1, s2), sum(y));
  p.returned = {out.id};
  Explain e;
  Program q = common_subexpressions(p, e);
  EXPECT_EQ(count_op(q, "sum"), count_op(p, "sum"));
  EXPECT_EQ(count_op(q, "exp"), 2);
  expect_same_step(p, q, {ember::randn({4}), ember::randn({4})}, {});
}

TEST(CommonSubexpressions, KeepsTheTrainingStepExact) {
  Program p = mlp_step(3, 8, 4);
  Explain e;
  Program q = common_subexpressions(p, e);
  ember::manual_seed(3);
  expect_same_step(p, q, {ember::randn({4, 8})}, random_state(p, 4));
}

}  // namespace
}  // namespace ember::autodiff::compile::test
