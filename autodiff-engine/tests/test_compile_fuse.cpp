// test_compile_fuse.cpp — the fusion pass: chains of elementwise nodes become one fused node that
// computes the same values bit for bit; one-op groups are left; values read after a group are
// more outputs of it, while a reader before the group's end (a cycle through an outside node) or
// a value of another shape stops it; an in-place write between a node and the group's end keeps
// the node out; the memory plan sees fewer buffers; EMBER_FUSION=0 and a missing compiler leave
// the program unfused and say why; a compiled step with fusion equals eager and the unfused
// compiled step over many steps.
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>

#include "compile_programs.h"
#include "ember/autodiff/compile/compile.h"
#include "ember/autodiff/optim.h"
#include "ember/jit.h"
#include "scoped_env.h"

namespace ember::autodiff::compile::test {
namespace {

// A program of a fusible chain between two matmuls: x @ w, then * 2, + b (broadcast over
// rows), gelu, masked by m, tanh; the result @ w again, summed.
struct Chain {
  Program p = program_with_graph();
  Val x, w, b, m, h, y;
  Chain() {
    Graph& g = *p.graph;
    x = g.input(f32({6, 16}), "x");
    w = g.parameter(f32({16, 16}), "w");
    b = g.parameter(f32({16}), "b");
    m = g.input(TensorType{{6, 16}, DType::Bool, {}}, "m");
    p.state.push_back({w.id, StateKind::Parameter, "w"});
    p.state.push_back({b.id, StateKind::Parameter, "b"});
    h = matmul(x, w);
    y = tanh(masked_fill(gelu(h * 2.0 + b), m, 0.25));
    p.returned = {sum(matmul(y, w)).id};
  }
  std::vector<Tensor> inputs() const {
    manual_seed(7);
    return {randn({6, 16}), gt(rand({6, 16}), 0.5)};
  }
};

int fused_nodes(const Program& p) { return count_op(p, "fused"); }

TEST(FuseElementwise, AChainBecomesOneNodeWithTheSameValuesBitForBit) {
  Chain c;
  Explain e;
  Program q = fuse_elementwise(c.p, e);
  ASSERT_EQ(fused_nodes(q), 1) << e.str();
  for (const char* op : {"mul_scalar", "add", "gelu", "masked_fill", "tanh"})
    EXPECT_EQ(count_op(q, op), 0) << op;
  EXPECT_EQ(count_op(q, "matmul"), 2);
  const std::string text = e.str();
  EXPECT_NE(text.find("mul_scalar, add, gelu, masked_fill, tanh (5 ops)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("f32[6,16]"), std::string::npos) << text;
  EXPECT_NE(text.find("= matmul: its own tuned kernel"), std::string::npos) << text;
  expect_same_step(c.p, q, c.inputs(), random_state(c.p, 3));
}

TEST(FuseElementwise, GroupsOfOneOpAreLeft) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({4, 8}), "x");
  Val w = state_parameter(p, f32({8, 8}), "w");
  Val a = relu(matmul(x, w));
  p.returned = {sum(matmul(a, w)).id};
  Explain e;
  Program q = fuse_elementwise(p, e);
  EXPECT_EQ(fused_nodes(q), 0);
  EXPECT_EQ(count_op(q, "relu"), 1);
  EXPECT_NE(e.str().find("1 elementwise ops left alone"), std::string::npos) << e.str();
}

// a = exp(x) is read by the group and by a matmul after the group's root: the group takes it in
// and writes it as a second output, in the same loop; the memory plan places both outputs.
TEST(FuseElementwise, AValueReadAfterTheGroupBecomesASecondOutput) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({4, 8}), "x");
  Val w = state_parameter(p, f32({8, 8}), "w");
  Val a = exp(x);     // read by the matmul too: written by the group as well
  Val b = a + 1.0;    // in the group
  Val c = mul(b, b);  // the group's root
  Val d = matmul(a, w);
  p.returned = {c.id, sum(d).id};
  Explain e;
  Program q = fuse_elementwise(p, e);
  ASSERT_EQ(fused_nodes(q), 1) << e.str();
  for (const char* op : {"exp", "add_scalar", "mul"}) EXPECT_EQ(count_op(q, op), 0) << op;
  const std::string text = e.str();
  EXPECT_NE(text.find("exp, add_scalar, mul (3 ops)"), std::string::npos) << text;
  EXPECT_NE(text.find("(2 outputs)"), std::string::npos) << text;
  EXPECT_NE(text.find("1 more written by the group computing them"), std::string::npos) << text;
  for (int32_t k = 0; k < q.graph->num_nodes(); ++k)
    if (q.graph->node(k).op->name == "fused") EXPECT_EQ(q.graph->node(k).outputs.size(), 2u);
  manual_seed(1);
  const std::vector<Tensor> in = {randn({4, 8})};
  expect_same_step(p, q, in, random_state(p, 2));
  // Replayed from the plan's arena: both outputs are planned requests of the fused node.
  expect_same_planned_step(p, q, in, random_state(p, 2));
}

