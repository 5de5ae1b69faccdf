// The softmax_loss family's rules against float64 finite differences (first and second order),
// the Hessian of softmax cross-entropy against its closed form, and the losses' values against
// sums written out here.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/autodiff/autodiff.h"
#include "expect_error.h"
#include "gradcheck.h"

namespace ad = ember::autodiff;
using ember::Tensor;
using gradcheck::random;
using Vars = std::vector<ad::Variable>;

namespace {

Tensor labels(const std::vector<int64_t>& values, const ember::Shape& shape) {
  return Tensor::from_vector<int64_t>(values, shape);
}

ad::TensorType f64(const ember::Shape& shape) { return {shape, ember::DType::Float64, {}}; }

const char* const kReductions[] = {"mean", "sum", "none"};

// A grad_loss for reduction r of a loss over samples of shape `samples`.
Tensor grad_loss_for(const std::string& r, const ember::Shape& samples, uint64_t seed) {
  return random(r == "none" ? samples : ember::Shape{}, seed);
}

}  // namespace

// ---- softmax, log_softmax ----

TEST(SoftmaxLossSoftmax, EveryDimAndLayout) {
  const Tensor x2 = random({3, 4}, 1), x3 = random({2, 3, 2}, 2);
  const Tensor strided = random({4, 3}, 3).transpose(0, 1);
  for (int64_t dim : {0, 1, -1}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    gradcheck::check_rule([&](const Vars& v) { return ad::softmax(v[0], dim); }, {x2});
    gradcheck::check_rule([&](const Vars& v) { return ad::log_softmax(v[0], dim); }, {x2});
    gradcheck::check_rule([&](const Vars& v) { return ad::softmax(v[0], dim); }, {x3});
    gradcheck::check_rule([&](const Vars& v) { return ad::log_softmax(v[0], dim); }, {strided});
  }
}

TEST(SoftmaxLossSoftmax, BackwardOpsAgainstTheirOwnInputs) {
  // grad and y free: the closed-form rules of the backward ops, and (second order) theirs.
  for (int64_t dim : {0, 1}) {
    gradcheck::check_rule([&](const Vars& v) { return ad::softmax_backward(v[0], v[1], dim); },
                          {random({3, 4}, 4), random({3, 4}, 5, 0.1, 0.9)});
    gradcheck::check_rule([&](const Vars& v) { return ad::log_softmax_backward(v[0], v[1], dim); },
                          {random({3, 4}, 6), random({3, 4}, 7, -2.0, -0.1)});
  }
}

// ---- cross entropy ----

TEST(SoftmaxLossCrossEntropy, ReductionsWeightsIgnoreIndexSmoothing) {
  const Tensor logits = random({4, 3}, 10, -2, 2);
  const Tensor weight = random({3}, 11, 0.5, 2.0);
  for (const char* r : kReductions)
    for (bool weighted : {false, true})
      for (int64_t ignore : {int64_t(-100), int64_t(2)})
        for (double smoothing : {0.0, 0.2}) {
          SCOPED_TRACE(std::string(r) + (weighted ? " weighted" : "") + " ignore " +
                       std::to_string(ignore) + " smoothing " + std::to_string(smoothing));
          const Tensor target = labels({0, 2, 1, 2}, {4});  // two samples of class 2
          ad::Variable w = weighted ? ad::Variable(weight) : ad::Variable();
          gradcheck::check_rule(
              [&](const Vars& v) {
                return ad::cross_entropy(v[0], ad::Variable(target), w, ignore, r, smoothing);
              },
              {logits});
        }
}

TEST(SoftmaxLossCrossEntropy, SpatialNonContiguousAndSingleSample) {
  // logits [N=2, C=3, 2, 2] as a permuted view, target [2, 2, 2].
  const Tensor logits = random({2, 2, 2, 3}, 12).permute({0, 3, 1, 2});
  const Tensor target = labels({0, 1, 2, 1, 2, 0, 0, 1}, {2, 2, 2});
  for (const char* r : kReductions)
    gradcheck::check_rule(
        [&](const Vars& v) {
          return ad::cross_entropy(v[0], ad::Variable(target), {}, -100, r, 0.1);
        },
        {logits});
  // One sample: logits [C], target [].
  gradcheck::check_rule(
      [&](const Vars& v) { return ad::cross_entropy(v[0], ad::Variable(labels({1}, {}))); },
      {random({4}, 13)});
}

