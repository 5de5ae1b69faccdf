// test_compile_memory_plan.cpp — the memory plan: intervals placed best fit without overlap,
// aligned, between the lower bound and the naive peak; what is in the arena and what is not.
#include <random>

#include "compile_programs.h"

namespace ember::autodiff::compile::test {
namespace {

// Every pair of buffers live at one step lies apart; every offset aligned; the bounds hold.
void expect_valid(const IntervalPlan& plan, const std::vector<int64_t>& sizes,
                  const std::vector<int32_t>& starts, const std::vector<int32_t>& ends,
                  int64_t alignment = kAlignment) {
  ASSERT_EQ(plan.offsets.size(), sizes.size());
  for (size_t a = 0; a < sizes.size(); ++a) {
    EXPECT_EQ(plan.offsets[a] % alignment, 0);
    EXPECT_LE(plan.offsets[a] + sizes[a], plan.planned_peak);
    for (size_t b = a + 1; b < sizes.size(); ++b) {
      if (starts[a] > ends[b] || starts[b] > ends[a] || sizes[a] == 0 || sizes[b] == 0) continue;
      EXPECT_TRUE(plan.offsets[a] + sizes[a] <= plan.offsets[b] ||
                  plan.offsets[b] + sizes[b] <= plan.offsets[a])
          << "buffers " << a << " and " << b << " overlap";
    }
  }
  EXPECT_LE(plan.lower_bound, plan.planned_peak);
  EXPECT_LE(plan.planned_peak, plan.naive_peak);
}

TEST(PlanIntervals, ReusesTheMemoryOfBuffersThatDied) {
  // a [0,1], b [1,2], c [2,3]: a and c never meet, so c takes a's place.
  IntervalPlan plan = plan_intervals({100, 200, 100}, {0, 1, 2}, {1, 2, 3});
  expect_valid(plan, {100, 200, 100}, {0, 1, 2}, {1, 2, 3});
  EXPECT_EQ(plan.naive_peak, 128 + 256 + 128);
  EXPECT_EQ(plan.lower_bound, 128 + 256);
  EXPECT_EQ(plan.planned_peak, 128 + 256);
  EXPECT_EQ(plan.offsets[0], plan.offsets[2]);
}

TEST(PlanIntervals, TakesTheSmallestGapThatFits) {
  // Placed largest first: A, C, B, E, D, H. At step 5, B and D have died, leaving a 512 B hole
  // (B's) and a 128 B one (D's) between the buffers F meets; F takes the smaller.
  const std::vector<int64_t> sizes = {1024, 512, 1024, 256, 128, 64, 64};
  const std::vector<int32_t> starts = {0, 0, 0, 0, 0, 0, 5};
  const std::vector<int32_t> ends = {9, 4, 9, 9, 4, 9, 9};
  IntervalPlan plan = plan_intervals(sizes, starts, ends);
  expect_valid(plan, sizes, starts, ends);
  EXPECT_EQ(plan.offsets[6], plan.offsets[4]);
  EXPECT_EQ(plan.planned_peak, 1024 + 1024 + 512 + 256 + 128 + 64);
}

TEST(PlanIntervals, KeepsTheBestOfItsOrders) {
  // Largest first places the two 4-byte buffers apart and ends at 14 bytes; placing the buffers
  // of most bytes x steps first reaches the lower bound, 13.
  IntervalPlan plan =
      plan_intervals({3, 3, 3, 4, 4}, {4, 4, 4, 3, 2}, {4, 5, 7, 6, 3}, /*alignment=*/1);
  EXPECT_EQ(plan.lower_bound, 13);
  EXPECT_EQ(plan.planned_peak, 13);
}

TEST(PlanIntervals, SearchesPastItsFixedOrdersToTheLowerBound) {
  // All three fixed orders end at 12 bytes here; placing the 6-byte buffer (step 4) before the
  // 5-byte one (steps 2-4) lets the two 4-byte ones of step 1 share its place, and the search over
  // the order finds that: 11, the most bytes live at once (steps 2-3: 5 + 3, step 4: 5 + 6).
  const std::vector<int64_t> sizes = {4, 4, 5, 3, 6};
  const std::vector<int32_t> starts = {1, 1, 2, 0, 4};
  const std::vector<int32_t> ends = {1, 1, 4, 3, 4};
  IntervalPlan plan = plan_intervals(sizes, starts, ends, /*alignment=*/1);
  expect_valid(plan, sizes, starts, ends, 1);
  EXPECT_EQ(plan.lower_bound, 11);
  EXPECT_EQ(plan.planned_peak, 11);
  EXPECT_EQ(plan_intervals(sizes, starts, ends, 1).offsets, plan.offsets);  // deterministic
}

TEST(PlanIntervals, EdgeCases) {
  IntervalPlan empty = plan_intervals({}, {}, {});
  EXPECT_EQ(empty.planned_peak, 0);
  IntervalPlan zero = plan_intervals({0, 10}, {0, 0}, {0, 0});
  EXPECT_EQ(zero.planned_peak, 64);
  IntervalPlan one = plan_intervals({1}, {3}, {3}, 512);
  EXPECT_EQ(one.planned_peak, 512);
  EXPECT_THROW(plan_intervals({1, 2}, {0}, {0, 1}), ValueError);
  EXPECT_THROW(plan_intervals({1}, {2}, {1}), ValueError);
  EXPECT_THROW(plan_intervals({-1}, {0}, {0}), ValueError);
  EXPECT_THROW(plan_intervals({1}, {0}, {0}, 48), ValueError);
}

TEST(PlanIntervals, RandomIntervalSetsAreValid) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = int(rng() % 40);
    std::vector<int64_t> sizes;
    std::vector<int32_t> starts, ends;
    for (int k = 0; k < n; ++k) {
      sizes.push_back(int64_t(rng() % 5000));
      starts.push_back(int32_t(rng() % 30));
      ends.push_back(starts.back() + int32_t(rng() % 10));
    }
    expect_valid(plan_intervals(sizes, starts, ends), sizes, starts, ends);
  }
}