// a = exp(x) is read by a matmul whose result the group reads: taking a in would need the matmul
// inside the group (a cycle through an outside node), so a reader before the root stops it.
TEST(FuseElementwise, AReaderBeforeTheRootStopsTheGroup) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({4, 8}), "x");
  Val w = state_parameter(p, f32({8, 8}), "w");
  Val a = exp(x);
  Val d = matmul(a, w);     // reads a, read by the group
  Val c = mul(a + 1.0, d);  // a + 1 joins; a cannot
  Val r = relu(c);
  p.returned = {sum(r).id};
  Explain e;
  Program q = fuse_elementwise(p, e);
  ASSERT_EQ(fused_nodes(q), 1) << e.str();
  EXPECT_EQ(count_op(q, "exp"), 1);
  EXPECT_EQ(count_op(q, "matmul"), 1);
  EXPECT_EQ(count_op(q, "add_scalar"), 0);
  EXPECT_NE(e.str().find("%" + std::to_string(a.id) +
                         " = exp: its value is read outside the group before the group's end "
                         "(by matmul)"),
            std::string::npos)
      << e.str();
  manual_seed(1);
  expect_same_step(p, q, {randn({4, 8})}, random_state(p, 2));
}

// s = exp(row) has the row's shape, not the group's: a kernel over [4, 8] cannot write it, so
// a reader of s outside the group stops it (without one it joins, broadcast inside the kernel).
TEST(FuseElementwise, AValueOfAnotherShapeReadOutsideStopsTheGroup) {
  for (bool read_outside : {true, false}) {
    Program p = program_with_graph();
    Graph& g = *p.graph;
    Val x = g.input(f32({4, 8}), "x");
    Val row = g.input(f32({8}), "row");
    Val s = exp(row);
    Val y = tanh(mul(x, s));
    p.returned = {sum(y).id};
    if (read_outside) p.returned.push_back(sum(s).id);
    Explain e;
    Program q = fuse_elementwise(p, e);
    ASSERT_EQ(fused_nodes(q), 1) << e.str();
    EXPECT_EQ(count_op(q, "exp"), read_outside ? 1 : 0) << e.str();
    if (read_outside)
      EXPECT_NE(e.str().find("is f32[8], not of the group's shape"), std::string::npos) << e.str();
    manual_seed(3);
    expect_same_step(p, q, {randn({4, 8}), randn({8})}, {});
  }
}

TEST(FuseElementwise, ReturnedValuesStayValues) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({4, 8}), "x");
  Val a = sigmoid(x * 3.0);  // returned: the group {mul_scalar, sigmoid} ends here
  Val b = neg(a);
  p.returned = {a.id, sum(b).id};
  Explain e;
  Program q = fuse_elementwise(p, e);
  // a stays a value between two groups: {mul_scalar, sigmoid} and {neg, sum}.
  EXPECT_EQ(fused_nodes(q), 2) << e.str();
  EXPECT_NE(e.str().find("mul_scalar, sigmoid (2 ops)"), std::string::npos) << e.str();
  EXPECT_NE(e.str().find("neg, sum (2 ops; sum of [4, 8]"), std::string::npos) << e.str();
  manual_seed(4);
  expect_same_step(p, q, {randn({4, 8})}, {});
}

