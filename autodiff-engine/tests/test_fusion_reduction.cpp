// test_fusion_reduction.cpp — fused groups ending in a sum, mean or amax over their innermost
// dims, against the same ops run unfused by the library's kernels. On the CPU the kernel folds
// each row in the order of the library's reduction, so the results are equal bit for bit: every
// floating dtype, non-contiguous and broadcast inputs, rows of 0, 1, odd, 2048 +- 1 and more
// elements (the library's blocks of pairwise sums), few long rows (its chunks), NaN and
// infinities, keepdim, and the elementwise values written beside the reduction. The CUDA source
// reduces a row per block (compiled by NVRTC in test_fusion_codegen.cpp).
#include <gtest/gtest.h>

#include <cmath>

#include "ember/autodiff/compile/codegen.h"
#include "ember/ops/creation.h"
#include "fused_kernel_test.h"
#include "random_group.h"

namespace ember::test {
namespace {

using autodiff::compile::FusedRun;
using autodiff::compile::FusionGroup;
using autodiff::compile::render;
using autodiff::compile::run_fused;
using autodiff::compile::run_unfused_outputs;
using autodiff::compile::Target;

class FusedReductionTest : public FusedKernelTest {};

const std::vector<DType> kFloats{DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};
const std::vector<FusedReduction> kReductions{FusedReduction::Sum, FusedReduction::Mean,
                                              FusedReduction::Max};

// A chain of 1 to 3 ops over x and y (each laid out at random: strided, transposed, or
// broadcast), some of them making NaN, infinities or signed zeros (log of 0, sqrt of a negative,
// division by 0), reduced over the innermost `dims` dims; `beside`: the chain's values are
// written too.
RandomGroup reduction_group(GroupMaker& maker, const Shape& shape, DType t, FusedReduction red,
                            int dims, bool keepdim, bool beside) {
  RandomGroup r;
  r.group = FusionGroup(shape);
  FusionGroup& g = r.group;
  Shape declared;
  for (int i = 0; i < 2; ++i) {
    Tensor v = maker.input(shape, t, declared);
    r.inputs.push_back(v);
    g.input(v.shape(), v.strides(), t);
  }
  int last = 0;
  std::vector<int> values;
  const int ops = maker.uniform(1, 3);
  for (int k = 0; k < ops; ++k) {
    switch (maker.uniform(0, 7)) {
      case 0:
        last = g.binary(FusedOp::Mul, last, 1);
        break;
      case 1:
        last = g.binary(FusedOp::Sub, g.unary(FusedOp::Exp, last), 1);
        break;
      case 2:
        last = g.binary(FusedOp::Add, g.unary(FusedOp::Tanh, last), 1);
        break;
      case 3:
        last = g.unary(FusedOp::Log, g.unary(FusedOp::Abs, last));  // -inf at 0
        break;
      case 4:
        last = g.unary(FusedOp::Sqrt, last);  // NaN below 0
        break;
      case 5:
        last = g.binary(FusedOp::Div, last, 1);  // +-inf, NaN where y is 0
        break;
      case 6:
        last = g.binary(FusedOp::Mul, g.unary(FusedOp::Sigmoid, last), 1);
        break;
      default:
        last = g.unary(FusedOp::Neg, last);
        break;
    }
    values.push_back(last);
  }
  g.reduce(red, dims, keepdim);
  if (beside) {
    g.output(values.back());
    if (values.size() > 1) g.output(values.front());
  }
  return r;
}

void expect_fused_equals_unfused(const RandomGroup& r, const std::string& what) {
  const FusedRun run = run_fused(r.group, r.inputs);
  ASSERT_TRUE(run.fused) << run.reason;
  const std::vector<Tensor> want = run_unfused_outputs(r.group, r.inputs);
  ASSERT_EQ(run.outs.size(), want.size());
  for (size_t o = 0; o < want.size(); ++o)
    expect_equal_bits(run.outs[o], want[o],
                      what + ", output " + std::to_string(o) + "\n" + r.group.str());
}

// Rows at the edges of the library's order: empty, one element, fewer than its lanes, odd,
// around its 2048-element (float) and 1024-element (double) blocks, several blocks with a tail,
// and fewer than 8 rows of at least 2^16 elements (cut into the chunks its threads take). Each
// shape runs three (dtype, reduction) pairs, all twelve over the shapes; the reduced dims, keepdim
// and the values written beside are random.
TEST_F(FusedReductionTest, RowsAtTheEdgesEqualUnfusedBitForBit) {
  const std::vector<Shape> shapes{{5, 0},    {3, 1},     {4, 7},        {2, 3, 33},
                                  {3, 2047}, {2, 2048},  {3, 2049},     {2, 5, 1000},
                                  {2, 6151}, {1, 70001}, {3, 41, 1601}, {1 << 18}};
  int case_number = 0, beside = 0;
  for (size_t s = 0; s < shapes.size(); ++s) {
    GroupMaker maker(uint32_t(500 + s));
    const Shape& shape = shapes[s];
    for (int k = 0; k < 3; ++k, ++case_number) {
      const DType t = kFloats[size_t(case_number) % 4];
      FusedReduction red = kReductions[size_t(case_number / 4) % 3];
      // amax of no elements has no value: the builder refuses it (below); sum there instead.
      if (red == FusedReduction::Max && shape_numel(shape) == 0) red = FusedReduction::Sum;
      // The innermost dim always, outer ones at random (all of a 1-d shape).
      const int dims = maker.uniform(1, int(shape.size()));
      const bool keepdim = maker.coin(), written = maker.coin();
      beside += written;
      const RandomGroup r = reduction_group(maker, shape, t, red, dims, keepdim, written);
      expect_fused_equals_unfused(r, "shape " + shape_str(shape) + ", " + dtype_name(t) + ", " +
                                         autodiff::compile::fused_reduction_name(red) + " of " +
                                         std::to_string(dims) + " dims");
    }
  }
  EXPECT_GE(beside, 8);
}

// Random small groups (GroupMaker's shapes and layouts), reduced over random innermost dims.
TEST_F(FusedReductionTest, RandomChainsEqualUnfusedBitForBit) {
  for (uint32_t seed = 600; seed < 630; ++seed) {
    GroupMaker maker(seed);
    RandomGroup r = maker.make(OpSet::Transcendental, maker.uniform(0, 4));
    if (r.group.shape().empty()) continue;  // nothing to reduce over
    const int dims = maker.uniform(1, int(r.group.shape().size()));
    r.group.reduce(maker.pick(kReductions), dims, maker.coin());
    if (r.group.nodes().back().op != FusedOp::Input && maker.coin())
      r.group.output(int(r.group.nodes().size()) - 1);
    expect_fused_equals_unfused(r, "seed " + std::to_string(seed));
  }
}

// The library's results where a row holds nothing or NaN: a sum of nothing is 0, a mean NaN;
// amax keeps NaN; amax of nothing is refused when the group is built.
TEST_F(FusedReductionTest, EmptyRowsAndNaN) {
  for (DType t : kFloats) {
    FusionGroup sum({3, 0}), mean({3, 0});
    for (FusionGroup* g : {&sum, &mean}) g->unary(FusedOp::Neg, g->input({3, 0}, {1, 1}, t));
    sum.reduce(FusedReduction::Sum, 1);
    mean.reduce(FusedReduction::Mean, 1);
    const Tensor x = zeros({3, 0}, t);
    const Tensor s = run_fused(sum, {x}).out.to(DType::Float64);
    const Tensor m = run_fused(mean, {x}).out.to(DType::Float64);
    for (int64_t i = 0; i < 3; ++i) {
      EXPECT_EQ(s.data<double>()[i], 0.0) << dtype_name(t);
      EXPECT_TRUE(std::isnan(m.data<double>()[i])) << dtype_name(t);
    }
    FusionGroup none({3, 0});
    none.unary(FusedOp::Neg, none.input({3, 0}, {1, 1}, t));
    EXPECT_THROW(none.reduce(FusedReduction::Max, 1), ValueError);

    FusionGroup max({2, 5});
    max.unary(FusedOp::Sqrt, max.input({2, 5}, {5, 1}, t));
    max.reduce(FusedReduction::Max, 1);
    const Tensor v =
        Tensor::from_vector(std::vector<double>{1, 4, -1, 9, 0, 1, 4, 16, 0, 2}, {2, 5}).to(t);
    const Tensor got = run_fused(max, {v}).out.to(DType::Float64);
    EXPECT_TRUE(std::isnan(got.data<double>()[0])) << dtype_name(t);  // sqrt(-1) in row 0
    EXPECT_EQ(got.data<double>()[1], 4.0) << dtype_name(t);
  }
}

// The CPU source folds as the library: 32 float lanes in blocks of 2048, 16 double lanes in
// blocks of 1024; the CUDA source reduces each row in one block (a warp shuffle, then shared
// memory across the warps) and is launched with a block per row.
TEST(FusedReductionSource, CpuFoldsAsTheLibraryCudaABlockPerRow) {
  for (DType t : {DType::Float32, DType::Float64}) {
    FusionGroup g({64, 300});
    const int x = g.input({64, 300}, {300, 1}, t);
    const int e = g.unary(FusedOp::Exp, x);
    g.reduce(FusedReduction::Sum, 1);
    g.output(e);
    const auto cpu = render(g, Target::Cpu);
    EXPECT_EQ(cpu.items, 64);
    const bool f64 = t == DType::Float64;
    EXPECT_NE(cpu.source.find(f64 ? "lane[16]" : "lane[32]"), std::string::npos) << cpu.source;
    EXPECT_NE(cpu.source.find(f64 ? "n <= 1024LL" : "n <= 2048LL"), std::string::npos)
        << cpu.source;
    EXPECT_NE(cpu.source.find("out1[item * 300LL + j] = "), std::string::npos) << cpu.source;
    const auto cuda = render(g, Target::Cuda);
    EXPECT_EQ(cuda.items, 64 * 256);
    for (const char* piece : {"__shfl_down_sync", "__shared__", "item += gridDim.x",
                              "j += blockDim.x", "out1[item * 300LL + j] = "})
      EXPECT_NE(cuda.source.find(piece), std::string::npos) << piece << "\n" << cuda.source;
  }
}

}  // namespace
}  // namespace ember::test
