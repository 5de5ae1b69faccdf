// The normalization family's rules (batch norm, layer norm, dropout and their backward ops)
// against float64 finite differences, first and second order, and the running statistics and
// dropout masks against formulas written out here.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/autodiff/autodiff.h"
#include "ember/ops/random.h"
#include "expect_error.h"
#include "gradcheck.h"

namespace ad = ember::autodiff;
using ember::Tensor;
using gradcheck::random;
using Vars = std::vector<ad::Variable>;

namespace {

// Positive values for variances and scales.
Tensor positive(const ember::Shape& shape, uint64_t seed) { return random(shape, seed, 0.5, 1.5); }

ad::TensorType f64(const ember::Shape& shape) { return {shape, ember::DType::Float64, {}}; }

}  // namespace

// ---- batch norm ----

TEST(NormalizationBatchNorm, Training4DWithWeightAndBias) {
  gradcheck::check_rule(
      [](const Vars& v) { return ad::batch_norm(v[0], v[1], v[2], {}, {}, true); },
      {random({3, 2, 2, 2}, 1), positive({2}, 2), random({2}, 3)});
}

TEST(NormalizationBatchNorm, Training2DWithoutWeightOrBias) {
  gradcheck::check_rule([](const Vars& v) { return ad::batch_norm(v[0], {}, {}, {}, {}, true); },
                        {random({5, 3}, 4)});
}

TEST(NormalizationBatchNorm, TrainingWithRunningStatsAndNonContiguousInput) {
  // x [3, 4] is a transposed view; the running statistics are updated but get no gradient.
  const Tensor x = random({4, 3}, 5).transpose(0, 1);
  ASSERT_FALSE(x.is_contiguous());
  gradcheck::check_rule(
      [](const Vars& v) {
        ad::Variable rm(ember::zeros({4}, ember::DType::Float64));
        ad::Variable rv(ember::ones({4}, ember::DType::Float64));
        return ad::batch_norm(v[0], v[1], {}, rm, rv, true);
      },
      {x, positive({4}, 6)});
}

TEST(NormalizationBatchNorm, TrainingSmallestBatch) {
  // Two values per channel (the least a variance allows), one channel.
  gradcheck::check_rule(
      [](const Vars& v) { return ad::batch_norm(v[0], v[1], v[2], {}, {}, true); },
      {Tensor::from_vector<double>({0.3, -0.4}, {2, 1}), positive({1}, 7), random({1}, 8)});
}

TEST(NormalizationBatchNorm, Eval4DGradientsReachRunningStats) {
  // In eval the running statistics normalise, so they get gradients like any operand.
  gradcheck::check_rule(
      [](const Vars& v) { return ad::batch_norm(v[0], v[1], v[2], v[3], v[4], false); },
      {random({2, 3, 2, 1}, 9), positive({3}, 10), random({3}, 11), random({3}, 12),
       positive({3}, 13)});
}

TEST(NormalizationBatchNorm, Eval2DWithoutWeightOrBias) {
  gradcheck::check_rule(
      [](const Vars& v) { return ad::batch_norm(v[0], {}, {}, v[1], v[2], false); },
      {random({4, 3}, 14), random({3}, 15), positive({3}, 16)});
}

TEST(NormalizationBatchNorm, BackwardOpAgainstItsOwnInputs) {
  // batch_norm_backward as a function of all five inputs (mean and invstd free): the rule that
  // differentiates its formula, first and second order, in both modes, for each output.
  for (bool training : {true, false}) {
    for (size_t k = 0; k < 3; ++k) {
      SCOPED_TRACE("training " + std::to_string(training) + ", output " + std::to_string(k));
      gradcheck::check_rule(
          [&](const Vars& v) {
            return ad::batch_norm_backward(v[0], v[1], v[2], v[3], v[4], training)[k];
          },
          {random({3, 2, 2}, 17), random({3, 2, 2}, 18), positive({2}, 19), random({2}, 20),
           positive({2}, 21)});
    }
  }
}