// a = p * 2 is read by the root only after p was updated in place: fusing it would read the
// updated p. It stays out; without the update in between it joins.
TEST(FuseElementwise, AnInPlaceWriteInBetweenKeepsTheNodeOut) {
  for (bool update_between : {true, false}) {
    Program p = program_with_graph();
    Graph& g = *p.graph;
    Val w = state_parameter(p, f32({8}), "w");
    Val grad = g.input(f32({8}), "grad");
    Val a = w * 2.0;
    Val updated;
    if (update_between) updated = g.add(sgd_update_op(), {w, grad}, {{"lr", 0.5}})[0];
    Val c = exp(a);
    Val d = add(c, grad);
    if (!update_between) updated = g.add(sgd_update_op(), {w, grad}, {{"lr", 0.5}})[0];
    p.state[0].final_value = updated.id;
    p.returned = {d.id};
    Explain e;
    Program q = fuse_elementwise(p, e);
    EXPECT_EQ(count_op(q, "mul_scalar"), update_between ? 1 : 0) << e.str();
    EXPECT_EQ(fused_nodes(q), 1) << e.str();  // exp and add fuse either way
    if (update_between)
      EXPECT_NE(e.str().find("an in-place write to its input"), std::string::npos) << e.str();
    manual_seed(5);
    expect_same_step(p, q, {randn({8})}, random_state(p, 6));
  }
}

// a = exp(x) is written in place (an update) after b = a * 2 reads it. Before the root of
// tanh(b) + x, the fused node (standing at the root) would read the updated a: the group stops at
// the update, and {exp, mul_scalar} is a group of its own ending before it (a read after it by
// the update, so written too). After the root, a is a second output of one group and the update
// writes over it later.
TEST(FuseElementwise, AnInPlaceWriteOfAGroupValueBeforeTheRootSplitsTheGroup) {
  for (bool update_before_root : {true, false}) {
    Program p = program_with_graph();
    Graph& g = *p.graph;
    Val x = g.input(f32({8}), "x");
    Val a = exp(x);
    Val b = a * 2.0;
    Val updated;
    if (update_before_root) updated = g.add(sgd_update_op(), {a, x}, {{"lr", 0.5}})[0];
    Val c = tanh(b) + x;
    if (!update_before_root) updated = g.add(sgd_update_op(), {a, x}, {{"lr", 0.5}})[0];
    p.returned = {c.id, sum(updated).id};
    Explain e;
    Program q = fuse_elementwise(p, e);
    for (const char* op : {"exp", "mul_scalar", "tanh", "add"})
      EXPECT_EQ(count_op(q, op), 0) << op << "\n" << e.str();
    ASSERT_EQ(fused_nodes(q), update_before_root ? 2 : 1) << e.str();
    EXPECT_NE(e.str().find("exp, mul_scalar" + std::string(update_before_root ? " (2 ops)" : "")),
              std::string::npos)
        << e.str();
    EXPECT_NE(e.str().find("(2 outputs)"), std::string::npos) << e.str();
    // The update stands between the two groups, or after the one.
    std::vector<std::string> order;
    for (int32_t k = 0; k < q.graph->num_nodes(); ++k)
      if (q.graph->node(k).op->name == "fused" || q.graph->node(k).op->name == "test_sgd_update")
        order.push_back(q.graph->node(k).op->name);
    EXPECT_EQ(order, update_before_root
                         ? std::vector<std::string>({"fused", "test_sgd_update", "fused"})
                         : std::vector<std::string>({"fused", "test_sgd_update"}));
    manual_seed(6);
    const std::vector<Tensor> in = {randn({8})};
    expect_same_step(p, q, in, {});
    expect_same_planned_step(p, q, in, {});
  }
}

