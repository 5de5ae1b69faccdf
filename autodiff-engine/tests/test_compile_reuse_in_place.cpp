// test_compile_reuse_in_place.cpp — in-place reuse: an elementwise output is written over an
// input read for the last time there; never over state, inputs, returned values, a buffer read
// later, or through a kernel that is not elementwise.
#include "compile_programs.h"

namespace ember::autodiff::compile::test {
namespace {

TEST(ReuseInPlace, PermissionIsTheElementwiseOutForms) {
  EXPECT_TRUE(may_write_over_input("relu", 0));
  EXPECT_TRUE(may_write_over_input("add", 1));
  EXPECT_TRUE(may_write_over_input("relu_backward", 0));
  EXPECT_TRUE(may_write_over_input("batch_norm_backward", 0));   // grad_input over grad_out
  EXPECT_FALSE(may_write_over_input("batch_norm_backward", 1));  // never over x
  EXPECT_FALSE(may_write_over_input("matmul", 0));
  EXPECT_FALSE(may_write_over_input("softmax", 0));
  EXPECT_FALSE(may_write_over_input("sum", 0));
  EXPECT_FALSE(may_write_over_input("transpose", 0));
}

TEST(ReuseInPlace, ChainsOfElementwiseOpsShareOneBuffer) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({8, 8}), "x");
  Val a = exp(x);         // x is an input: not written over
  Val b = relu(a);        // over a
  Val c = mul(b, b);      // over b
  Val d = tanh(c);        // over c
  Val e2 = matmul(d, d);  // not elementwise
  p.returned = {sum(e2).id};
  Explain e;
  Program q = reuse_in_place(p, e);
  EXPECT_EQ(q.reuse.size(), 3u);
  EXPECT_EQ(q.reuse.at(b.id), a.id);
  EXPECT_EQ(q.reuse.at(c.id), b.id);
  EXPECT_EQ(q.reuse.at(d.id), c.id);
  Explain pe;
  MemoryPlan before = plan_memory(p, output_allocations(p), pe);
  MemoryPlan after = plan_memory(q, output_allocations(q), pe);
  EXPECT_LT(after.naive_peak, before.naive_peak);
  EXPECT_LE(after.planned_peak, before.planned_peak);
  // a, b, c, d: one buffer.
  const int32_t shared = after.requests[0][0].buffer;
  for (int32_t k = 1; k <= 3; ++k) EXPECT_EQ(after.requests[size_t(k)][0].buffer, shared);
  EXPECT_NE(e.str().find("3 outputs written over an input"), std::string::npos) << e.str();
}

TEST(ReuseInPlace, NotOverABufferReadLaterNorAReturnedOrMismatchedOne) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({4, 4}), "x");
  Val row = g.input(f32({4}), "row");
  Val a = exp(x);
  Val b = relu(a);    // a is read again below: not over a
  Val c = add(a, b);  // over a, read for the last time here
  Val r = exp(row);   // [4]
  Val m = mul(r, c);  // [4] * [4,4]: over c, never over r (another type)
  Val s = neg(m);     // s is returned: not in the arena, over nothing
  Val t = exp(s);     // s is returned: t may not take its buffer
  p.returned = {s.id, sum(t).id};
  Explain e;
  Program q = reuse_in_place(p, e);
  EXPECT_EQ(q.reuse.count(b.id), 0u);
  EXPECT_EQ(q.reuse.at(c.id), a.id);
  EXPECT_EQ(q.reuse.at(m.id), c.id);
  EXPECT_EQ(q.reuse.count(s.id), 0u);
  EXPECT_EQ(q.reuse.count(t.id), 0u);
  expect_same_step(p, q, {ember::randn({4, 4}), ember::randn({4})}, {});
}

TEST(ReuseInPlace, NotWhenAnotherInputReadsTheSameBufferThroughAView) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({4, 4}), "x");
  Val a = exp(x);
  Val s = add(a, transpose(a, 0, 1));  // element (i, j) reads a[j, i]: not over a
  p.returned = {sum(s).id};
  Explain e;
  Program q = reuse_in_place(p, e);
  EXPECT_EQ(q.reuse.count(s.id), 0u);
}

TEST(ReuseInPlace, KeepsTheTrainingStepExactWhenReplayedInItsPlan) {
  // The plan's offsets, served through PlacedAllocations while each node runs, make the kernels
  // write over their inputs for real; the step must compute the same.
  Program p = mlp_step(3, 16, 8);
  ember::manual_seed(5);
  std::vector<Tensor> inputs = {ember::randn({8, 16})};
  std::vector<Tensor> s1 = random_state(p, 6), s2 = copies(s1), s3 = copies(s1);
  const NodeAllocations traced = record_allocations(p, inputs, s3);
  Explain e;
  Program q = reuse_in_place(p, e);
  EXPECT_GT(q.reuse.size(), 0u);
  MemoryPlan plan = plan_memory(q, carry_allocations(q, traced), e);
  std::vector<Tensor> expected = run_program(p, inputs, s1);
  int64_t misses = -1;
  std::vector<Tensor> got = run_planned(q, plan, inputs, s2, &misses);
  EXPECT_EQ(misses, 0);
  expect_same(got[0], expected[0]);
  for (size_t s = 0; s < s1.size(); ++s) expect_same(s1[s], s2[s]);
}

}  // namespace
}  // namespace ember::autodiff::compile::test