TEST(NormalizationBatchNorm, EagerUpdatesRunningStatsAsPyTorch) {
  // x [N=3, C=2, 2]: M = 6 values per channel.
  const Tensor xt = random({3, 2, 2}, 22);
  const std::vector<double> rm0{0.5, -0.25}, rv0{1.5, 0.75};
  ad::Variable x(xt, true);
  ad::Variable rm(Tensor::from_vector<double>(rm0, {2}));
  ad::Variable rv(Tensor::from_vector<double>(rv0, {2}));
  const double momentum = 0.2, eps = 1e-5;
  ad::Variable y = ad::batch_norm(x, {}, {}, rm, rv, true, momentum, eps);

  const std::vector<double> xv = xt.to_vector<double>();
  const std::vector<double> yv = y.data().to_vector<double>();
  const std::vector<double> rm1 = rm.data().to_vector<double>(),
                            rv1 = rv.data().to_vector<double>();
  for (int c = 0; c < 2; ++c) {
    std::vector<double> vals;
    for (int n = 0; n < 3; ++n)
      for (int s = 0; s < 2; ++s) vals.push_back(xv[size_t(n * 4 + c * 2 + s)]);
    double mean = 0, ss = 0;
    for (double v : vals) mean += v / 6;
    for (double v : vals) ss += (v - mean) * (v - mean);
    // running_var takes the unbiased variance (ss / (M - 1)); y normalises with the biased one.
    EXPECT_NEAR(rm1[size_t(c)], (1 - momentum) * rm0[size_t(c)] + momentum * mean, 1e-12);
    EXPECT_NEAR(rv1[size_t(c)], (1 - momentum) * rv0[size_t(c)] + momentum * ss / 5, 1e-12);
    for (int n = 0; n < 3; ++n)
      for (int s = 0; s < 2; ++s) {
        const size_t i = size_t(n * 4 + c * 2 + s);
        EXPECT_NEAR(yv[i], (xv[i] - mean) / std::sqrt(ss / 6 + eps), 1e-12);
      }
  }
  // The update changed the running statistics in place after batch_norm recorded them; the
  // backward reads neither, so it runs.
  EXPECT_NO_THROW(ad::sum(y * y).backward());
  EXPECT_TRUE(x.grad().defined());
}

TEST(NormalizationBatchNorm, GraphHoldsTheUpdateNode) {
  ad::Graph g;
  ad::TensorType c{{3}, ember::DType::Float32, {}};
  ad::Val x = g.input({{4, 3}, ember::DType::Float32, {}}, "x");
  ad::Val rm = g.input(c, "running_mean"), rv = g.input(c, "running_var");
  ad::batch_norm(x, ad::Val(), ad::Val(), rm, rv, true, 0.1);
  ASSERT_EQ(g.num_nodes(), 2);
  EXPECT_EQ(g.node(1).op->name, "batch_norm_update_stats");
  EXPECT_EQ(g.node(1).outputs.size(), 2u);  // running_mean, running_var, written in place
  EXPECT_TRUE(g.node(1).op->in_place);
  EXPECT_EQ(g.node(1).attrs.i("count"), 4);
  EXPECT_EQ(g.node(0).outputs.size(), 4u);  // y, save_mean, save_invstd, batch_var
  // Eval: three outputs, no update.
  ad::Graph e;
  ad::Val xe = e.input({{4, 3}, ember::DType::Float16, {}}, "x");
  ad::Val rme = e.input({{3}, ember::DType::Float16, {}}), rve = e.input(rme.type());
  ad::batch_norm(xe, ad::Val(), ad::Val(), rme, rve, false);
  ASSERT_EQ(e.num_nodes(), 1);
  ASSERT_EQ(e.node(0).outputs.size(), 3u);
  EXPECT_EQ(e.value(e.node(0).outputs[1]).type.dtype, ember::DType::Float32);  // stats in f32
}