TEST(FuseElementwise, TheBackwardFusesAndTheMemoryPlanSeesFewerBuffers) {
  // relu(x w)^2 * 3 + 1, its gradient: mul_scalar, mul, relu_backward chains on both sides.
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({32, 64}), "x");
  Val w = state_parameter(p, f32({64, 64}), "w");
  Val h = relu(matmul(x, w));
  Val loss = mean(tanh(h * h * 3.0 + 1.0));
  Val dw = grad({loss}, {w})[0];
  Val updated = g.add(sgd_update_op(), {w, dw}, {{"lr", 0.1}})[0];
  p.state[0].final_value = updated.id;
  p.returned = {loss.id};
  Explain e;
  Program q = dead_code_elimination(fuse_elementwise(p, e), e);
  EXPECT_GE(fused_nodes(q), 2) << e.str();
  MemoryPlan before = plan_memory(p, output_allocations(p), e);
  MemoryPlan after = plan_memory(q, output_allocations(q), e);
  EXPECT_LT(after.buffers.size(), before.buffers.size());
  EXPECT_LT(after.naive_peak, before.naive_peak);
  EXPECT_LE(after.planned_peak, before.planned_peak);
  manual_seed(8);
  const std::vector<Tensor> in = {randn({32, 64})};
  const std::vector<Tensor> state = random_state(p, 9);
  expect_same_step(p, q, in, state);
  // Replayed from the plan's arena, as a compiled step does: a fused node's one allocation is
  // its planned output, so fusion adds no miss (the library's kernels miss where they allocate
  // more than their outputs, which output_allocations leaves out: a scalar op's 0-d operand).
  std::vector<Tensor> s1 = copies(state), s2 = copies(state);
  int64_t misses_before = 0, misses_after = 0;
  std::vector<Tensor> r1 = run_planned(p, before, in, s1, &misses_before);
  std::vector<Tensor> r2 = run_planned(q, after, in, s2, &misses_after);
  EXPECT_LE(misses_after, misses_before);
  expect_same(r1[0], r2[0]);
  expect_same(s1[0], s2[0]);
}

// An expanded operand is read through (the kernel broadcasts it), a transposed one is copied
// to the kernel's layout at run time, outside the plan's slots; float16 through casts.
TEST(FuseElementwise, ExpandedTransposedAndHalfPrecisionOperands) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({8, 16}), "x");
  Val xt = g.input(f32({16, 8}), "xt");
  Val b = g.input(f32({16}), "b");
  Val h = g.input(TensorType{{8, 16}, DType::Float16, {}}, "h");
  Val wide = expand(b, {8, 16});
  Val y = relu(add(x, wide) * 0.5);                           // b read through the expand
  Val z = exp(transpose(xt, 0, 1)) - 1.0;                     // a transposed operand
  Val u = to(mul(to(h, DType::Float32), y), DType::Float16);  // casts in and out
  p.returned = {sum(add(matmul(y, transpose(z, 0, 1)), 0.0)).id, u.id, z.id};
  Explain e;
  Program q = dead_code_elimination(fuse_elementwise(p, e), e);
  EXPECT_EQ(count_op(q, "expand"), 0) << e.str();
  // y (read by the matmul after u) is a second output of u's group; z's group is another, and
  // the returned sum of the matmul's result + 0 the third.
  EXPECT_EQ(count_op(q, "fused"), 3) << e.str();
  EXPECT_NE(e.str().find("(2 outputs)"), std::string::npos) << e.str();
  EXPECT_NE(e.str().find("(b) f32[16]"), std::string::npos) << e.str();
  manual_seed(12);
  const std::vector<Tensor> in = {randn({8, 16}), randn({16, 8}), randn({16}),
                                  randn({8, 16}).to(DType::Float16)};
  expect_same_step(p, q, in, {});
  Explain pe;
  const MemoryPlan plan = plan_memory(q, output_allocations(q), pe);
  int64_t misses = 0;
  std::vector<Tensor> planned = run_planned(q, plan, in, {}, &misses);
  std::vector<Tensor> plain = run_program(p, in, {});
  for (size_t i = 0; i < plain.size(); ++i) {
    ASSERT_EQ(planned[i].dtype(), plain[i].dtype());
    expect_same(planned[i].to(DType::Float32), plain[i].to(DType::Float32));
  }
}

