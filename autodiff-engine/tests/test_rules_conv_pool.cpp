// The gradient rules of conv2d, the pooling ops and every one of their backward ops against
// float64 finite differences (first and second order), with strides, padding, dilation, groups,
// "same" padding and ceil_mode; a Hessian-vector product through conv2d; the shape rules against
// core-runtime's results; and the error messages of bad input.
#include <gtest/gtest.h>

#include "ember/autodiff/autodiff.h"
#include "ember/ops/conv_pool.h"
#include "expect_error.h"
#include "gradcheck.h"

namespace ad = ember::autodiff;
using ember::Padding2;
using ember::Shape;
using ember::Size2;
using ember::Tensor;
using gradcheck::random;
using Vars = std::vector<ad::Variable>;

namespace {

struct ConvCase {
  const char* name;
  Shape x, w;
  Size2 stride;
  Padding2 padding;
  Size2 dilation;
  int64_t groups;
};

// N = 2, C = 2, H = W = 5, kernels 3 unless the case needs otherwise.
std::vector<ConvCase> conv_cases() {
  return {
      {"plain", {2, 2, 5, 5}, {3, 2, 3, 3}, 1, 0, 1, 1},
      {"stride 2, padding 1", {2, 2, 5, 5}, {3, 2, 3, 3}, 2, 1, 1, 1},
      {"stride (2, 1), padding (0, 2)", {2, 2, 5, 6}, {2, 2, 3, 2}, {2, 1}, {0, 2}, 1, 1},
      {"dilation 2", {2, 2, 5, 5}, {2, 2, 2, 2}, 1, 1, 2, 1},
      {"groups 2", {2, 4, 5, 5}, {4, 2, 3, 3}, 1, 1, 1, 2},
      {"same", {2, 2, 5, 5}, {3, 2, 3, 3}, 1, "same", 1, 1},
      {"same, even kernel (extra padding at the bottom/right)",
       {2, 2, 5, 5},
       {2, 2, 2, 4},
       1,
       "same",
       1,
       1},
      {"valid", {2, 2, 5, 5}, {2, 2, 3, 3}, 1, "valid", 1, 1},
  };
}

Shape conv_out(const ConvCase& c) {
  return ember::conv2d(random(c.x, 0), random(c.w, 0), Tensor(), c.stride, c.padding, c.dilation,
                       c.groups)
      .shape();
}

#define EXPECT_HAS(text, part) \
  EXPECT_NE(std::string(text).find(part), std::string::npos) << "in: " << (text)

}  // namespace

// ---- convolution ----

TEST(ConvPoolConv2d, WithBias) {
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(c.name);
    gradcheck::check_rule(
        [&](const Vars& v) {
          return ad::conv2d(v[0], v[1], v[2], c.stride, c.padding, c.dilation, c.groups);
        },
        {random(c.x, 1), random(c.w, 2), random({c.w[0]}, 3)});
  }
}

TEST(ConvPoolConv2d, WithoutBiasNonContiguous) {
  // x [2, 2, 5, 5] made as [2, 5, 5, 2] and permuted; weight [3, 2, 3, 3] as a transposed view.
  Tensor x = random({2, 5, 5, 2}, 4).permute({0, 3, 1, 2});
  Tensor w = random({3, 2, 3, 3}, 5).transpose(2, 3);
  ASSERT_FALSE(x.is_contiguous());
  ASSERT_FALSE(w.is_contiguous());
  gradcheck::check_rule([](const Vars& v) { return ad::conv2d(v[0], v[1], ad::Variable(), 2, 1); },
                        {x, w});
}

TEST(ConvPoolConv2d, BackwardInputAsAFunction) {
  // conv2d_backward_input(g, w) on its own: its rule (conv2d in g, conv2d_backward_weight in w)
  // and, at second order, the rules of those.
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(c.name);
    gradcheck::check_rule(
        [&](const Vars& v) {
          return ad::conv2d_backward_input(v[0], v[1], c.x, c.stride, c.padding, c.dilation,
                                           c.groups);
        },
        {random(conv_out(c), 6), random(c.w, 7)});
  }
}

