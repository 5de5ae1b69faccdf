// Eager recording and backward on a few ops, against closed forms.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/autodiff/autodiff.h"
#include "ember/ops/creation.h"

namespace ad = ember::autodiff;
using ember::Tensor;

TEST(EagerBasics, TanhOfProductWithBroadcast) {
  ad::Variable x(Tensor::from_vector<double>({0.1, -0.2, 0.3, 0.4, 0.5, -0.6}, {2, 3}), true);
  ad::Variable w(Tensor::from_vector<double>({2.0, -1.0, 0.5}, {3}), true);
  const int64_t built = ad::backward_cache_stats().built;
  ad::Variable y = ad::sum(ad::tanh(x * w));
  y.backward();
  auto xv = x.data().to_vector<double>(), wv = w.data().to_vector<double>();
  auto gx = x.grad().data().to_vector<double>(), gw = w.grad().data().to_vector<double>();
  std::vector<double> want_gw(3, 0.0);
  for (int i = 0; i < 6; ++i) {
    const double t = std::tanh(xv[i] * wv[i % 3]);
    EXPECT_NEAR(gx[i], (1 - t * t) * wv[i % 3], 1e-12);
    want_gw[i % 3] += (1 - t * t) * xv[i];
  }
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(gw[j], want_gw[j], 1e-12);
  EXPECT_EQ(ad::backward_cache_stats().built, built + 1);
}

TEST(EagerBasics, SecondDerivativeOfTanh) {
  ad::Variable x(Tensor::from_vector<double>({0.7}, {}), true);
  ad::Variable y = ad::tanh(x);
  auto [dx] = std::array<ad::Variable, 1>{ad::grad({y}, {x}, {}, false, true)[0]};
  auto [ddx] = std::array<ad::Variable, 1>{ad::grad({dx}, {x})[0]};
  const double t = std::tanh(0.7);
  EXPECT_NEAR(dx.data().item<double>(), 1 - t * t, 1e-12);
  EXPECT_NEAR(ddx.data().item<double>(), -2 * t * (1 - t * t), 1e-12);
}