// Random programs: DAGs of elementwise ops over broadcasting operands, some values returned or
// read by a matmul (whose result, through a second one, may feed the elementwise ops again), a
// parameter updated in place in the middle (nodes before it read the old values, after it the
// new). Fused, each equals the unfused program bit for bit, also replayed from its memory plan's
// arena.
TEST(FuseElementwise, RandomProgramsEqualUnfusedBitForBit) {
  std::mt19937 rng(2026);
  auto pick = [&](size_t n) { return size_t(rng() % n); };
  int fused_total = 0, bounded_by_updates = 0, several_outputs = 0, stopped_by_readers = 0;
  for (int trial = 0; trial < 30; ++trial) {
    Program p = program_with_graph();
    Graph& g = *p.graph;
    Val w = state_parameter(p, f32({4, 8}), "w");
    std::vector<Val> pool = {g.input(f32({4, 8}), "x"), g.input(f32({8}), "row"),
                             g.input(f32({4, 1}), "column"), w};
    const int nodes = 6 + int(pick(10)), update_at = int(pick(size_t(nodes)));
    Val updated;
    std::vector<Val> returned;
    for (int k = 0; k < nodes; ++k) {
      if (k == update_at) {
        updated = g.add(sgd_update_op(), {w, pool[0]}, {{"lr", 0.25}})[0];
        pool.push_back(updated);
      }
      const Val a = pool[pick(pool.size())], b = pool[pick(pool.size())];
      Val y;
      switch (pick(10)) {
        case 0:
          y = tanh(a);
          break;
        case 1:
          y = sigmoid(a);
          break;
        case 2:
          y = relu(a) * 0.5;
          break;
        case 3:
          y = add(a, b);
          break;
        case 4:
          y = mul(a, b);
          break;
        case 5:
          y = maximum(a, b);
          break;
        case 6:
          y = where(gt(a, 0.0), a, b);
          break;
        case 7:
          y = gelu(a, pick(2) ? "tanh" : "none");
          break;
        case 8:
          y = clamp(a, -0.5, 0.75);
          break;
        default:
          y = sub(exp(clamp(a, -2.0, 2.0)), b);
          break;
      }
      pool.push_back(y);
      if (pick(4) == 0) returned.push_back(y);
      if (pick(5) == 0 && y.shape() == Shape{4, 8})
        returned.push_back(matmul(y, transpose(w, 0, 1)));
      // A path out of the elementwise ops and back in (through two matmuls): a group must not
      // take in both ends, or the fused node would need the matmuls' result before computing it.
      if (pick(4) == 0 && y.shape() == Shape{4, 8})
        pool.push_back(matmul(matmul(y, transpose(w, 0, 1)), w));
    }
    if (!updated.defined()) updated = g.add(sgd_update_op(), {w, pool[0]}, {{"lr", 0.25}})[0];
    p.state[0].final_value = updated.id;
    returned.push_back(pool.back());
    for (const Val& v : returned) p.returned.push_back(sum(v).id);
    Explain e;
    Program q = dead_code_elimination(fuse_elementwise(dead_code_elimination(p, e), e), e);
    fused_total += count_op(q, "fused");
    // The update in the middle: a node stayed out of a group for it, or fused nodes stand on
    // both sides of it (a node reading w before it in a group of its own, not in a later one).
    bool fused_before = false, fused_after = false;
    for (int32_t k = 0, seen_update = 0; k < q.graph->num_nodes(); ++k) {
      const std::string& op = q.graph->node(k).op->name;
      seen_update += op == "test_sgd_update";
      if (op == "fused") (seen_update ? fused_after : fused_before) = true;
    }
    bounded_by_updates += e.str().find("an in-place write to its input") != std::string::npos ||
                          (fused_before && fused_after);
    several_outputs += e.str().find(" outputs)") != std::string::npos;
    stopped_by_readers += e.str().find("before the group's end (by matmul)") != std::string::npos;
    manual_seed(uint64_t(trial));
    const std::vector<Tensor> in = {randn({4, 8}), randn({8}), randn({4, 1})};
    const std::vector<Tensor> state = random_state(p, uint64_t(100 + trial));
    SCOPED_TRACE(p.str() + "\n" + e.str());
    expect_same_step(p, q, in, state);
    expect_same_planned_step(p, q, in, state);
  }
  EXPECT_GE(fused_total, 12);        // the programs do fuse
  EXPECT_GE(bounded_by_updates, 1);  // and the update in the middle bounds some groups
  EXPECT_GE(several_outputs, 2);     // values read after a group are written by it
  EXPECT_GE(stopped_by_readers, 1);  // and a path back into a group through a matmul stops it
}

