// test_compile_hoist_writes.cpp — in-place writes moved up: a gradient's write into its .grad
// comes right after the gradient is computed, the step computes the same, and the plan's peak no
// longer holds every gradient at once; a write never passes a read or write of its buffer.
#include "compile_programs.h"

namespace ember::autodiff::compile::test {
namespace {

// dst <- src, written into dst (output 0 aliases input 0), as a traced .grad write is.
const OpDef& copy_op() {
  static const OpDef def{"test_copy_",
                         [](const std::vector<TensorType>& in, const Attrs&) {
                           return std::vector<TensorType>{in[0]};
                         },
                         [](const std::vector<Tensor>& in, const Attrs&) {
                           in[0].copy_(in[1]);
                           return std::vector<Tensor>{in[0]};
                         },
                         nullptr,
                         false,
                         /*in_place=*/true,
                         false};
  return def;
}

// The MLP step with each gradient written into a .grad state tensor at the end of the step.
Program step_with_grad_writes(int layers, int64_t width, int64_t batch) {
  Program p = mlp_step(layers, width, batch);
  Graph& g = *p.graph;
  for (StateSlot& s : p.state) {
    if (s.kind != StateKind::Gradient) continue;
    s.final_value = g.add(copy_op(), {g.val(s.value), g.val(s.final_value)})[0].id;
  }
  return p;
}

int64_t peak_of(const Program& p) {
  Explain e;
  return plan_memory(p, output_allocations(p), e).planned_peak;
}

TEST(HoistWrites, GradientWritesComeRightAfterTheGradients) {
  Program p = step_with_grad_writes(4, 64, 16);
  Explain e;
  Program q = hoist_in_place_writes(p, e);
  EXPECT_LT(peak_of(q), peak_of(p));
  EXPECT_NE(e.str().find("in-place writes moved up"), std::string::npos) << e.str();
  // Each write now directly follows the node computing what it copies.
  const Graph& g = *q.graph;
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    if (g.node(k).op->name != "test_copy_") continue;
    const ValueId src = g.node(k).inputs[1];
    EXPECT_EQ(g.value(src).node, k - 1) << "write " << k;
  }
  ember::manual_seed(2);
  std::vector<Tensor> inputs = {ember::randn({16, 64})};
  std::vector<Tensor> state = random_state(p, 3);
  std::vector<Tensor> s1 = copies(state), s2 = copies(state);
  expect_same(run_program(p, inputs, s1)[0], run_program(q, inputs, s2)[0]);
  for (size_t s = 0; s < s1.size(); ++s) expect_same(s1[s], s2[s]);  // the .grad tensors too
}

TEST(HoistWrites, AWriteNeverPassesAReadOfItsBuffer) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({4}), "x");
  Val w = state_parameter(p, f32({4}), "w");
  Val a = exp(x);
  Val read = mul(w, x);  // reads w before the write below: the write may not pass it
  Val b = exp(a);
  Val written = g.add(copy_op(), {w, a})[0];
  p.state[0].final_value = written.id;
  p.returned = {sum(add(read, b)).id};
  Explain e;
  Program q = hoist_in_place_writes(p, e);
  const Graph& h = *q.graph;
  int32_t write = -1, mul_at = -1;
  for (int32_t k = 0; k < h.num_nodes(); ++k) {
    if (h.node(k).op->name == "test_copy_") write = k;
    if (h.node(k).op->name == "mul") mul_at = k;
  }
  EXPECT_GT(write, mul_at);
  EXPECT_LT(write, h.num_nodes() - 3);  // moved up past exp(a), sum and add
  expect_same_step(p, q, {ember::randn({4})}, {ember::randn({4})});
}

}  // namespace
}  // namespace ember::autodiff::compile::test
