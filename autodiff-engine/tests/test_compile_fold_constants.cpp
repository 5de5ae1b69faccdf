// test_compile_fold_constants.cpp — constant folding: nodes over constants run once at compile
// time; state, returned values, written buffers, random nodes and large results are kept.
#include "compile_programs.h"

namespace ember::autodiff::compile::test {
namespace {

TEST(FoldConstants, ComputesNodesOverConstantsOnce) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({3}), "x");
  Val w = state_parameter(p, f32({3}), "w");
  Val c = g.constant(ember::full({3}, 2.0), "two");
  Val folded = exp(mul(c, c));  // two nodes over constants
  Val kept = mul(w, folded);    // reads state: stays
  Val out = add(x, kept);
  p.returned = {out.id};
  Explain e;
  Program q = fold_constants(p, e);
  EXPECT_EQ(count_op(q, "exp"), 0);
  EXPECT_EQ(count_op(q, "mul"), 1);
  EXPECT_NE(e.str().find("2 nodes computed at compile time"), std::string::npos) << e.str();
  expect_same_step(p, q, {ember::randn({3})}, {ember::randn({3})});
}

TEST(FoldConstants, ZerosLikeOfAComputedValueIsKnownFromItsTypeAlone) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({2, 5}), "x");
  Val e = exp(x);
  Val z = zeros_like(e);  // computed input, constant result
  Val o = ones_like(x);   // the step's input, constant result
  Val out = add(add(e, z), o);
  p.returned = {out.id};
  Explain ex;
  Program q = fold_constants(p, ex);
  EXPECT_EQ(count_op(q, "zeros_like"), 0);
  EXPECT_EQ(count_op(q, "ones_like"), 0);
  EXPECT_EQ(count_op(q, "exp"), 1);
  expect_same_step(p, q, {ember::randn({2, 5})}, {});
}

TEST(FoldConstants, KeepsReturnedWrittenRandomAndLargeResults) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val c = g.constant(ember::full({4}, 1.0), "c");
  Val lr = g.input(f32({4}), "lr");
  Val returned = exp(c);  // handed out: fresh every call
  Val written = exp(c);   // written in place below
  g.add(sgd_update_op(), {written, lr}, {{"lr", 1.0}});
  Val random = dropout(c, 0.5);  // a new mask every call
  Val big = g.constant(ember::full({(int64_t(1) << 18) + 1}, 1.0), "big");
  Val large = exp(big);  // 1 MiB + 4 B: kept
  p.returned = {returned.id, sum(written).id, sum(random).id, sum(large).id};
  Explain e;
  Program q = fold_constants(p, e);
  EXPECT_EQ(count_op(q, "exp"), 3);
  EXPECT_EQ(count_op(q, "dropout"), 1);
  EXPECT_NE(e.str().find("would be held for good"), std::string::npos) << e.str();
}

}  // namespace
}  // namespace ember::autodiff::compile::test