TEST(ConvPoolConv2d, BackwardWeightAsAFunction) {
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(c.name);
    gradcheck::check_rule(
        [&](const Vars& v) {
          return ad::conv2d_backward_weight(v[0], v[1], c.w, c.stride, c.padding, c.dilation,
                                            c.groups);
        },
        {random(conv_out(c), 8), random(c.x, 9)});
  }
}

TEST(ConvPoolConv2d, BackwardOpsNonContiguous) {
  Tensor g = random({2, 3, 3, 3}, 10).transpose(2, 3);
  Tensor x = random({2, 5, 5, 2}, 11).permute({0, 3, 1, 2});
  Tensor w = random({3, 2, 3, 3}, 12).transpose(2, 3);
  gradcheck::check_rule(
      [](const Vars& v) {
        return ad::conv2d_backward_input(v[0], v[1], {2, 2, 5, 5}, 2, 1);
      },
      {g, w});
  gradcheck::check_rule(
      [](const Vars& v) {
        return ad::conv2d_backward_weight(v[0], v[1], {3, 2, 3, 3}, 2, 1);
      },
      {g, x});
}

TEST(ConvPoolConv2d, HessianVectorProduct) {
  // L(w) = sum(tanh(conv2d(x, w, stride 2, padding 1))^2); H v by differentiating <dL/dw, v>,
  // against central differences of dL/dw along v.
  const Tensor x = random({2, 2, 5, 5}, 13), w0 = random({3, 2, 3, 3}, 14);
  const Tensor v = random({3, 2, 3, 3}, 15);
  auto grad_at = [&](const Tensor& w_data, bool create) {
    ad::Variable w(w_data, true);
    ad::Variable t = ad::tanh(ad::conv2d(ad::Variable(x), w, ad::Variable(), 2, 1));
    ad::Variable g = ad::grad({ad::sum(t * t)}, {w}, {}, create, create)[0];
    return std::make_pair(w, g);
  };
  auto [w, g] = grad_at(w0, true);
  const Tensor hv = ad::grad({ad::sum(g * ad::Variable(v))}, {w})[0].data();
  const double eps = 1e-6;
  const Tensor plus = grad_at(ember::add(w0, ember::mul(v, eps)), false).second.data();
  const Tensor minus = grad_at(ember::sub(w0, ember::mul(v, eps)), false).second.data();
  const Tensor want = ember::mul(ember::sub(plus, minus), 1 / (2 * eps));
  const auto got_v = hv.to_vector<double>(), want_v = want.to_vector<double>();
  ASSERT_EQ(got_v.size(), want_v.size());
  double scale = 0;
  for (size_t i = 0; i < got_v.size(); ++i) {
    EXPECT_NEAR(got_v[i], want_v[i], 1e-5 + 1e-4 * std::abs(want_v[i])) << "element " << i;
    scale += std::abs(want_v[i]);
  }
  EXPECT_GT(scale, 1e-3);  // the Hessian is not trivially zero here
}

TEST(ConvPoolConv2d, InferMatchesCoreRuntime) {
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(c.name);
    ad::Graph g;
    ad::Val x = g.input({c.x, ember::DType::Float64});
    ad::Val w = g.input({c.w, ember::DType::Float64});
    ad::Val y = ad::conv2d(x, w, ad::Val(), c.stride, c.padding, c.dilation, c.groups);
    EXPECT_EQ(y.type(), (ad::TensorType{conv_out(c), ember::DType::Float64}));
  }
}

TEST(ConvPoolErrors, ChannelMismatch) {
  ad::Graph g;
  ad::Val x = g.input({{32, 3, 28, 28}, ember::DType::Float32});
  ad::Val w = g.input({{16, 1, 3, 3}, ember::DType::Float32});
  const std::string msg = error_of<ember::ShapeError>([&] { ad::conv2d(x, w); });
  EXPECT_HAS(msg, "conv2d");
  EXPECT_HAS(msg, "x is f32[32,3,28,28], weight is f32[16,1,3,3]");
  EXPECT_HAS(msg, "the input has 3 channels, but weight [16, 1, 3, 3] with groups 1 expects 1");
}

