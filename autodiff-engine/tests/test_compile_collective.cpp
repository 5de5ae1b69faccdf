// Compiler passes and collective nodes (OpDef::collective: a bucket's all_reduce_start and
// all_reduce_wait): never removed though nothing reads them, never merged though alike, never
// folded though their input is a constant, and left in their order. The ops never run here (no
// process group exists: running one would be a ValueError).
#include "compile_programs.h"

namespace ember::autodiff::compile::test {
namespace {

Attrs start_attrs() {
  return {{"group", int64_t(1000)},  // no such group: a pass that ran the op would throw
          {"bucket", int64_t(0)},
          {"parts", std::vector<int64_t>{1}},
          {"numels", std::vector<int64_t>{4}},
          {"dtype", int64_t(DType::Float32)},
          {"device", std::string("cpu")}};
}

// Two alike starts over exp of a constant, each with its wait, whose averages nothing reads.
Program two_buckets() {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({4}), "x");
  Val c = g.constant(ember::ones({4}));
  Val e = exp(c);
  for (int k = 0; k < 2; ++k) {
    Val flat = g.add(op_def("all_reduce_start"), {e}, start_attrs())[0];
    g.add(op_def("all_reduce_wait"), {flat},
          {{"bucket", int64_t(0)},
           {"numels", std::vector<int64_t>{4}},
           {"ndims", std::vector<int64_t>{1}},
           {"dims", std::vector<int64_t>{4}}});
  }
  p.returned = {sum(x).id};
  return p;
}

std::vector<std::string> ops_in_order(const Program& p) {
  std::vector<std::string> out;
  for (int32_t k = 0; k < p.graph->num_nodes(); ++k) {
    const std::string& name = p.graph->node(k).op->name;
    if (name.rfind("all_reduce", 0) == 0) out.push_back(name);
  }
  return out;
}

TEST(CompileCollective, PassesKeepCollectiveNodesAndTheirOrder) {
  Program p = two_buckets();
  Explain e;
  Program q = dead_code_elimination(p, e);
  q = common_subexpressions(q, e);
  q = fold_constants(q, e);
  q = dead_code_elimination(q, e);
  q = hoist_in_place_writes(q, e);
  q = reuse_in_place(q, e);
  const std::vector<std::string> want{"all_reduce_start", "all_reduce_wait", "all_reduce_start",
                                      "all_reduce_wait"};
  EXPECT_EQ(ops_in_order(q), want) << q.str();
  // exp of a constant is folded into one; the starts reading it then are not, though every
  // input they have is a constant.
  EXPECT_EQ(count_op(q, "exp"), 0);
  // No buffer is written over the flat buffer a wait reads.
  for (const auto& [out, in] : q.reuse)
    EXPECT_NE(q.graph->value(in).node >= 0 ? q.graph->node(q.graph->value(in).node).op->name
                                           : std::string(),
              "all_reduce_start");
}

TEST(CompileCollective, FusionLeavesCollectiveNodesOut) {
  Program p = two_buckets();
  Explain e;
  Program q = fuse_elementwise(p, e);
  EXPECT_EQ(count_op(q, "all_reduce_start"), 2);
  EXPECT_EQ(count_op(q, "all_reduce_wait"), 2);
}

}  // namespace
}  // namespace ember::autodiff::compile::test