TEST(NormalizationBatchNorm, BadInputsNameTheOpAndShapes) {
  // The infer rule checks as a node is added; eager mode gets core-runtime's errors.
  ad::Graph g;
  ad::Val x = g.input(f64({4, 3}), "x"), w = g.input(f64({5}), "w");
  expect_error<ember::ShapeError>(
      [&] { ad::batch_norm(x, w, ad::Val(), ad::Val(), ad::Val(), true); },
      {"batch_norm", "x is f64[4,3], weight is f64[5]", "expected weight of shape [3]"});
  ad::Val w32 = g.input({{3}, ember::DType::Float32, {}}), none;
  EXPECT_THROW(ad::batch_norm(x, w32, none, none, none, true), ember::DTypeError);
  EXPECT_THROW(ad::batch_norm(x, none, none, none, none, false), ember::ValueError);  // no stats
  EXPECT_THROW(ad::batch_norm(g.input(f64({1, 3})), none, none, none, none, true),
               ember::ValueError);  // one value per channel
  EXPECT_THROW(ad::batch_norm(g.input(f64({3})), none, none, none, none, true), ember::ShapeError);
  ad::Variable xv(random({4, 3}, 23)), wv(random({5}, 24));
  EXPECT_THROW(ad::batch_norm(xv, wv, {}, {}, {}, true), ember::ShapeError);
}

// ---- layer norm ----

TEST(NormalizationLayerNorm, Affine) {
  gradcheck::check_rule([](const Vars& v) { return ad::layer_norm(v[0], {4}, v[1], v[2]); },
                        {random({3, 4}, 30), positive({4}, 31), random({4}, 32)});
}

TEST(NormalizationLayerNorm, NotAffineOverTwoDims) {
  gradcheck::check_rule(
      [](const Vars& v) {
        return ad::layer_norm(v[0], {3, 2});
      },
      {random({2, 3, 2}, 33)});
}

TEST(NormalizationLayerNorm, WeightOnlyAndBiasOnlyNonContiguous) {
  const Tensor x = random({4, 2, 3}, 34).permute({1, 2, 0});  // [2, 3, 4], not contiguous
  ASSERT_FALSE(x.is_contiguous());
  gradcheck::check_rule([](const Vars& v) { return ad::layer_norm(v[0], {4}, v[1]); },
                        {x, positive({4}, 35)});
  gradcheck::check_rule(
      [](const Vars& v) { return ad::layer_norm(v[0], {4}, ad::Variable(), v[1]); },
      {x, random({4}, 36)});
}

TEST(NormalizationLayerNorm, WholeTensorNormalised) {
  // No outer dims: mean and rstd are [1, 1], and dweight is g * xhat itself.
  gradcheck::check_rule(
      [](const Vars& v) {
        return ad::layer_norm(v[0], {2, 3}, v[1], v[2]);
      },
      {random({2, 3}, 37), positive({2, 3}, 38), random({2, 3}, 39)});
}

TEST(NormalizationLayerNorm, BackwardOpAgainstItsOwnInputs) {
  for (size_t k = 0; k < 3; ++k) {
    SCOPED_TRACE("output " + std::to_string(k));
    gradcheck::check_rule(
        [&](const Vars& v) {
          return ad::layer_norm_backward(v[0], v[1], {3}, v[2], v[3], v[4])[k];
        },
        {random({2, 3}, 40), random({2, 3}, 41), random({2, 1}, 42), positive({2, 1}, 43),
         positive({3}, 44)});
  }
}

TEST(NormalizationLayerNorm, BadNormalizedShape) {
  ad::Graph g;
  ad::Val x = g.input(f64({2, 3}), "x");
  expect_error<ember::ShapeError>([&] { ad::layer_norm(x, {2}); },
                                  {"layer_norm", "x is f64[2,3]; normalized_shape [2]"});
  EXPECT_THROW(ad::layer_norm(x, {3}, g.input(f64({2}))), ember::ShapeError);
  ad::Variable xv(random({2, 3}, 45));
  EXPECT_THROW(ad::layer_norm(xv, {2}), ember::ShapeError);
}

// ---- dropout ----