TEST(ConvPoolErrors, ThreeDimInput) {
  ad::Graph g;
  ad::Val x = g.input({{3, 28, 28}, ember::DType::Float32});
  ad::Val w = g.input({{16, 3, 3, 3}, ember::DType::Float32});
  const std::string msg = error_of<ember::ShapeError>([&] { ad::conv2d(x, w); });
  EXPECT_HAS(msg, "the input is [3, 28, 28], expected 4-D [N, C, H, W]");
  EXPECT_HAS(msg, "for one image use unsqueeze(0)");
}

TEST(ConvPoolErrors, BadArguments) {
  ad::Graph g;
  ad::Val x = g.input({{2, 4, 5, 5}, ember::DType::Float32});
  ad::Val w = g.input({{6, 2, 3, 3}, ember::DType::Float32});
  ad::Val b = g.input({{4}, ember::DType::Float32});
  ad::Val xd = g.input({{2, 4, 5, 5}, ember::DType::Float64});
  EXPECT_HAS(error_of<ember::ValueError>([&] { ad::conv2d(x, w, ad::Val(), 2, "same", 1, 2); }),
             "padding='same' needs stride 1");
  EXPECT_HAS(error_of<ember::ShapeError>([&] { ad::conv2d(x, w, b, 1, 0, 1, 2); }),
             "bias must be [6] (weight.shape[0])");
  EXPECT_HAS(error_of<ember::ShapeError>([&] { ad::conv2d(x, w, ad::Val(), 1, 0, 3, 2); }),
             "the kernel (7 x 7 with dilation) is larger than the padded input (5 x 5)");
  EXPECT_HAS(error_of<ember::DTypeError>([&] { ad::conv2d(xd, w, ad::Val(), 1, 0, 1, 2); }),
             "expected one floating dtype");
  ad::Val g_bad = g.input({{2, 6, 4, 4}, ember::DType::Float32});
  EXPECT_HAS(error_of<ember::ShapeError>([&] {
               ad::conv2d_backward_input(g_bad, w, {2, 4, 5, 5}, 1, 0, 1, 2);
             }),
             "grad must be [2, 6, 3, 3]");
}

// ---- pooling ----

struct PoolCase {
  const char* name;
  Size2 kernel, stride, padding, dilation;
  bool ceil_mode;
};

std::vector<PoolCase> pool_cases() {
  return {
      {"kernel 3", 3, 1, 0, 1, false},
      {"kernel 3, stride 2, padding 1", 3, 2, 1, 1, false},
      {"kernel 2, ceil_mode", 2, 2, 0, 1, true},
      {"kernel 3, stride 2, padding 1, ceil_mode", 3, 2, 1, 1, true},
      {"kernel (3, 2), stride (1, 2)", {3, 2}, {1, 2}, 0, 1, false},
      {"kernel 2, dilation 2", 2, 1, 0, 2, false},
  };
}