TEST(FuseElementwise, DisabledLeavesTheProgramAndSaysWhy) {
  ScopedEnv off("EMBER_FUSION", "0");
  Chain c;
  Explain e;
  Program q = fuse_elementwise(c.p, e);
  EXPECT_EQ(fused_nodes(q), 0);
  EXPECT_EQ(q.graph->num_nodes(), c.p.graph->num_nodes());
  EXPECT_NE(e.str().find("EMBER_FUSION=0"), std::string::npos) << e.str();
}

TEST(FuseElementwise, NoCompilerLeavesTheProgramAndSaysWhy) {
  ScopedEnv cxx("EMBER_CXX", "/nonexistent/c++");
  ScopedEnv cache("EMBER_CACHE_DIR", ::testing::TempDir() + "/ember-fuse-no-compiler");
  jit::forget_loaded_kernels();
  Chain c;
  Explain e;
  Program q;
  ASSERT_NO_THROW(q = fuse_elementwise(c.p, e));
  jit::forget_loaded_kernels();
  EXPECT_EQ(fused_nodes(q), 0);
  EXPECT_NE(e.str().find("could not be built"), std::string::npos) << e.str();
  EXPECT_NE(e.str().find("/nonexistent/c++"), std::string::npos) << e.str();
  expect_same_step(c.p, q, c.inputs(), random_state(c.p, 3));
}

// ---- a reduction over the innermost dims ends a group ----