TEST(NormalizationDropout, MaskStatisticsAndScaling) {
  const double p = 0.3;
  const Tensor xt = random({200, 100}, 50);
  ad::Variable x(xt, true);
  auto out = ad::apply(EMBER_OP("dropout"), Vars{x}, {{"p", p}});
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[1].dtype(), ember::DType::Bool);
  const std::vector<double> xv = xt.to_vector<double>(), yv = out[0].data().to_vector<double>();
  const Tensor mask = out[1].data().to(ember::DType::Float64);
  const std::vector<double> mv = mask.to_vector<double>();
  double kept = 0;
  for (size_t i = 0; i < mv.size(); ++i) {
    kept += mv[i];
    EXPECT_DOUBLE_EQ(yv[i], mv[i] ? xv[i] / (1 - p) : 0.0) << i;
  }
  // 20000 Bernoulli(0.7) draws: the kept fraction is within 5 standard deviations (0.016).
  const double n = double(mv.size());
  EXPECT_NEAR(kept / n, 1 - p, 5 * std::sqrt(p * (1 - p) / n));

  // Its gradient is dy * mask / (1 - p).
  const Tensor dy = random({200, 100}, 51);
  ad::Variable dx = ad::grad({out[0]}, {x}, {ad::Variable(dy)})[0];
  const std::vector<double> dyv = dy.to_vector<double>(), dxv = dx.data().to_vector<double>();
  for (size_t i = 0; i < mv.size(); ++i) EXPECT_DOUBLE_EQ(dxv[i], dyv[i] * mv[i] / (1 - p)) << i;
}

TEST(NormalizationDropout, GradcheckWithAFixedMask) {
  // Reseeding before each call draws the same mask every time, so f is a function of x.
  auto f = [](const Vars& v) {
    ember::manual_seed(7);
    return ad::dropout(v[0], 0.4);
  };
  gradcheck::check_rule(f, {random({4, 5}, 52)});
  // The backward op on its own, with a mask: d/dgrad is dropout_backward(gg, mask, p).
  const Tensor mask = ember::bernoulli({4, 5}, 0.5, ember::DType::Bool);
  gradcheck::check_rule(
      [&](const Vars& v) { return ad::dropout_backward(v[0], ad::Variable(mask), 0.5); },
      {random({4, 5}, 53)});
}

TEST(NormalizationDropout, EvalAndZeroProbabilityAreIdentity) {
  ad::Variable x(random({3}, 54), true);
  EXPECT_EQ(ad::dropout(x, 0.5, false).impl(), x.impl());
  EXPECT_EQ(ad::dropout(x, 0.0).impl(), x.impl());
  EXPECT_THROW(ad::dropout(x, 1.5), ember::ValueError);
}

// ---- types ----

namespace {

// Marks every computed value an output, runs the graph and compares each result's type with
// the one the infer rules gave it: what eager backward relies on.
void expect_infer_matches_run(ad::Graph& g, const std::vector<Tensor>& inputs) {
  for (int32_t k = 0; k < g.num_nodes(); ++k)
    for (ad::ValueId out : g.node(k).outputs) g.mark_output(g.val(out));
  const std::vector<Tensor> got = ad::run(g, inputs);
  for (size_t i = 0; i < got.size(); ++i) {
    const ad::Value& v = g.value(g.outputs()[i]);
    EXPECT_EQ(ad::type_of(got[i]), v.type) << g.node(v.node).op->name << " output " << v.output;
  }
}

}  // namespace

TEST(NormalizationTypes, InferMatchesCoreRuntime) {
  // Half inputs keep their statistics in float32; the backward ops and their rules' nodes come
  // from grad().
  for (ember::DType dt : {ember::DType::Float32, ember::DType::Float16}) {
    SCOPED_TRACE(ember::dtype_name(dt));
    ad::Graph g;
    ad::Val x = g.parameter({{4, 3, 2}, dt, {}}), w = g.parameter({{3}, dt, {}});
    ad::Val b = g.parameter({{3}, dt, {}}), lw = g.parameter({{2}, dt, {}});
    ad::Val rm = g.input({{3}, dt, {}}), rv = g.input({{3}, dt, {}});
    ad::Val y = ad::batch_norm(x, w, b, rm, rv, true) + ad::batch_norm(x, w, b, rm, rv, false) +
                ad::layer_norm(x, {2}, lw, lw) + ad::dropout(x, 0.5);
    std::vector<ad::Val> d = ad::grad({ad::sum(y)}, {x, w, b, lw});
    // Second order: the statistics' float32 gradients meet x's dtype.
    ad::grad({ad::sum(d[0] * d[0]) + ad::sum(d[1] * d[2]) + ad::sum(d[3])}, {x, w, b, lw});
    std::vector<Tensor> in;
    for (const ember::Shape& s : {ember::Shape{4, 3, 2}, {3}, {3}, {2}, {3}, {3}})
      in.push_back(positive(s, in.size()).to(dt));
    expect_infer_matches_run(g, in);
  }
}
