// Gradient clipping against norms computed by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/autodiff/ops.h"
#include "ember/autodiff/optim/clip_grad.h"
#include "ember/ops/creation.h"

namespace ad = ember::autodiff;
namespace optim = ember::autodiff::optim;
using ember::Tensor;

namespace {

const std::vector<std::vector<float>> kGrads = {{3.0f, -4.0f}, {1.0f, 2.0f, -2.0f}, {0.5f}};

// Three float32 parameters holding kGrads as their grads, and one without a grad.
std::vector<ad::Variable> params_with_grads() {
  std::vector<ad::Variable> ps;
  for (const auto& g : kGrads) {
    ad::Variable p(ember::zeros({int64_t(g.size())}), true);
    p.set_grad(ad::Variable(Tensor::from_vector(g, {int64_t(g.size())})));
    ps.push_back(p);
  }
  ps.emplace_back(ember::zeros({4}), true);
  return ps;
}

double hand_norm(double p) {
  double acc = 0;
  for (const auto& g : kGrads)
    for (float v : g)
      acc = std::isinf(p) ? std::max(acc, double(std::abs(v))) : acc + std::pow(std::abs(v), p);
  return std::isinf(p) ? acc : std::pow(acc, 1 / p);
}

void expect_scaled(const std::vector<ad::Variable>& ps, double scale) {
  for (size_t i = 0; i < kGrads.size(); ++i) {
    const std::vector<float> g = ps[i].grad().data().to_vector<float>();
    for (size_t j = 0; j < g.size(); ++j)
      EXPECT_NEAR(g[j], kGrads[i][j] * scale, 1e-6) << "parameter " << i << " element " << j;
  }
  EXPECT_FALSE(ps.back().grad().defined());
}

}  // namespace

TEST(ClipGradNorm, TwoNormScalesEveryGrad) {
  std::vector<ad::Variable> ps = params_with_grads();
  const double want = hand_norm(2);  // sqrt(9 + 16 + 1 + 4 + 4 + 0.25)
  const Tensor total = optim::clip_grad_norm_(ps, 1.0);
  EXPECT_EQ(total.dtype(), ember::DType::Float32);
  EXPECT_EQ(total.dim(), 0);
  EXPECT_NEAR(total.item<double>(), want, 1e-5);
  expect_scaled(ps, 1.0 / (want + 1e-6));
}

TEST(ClipGradNorm, InfinityNormAndOtherP) {
  std::vector<ad::Variable> ps = params_with_grads();
  EXPECT_NEAR(optim::clip_grad_norm_(ps, 2.0, INFINITY).item<double>(), 4.0, 1e-6);
  expect_scaled(ps, 2.0 / (4.0 + 1e-6));
  std::vector<ad::Variable> qs = params_with_grads();
  EXPECT_NEAR(optim::clip_grad_norm_(qs, 100.0, 1.0).item<double>(), hand_norm(1), 1e-5);
  expect_scaled(qs, 1.0);
}

TEST(ClipGradNorm, BelowTheLimitGradsKeepTheirBits) {
  std::vector<ad::Variable> ps = params_with_grads();
  optim::clip_grad_norm_(ps, 10.0);
  for (size_t i = 0; i < kGrads.size(); ++i)
    EXPECT_EQ(ps[i].grad().data().to_vector<float>(), kGrads[i]);
}

TEST(ClipGradNorm, GradsSharedByParametersAreScaledOnce) {
  // The gradient of sum(a + b) is one broadcast tensor of ones given to both a and b.
  ad::Variable a(ember::zeros({3}), true), b(ember::zeros({3}), true);
  ad::sum(a + b).backward();
  const Tensor total = optim::clip_grad_norm_({a, b}, 1.0);
  EXPECT_NEAR(total.item<double>(), std::sqrt(6.0), 1e-6);
  for (const ad::Variable& p : {a, b})
    for (float v : p.grad().data().to_vector<float>()) EXPECT_NEAR(v, 1 / std::sqrt(6.0), 1e-6);
}

TEST(ClipGradNorm, Float64GradsAndNoGrads) {
  ad::Variable p(ember::zeros({2}, ember::DType::Float64), true);
  p.set_grad(ad::Variable(Tensor::from_vector<double>({6.0, 8.0}, {2})));
  const Tensor total = optim::clip_grad_norm_({p}, 5.0);
  EXPECT_EQ(total.dtype(), ember::DType::Float64);
  EXPECT_DOUBLE_EQ(total.item<double>(), 10.0);
  EXPECT_NEAR(p.grad().data().to_vector<double>()[1], 8.0 * 5.0 / (10.0 + 1e-6), 1e-15);
  ad::Variable q(ember::zeros({2}), true);
  EXPECT_EQ(optim::clip_grad_norm_({q}, 1.0).item<double>(), 0.0);
}

TEST(ClipGradNorm, Errors) {
  std::vector<ad::Variable> ps = params_with_grads();
  EXPECT_THROW(optim::clip_grad_norm_(ps, -1.0), ember::ValueError);
  ps[0].set_grad(ad::Variable(Tensor::from_vector<float>({NAN, 1.0f}, {2})));
  EXPECT_NO_THROW(optim::clip_grad_norm_(ps, 1.0));
  EXPECT_THROW(optim::clip_grad_norm_(ps, 1.0, 2.0, true), ember::ValueError);
}

TEST(ClipGradValue, ClampsEveryElement) {
  std::vector<ad::Variable> ps = params_with_grads();
  optim::clip_grad_value_(ps, 1.5);
  for (size_t i = 0; i < kGrads.size(); ++i) {
    const std::vector<float> g = ps[i].grad().data().to_vector<float>();
    for (size_t j = 0; j < g.size(); ++j)
      EXPECT_EQ(g[j], std::min(1.5f, std::max(-1.5f, kGrads[i][j])));
  }
  ad::Variable a(ember::zeros({3}), true), b(ember::zeros({3}), true);
  ad::sum(a * 3.0 + b).backward();  // b's grad is a broadcast view
  optim::clip_grad_value_({a, b}, 0.5);
  EXPECT_EQ(a.grad().data().to_vector<float>(), std::vector<float>(3, 0.5f));
  EXPECT_EQ(b.grad().data().to_vector<float>(), std::vector<float>(3, 0.5f));
  EXPECT_THROW(optim::clip_grad_value_(ps, -1.0), ember::ValueError);
}
