// Initialisers: statistics on big tensors, orthogonality, fans, gains and reproducibility.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ember/autodiff/optim.h"
#include "ember/ops/creation.h"
#include "ember/ops/reduction.h"

namespace init = ember::autodiff::init;
using ember::Tensor;

namespace {

// Mean and standard deviation within a few standard errors of the distribution's, and every
// value inside [-bound, bound] when bound > 0.
void expect_stats(const Tensor& t, double want_std, double bound = 0) {
  const double n = double(t.numel());
  EXPECT_NEAR(ember::mean(t).item<double>(), 0.0, 5 * want_std / std::sqrt(n));
  EXPECT_NEAR(ember::std(t).item<double>(), want_std, 0.01 * want_std);
  if (bound > 0) {
    EXPECT_LE(ember::amax(t).item<double>(), bound);
    EXPECT_GE(ember::amin(t).item<double>(), -bound);
    EXPECT_GT(ember::amax(t).item<double>(), 0.999 * bound);  // the whole range is reached
  }
}

// max |G - gain^2 I| for G = A A^T (rows) or A^T A (columns) of a [r, c] matrix.
double orthogonality_error(const Tensor& t, bool rows, double gain = 1.0) {
  const int64_t r = t.size(0), c = t.numel() / r;
  const std::vector<double> a = t.to(ember::DType::Float64).to_vector<double>();
  const int64_t k = rows ? r : c, len = rows ? c : r;
  double worst = 0;
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < k; ++j) {
      double dot = 0;
      for (int64_t l = 0; l < len; ++l)
        dot += rows ? a[i * c + l] * a[j * c + l] : a[l * c + i] * a[l * c + j];
      worst = std::max(worst, std::abs(dot - (i == j ? gain * gain : 0.0)));
    }
  return worst;
}

}  // namespace

TEST(InitFans, AsTorchComputesThem) {
  const init::Fans linear = init::calculate_fan_in_and_fan_out(ember::empty({30, 20}));
  EXPECT_EQ(linear.fan_in, 20);
  EXPECT_EQ(linear.fan_out, 30);
  const init::Fans conv = init::calculate_fan_in_and_fan_out(ember::empty({16, 8, 3, 5}));
  EXPECT_EQ(conv.fan_in, 8 * 15);
  EXPECT_EQ(conv.fan_out, 16 * 15);
  EXPECT_THROW(init::calculate_fan_in_and_fan_out(ember::empty({5})), ember::ValueError);
  EXPECT_THROW(init::kaiming_uniform_(ember::empty({5})), ember::ValueError);
  EXPECT_THROW(init::xavier_normal_(ember::empty({})), ember::ValueError);
}