TEST(SoftmaxLossCrossEntropy, HessianVectorProductIsTheClosedForm) {
  // For mean cross entropy over N samples, d^2 loss / d x_n^2 = (diag(p_n) - p_n p_n^T) / N.
  const int64_t n = 3, c = 4;
  ad::Variable x(random({n, c}, 14, -2, 2), true);
  const Tensor v = random({n, c}, 15);
  ad::Variable loss = ad::cross_entropy(x, ad::Variable(labels({3, 0, 1}, {n})));
  ad::Variable g = ad::grad({loss}, {x}, {}, false, true)[0];
  ad::Variable hv = ad::grad({ad::sum(g * ad::Variable(v))}, {x})[0];

  const std::vector<double> xs = x.data().to_vector<double>(), vs = v.to_vector<double>();
  const std::vector<double> got = hv.data().to_vector<double>();
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double> p(static_cast<size_t>(c));
    double z = 0, pv = 0;
    for (int64_t j = 0; j < c; ++j) z += std::exp(xs[size_t(i * c + j)]);
    for (int64_t j = 0; j < c; ++j) p[size_t(j)] = std::exp(xs[size_t(i * c + j)]) / z;
    for (int64_t j = 0; j < c; ++j) pv += p[size_t(j)] * vs[size_t(i * c + j)];
    for (int64_t j = 0; j < c; ++j) {
      const double want = (p[size_t(j)] * vs[size_t(i * c + j)] - p[size_t(j)] * pv) / double(n);
      EXPECT_NEAR(got[size_t(i * c + j)], want, 1e-12) << i << ", " << j;
    }
  }
}

TEST(SoftmaxLossCrossEntropy, ValueAgainstTheDefinition) {
  // Weighted, one sample ignored, smoothed, mean: sum of per-sample losses over sum of w[t].
  const std::vector<double> xs{0.2, -1.0, 0.7, 1.5, 0.1, -0.3, -0.5, 0.4, 0.9};
  const std::vector<double> w{0.5, 2.0, 1.0};
  const std::vector<int64_t> t{2, 1, 0};  // sample 1 ignored below
  const double eps = 0.1;
  ad::Variable loss =
      ad::cross_entropy(ad::Variable(Tensor::from_vector<double>(xs, {3, 3})),
                        ad::Variable(labels(t, {3})),
                        ad::Variable(Tensor::from_vector<double>(w, {3})), 1, "mean", eps);
  double total = 0, weights = 0;
  for (int i : {0, 2}) {
    double z = 0;
    for (int j = 0; j < 3; ++j) z += std::exp(xs[size_t(i * 3 + j)]);
    auto nlp = [&](int j) { return std::log(z) - xs[size_t(i * 3 + j)]; };
    double smooth = 0;
    for (int j = 0; j < 3; ++j) smooth += w[size_t(j)] * nlp(j);
    total += (1 - eps) * w[size_t(t[size_t(i)])] * nlp(int(t[size_t(i)])) + eps / 3 * smooth;
    weights += w[size_t(t[size_t(i)])];
  }
  EXPECT_NEAR(loss.data().item<double>(), total / weights, 1e-12);
}

TEST(SoftmaxLossCrossEntropy, BackwardOpAgainstGradLossAndLogits) {
  // grad_loss free too: the derivative in grad_loss of the backward op's formula.
  const Tensor target = labels({0, 2, 1, 2}, {4});
  const Tensor weight = random({3}, 16, 0.5, 2.0);
  for (const char* r : kReductions) {
    SCOPED_TRACE(r);
    gradcheck::check_rule(
        [&](const Vars& v) {
          return ad::cross_entropy_backward(v[0], v[1], ad::Variable(target), ad::Variable(weight),
                                            1, r, 0.3);
        },
        {grad_loss_for(r, {4}, 17), random({4, 3}, 18, -2, 2)});
  }
}

