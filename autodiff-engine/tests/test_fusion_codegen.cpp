// test_fusion_codegen.cpp — fused kernels against the same ops run unfused by the library's
// kernels: random chains over random broadcastable, non-contiguous inputs of every dtype (bit for
// bit: the same arithmetic, and on the CPU a reduction folds in the library's order; more of
// those in test_fusion_reduction.cpp), layouts at
// the edges (0-d, empty, size 1, large), the fallbacks, the builder's errors, and NVRTC compiling
// every kind of generated kernel for sm_80 and sm_90 without a GPU.
#include <gtest/gtest.h>

#include "ember/autodiff/compile/codegen.h"
#include "ember/jit.h"
#include "fused_kernel_test.h"
#include "random_group.h"

namespace ember::test {
namespace {

using autodiff::compile::FusedRun;
using autodiff::compile::render;
using autodiff::compile::run_fused;
using autodiff::compile::run_unfused;
using autodiff::compile::Target;

std::string describe(const autodiff::compile::FusionGroup& g, const FusedRun& run) {
  return g.str() + (run.fused ? "" : "(ran unfused: " + run.reason + ")");
}

// Random chains of 1 to max_ops of `ops`' ops, one for each seed in [first, last): the fused
// kernel's result equals the unfused ops', bit for bit.
void expect_random_chains_equal_unfused(OpSet ops, uint32_t first, uint32_t last, int max_ops) {
  for (uint32_t seed = first; seed < last; ++seed) {
    GroupMaker maker(seed);
    RandomGroup r = maker.make(ops, maker.uniform(1, max_ops));
    const FusedRun run = run_fused(r.group, r.inputs);
    ASSERT_TRUE(run.fused) << run.reason;
    expect_equal_bits(run.out, run_unfused(r.group, r.inputs),
                      "seed " + std::to_string(seed) + "\n" + describe(r.group, run));
  }
}

TEST_F(FusedKernelTest, RandomExactChainsEqualUnfusedBitForBit) {
  expect_random_chains_equal_unfused(OpSet::Exact, 0, 40, 8);
}

TEST_F(FusedKernelTest, RandomTranscendentalChainsEqualUnfusedBitForBit) {
  expect_random_chains_equal_unfused(OpSet::Transcendental, 100, 125, 6);
}

// A group writing several of its values (as the fusion pass makes one for values read outside
// it): every output equals the unfused op's value, broadcast to the group's shape, bit for bit.
TEST_F(FusedKernelTest, SeveralOutputsEqualUnfusedBitForBit) {
  int several = 0;
  for (uint32_t seed = 400; seed < 430; ++seed) {
    GroupMaker maker(seed);
    RandomGroup r =
        maker.make(seed % 2 ? OpSet::Exact : OpSet::Transcendental, maker.uniform(2, 8));
    const auto& nodes = r.group.nodes();
    const int last = int(nodes.size()) - 1;
    r.group.output(last);
    for (int k = 0; k < last; ++k)
      if (nodes[size_t(k)].op != FusedOp::Input && nodes[size_t(k)].op != FusedOp::Constant &&
          maker.coin())
        r.group.output(k);
    several += r.group.outputs().size() > 1;
    const FusedRun run = run_fused(r.group, r.inputs);
    ASSERT_TRUE(run.fused) << run.reason;
    const std::vector<Tensor> want = autodiff::compile::run_unfused_outputs(r.group, r.inputs);
    ASSERT_EQ(run.outs.size(), r.group.outputs().size());
    ASSERT_EQ(want.size(), run.outs.size());
    for (size_t o = 0; o < want.size(); ++o)
      expect_equal_bits(run.outs[o], want[o],
                        "seed " + std::to_string(seed) + ", output " + std::to_string(o) + "\n" +
                            describe(r.group, run));
  }
  EXPECT_GE(several, 10);
}

TEST_F(FusedKernelTest, RandomChainsEndingInAReduction) {
  const std::vector<FusedReduction> reductions{FusedReduction::Sum, FusedReduction::Mean,
                                               FusedReduction::Max};
  for (uint32_t seed = 200; seed < 230; ++seed) {
    GroupMaker maker(seed);
    RandomGroup r = maker.make(OpSet::Transcendental, maker.uniform(0, 4));
    if (r.group.shape().empty()) continue;  // nothing to reduce over
    const int dims = maker.uniform(1, int(r.group.shape().size()));
    r.group.reduce(maker.pick(reductions), dims, maker.coin());
    const FusedRun run = run_fused(r.group, r.inputs);
    ASSERT_TRUE(run.fused) << run.reason;
    // The CPU kernel folds in the library's order: the same bits.
    expect_equal_bits(run.out, run_unfused(r.group, r.inputs),
                      "seed " + std::to_string(seed) + "\n" + describe(r.group, run));
  }
}

// x * 2 + y over the layouts at the edges.
TEST_F(FusedKernelTest, EdgeLayouts) {
  GroupMaker maker(7);
  for (const Shape& shape :
       std::vector<Shape>{{}, {0}, {3, 0, 2}, {1}, {1, 1, 1}, {7}, {(1 << 20) + 3}, {1023, 1025}}) {
    autodiff::compile::FusionGroup g(shape);
    Tensor x = maker.values(shape, DType::Float32);
    Tensor y = maker.values(shape.empty() ? Shape{} : Shape{shape.back()}, DType::Float32);
    const int a = g.input(x.shape(), x.strides(), DType::Float32);
    const int b = g.input(y.shape(), y.strides(), DType::Float32);
    g.binary(FusedOp::Add, g.binary(FusedOp::Mul, a, g.constant(2, DType::Float32)), b);
    const FusedRun run = run_fused(g, {x, y});
    ASSERT_TRUE(run.fused) << run.reason;
    expect_equal_bits(run.out, run_unfused(g, {x, y}), "shape " + shape_str(shape));
  }
}

TEST_F(FusedKernelTest, ReductionOfEmptyRowsAndWideRows) {
  GroupMaker maker(8);
  for (const Shape& shape : std::vector<Shape>{{4, 0}, {3, 1}, {2, 5, 3}, {5, 1000}, {2, 3, 77}}) {
    for (FusedReduction red : {FusedReduction::Sum, FusedReduction::Mean}) {
      autodiff::compile::FusionGroup g(shape);
      Tensor x = maker.values(shape, DType::Float64);
      g.unary(FusedOp::Neg, g.input(x.shape(), x.strides(), DType::Float64));
      g.reduce(red, 1);
      const FusedRun run = run_fused(g, {x});
      ASSERT_TRUE(run.fused) << run.reason;
      expect_equal_bits(run.out, run_unfused(g, {x}), g.str());
    }
  }
}

TEST_F(FusedKernelTest, DisabledRunsUnfusedWithTheReason) {
  ScopedEnv off("EMBER_FUSION", "0");
  GroupMaker maker(9);
  RandomGroup r = maker.make(OpSet::Exact, 4);
  const FusedRun run = run_fused(r.group, r.inputs);
  EXPECT_FALSE(run.fused);
  EXPECT_NE(run.reason.find("EMBER_FUSION=0"), std::string::npos) << run.reason;
  expect_equal_bits(run.out, run_unfused(r.group, r.inputs), r.group.str());
}

TEST_F(FusedKernelTest, NoCompilerRunsUnfusedWithTheReason) {
  ScopedEnv cxx("EMBER_CXX", "/nonexistent");
  jit::forget_loaded_kernels();
  GroupMaker maker(10);
  RandomGroup r = maker.make(OpSet::Exact, 3);
  FusedRun run;
  ASSERT_NO_THROW(run = run_fused(r.group, r.inputs));
  EXPECT_FALSE(run.fused);
  EXPECT_NE(run.reason.find("/nonexistent"), std::string::npos) << run.reason;
  expect_equal_bits(run.out, run_unfused(r.group, r.inputs), r.group.str());
}

TEST_F(FusedKernelTest, SecondRunOfAGroupComesFromTheCache) {
  GroupMaker maker(11);
  RandomGroup r = maker.make(OpSet::Exact, 2);
  const FusedRun cold = run_fused(r.group, r.inputs);
  ASSERT_TRUE(cold.fused) << cold.reason;
  jit::forget_loaded_kernels();
  const FusedRun warm = run_fused(r.group, r.inputs);
  EXPECT_TRUE(warm.from_cache);
  expect_equal_bits(warm.out, cold.out, r.group.str());
}

TEST(FusionGroup, BuilderErrorsNameTheOpAndTheFix) {
  autodiff::compile::FusionGroup g({2, 3});
  const int i = g.input({2, 3}, {3, 1}, DType::Int32);
  const int f = g.input({3}, {1}, DType::Float32);
  EXPECT_THROW(g.unary(FusedOp::Exp, i), DTypeError);
  EXPECT_THROW(g.binary(FusedOp::Add, i, f), DTypeError);
  EXPECT_THROW(g.binary(FusedOp::Div, i, i), DTypeError);
  EXPECT_THROW(g.where(f, f, f), DTypeError);
  EXPECT_THROW(g.clamp(i, 0.5, 2), ValueError);
  EXPECT_THROW(g.input({4}, {1}, DType::Float32), ShapeError);
  EXPECT_THROW(g.input({2, 3}, {1}, DType::Float32), ShapeError);
  EXPECT_THROW(g.unary(FusedOp::Neg, 17), IndexError);
  try {
    g.unary(FusedOp::Exp, i);
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("exp"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("int32"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cast"), std::string::npos) << e.what();
  }
  g.unary(FusedOp::Exp, f);
  EXPECT_THROW(g.reduce(FusedReduction::Sum, 3), IndexError);
  g.reduce(FusedReduction::Sum, 2);
  EXPECT_EQ(g.out_shape(), Shape{});
  EXPECT_THROW(g.reduce(FusedReduction::Sum, 1), ValueError);

  autodiff::compile::FusionGroup ints({4});
  ints.unary(FusedOp::Abs, ints.input({4}, {1}, DType::Int64));
  EXPECT_THROW(ints.reduce(FusedReduction::Sum, 1), DTypeError);
}

TEST(FusionGroup, OutputsAreComputedValuesNamedOnce) {
  autodiff::compile::FusionGroup g({2, 3});
  const int x = g.input({2, 3}, {3, 1}, DType::Float32);
  const int c = g.constant(2.0, DType::Float32);
  const int y = g.binary(FusedOp::Mul, x, c);
  const int z = g.binary(FusedOp::Gt, y, x);
  EXPECT_EQ(g.outputs(), std::vector<int>{z});  // the last node unless named
  EXPECT_THROW(g.output(x), ValueError);
  EXPECT_THROW(g.output(c), ValueError);
  EXPECT_THROW(g.output(9), IndexError);
  g.output(z);
  g.output(y);
  EXPECT_THROW(g.output(y), ValueError);
  EXPECT_EQ(g.outputs(), (std::vector<int>{z, y}));
  EXPECT_EQ(g.out_dtype(), DType::Bool);
  EXPECT_EQ(g.output_dtype(1), DType::Float32);
  EXPECT_THROW(g.output_dtype(2), IndexError);
  EXPECT_NE(g.str().find("writes %3 %2"), std::string::npos) << g.str();
  // A reducing group writes its reduction first: the values beside it are named after reduce(),
  // the reduced value itself among them (unreduced), each once; no node comes after reduce().
  autodiff::compile::FusionGroup r({4});
  const int e = r.unary(FusedOp::Exp, r.input({4}, {1}, DType::Float32));
  r.unary(FusedOp::Neg, e);
  r.output(e);
  EXPECT_THROW(r.reduce(FusedReduction::Sum, 1), ValueError);
  autodiff::compile::FusionGroup s({4, 3});
  const int se = s.unary(FusedOp::Exp, s.input({4, 3}, {3, 1}, DType::Float32));
  const int sn = s.unary(FusedOp::Neg, se);
  s.reduce(FusedReduction::Sum, 1);
  EXPECT_THROW(s.unary(FusedOp::Neg, sn), ValueError);
  EXPECT_THROW(s.output(0), ValueError);  // an input
  s.output(sn);
  s.output(se);
  EXPECT_THROW(s.output(se), ValueError);
  EXPECT_EQ(s.outputs(), (std::vector<int>{sn, sn, se}));
  EXPECT_EQ(s.out_shape(), Shape{4});
  EXPECT_NE(s.str().find("writes %2 (reduced) %2 %1"), std::string::npos) << s.str();
}

// Each output gets its own pointer after the others and before the inputs, on both targets.
TEST(FusionGroup, SeveralOutputsRenderOneStoreEach) {
  autodiff::compile::FusionGroup g({8, 16});
  const int x = g.input({8, 16}, {16, 1}, DType::Float32);
  const int b = g.input({16}, {1}, DType::Float32);
  const int h = g.binary(FusedOp::Add, x, b);
  const int y = g.unary(FusedOp::Gelu, h);
  g.output(y);
  g.output(h);
  const std::string cpu = render(g, Target::Cpu).source;
  EXPECT_NE(cpu.find("float* __restrict__ out1 = (float*)data[1]"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("in0 = (const float*)data[2]"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("o1[j] = v2"), std::string::npos) << cpu;
  // The stores alias nothing: said to the compiler, which then vectorises without checking
  // every pair of pointers (it gives up past ten pairs).
  EXPECT_NE(cpu.find("E_INDEPENDENT\n    for (e_i64 j"), std::string::npos) << cpu;
  const std::string cuda = render(g, Target::Cuda).source;
  EXPECT_NE(cuda.find("out[item] = v3"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("out1[item] = v2"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("in1 = (const float*)p.data[3]"), std::string::npos) << cuda;
}

TEST(FusionGroup, InputsMustMatchTheGroup) {
  autodiff::compile::FusionGroup g({2, 3});
  g.unary(FusedOp::Neg, g.input({2, 3}, {3, 1}, DType::Float32));
  EXPECT_THROW(run_fused(g, {}), ValueError);
  EXPECT_THROW(run_fused(g, {zeros({2, 3}, DType::Float64)}), DTypeError);
  EXPECT_THROW(run_fused(g, {zeros({3, 2}).transpose(0, 1)}), ShapeError);
}

// The source holds the group's op names and numbers and nothing else: rendering twice gives the
// same text, and the kernel loops the merged dims (a contiguous [64, 128] is one loop of 8192).
TEST(FusionGroup, SourceIsDeterministicAndMergesContiguousDims) {
  autodiff::compile::FusionGroup g({64, 128});
  const int x = g.input({64, 128}, {128, 1}, DType::Float32);
  const int b = g.input({128}, {1}, DType::Float32);
  g.unary(FusedOp::Gelu, g.binary(FusedOp::Add, x, b));
  const auto cpu = render(g, Target::Cpu);
  EXPECT_EQ(cpu.source, render(g, Target::Cpu).source);
  EXPECT_EQ(cpu.items, 64 * 128);
  // The library's own vectorisable erf on the CPU (as its gelu kernel), CUDA's erff on the GPU.
  EXPECT_NE(cpu.source.find("e_verf("), std::string::npos);
  EXPECT_NE(cpu.source.find("extern \"C\" void ember_fused"), std::string::npos);
  autodiff::compile::FusionGroup flat({64, 128});
  flat.unary(FusedOp::Neg, flat.input({64, 128}, {128, 1}, DType::Float32));
  EXPECT_NE(render(flat, Target::Cpu).source.find("% 8192LL"), std::string::npos);
  const std::string cuda = render(g, Target::Cuda).source;
  EXPECT_NE(cuda.find("__global__"), std::string::npos);
  EXPECT_NE(cuda.find("erff("), std::string::npos);
}

// Every op, every dtype it takes, elementwise and reduced: the CUDA source compiles with NVRTC.
TEST(FusionNvrtc, GeneratedKernelsCompileForSm80AndSm90) {
  if (!jit::nvrtc_available())
    GTEST_SKIP() << "NVRTC is not built in (a build without CUDA): the generated CUDA kernels are "
                    "compiled by the CUDA build's tests";
  std::vector<std::string> sources;
  for (uint32_t seed = 300; seed < 312; ++seed) {
    GroupMaker maker(seed);
    RandomGroup r = maker.make(seed % 2 ? OpSet::Exact : OpSet::Transcendental, 8);
    if (seed % 3 == 0 && !r.group.shape().empty() && is_floating(r.group.out_dtype()))
      r.group.reduce(FusedReduction::Mean, 1);
    sources.push_back(render(r.group, Target::Cuda).source);
  }
  {  // several outputs of different dtypes
    autodiff::compile::FusionGroup g({6, 5});
    const int x = g.input({6, 5}, {5, 1}, DType::Float32);
    const int h = g.unary(FusedOp::Tanh, x);
    const int m = g.binary(FusedOp::Gt, h, x);
    g.output(g.cast(h, DType::BFloat16));
    g.output(m);
    g.output(h);
    sources.push_back(render(g, Target::Cuda).source);
  }
  for (DType t : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64})
    for (FusedReduction red : {FusedReduction::Sum, FusedReduction::Mean, FusedReduction::Max}) {
      // A reduction over two dims walked apart (a transposed input), its chain written beside.
      autodiff::compile::FusionGroup g({4, 6, 5});
      const int x = g.input({4, 6, 5}, {30, 1, 6}, t);
      const int h = g.unary(FusedOp::Tanh, g.binary(FusedOp::Mul, x, g.constant(0.5, t)));
      g.reduce(red, 2, red == FusedReduction::Mean);
      g.output(h);
      sources.push_back(render(g, Target::Cuda).source);
    }
  for (DType t : all_dtypes()) {  // every dtype loaded, converted and stored
    autodiff::compile::FusionGroup g({5, 3});
    const int x = g.input({5, 3}, {1, 5}, t);
    g.cast(g.cast(x, DType::Float16), t == DType::Float16 ? DType::BFloat16 : t);
    sources.push_back(render(g, Target::Cuda).source);
  }
  for (int sm : {80, 90})
    for (const std::string& source : sources) {
      const jit::CudaCompile built = jit::compile_cuda(source, sm);
      ASSERT_EQ(built.status, jit::Status::Ok) << "sm_" << sm << ": " << built.reason << "\n"
                                               << source;
    }
}

}  // namespace
}  // namespace ember::test