// exp(x - c) * w summed over each row (softmax's denominator, weighted), the mean square of
// x - t over every element, and the amax of |x| over the last dim kept: each a group of its
// chain and its reduction, whose values equal the unfused program's bit for bit (the kernel folds
// in the library's order). e is read after the group too: written beside the sum.
TEST(FuseElementwise, AReductionOverTheInnermostDimsEndsTheGroup) {
  Program p;
  p.graph = std::make_unique<Graph>();
  Graph& g = *p.graph;
  Val x = g.input(f32({6, 2500}), "x");
  Val c = g.input(f32({6, 1}), "c");
  Val w = g.input(f32({2500}), "w");
  Val t = g.input(f32({6, 2500}), "t");
  Val e = exp(x - c) * w;
  Val s = sum(e, {-1});
  Val d = x - t;
  Val m = mean(d * d);
  Val a = amax(abs(x), {1}, true);
  Val after = e * 0.5;  // reads e after the sum's group: e is its second output
  p.returned = {s.id, m.id, a.id, sum(matmul(after, transpose(x, 0, 1))).id};
  Explain ex;
  Program q = fuse_elementwise(p, ex);
  const std::string text = ex.str();
  EXPECT_EQ(count_op(q, "fused"), 3) << text;  // e * 0.5 is a group of one op: left alone
  EXPECT_NE(text.find("sub, exp, mul, sum (4 ops; sum of [6, 2500] over its innermost 1 dims "
                      "fused)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(2 outputs)"), std::string::npos) << text;
  EXPECT_NE(text.find("sub, mul, mean (3 ops; mean of [6, 2500] over its innermost 2 dims"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("abs, amax (2 ops; amax of [6, 2500] over its innermost 1 dims (keepdim)"),
            std::string::npos)
      << text;
  for (const char* op : {"exp", "mean", "amax", "abs"}) EXPECT_EQ(count_op(q, op), 0) << op;
  for (int32_t k = 0; k < q.graph->num_nodes(); ++k)
    if (q.graph->node(k).op->name == "fused" &&
        q.graph->value(q.graph->node(k).outputs[0]).type.shape == Shape{6})
      EXPECT_EQ(q.graph->node(k).outputs.size(), 2u);
  manual_seed(21);
  const std::vector<Tensor> in = {randn({6, 2500}), randn({6, 1}), randn({2500}), randn({6, 2500})};
  expect_same_step(p, q, in, {});
  expect_same_planned_step(p, q, in, {});
}

// explain() says why each reduction stayed out: outer dims, an integer sum (into int64), a 0-d
// value, an input no group computes. (amax of no elements never reaches a program: its type
// rule refuses it.)
TEST(FuseElementwise, ReductionsThatCannotEndAGroupSayWhy) {
  Program p;
  p.graph = std::make_unique<Graph>();
  Graph& g = *p.graph;
  Val x = g.input(f32({4, 8}), "x");
  Val n = g.input(TensorType{{4, 8}, DType::Int32, {}}, "n");
  Val z = g.input(f32({}), "z");
  Val w = state_parameter(p, f32({8, 8}), "w");
  Val outer = sum(exp(x) * 2.0, {0});           // dims [0] of [4, 8]
  Val ints = sum(abs(n) + n, {-1});             // int32 sums into int64
  Val scalar = amax(exp(z) + 1.0);              // a 0-d value
  Val after_matmul = mean(matmul(x, w), {-1});  // its input is a matmul's
  p.returned = {outer.id, ints.id, scalar.id, after_matmul.id};
  Explain ex;
  Program q = fuse_elementwise(p, ex);
  const std::string text = ex.str();
  EXPECT_NE(text.find("= sum: it reduces dims [0] of f32[4,8], not the innermost ones"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("= sum: it reduces int32 into int64"), std::string::npos) << text;
  EXPECT_NE(text.find("= amax: it reduces a 0-d value"), std::string::npos) << text;
  EXPECT_NE(text.find("= mean: its input %"), std::string::npos) << text;
  EXPECT_NE(text.find("joins no group: its own tuned kernel"), std::string::npos) << text;
  EXPECT_EQ(count_op(q, "sum"), 2) << text;
  EXPECT_EQ(count_op(q, "amax"), 1) << text;
  EXPECT_EQ(count_op(q, "mean"), 1) << text;
  // The chains before them still fuse among themselves.
  EXPECT_EQ(count_op(q, "fused"), 3) << text;
}

// sum_to, a broadcast's gradient, ends a group where it sums innermost dims: [6, 16] to [6, 1]
// (keepdim) and to [] (every dim); to [16] it sums the outer dim and stays out, saying so.
TEST(FuseElementwise, SumToOverInnermostDimsEndsAGroup) {
  Program p;
  p.graph = std::make_unique<Graph>();
  Graph& g = *p.graph;
  Val x = g.input(f32({6, 2100}), "x");
  Val rows = sum_to(exp(x) * 2.0, {6, 1});
  Val all = sum_to(tanh(x) + 1.0, {});
  Val columns = sum_to(sigmoid(x) * 3.0, {2100});
  p.returned = {rows.id, all.id, columns.id};
  Explain ex;
  Program q = fuse_elementwise(p, ex);
  const std::string text = ex.str();
  EXPECT_NE(text.find("exp, mul_scalar, sum_to (3 ops; sum of [6, 2100] over its innermost 1 "
                      "dims (keepdim) fused)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("tanh, add_scalar, sum_to (3 ops; sum of [6, 2100] over its innermost 2 "
                      "dims fused)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("= sum_to: it sums f32[6,2100] to [2100], not over the innermost dims"),
            std::string::npos)
      << text;
  EXPECT_EQ(count_op(q, "sum_to"), 1) << text;
  manual_seed(23);
  expect_same_step(p, q, {randn({6, 2100})}, {});
}

// ---- compiled steps with fusion on and off, against eager ----

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), size_t(x.nbytes())) == 0;
}

// Linear, a residual GELU/tanh chain, linear, cross entropy, AdamW: elementwise chains in the
// forward and in the backward.
struct Net {
  std::vector<Variable> params;
  std::unique_ptr<optim::Optimizer> opt;
  explicit Net(uint64_t seed) {
    manual_seed(seed);
    for (const Shape& s : std::vector<Shape>{{32, 12}, {32}, {5, 32}, {5}})
      params.emplace_back(randn(s) * 0.3, true);
    opt = std::make_unique<optim::AdamW>(params, optim::Options{{"lr", 0.01}});
  }
  std::vector<Variable> step(const std::vector<Variable>& in) {
    opt->zero_grad();
    Variable h = linear(in[0], params[0], params[1]);
    Variable r = gelu(h * 0.5 + 1.0) * sigmoid(h) + tanh(h);
    Variable l = cross_entropy(linear(r, params[2], params[3]), in[1]);
    l.backward();
    opt->step();
    return {l};
  }
};

TEST(CompileFused, ManyStepsEqualEagerAndUnfusedBitForBit) {
  Net eager(11), fused(11), unfused(11);
  CompiledStep fused_step([&](const std::vector<Variable>& in) { return fused.step(in); });
  CompileOptions off;
  off.fuse = false;
  CompiledStep unfused_step([&](const std::vector<Variable>& in) { return unfused.step(in); }, off);
  for (int64_t i = 0; i < 12; ++i) {
    manual_seed(300 + uint64_t(i));
    const std::vector<Variable> in = {Variable(randn({9, 12})), Variable(randint(0, 5, {9}))};
    const Tensor want = eager.step(in)[0].data();
    ASSERT_TRUE(same_bits(want, fused_step(in)[0].data())) << "loss at step " << i;
    ASSERT_TRUE(same_bits(want, unfused_step(in)[0].data())) << "loss at step " << i;
  }
  for (size_t p = 0; p < eager.params.size(); ++p) {
    EXPECT_TRUE(same_bits(eager.params[p].data(), fused.params[p].data())) << p;
    EXPECT_TRUE(same_bits(eager.params[p].grad().data(), fused.params[p].grad().data())) << p;
  }
  EXPECT_EQ(fused_step.replays(), 10);
  ASSERT_GE(fused_step.fused_groups(), 2) << fused_step.explain();
  // The forward's values the backward reads are outputs of the forward's group.
  EXPECT_NE(fused_step.explain().find(" outputs)"), std::string::npos) << fused_step.explain();
  EXPECT_EQ(unfused_step.fused_groups(), 0);
  EXPECT_NE(fused_step.explain().find("== fusion ==\n  group 0:"), std::string::npos);
  EXPECT_NE(unfused_step.explain().find("off (CompileOptions::fuse)"), std::string::npos);
  EXPECT_NE(fused_step.source(0).find("ember_fused"), std::string::npos);
  EXPECT_THROW(fused_step.source(fused_step.fused_groups()), ValueError);
  // The fused step's arena is no larger than the unfused one's.
  const std::string arena = "arena of ";
  auto arena_bytes = [&](const std::string& text) {
    const size_t at = text.find(arena);
    return std::stoll(text.substr(at + arena.size()));
  };
  EXPECT_LE(arena_bytes(fused_step.explain()), arena_bytes(unfused_step.explain()));
}

}  // namespace
}  // namespace ember::autodiff::compile::test