TEST(SoftmaxLossCrossEntropy, BadInputsNameTheOpAndWhatIsExpected) {
  // The infer rule checks as a node is added; eager mode gets core-runtime's errors.
  ad::Graph g;
  ad::Val x = g.input(f64({4, 3}), "logits"), t = g.input({{4}, ember::DType::Int64, {}});
  expect_error<ember::DTypeError>(
      [&] {
        ad::cross_entropy(x, g.input({{4}, ember::DType::Int32, {}}));
      },
      {"cross_entropy", "logits is f64[4,3], target is i32[4]", "expected int64 class indices"});
  expect_error<ember::ShapeError>([&] { ad::cross_entropy(x, t, g.input(f64({4}))); },
                                  {"weight is f64[4]; expected weight f64[3]"});
  expect_error<ember::ShapeError>(
      [&] {
        ad::nll_loss(x, g.input({{3}, ember::DType::Int64, {}}));
      },
      {"nll_loss", "target is i64[3]; expected target of shape [4]"});
  EXPECT_THROW(ad::cross_entropy(x, t, ad::Val(), -100, "avg"), ember::ValueError);
  EXPECT_THROW(ad::cross_entropy(x, t, ad::Val(), -100, "mean", 1.5), ember::ValueError);
  EXPECT_THROW(ad::cross_entropy_backward(g.input(f64({4})), x, t), ember::ShapeError);
  ad::Variable xv(random({4, 3}, 19));
  EXPECT_THROW(ad::cross_entropy(xv,
                                 ad::Variable(labels({0, 1, 2, 0}, {4}).to(ember::DType::Int32))),
               ember::DTypeError);
  EXPECT_THROW(ad::cross_entropy(xv, ad::Variable(labels({0, 1, 3, 0}, {4}))), ember::IndexError);
}

// ---- nll loss ----

TEST(SoftmaxLossNllLoss, ReductionsWeightsIgnoreIndex) {
  const Tensor target = labels({1, 0, 2, 1, 1}, {5});
  const Tensor weight = random({3}, 21, 0.5, 2.0);
  for (const char* r : kReductions)
    for (bool weighted : {false, true}) {
      SCOPED_TRACE(std::string(r) + (weighted ? " weighted" : ""));
      ad::Variable w = weighted ? ad::Variable(weight) : ad::Variable();
      // Through log_softmax, so the second order is not zero.
      gradcheck::check_rule(
          [&](const Vars& v) {
            return ad::nll_loss(ad::log_softmax(v[0], 1), ad::Variable(target), w, 0, r);
          },
          {random({5, 3}, 22)});
      gradcheck::check_rule(
          [&](const Vars& v) {
            return ad::nll_loss_backward(v[0], v[1], ad::Variable(target), w, 0, r);
          },
          {grad_loss_for(r, {5}, 23), random({5, 3}, 24)});
    }
}

// ---- elementwise losses ----

TEST(SoftmaxLossPairLosses, MseAndL1WithGradientsForTheTarget) {
  const Tensor x = random({3, 4}, 30), y = random({4, 3}, 31).transpose(0, 1);
  for (const char* r : kReductions) {
    SCOPED_TRACE(r);
    gradcheck::check_rule([&](const Vars& v) { return ad::mse_loss(v[0], v[1], r); }, {x, y});
    gradcheck::check_rule([&](const Vars& v) { return ad::l1_loss(v[0], v[1], r); }, {x, y});
    const Tensor g = grad_loss_for(r, {3, 4}, 32);
    gradcheck::check_rule([&](const Vars& v) { return ad::mse_loss_backward(v[0], v[1], v[2], r); },
                          {g, x, y});
    gradcheck::check_rule([&](const Vars& v) { return ad::l1_loss_backward(v[0], v[1], v[2], r); },
                          {g, x, y});
  }
}

TEST(SoftmaxLossPairLosses, BceWithLogitsAndPosWeight) {
  const Tensor x = random({3, 4}, 33, -3, 3), y = random({3, 4}, 34, 0, 1);
  const Tensor pw = random({4}, 35, 0.5, 2.0);
  for (const char* r : kReductions) {
    SCOPED_TRACE(r);
    gradcheck::check_rule(
        [&](const Vars& v) { return ad::binary_cross_entropy_with_logits(v[0], v[1], {}, r); },
        {x, y});
    // pos_weight [4] broadcasts over the rows: its gradient is summed back to [4].
    gradcheck::check_rule(
        [&](const Vars& v) { return ad::binary_cross_entropy_with_logits(v[0], v[1], v[2], r); },
        {x, y, pw});
    const Tensor g = grad_loss_for(r, {3, 4}, 36);
    gradcheck::check_rule(
        [&](const Vars& v) {
          return ad::binary_cross_entropy_with_logits_backward(v[0], v[1], v[2], {}, r);
        },
        {g, x, y});
    gradcheck::check_rule(
        [&](const Vars& v) {
          return ad::binary_cross_entropy_with_logits_backward(v[0], v[1], v[2], v[3], r);
        },
        {g, x, y, pw});
  }
}