TEST(ConvPoolMaxPool, ValuesAndTheirSecondOrder) {
  // Random inputs have no ties within 1e-6, so the finite differences stay in one piece.
  for (const PoolCase& p : pool_cases()) {
    SCOPED_TRACE(p.name);
    gradcheck::check_rule(
        [&](const Vars& v) {
          return ad::max_pool2d(v[0], p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
        },
        {random({2, 2, 5, 5}, 20)});
  }
}

TEST(ConvPoolMaxPool, NonContiguousInput) {
  Tensor x = random({2, 5, 5, 2}, 21).permute({0, 3, 2, 1});
  gradcheck::check_rule([](const Vars& v) { return ad::max_pool2d(v[0], 3, 2, 1); }, {x});
}

TEST(ConvPoolMaxPool, BackwardAsAFunction) {
  // max_pool2d_backward(g, indices) on its own; indices pass through without a gradient.
  for (const PoolCase& p : pool_cases()) {
    SCOPED_TRACE(p.name);
    ember::MaxPoolResult r = ember::max_pool2d(random({2, 2, 5, 5}, 22), p.kernel, p.stride,
                                               p.padding, p.dilation, p.ceil_mode);
    gradcheck::check_rule(
        [](const Vars& v) {
          return ad::max_pool2d_backward(v[0], v[1], {2, 2, 5, 5});
        },
        {random(r.values.shape(), 23), r.indices});
  }
}

TEST(ConvPoolMaxPool, OffsetsBackwardAsAFunction) {
  // The backward max_pool2d's rule records, from the compact window offsets, at first and second
  // order (its own rule gathers at the offsets' int64 indices); offsets pass through without a
  // gradient.
  for (const PoolCase& p : pool_cases()) {
    SCOPED_TRACE(p.name);
    ember::MaxPoolOffsets r =
        ember::max_pool2d_with_offsets(random({2, 2, 5, 5}, 22), p.kernel, p.stride, p.padding,
                                       p.dilation, p.ceil_mode);
    gradcheck::check_rule(
        [&](const Vars& v) {
          return ad::max_pool2d_offsets_backward(v[0], v[1], {2, 2, 5, 5}, p.kernel, p.stride,
                                                 p.padding, p.dilation, p.ceil_mode);
        },
        {random(r.values.shape(), 23), r.offsets});
  }
}

TEST(ConvPoolMaxPool, TheRuleReadsOneByteOffsets) {
  // The forward's second result, the one the rule saves, is uint8 for a window of up to 256
  // elements; the indices asked for are int64 and equal core-runtime's max_pool2d's.
  ad::Variable x(random({2, 2, 5, 5}, 24), true);
  auto [values, offsets] = ad::max_pool2d_with_offsets(x, 3, 2, 1);
  EXPECT_EQ(offsets.dtype(), ember::DType::UInt8);
  EXPECT_FALSE(offsets.requires_grad());
  const ember::MaxPoolResult r = ember::max_pool2d(x.data(), 3, 2, 1);
  auto [values2, indices] = ad::max_pool2d_with_indices(x, 3, 2, 1);
  EXPECT_EQ(indices.dtype(), ember::DType::Int64);
  EXPECT_EQ(indices.data().to_vector<int64_t>(), r.indices.to_vector<int64_t>());
  EXPECT_EQ(values2.data().to_vector<double>(), r.values.to_vector<double>());
}

TEST(ConvPoolMaxPool, IndicesHaveNoGradient) {
  ad::Variable x(random({2, 2, 5, 5}, 24), true);
  auto [values, indices] = ad::max_pool2d_with_indices(x, 3, 2);
  EXPECT_EQ(indices.dtype(), ember::DType::Int64);
  EXPECT_FALSE(indices.requires_grad());
  EXPECT_TRUE(values.requires_grad());
}

TEST(ConvPoolAvgPool, ValuesAndTheirSecondOrder) {
  for (const PoolCase& p : pool_cases()) {
    if (p.dilation.h != 1) continue;  // avg_pool2d has no dilation
    for (bool include_pad : {true, false}) {
      SCOPED_TRACE(std::string(p.name) + (include_pad ? ", count_include_pad" : ""));
      gradcheck::check_rule(
          [&](const Vars& v) {
            return ad::avg_pool2d(v[0], p.kernel, p.stride, p.padding, p.ceil_mode, include_pad);
          },
          {random({2, 2, 5, 5}, 25)});
      const Shape out = ember::avg_pool2d(random({2, 2, 5, 5}, 0), p.kernel, p.stride, p.padding,
                                          p.ceil_mode, include_pad)
                            .shape();
      gradcheck::check_rule(
          [&](const Vars& v) {
            return ad::avg_pool2d_backward(v[0], {2, 2, 5, 5}, p.kernel, p.stride, p.padding,
                                           p.ceil_mode, include_pad);
          },
          {random(out, 26)});
    }
  }
}

TEST(ConvPoolAvgPool, NonContiguousInput) {
  Tensor x = random({2, 5, 5, 2}, 27).permute({0, 3, 1, 2});
  gradcheck::check_rule([](const Vars& v) { return ad::avg_pool2d(v[0], 3, 2, 1, true, false); },
                        {x});
}

TEST(ConvPoolAdaptiveAvgPool, ValuesAndBackward) {
  for (Size2 out : {Size2(2, 3), Size2(1), Size2(5), Size2(3, 7)}) {
    SCOPED_TRACE(std::to_string(out.h) + " x " + std::to_string(out.w));
    gradcheck::check_rule([&](const Vars& v) { return ad::adaptive_avg_pool2d(v[0], out); },
                          {random({2, 2, 5, 5}, 28)});
    gradcheck::check_rule(
        [](const Vars& v) {
          return ad::adaptive_avg_pool2d_backward(v[0], {2, 2, 5, 5});
        },
        {random({2, 2, out.h, out.w}, 29)});
  }
  Tensor x = random({2, 5, 5, 2}, 30).permute({0, 3, 1, 2});
  gradcheck::check_rule([](const Vars& v) { return ad::adaptive_avg_pool2d(v[0], Size2(2, 3)); },
                        {x});
}

TEST(ConvPoolChain, ConvPoolLinearNetwork) {
  // conv -> tanh -> max pool -> avg pool -> linear: every rule of the chain at first and
  // second order at once.
  gradcheck::check_rule(
      [](const Vars& v) {
        ad::Variable h = ad::tanh(ad::conv2d(v[0], v[1], v[2], 1, 1));
        h = ad::avg_pool2d(ad::max_pool2d(h, 2, 1), 2, 2, 0, true);
        return ad::linear(ad::reshape(h, {2, -1}), v[3]);
      },
      {random({2, 2, 5, 5}, 31), random({2, 2, 3, 3}, 32), random({2}, 33), random({3, 8}, 34)});
}

TEST(ConvPoolInfer, PoolTypesMatchCoreRuntime) {
  for (const PoolCase& p : pool_cases()) {
    SCOPED_TRACE(p.name);
    for (const Shape& shape : {Shape{2, 2, 5, 5}, Shape{1, 3, 7, 6}, Shape{2, 1, 4, 9}}) {
      const Tensor x = random(shape, 0);
      ad::Graph g;
      ad::Val xv = g.input(ad::type_of(x));
      auto [values, indices] =
          ad::max_pool2d_with_indices(xv, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
      ember::MaxPoolResult r =
          ember::max_pool2d(x, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode);
      EXPECT_EQ(values.type(), ad::type_of(r.values));
      EXPECT_EQ(indices.type(), ad::type_of(r.indices));
      const Tensor offsets =
          ember::max_pool2d_with_offsets(x, p.kernel, p.stride, p.padding, p.dilation, p.ceil_mode)
              .offsets;
      EXPECT_EQ(ad::max_pool2d_with_offsets(xv, p.kernel, p.stride, p.padding, p.dilation,
                                            p.ceil_mode)
                    .second.type(),
                ad::type_of(offsets));
      if (p.dilation.h != 1) continue;
      EXPECT_EQ(ad::avg_pool2d(xv, p.kernel, p.stride, p.padding, p.ceil_mode).type(),
                ad::type_of(ember::avg_pool2d(x, p.kernel, p.stride, p.padding, p.ceil_mode)));
    }
  }
}

TEST(ConvPoolErrors, PoolArguments) {
  ad::Graph g;
  ad::Val x = g.input({{2, 2, 5, 5}, ember::DType::Float32});
  ad::Val x3 = g.input({{2, 5, 5}, ember::DType::Float32});
  EXPECT_HAS(error_of<ember::ValueError>([&] { ad::max_pool2d(x, 2, 2, 2); }),
             "at most half of kernel_size");
  EXPECT_HAS(error_of<ember::ShapeError>([&] { ad::avg_pool2d(x3, 2); }),
             "expected 4-D [N, C, H, W]");
  EXPECT_HAS(error_of<ember::ShapeError>([&] { ad::max_pool2d(x, 3, 1, 0, 3); }),
             "the window (7 x 7) is larger than the padded input (5 x 5)");
  ad::Val gf = g.input({{2, 2, 2, 2}, ember::DType::Float32});
  ad::Val idx32 = g.input({{2, 2, 2, 2}, ember::DType::Int32});
  EXPECT_HAS(error_of<ember::DTypeError>([&] {
               ad::max_pool2d_backward(gf, idx32, {2, 2, 5, 5});
             }),
             "indices must be int64");
  ad::Val off64 = g.input({{2, 2, 2, 2}, ember::DType::Int64});
  EXPECT_HAS(error_of<ember::DTypeError>([&] {
               ad::max_pool2d_offsets_backward(gf, off64, {2, 2, 5, 5}, 2);
             }),
             "offsets must be uint8 for a 2 x 2 window");
  EXPECT_HAS(error_of<ember::ShapeError>([&] {
               ad::avg_pool2d_backward(gf, {2, 2, 5, 5}, 3);
             }),
             "grad must be [2, 2, 1, 1]");
}