TEST(InitGain, AsTorchNnInitCalculateGain) {
  EXPECT_EQ(init::calculate_gain("linear"), 1.0);
  EXPECT_EQ(init::calculate_gain("conv2d"), 1.0);
  EXPECT_EQ(init::calculate_gain("sigmoid"), 1.0);
  EXPECT_DOUBLE_EQ(init::calculate_gain("tanh"), 5.0 / 3);
  EXPECT_DOUBLE_EQ(init::calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu"), std::sqrt(2.0 / (1 + 0.01 * 0.01)));
  EXPECT_DOUBLE_EQ(init::calculate_gain("leaky_relu", 0.2), std::sqrt(2.0 / 1.04));
  EXPECT_DOUBLE_EQ(init::calculate_gain("selu"), 0.75);
  EXPECT_THROW(init::calculate_gain("swish"), ember::ValueError);
}

TEST(InitKaiming, UniformAndNormalBothModes) {
  ember::Generator gen(1);
  Tensor w = ember::empty({1000, 500});
  init::kaiming_uniform_(w, 0.0, "fan_in", "leaky_relu", &gen);  // gain sqrt(2), fan 500
  const double std_in = std::sqrt(2.0 / 500);
  expect_stats(w, std_in, std::sqrt(3.0) * std_in);
  init::kaiming_normal_(w, 0.0, "fan_out", "relu", &gen);
  expect_stats(w, std::sqrt(2.0 / 1000));
  init::kaiming_uniform_(w, std::sqrt(5.0), "fan_in", "leaky_relu", &gen);  // nn.Linear's
  expect_stats(w, std::sqrt(2.0 / 6) / std::sqrt(500.0), 1 / std::sqrt(500.0));
  EXPECT_THROW(init::kaiming_normal_(w, 0.0, "fan_avg"), ember::ValueError);
}

TEST(InitXavier, UniformAndNormalWithGain) {
  ember::Generator gen(2);
  Tensor w = ember::empty({64, 32, 5, 5});  // fans 800 and 1600
  const double std = 5.0 / 3 * std::sqrt(2.0 / 2400);
  init::xavier_uniform_(w, 5.0 / 3, &gen);
  expect_stats(w, std, std::sqrt(3.0) * std);
  init::xavier_normal_(w, 5.0 / 3, &gen);
  expect_stats(w, std);
}

TEST(InitBasic, UniformNormalConstants) {
  ember::Generator gen(3);
  Tensor t = ember::empty({400, 500});
  init::uniform_(t, -2.0, 2.0, &gen);
  expect_stats(t, 4 / std::sqrt(12.0), 2.0);
  init::normal_(t, 0.0, 0.3, &gen);
  expect_stats(t, 0.3);
  init::constant_(t, 0.25);
  EXPECT_EQ(ember::amin(t).item<double>(), 0.25);
  EXPECT_EQ(ember::amax(t).item<double>(), 0.25);
  EXPECT_EQ(init::zeros_(t).to_vector<float>()[7], 0.0f);
  EXPECT_EQ(init::ones_(t).to_vector<float>()[7], 1.0f);
}

TEST(InitOrthogonal, OrthonormalRowsOrColumns) {
  ember::Generator gen(4);
  Tensor tall = ember::empty({50, 20});
  init::orthogonal_(tall, 1.0, &gen);
  EXPECT_LT(orthogonality_error(tall, /*rows=*/false), 1e-5);
  Tensor wide = ember::empty({20, 50});
  init::orthogonal_(wide, 1.0, &gen);
  EXPECT_LT(orthogonality_error(wide, /*rows=*/true), 1e-5);
  Tensor square = ember::empty({32, 32}, ember::DType::Float64);
  init::orthogonal_(square, 1.0, &gen);
  EXPECT_LT(orthogonality_error(square, true), 1e-12);
  EXPECT_LT(orthogonality_error(square, false), 1e-12);
  Tensor conv = ember::empty({8, 4, 3, 3});  // viewed as [8, 36]
  init::orthogonal_(conv, 2.0, &gen);
  EXPECT_LT(orthogonality_error(conv, true, 2.0), 1e-5);
  EXPECT_THROW(init::orthogonal_(ember::empty({4})), ember::ValueError);
}

TEST(InitOrthogonal, SignFixLeavesTheDiagonalUnbiased) {
  // The entries of a Haar-random orthogonal [n, n] matrix have mean 0 and variance 1 / n.
  // Without the sign fix the diagonal of Q would lean to one sign (Householder's R has a
  // diagonal of the sign opposite to the column's).
  ember::Generator gen(5);
  double diag_sum = 0;
  const int n = 16, trials = 200;
  for (int k = 0; k < trials; ++k) {
    Tensor q = ember::empty({n, n}, ember::DType::Float64);
    init::orthogonal_(q, 1.0, &gen);
    const std::vector<double> v = q.to_vector<double>();
    for (int i = 0; i < n; ++i) diag_sum += v[i * n + i];
  }
  // Each diagonal entry has mean 0 and standard deviation 1 / sqrt(n).
  EXPECT_NEAR(diag_sum / (n * trials), 0.0, 5 / std::sqrt(double(n) * n * trials));
}

TEST(InitReproducible, SameSeedSameValues) {
  for (const auto& fill : std::vector<std::function<void(const Tensor&, ember::Generator*)>>{
           [](const Tensor&t, ember::Generator*g) {
             init::kaiming_normal_(t, 0, "fan_in", "relu", g);
           },
           [](const Tensor&t, ember::Generator*g) { init::xavier_uniform_(t, 1.0, g); },
           [](const Tensor&t, ember::Generator*g) { init::orthogonal_(t, 1.0, g); }}) {
    ember::Generator g1(42), g2(42), g3(43);
    Tensor a = ember::empty({6, 4}), b = ember::empty({6, 4}), c = ember::empty({6, 4});
    fill(a, &g1);
    fill(b, &g2);
    fill(c, &g3);
    EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
    EXPECT_NE(a.to_vector<float>(), c.to_vector<float>());
    ember::manual_seed(7);
    fill(a, nullptr);
    ember::manual_seed(7);
    fill(b, nullptr);
    EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  }
}