TEST(PlanMemory, PlansTheTrainingStepBelowTheNaivePeak) {
  Program p = mlp_step(4, 32, 16);
  Explain e;
  MemoryPlan plan = plan_memory(p, output_allocations(p), e);
  EXPECT_GT(plan.naive_peak, plan.planned_peak);
  EXPECT_LE(plan.lower_bound, plan.planned_peak);
  // The loss is returned and the updates write into the parameters: none of them in the arena.
  const Graph& g = *p.graph;
  for (const PlannedBuffer& b : plan.buffers) {
    EXPECT_NE(b.value, p.returned[0]);
    if (b.value >= 0) EXPECT_EQ(g.value(b.value).kind, ValueKind::Computed);
  }
  const int32_t loss_node = g.value(p.returned[0]).node;
  ASSERT_EQ(plan.requests[size_t(loss_node)].size(), 1u);
  EXPECT_EQ(plan.requests[size_t(loss_node)][0].buffer, -1);
  EXPECT_EQ(plan.slots(loss_node)[0].offset, -1);
  EXPECT_NE(e.str().find("planned peak"), std::string::npos);
  EXPECT_NE(e.str().find("lower bound"), std::string::npos);
  // The fullest moment holds the lower bound's bytes.
  EXPECT_NE(e.str().find("fullest at node"), std::string::npos) << e.str();
  EXPECT_NE(e.str().find(" (" + std::to_string(plan.lower_bound) + " B) live; largest %"),
            std::string::npos)
      << e.str();
}

TEST(PlanMemory, AViewExtendsItsBaseAndScratchLivesInItsNode) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({4, 4}), "x");
  Val a = exp(x);              // node 0
  Val v = transpose(a, 0, 1);  // node 1: a view of a
  Val b = exp(x);              // node 2
  Val c = add(v, b);           // node 3: reads a through the view
  p.returned = {sum(c).id};    // node 4
  NodeAllocations allocs = output_allocations(p);
  allocs[2].push_back({1000, -1});  // scratch of node 2
  Explain e;
  MemoryPlan plan = plan_memory(p, allocs, e);
  const PlannedBuffer& ba = plan.buffers[size_t(plan.requests[0][0].buffer)];
  EXPECT_EQ(ba.first, 0);
  EXPECT_EQ(ba.last, 3);  // a's buffer lives until the view's last read
  const PlannedBuffer& scratch = plan.buffers[size_t(plan.requests[2][1].buffer)];
  EXPECT_EQ(scratch.value, -1);
  EXPECT_EQ(scratch.first, 2);
  EXPECT_EQ(scratch.last, 2);
  EXPECT_TRUE(plan.requests[1].empty());
  EXPECT_THROW(plan_memory(p, NodeAllocations(2), e), ValueError);
}

TEST(PlanMemory, CarriesRecordedAllocationsThroughPasses) {
  Program p = mlp_step(2, 8, 4);
  Graph& g = *p.graph;
  exp(sum(g.val(0)));  // dead
  NodeAllocations traced = output_allocations(p);
  traced[0].push_back({77, -1});
  Explain e;
  Program q = dead_code_elimination(p, e);
  NodeAllocations carried = carry_allocations(q, traced);
  ASSERT_EQ(int32_t(carried.size()), q.graph->num_nodes());
  EXPECT_EQ(carried[0].back().nbytes, 77);
  for (int32_t k = 0; k < q.graph->num_nodes(); ++k)
    EXPECT_EQ(carried[size_t(k)].size(), traced[size_t(q.source_of(k))].size());
}

}  // namespace
}  // namespace ember::autodiff::compile::test