TEST(SoftmaxLossPairLosses, BceValueAgainstTheDefinition) {
  const std::vector<double> xs{-2.0, 0.5, 3.0}, ys{0.0, 0.3, 1.0}, pws{1.5, 0.5, 2.0};
  ad::Variable loss =
      ad::binary_cross_entropy_with_logits(ad::Variable(Tensor::from_vector<double>(xs, {3})),
                                           ad::Variable(Tensor::from_vector<double>(ys, {3})),
                                           ad::Variable(Tensor::from_vector<double>(pws, {3})),
                                           "sum");
  double want = 0;
  for (size_t i = 0; i < 3; ++i) {
    const double s = 1 / (1 + std::exp(-xs[i]));
    want -= pws[i] * ys[i] * std::log(s) + (1 - ys[i]) * std::log(1 - s);
  }
  EXPECT_NEAR(loss.data().item<double>(), want, 1e-12);
}

TEST(SoftmaxLossPairLosses, BadInputs) {
  ad::Graph g;
  ad::Val x = g.input(f64({3, 4}), "input");
  expect_error<ember::ShapeError>(
      [&] {
        ad::mse_loss(x, g.input(f64({4, 3})));
      },
      {"mse_loss", "input is f64[3,4], target is f64[4,3]"});
  EXPECT_THROW(ad::l1_loss(x, g.input({{3, 4}, ember::DType::Float32, {}})), ember::DTypeError);
  EXPECT_THROW(ad::binary_cross_entropy_with_logits(x, x, g.input(f64({3}))), ember::ShapeError);
  EXPECT_THROW(ad::mse_loss_backward(g.input(f64({3})), x, x, "none"), ember::ShapeError);
}

// ---- types ----

TEST(SoftmaxLossTypes, InferMatchesCoreRuntime) {
  // Every loss and (through grad()) every backward op, run: each result's type must be the one
  // its infer rule gave, as eager backward relies on.
  for (ember::DType dt : {ember::DType::Float32, ember::DType::Float64}) {
    SCOPED_TRACE(ember::dtype_name(dt));
    ad::Graph g;
    ad::Val x = g.parameter({{4, 3}, dt, {}}), y = g.parameter({{4, 3}, dt, {}});
    ad::Val w = g.input({{3}, dt, {}}), t = g.input({{4}, ember::DType::Int64, {}});
    ad::Val loss = ad::cross_entropy(x, t, w, -100, "mean", 0.1) +
                   ad::sum(ad::nll_loss(ad::log_softmax(x, 1), t, w, 1, "none")) +
                   ad::sum(ad::softmax(x, 0)) + ad::mse_loss(x, y) + ad::l1_loss(x, y, "sum") +
                   ad::binary_cross_entropy_with_logits(x, ad::softmax(y, 1), w);
    std::vector<ad::Val> d = ad::grad({loss}, {x, y});
    ad::grad({ad::sum(d[0] * d[0]) + ad::sum(d[1])}, {x, y});  // the backward ops' rules too
    for (int32_t k = 0; k < g.num_nodes(); ++k)
      for (ad::ValueId out : g.node(k).outputs) g.mark_output(g.val(out));
    const std::vector<Tensor> got =
        ad::run(g, {random({4, 3}, 60).to(dt), random({4, 3}, 61).to(dt),
                    random({3}, 62, 0.5, 2).to(dt), labels({0, 2, 1, 1}, {4})});
    for (size_t i = 0; i < got.size(); ++i) {
      const ad::Value& v = g.value(g.outputs()[i]);
      EXPECT_EQ(ad::type_of(got[i]), v.type) << g.node(v.node).op->name << " output " << v.output;
    }
  }
}
