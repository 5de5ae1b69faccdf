// test_normalization.cpp — batch norm and layer norm against brute-force references computed in
// double here, backward kernels against central finite differences in float64.
#include <cmath>
#include <functional>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;
using test::random_tensor;
using test::random_values;

class BatchNorm : public test::DeviceTest {};
class LayerNorm : public test::DeviceTest {};
class Dropout : public test::DeviceTest {};

Tensor vec(const std::vector<double>& v, const Shape& shape, Device dev,
           DType dtype = DType::Float64) {
  return Tensor::from_vector(v, shape).to(dev, dtype);
}

// Per-channel statistics of x [N, C, S] (row-major) in double.
struct ChannelStats {
  std::vector<double> mean, var;  // var biased
};
ChannelStats channel_stats(const std::vector<double>& x, int64_t n, int64_t c, int64_t s) {
  ChannelStats st{std::vector<double>(size_t(c), 0.0), std::vector<double>(size_t(c), 0.0)};
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) sum += x[size_t((i * c + ch) * s + j)];
    double mean = sum / double(n * s);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < s; ++j) sq += std::pow(x[size_t((i * c + ch) * s + j)] - mean, 2);
    st.mean[size_t(ch)] = mean;
    st.var[size_t(ch)] = sq / double(n * s);
  }
  return st;
}

// y = (x - mean) / sqrt(var + eps) * w + b per channel.
std::vector<double> normalise(const std::vector<double>& x, int64_t n, int64_t c, int64_t s,
                              const ChannelStats& st, const std::vector<double>& w,
                              const std::vector<double>& b, double eps) {
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t j = 0; j < s; ++j) {
        size_t k = size_t((i * c + ch) * s + j), cc = size_t(ch);
        y[k] = (x[k] - st.mean[cc]) / std::sqrt(st.var[cc] + eps) * w[cc] + b[cc];
      }
  return y;
}

std::vector<double> inverse_std(const std::vector<double>& var, double eps) {
  std::vector<double> r;
  for (double v : var) r.push_back(1 / std::sqrt(v + eps));
  return r;
}

// d loss / d v[k] for every k, by central differences.
std::vector<double> numeric_grad(const std::function<double(const std::vector<double>&)>& loss,
                                 std::vector<double> v, double h = 1e-6) {
  std::vector<double> g(v.size());
  for (size_t k = 0; k < v.size(); ++k) {
    double keep = v[k];
    v[k] = keep + h;
    double up = loss(v);
    v[k] = keep - h;
    double down = loss(v);
    v[k] = keep;
    g[k] = (up - down) / (2 * h);
  }
  return g;
}

double dot(const Tensor& t, const std::vector<double>& r) {
  std::vector<double> v = t.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i] * r[i];
  return s;
}

// The gradients g of loss = <run(x, w, b).output, r> against central differences of the loss
// in x, then (with_params) in w and b.
template <class Run>
void expect_grads_match_differences(const NormGrads& g, const Run& run,
                                    const std::vector<double>& xv, const std::vector<double>& w,
                                    const std::vector<double>& b, const std::vector<double>& r,
                                    bool with_params) {
  expect_close(g.grad_input,
               numeric_grad([&](const auto& x) { return dot(run(x, w, b).output, r); }, xv), 1e-6,
               1e-5);
  if (!with_params) return;
  expect_close(g.grad_weight,
               numeric_grad([&](const auto& wt) { return dot(run(xv, wt, b).output, r); }, w), 1e-6,
               1e-5);
  expect_close(g.grad_bias,
               numeric_grad([&](const auto& bs) { return dot(run(xv, w, bs).output, r); }, b), 1e-6,
               1e-5);
}

// ---------------- batch norm ----------------

// PyTorch's update of running statistics, in double: r = (1 - momentum) * r + momentum * stat,
// with the unbiased variance var * count / (count - 1).
ChannelStats updated_running_stats(const ChannelStats& running, const ChannelStats& batch,
                                   double momentum, int64_t count) {
  ChannelStats out = running;
  for (size_t k = 0; k < running.mean.size(); ++k) {
    out.mean[k] = (1 - momentum) * running.mean[k] + momentum * batch.mean[k];
    out.var[k] = (1 - momentum) * running.var[k] +
                 momentum * batch.var[k] * double(count) / double(count - 1);
  }
  return out;
}

void check_batch_norm_training(Device dev, const Shape& shape, DType dtype, double tol) {
  const int64_t n = shape[0], c = shape[1], s = shape_numel(shape) / (n * c);
  std::vector<double> xv = random_values(shape_numel(shape), 1, -2, 3);
  std::vector<double> w = random_values(c, 2, 0.5, 1.5), b = random_values(c, 3);
  ChannelStats running{random_values(c, 4), random_values(c, 5, 0.5, 2)};
  Tensor running_mean = vec(running.mean, {c}, dev, dtype);
  Tensor running_var = vec(running.var, {c}, dev, dtype);
  const double momentum = 0.3, eps = 1e-3;
  BatchNormResult r = batch_norm(vec(xv, shape, dev, dtype), vec(w, {c}, dev, dtype),
                                 vec(b, {c}, dev, dtype), running_mean, running_var, true, eps);
  ChannelStats st = channel_stats(xv, n, c, s);
  EXPECT_EQ(r.output.shape(), shape);
  EXPECT_EQ(r.output.dtype(), dtype);
  expect_close(r.output, normalise(xv, n, c, s, st, w, b, eps), tol, tol);
  expect_close(r.save_mean, st.mean, tol, tol);
  expect_close(r.save_invstd, inverse_std(st.var, eps), tol, tol);
  expect_close(r.batch_var, st.var, tol, tol);
  expect_close(running_mean, vec(running.mean, {c}, dev, dtype), 0);  // the forward only reads x
  expect_close(running_var, vec(running.var, {c}, dev, dtype), 0);

  batch_norm_update_stats(running_mean, running_var, r.save_mean, r.batch_var, momentum, n * s);
  ChannelStats want = updated_running_stats(running, st, momentum, n * s);
  expect_close(running_mean, want.mean, tol, tol);
  expect_close(running_var, want.var, tol, tol);
}

TEST_P(BatchNorm, Training2DMatchesReferenceAndUpdateStatsAppliesMomentum) {
  check_batch_norm_training(device(), {7, 5}, DType::Float64, 1e-12);
  check_batch_norm_training(device(), {16, 3}, DType::Float32, 1e-5);
}

TEST_P(BatchNorm, Training4DMatchesReference) {
  check_batch_norm_training(device(), {4, 3, 5, 6}, DType::Float64, 1e-12);
  // 2 * 3000 values per channel: several statistics chunks per (n, c) run.
  check_batch_norm_training(device(), {2, 3, 50, 60}, DType::Float32, 2e-5);
  check_batch_norm_training(device(), {3, 2, 4, 4}, DType::Float16, 2e-2);
  check_batch_norm_training(device(), {3, 2, 4, 4}, DType::BFloat16, 5e-2);
}

// Checkpointing recomputes a forward: however often it runs, the running statistics stay put.
TEST_P(BatchNorm, ForwardNeverWritesRunningStats) {
  const int64_t c = 3;
  Tensor x = random_tensor({8, c, 2}, 51, DType::Float32, device());
  Tensor rm = random_tensor({c}, 52, DType::Float32, device());
  Tensor rv = random_tensor({c}, 53, DType::Float32, device(), 0.5, 2);
  const std::vector<double> rm0 = rm.to_vector<double>(), rv0 = rv.to_vector<double>();
  const int64_t rm_version = rm.version(), rv_version = rv.version();
  BatchNormResult first = batch_norm(x, Tensor(), Tensor(), rm, rv, true);
  BatchNormResult again = batch_norm(x, Tensor(), Tensor(), rm, rv, true);
  expect_close(again.output, first.output, 0);
  expect_close(rm, rm0, 0);
  expect_close(rv, rv0, 0);
  EXPECT_EQ(rm.version(), rm_version);
  EXPECT_EQ(rv.version(), rv_version);
}

// The update against statistics computed here by brute force from x, in float64, with
// momentum 1 (the batch alone), 0 (the running value alone) and between.
TEST_P(BatchNorm, UpdateStatsMatchesBruteForceWithUnbiasedVariance) {
  const int64_t n = 5, c = 2, s = 3;
  std::vector<double> xv = random_values(n * c * s, 61, -1, 4);
  BatchNormResult r =
      batch_norm(vec(xv, {n, c, s}, device()), Tensor(), Tensor(), Tensor(), Tensor(), true);
  ChannelStats batch = channel_stats(xv, n, c, s);
  for (double momentum : {0.0, 0.1, 1.0}) {
    ChannelStats running{{0.5, -2.0}, {1.5, 3.0}};
    Tensor rm = vec(running.mean, {c}, device()), rv = vec(running.var, {c}, device());
    batch_norm_update_stats(rm, rv, r.save_mean, r.batch_var, momentum, n * s);
    ChannelStats want = updated_running_stats(running, batch, momentum, n * s);
    expect_close(rm, want.mean, 1e-12);
    expect_close(rv, want.var, 1e-12);
  }
}

TEST_P(BatchNorm, UpdateStatsErrors) {
  Tensor c3 = zeros({3}, DType::Float32, device());
  Tensor c4 = zeros({4}, DType::Float32, device());
  expect_error<ShapeError>([&] { batch_norm_update_stats(c3, c3, c4, c3, 0.1, 8); },
                           {"batch_norm_update_stats", "batch_mean is [4] float32", "[C]"});
  expect_error<DTypeError>(
      [&] { batch_norm_update_stats(c3, c3.to(DType::Float64), c3, c3, 0.1, 8); },
      {"batch_norm_update_stats", "running_var is [3] float64"});
  expect_error<DTypeError>(
      [&] { batch_norm_update_stats(c3.to(DType::Int64), c3, c3, c3, 0.1, 8); },
      {"batch_norm_update_stats", "running_mean", "floating"});
  expect_error<ValueError>([&] { batch_norm_update_stats(c3, c3, c3, c3, 0.1, 1); },
                           {"batch_norm_update_stats", "count is 1"});
  expect_error<ValueError>([&] { batch_norm_update_stats(c3, Tensor(), c3, c3, 0.1, 8); },
                           {"batch_norm_update_stats", "running_var is an undefined tensor"});
}

TEST_P(BatchNorm, StatisticsAreAccurateForALargeOffset) {
  // Values near 1000 with spread 1: a naive sum-of-squares variance in float32 would lose it.
  Shape shape{64, 2, 33};
  std::vector<double> xv = random_values(shape_numel(shape), 7, 999, 1001);
  BatchNormResult r = batch_norm(vec(xv, shape, device(), DType::Float32), Tensor(), Tensor(),
                                 Tensor(), Tensor(), true, 0.0);
  ChannelStats st = channel_stats(xv, 64, 2, 33);
  expect_close(r.save_mean, st.mean, 1e-4, 1e-6);
  expect_close(r.save_invstd, inverse_std(st.var, 0.0), 0, 1e-3);
}

TEST_P(BatchNorm, EvalUsesRunningStats) {
  const int64_t n = 3, c = 4, s = 6;
  std::vector<double> xv = random_values(n * c * s, 11), w = random_values(c, 12),
                      b = random_values(c, 13), rm = random_values(c, 14),
                      rv = random_values(c, 15, 0.5, 2);
  Tensor running_mean = vec(rm, {c}, device()), running_var = vec(rv, {c}, device());
  BatchNormResult r = batch_norm(vec(xv, {n, c, 2, 3}, device()), vec(w, {c}, device()),
                                 vec(b, {c}, device()), running_mean, running_var, false);
  ChannelStats st{rm, rv};
  expect_close(r.output, normalise(xv, n, c, s, st, w, b, 1e-5), 1e-12);
  expect_close(r.save_mean, rm, 1e-15);
  expect_close(r.save_invstd, inverse_std(rv, 1e-5), 1e-12);
  expect_close(running_mean, rm, 0);  // untouched
  expect_close(running_var, rv, 0);
}

TEST_P(BatchNorm, NonContiguousInputAndParams) {
  // x is a permuted view [N, C, H, W] of a [N, H, W, C] buffer (channels-last); weight is a
  // strided slice, running stats strided views that batch_norm_update_stats updates in place.
  const int64_t n = 3, c = 4, h = 2, w = 5;
  Tensor nhwc = random_tensor({n, h, w, c}, 21, DType::Float64, device());
  Tensor x = nhwc.permute({0, 3, 1, 2});
  ASSERT_FALSE(x.is_contiguous());
  Tensor weight = random_tensor({2 * c}, 22, DType::Float64, device()).slice(0, 0, 2 * c, 2);
  Tensor stats = Tensor::from_vector(std::vector<double>(size_t(2 * c), 1.0), {c, 2}).to(device());
  Tensor rm = stats.select(1, 0), rv = stats.select(1, 1);
  BatchNormResult r = batch_norm(x, weight, Tensor(), rm, rv, true);
  batch_norm_update_stats(rm, rv, r.save_mean, r.batch_var, 0.5, n * h * w);
  std::vector<double> xv = x.contiguous().to_vector<double>();
  ChannelStats st = channel_stats(xv, n, c, h * w);
  std::vector<double> zeros(size_t(c), 0.0);
  expect_close(r.output, normalise(xv, n, c, h * w, st, weight.to_vector<double>(), zeros, 1e-5),
               1e-12);
  ChannelStats ones{std::vector<double>(size_t(c), 1.0), std::vector<double>(size_t(c), 1.0)};
  ChannelStats want = updated_running_stats(ones, st, 0.5, n * h * w);
  expect_close(rm, want.mean, 1e-12);
  expect_close(rv, want.var, 1e-12);
}

TEST_P(BatchNorm, EmptyAndSizeOneDims) {
  Tensor rm = Tensor::from_vector(std::vector<double>{0, 0, 0}, {3}).to(device());
  Tensor rv = Tensor::from_vector(std::vector<double>{1, 1, 1}, {3}).to(device());
  BatchNormResult empty = batch_norm(Tensor::empty({0, 3}, DType::Float64, device()), Tensor(),
                                     Tensor(), rm, rv, false);
  EXPECT_EQ(empty.output.shape(), (Shape{0, 3}));
  BatchNormResult no_channels = batch_norm(Tensor::empty({4, 0, 2}, DType::Float64, device()),
                                           Tensor(), Tensor(), Tensor(), Tensor(), true);
  EXPECT_EQ(no_channels.output.shape(), (Shape{4, 0, 2}));
  EXPECT_EQ(no_channels.save_mean.shape(), (Shape{0}));
  // N = 1 with 2 spatial values per channel is a valid training batch.
  Tensor x = Tensor::from_vector(std::vector<double>{1, 3, 10, 20}, {1, 2, 2, 1}).to(device());
  BatchNormResult r = batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true, 0.0);
  expect_close(r.output, {-1, 1, -1, 1}, 1e-12);
  expect_close(r.save_mean, {2, 15}, 1e-12);
}

// Backward vs finite differences of loss = sum(batch_norm(x, w, b) * R), in float64.
void check_batch_norm_backward(Device dev, bool training) {
  const Shape shape{3, 2, 2, 2};
  const int64_t c = 2, n = shape_numel(shape);
  std::vector<double> xv = random_values(n, 31), w = random_values(c, 32, 0.5, 1.5),
                      b = random_values(c, 33), r = random_values(n, 34), rm = random_values(c, 35),
                      rv = random_values(c, 36, 0.5, 2);
  auto run = [&](const std::vector<double>& x, const std::vector<double>& wt,
                 const std::vector<double>& bs) {
    // Running stats are read in eval and ignored in training.
    return batch_norm(vec(x, shape, dev), vec(wt, {c}, dev), vec(bs, {c}, dev), vec(rm, {c}, dev),
                      vec(rv, {c}, dev), training);
  };
  BatchNormResult fwd = run(xv, w, b);
  NormGrads g = batch_norm_backward(vec(r, shape, dev), vec(xv, shape, dev), vec(w, {c}, dev),
                                    fwd.save_mean, fwd.save_invstd, training);
  expect_grads_match_differences(g, run, xv, w, b, r, true);
}

TEST_P(BatchNorm, BackwardMatchesFiniteDifferencesTraining) {
  check_batch_norm_backward(device(), true);
}

TEST_P(BatchNorm, BackwardMatchesFiniteDifferencesEval) {
  check_batch_norm_backward(device(), false);
}

TEST_P(BatchNorm, BackwardFloat32NonContiguousGradOut) {
  // float32 against the float64 backward; grad_out a transposed view.
  const Shape shape{6, 3};
  Tensor x = random_tensor(shape, 41, DType::Float64, device());
  Tensor dy = random_tensor({3, 6}, 42, DType::Float64, device()).t();
  BatchNormResult f64 = batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true);
  NormGrads want = batch_norm_backward(dy, x, Tensor(), f64.save_mean, f64.save_invstd, true);
  Tensor x32 = x.to(DType::Float32), dy32 = dy.to(DType::Float32);
  BatchNormResult f32 = batch_norm(x32, Tensor(), Tensor(), Tensor(), Tensor(), true);
  NormGrads got = batch_norm_backward(dy32, x32, Tensor(), f32.save_mean, f32.save_invstd, true);
  expect_close(got.grad_input, want.grad_input, 1e-5, 1e-4);
  expect_close(got.grad_weight, want.grad_weight, 1e-5, 1e-4);
  expect_close(got.grad_bias, want.grad_bias, 1e-5, 1e-4);
}

TEST_P(BatchNorm, Errors) {
  Tensor x = Tensor::empty({8, 3}, DType::Float32, device());
  Tensor c3 = Tensor::empty({3}, DType::Float32, device());
  Tensor c4 = Tensor::empty({4}, DType::Float32, device());
  expect_error<ShapeError>([&] { batch_norm(x, c4, Tensor(), Tensor(), Tensor(), true); },
                           {"batch_norm", "x is [8, 3] float32", "weight is [4] float32",
                            "shape [3]"});
  expect_error<DTypeError>(
      [&] { batch_norm(x, Tensor(), c3.to(DType::Float64), Tensor(), Tensor(), true); },
      {"batch_norm", "bias is [3] float64", "x's dtype"});
  expect_error<ValueError>([&] { batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), false); },
                           {"batch_norm", "eval mode", "running_mean"});
  expect_error<ValueError>([&] { batch_norm(x, Tensor(), Tensor(), c3, Tensor(), true); },
                           {"batch_norm", "both running statistics"});
  expect_error<ShapeError>([&] { batch_norm(c3, Tensor(), Tensor(), Tensor(), Tensor(), true); },
                           {"batch_norm", "x is [3] float32", "at least 2 dims", "unsqueeze(0)"});
  expect_error<ValueError>(
      [&] {
        batch_norm(Tensor::empty({1, 3}, DType::Float32, device()), Tensor(), Tensor(), Tensor(),
                   Tensor(), true);
      },
      {"batch_norm", "more than 1 value per channel", "got 1"});
  expect_error<DTypeError>(
      [&] {
        batch_norm(Tensor::empty({2, 3}, DType::Int64, device()), Tensor(), Tensor(), Tensor(),
                   Tensor(), true);
      },
      {"batch_norm", "x is [2, 3] int64", "floating"});
  BatchNormResult r = batch_norm(random_tensor({8, 3}, 1, DType::Float32, device()), Tensor(),
                                 Tensor(), Tensor(), Tensor(), true);
  expect_error<ShapeError>(
      [&] { batch_norm_backward(x.t(), x, Tensor(), r.save_mean, r.save_invstd, true); },
      {"batch_norm_backward", "grad_out is [3, 8]", "x's shape"});
  expect_error<ShapeError>([&] { batch_norm_backward(x, x, Tensor(), c4, r.save_invstd, true); },
                           {"batch_norm_backward", "save_mean is [4] float32",
                            "expected save_mean [3] float32"});
  expect_error<DTypeError>(
      [&] { batch_norm_backward(x, x, Tensor(), r.save_mean, c3.to(DType::Float64), true); },
      {"batch_norm_backward", "save_invstd is [3] float64", "expected save_invstd [3] float32"});
}

// An operand on the other device is a DeviceError naming it, checked before any shape: a saved
// statistic on another device was reported as a ShapeError. x on this test's device, the odd one
// on the other (so both directions run across the two instantiations).
TEST_P(BatchNorm, MixedDevicesAreDeviceErrors) {
  if (!cuda_is_available()) GTEST_SKIP() << "needs a CUDA device for the second device";
  const Device other = device().is_cpu() ? Device("cuda:0") : Device("cpu");
  const std::string there = "float32 " + other.str();
  Tensor x = random_tensor({8, 3}, 1, DType::Float32, device());
  BatchNormResult r = batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true);
  const Tensor mean_there = r.save_mean.to(other), invstd_there = r.save_invstd.to(other);
  expect_error<DeviceError>(
      [&] { batch_norm_backward(x, x, Tensor(), mean_there, r.save_invstd, true); },
      {"batch_norm_backward", "save_mean is [3] " + there, "one device"});
  expect_error<DeviceError>(
      [&] { batch_norm_backward(x.t(), x, Tensor(), r.save_mean, invstd_there, true); },
      {"batch_norm_backward", "save_invstd is [3] " + there});
  expect_error<DeviceError>(
      [&] { batch_norm_backward(x.to(other), x, Tensor(), r.save_mean, r.save_invstd, true); },
      {"batch_norm_backward", "grad_out is [8, 3] " + there});
  expect_error<DeviceError>(
      [&] { batch_norm_backward(x, x, r.save_mean.to(other), r.save_mean, r.save_invstd, true); },
      {"batch_norm_backward", "weight is [3] " + there});
  LayerNormResult f = layer_norm(x, {3});
  expect_error<DeviceError>([&] { layer_norm_backward(x, x, {3}, f.mean.to(other), f.rstd); },
                            {"layer_norm_backward", "mean is [8, 1] " + there});
}

// ---------------- layer norm ----------------

// Reference over x viewed as [m, d]; w, b of length d (empty: absent).
void layer_norm_reference(const std::vector<double>& x, int64_t m, int64_t d,
                          const std::vector<double>& w, const std::vector<double>& b, double eps,
                          std::vector<double>* mean, std::vector<double>* rstd,
                          std::vector<double>* y) {
  for (int64_t i = 0; i < m; ++i) {
    double mu = 0, var = 0;
    for (int64_t j = 0; j < d; ++j) mu += x[size_t(i * d + j)];
    mu /= double(d);
    for (int64_t j = 0; j < d; ++j) var += std::pow(x[size_t(i * d + j)] - mu, 2);
    double r = 1 / std::sqrt(var / double(d) + eps);
    mean->push_back(mu);
    rstd->push_back(r);
    for (int64_t j = 0; j < d; ++j)
      y->push_back((x[size_t(i * d + j)] - mu) * r * (w.empty() ? 1 : w[size_t(j)]) +
                   (b.empty() ? 0 : b[size_t(j)]));
  }
}

void check_layer_norm(Device dev, const Tensor& x, const Shape& normalized, bool affine,
                      double tol) {
  const int64_t d = shape_numel(normalized), m = x.numel() / d;
  std::vector<double> w, b;
  Tensor wt, bt;
  if (affine) {
    w = random_values(d, 52, 0.5, 1.5);
    b = random_values(d, 53);
    wt = vec(w, normalized, dev, x.dtype());
    bt = vec(b, normalized, dev, x.dtype());
  }
  LayerNormResult r = layer_norm(x, normalized, wt, bt, 1e-4);
  std::vector<double> mean, rstd, y;
  layer_norm_reference(x.contiguous().to_vector<double>(), m, d, w, b, 1e-4, &mean, &rstd, &y);
  Shape stats = x.shape();
  for (size_t k = stats.size() - normalized.size(); k < stats.size(); ++k) stats[k] = 1;
  EXPECT_EQ(r.output.shape(), x.shape());
  EXPECT_EQ(r.mean.shape(), stats);
  expect_close(r.output, y, tol, tol);
  expect_close(r.mean, mean, tol, tol);
  expect_close(r.rstd, rstd, tol, tol);
}

TEST_P(LayerNorm, ForwardMatchesReference) {
  check_layer_norm(device(), random_tensor({5, 7}, 51, DType::Float64, device()), {7}, true, 1e-12);
  check_layer_norm(device(), random_tensor({2, 3, 4, 5}, 54, DType::Float32, device()), {4, 5},
                   true, 1e-5);
  check_layer_norm(device(), random_tensor({3, 1000}, 55, DType::Float32, device(), 99, 101),
                   {1000}, false, 1e-4);
  check_layer_norm(device(), random_tensor({4, 64}, 56, DType::Float16, device()), {64}, true,
                   2e-2);
  check_layer_norm(device(), random_tensor({4, 64}, 57, DType::BFloat16, device()), {64}, true,
                   5e-2);
}

// The kernel has a loop for each of: weight and bias, weight alone, bias alone, neither.
TEST_P(LayerNorm, ForwardWithWeightOrBiasAlone) {
  const int64_t m = 3, d = 37;
  Tensor x = random_tensor({m, d}, 58, DType::Float32, device());
  const std::vector<double> w = random_values(d, 52, 0.5, 1.5), b = random_values(d, 53);
  for (bool with_w : {true, false})
    for (bool with_b : {true, false}) {
      SCOPED_TRACE(std::string(with_w ? "weight" : "no weight") + (with_b ? ", bias" : ""));
      const std::vector<double> wv = with_w ? w : std::vector<double>();
      const std::vector<double> bv = with_b ? b : std::vector<double>();
      LayerNormResult r =
          layer_norm(x, {d}, with_w ? vec(w, {d}, device(), DType::Float32) : Tensor(),
                     with_b ? vec(b, {d}, device(), DType::Float32) : Tensor(), 1e-4);
      std::vector<double> mean, rstd, y;
      layer_norm_reference(x.to_vector<double>(), m, d, wv, bv, 1e-4, &mean, &rstd, &y);
      expect_close(r.output, y, 1e-5, 1e-5);
    }
}

TEST_P(LayerNorm, NonContiguousEmptyAndSizeOne) {
  Tensor x = random_tensor({6, 4}, 61, DType::Float64, device()).t();  // [4, 6] view
  check_layer_norm(device(), x, {6}, true, 1e-12);
  check_layer_norm(device(), random_tensor({3, 1}, 62, DType::Float64, device()), {1}, true,
                   1e-12);  // a single value normalises to 0 (then + bias)
  LayerNormResult e = layer_norm(Tensor::empty({0, 5}, DType::Float32, device()), {5});
  EXPECT_EQ(e.output.shape(), (Shape{0, 5}));
  EXPECT_EQ(e.mean.shape(), (Shape{0, 1}));
}

void check_layer_norm_backward(Device dev, bool affine) {
  const Shape shape{3, 2, 4}, normalized{2, 4};
  const int64_t n = shape_numel(shape), d = 8;
  std::vector<double> xv = random_values(n, 71), r = random_values(n, 72);
  std::vector<double> w = random_values(d, 73, 0.5, 1.5), b = random_values(d, 74);
  auto run = [&](const std::vector<double>& x, const std::vector<double>& wt,
                 const std::vector<double>& bs) {
    return layer_norm(vec(x, shape, dev), normalized, affine ? vec(wt, normalized, dev) : Tensor(),
                      affine ? vec(bs, normalized, dev) : Tensor(), 1e-5);
  };
  LayerNormResult fwd = run(xv, w, b);
  NormGrads g = layer_norm_backward(vec(r, shape, dev), vec(xv, shape, dev), normalized, fwd.mean,
                                    fwd.rstd, affine ? vec(w, normalized, dev) : Tensor());
  EXPECT_EQ(g.grad_weight.shape(), normalized);
  expect_grads_match_differences(g, run, xv, w, b, r, affine);
}

TEST_P(LayerNorm, BackwardMatchesFiniteDifferences) {
  check_layer_norm_backward(device(), true);
  check_layer_norm_backward(device(), false);
}

TEST_P(LayerNorm, BackwardFloat32ManyRows) {
  // Enough rows that the CPU's parameter gradient splits them into groups.
  Tensor x = random_tensor({300, 24}, 81, DType::Float64, device());
  Tensor dy = random_tensor({300, 24}, 82, DType::Float64, device());
  Tensor w = random_tensor({24}, 83, DType::Float64, device());
  LayerNormResult f = layer_norm(x, {24}, w, Tensor());
  NormGrads want = layer_norm_backward(dy, x, {24}, f.mean, f.rstd, w);
  // The grad_weight reference: sum over rows of dy * xhat, in double here.
  std::vector<double> xv = x.to_vector<double>(), dv = dy.to_vector<double>(),
                      mv = f.mean.to_vector<double>(), rv = f.rstd.to_vector<double>();
  std::vector<double> gw(24, 0.0), gb(24, 0.0);
  for (size_t i = 0; i < 300; ++i)
    for (size_t j = 0; j < 24; ++j) {
      gw[j] += dv[i * 24 + j] * (xv[i * 24 + j] - mv[i]) * rv[i];
      gb[j] += dv[i * 24 + j];
    }
  expect_close(want.grad_weight, gw, 1e-10);
  expect_close(want.grad_bias, gb, 1e-10);
  Tensor x32 = x.to(DType::Float32), w32 = w.to(DType::Float32);
  LayerNormResult f32 = layer_norm(x32, {24}, w32, Tensor());
  NormGrads got = layer_norm_backward(dy.to(DType::Float32), x32, {24}, f32.mean, f32.rstd, w32);
  expect_close(got.grad_input, want.grad_input, 1e-4, 1e-4);
  expect_close(got.grad_weight, gw, 1e-3, 1e-4);
  expect_close(got.grad_bias, gb, 1e-3, 1e-4);
}

TEST_P(LayerNorm, Errors) {
  Tensor x = Tensor::empty({4, 6}, DType::Float32, device());
  expect_error<ShapeError>([&] { layer_norm(x, {4}); },
                           {"layer_norm", "x is [4, 6] float32", "normalized_shape [4]",
                            "trailing dims", "[6]"});
  expect_error<ShapeError>([&] { layer_norm(x, {}); }, {"layer_norm", "non-empty"});
  expect_error<ShapeError>(
      [&] { layer_norm(x, {6}, Tensor::empty({5}, DType::Float32, device())); },
      {"layer_norm", "weight is [5] float32", "expected weight of shape [6]"});
  expect_error<DTypeError>(
      [&] { layer_norm(x, {6}, Tensor(), Tensor::empty({6}, DType::Float16, device())); },
      {"layer_norm", "bias is [6] float16", "x's dtype"});
  expect_error<DTypeError>(
      [&] {
        layer_norm(Tensor::empty({4, 6}, DType::Int32, device()), {6});
      },
      {"layer_norm", "int32", "floating"});
  LayerNormResult f = layer_norm(random_tensor({4, 6}, 1, DType::Float32, device()), {6});
  expect_error<ShapeError>([&] { layer_norm_backward(x, x, {6}, f.rstd.view({4}), f.rstd); },
                           {"layer_norm_backward", "mean is [4] float32",
                            "expected mean [4, 1] float32"});
}

// ---------------- dropout ----------------

TEST_P(Dropout, KeepsAboutOneMinusPAndScalesTheKept) {
  const double p = 0.3;
  Tensor x = random_tensor({400, 250}, 91, DType::Float32, device());
  Generator gen(1234);
  DropoutResult r = dropout(x, p, true, &gen);
  ASSERT_EQ(r.mask.dtype(), DType::Bool);
  ASSERT_EQ(r.mask.shape(), x.shape());
  std::vector<bool> mask = r.mask.to_vector<bool>();
  std::vector<double> xv = x.to_vector<double>(), want(xv.size());
  int64_t kept = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    kept += mask[i];
    want[i] = mask[i] ? xv[i] / (1 - p) : 0.0;
  }
  // 100000 draws: the kept fraction is 0.7 within a few standard deviations (0.0014 each).
  EXPECT_NEAR(double(kept) / double(xv.size()), 1 - p, 0.01);
  expect_close(r.output, want, 1e-6, 1e-6);
  // The mask is bernoulli's with the same generator state.
  Generator replay(1234);
  Tensor b = bernoulli(x.shape(), 1 - p, DType::Bool, device(), &replay);
  EXPECT_EQ(b.to_vector<bool>(), mask);
  // The generator advanced: the next call draws another mask.
  EXPECT_NE(dropout(x, p, true, &gen).mask.to_vector<bool>(), mask);
}

TEST_P(Dropout, SameSeedSameMaskOnEveryDevice) {
  Tensor x = random_tensor({1000}, 92, DType::Float64, device());
  Generator g1(7), g2(7);
  std::vector<bool> here = dropout(x, 0.5, true, &g1).mask.to_vector<bool>();
  std::vector<bool> cpu = dropout(x.to(Device()), 0.5, true, &g2).mask.to_vector<bool>();
  EXPECT_EQ(here, cpu);
}

TEST_P(Dropout, EvalZeroAndOneNonContiguousAndBackward) {
  Tensor x = random_tensor({6, 5}, 93, DType::Float32, device()).t();  // [5, 6] view
  DropoutResult eval = dropout(x, 0.5, false);
  EXPECT_TRUE(eval.output.shares_storage(x));
  EXPECT_FALSE(eval.mask.defined());
  EXPECT_FALSE(dropout(x, 0.0).mask.defined());
  Tensor g = random_tensor({5, 6}, 94, DType::Float32, device());
  EXPECT_TRUE(dropout_backward(g, Tensor(), 0.5).shares_storage(g));
  expect_close(dropout(x, 1.0).output, std::vector<double>(30, 0.0), 0);

  Generator gen(5);
  DropoutResult r = dropout(x, 0.25, true, &gen);
  std::vector<bool> mask = r.mask.to_vector<bool>();
  std::vector<double> xv = x.to_vector<double>(), gv = g.to_vector<double>(), out, grad;
  for (size_t i = 0; i < 30; ++i) {
    out.push_back(mask[i] ? xv[i] / 0.75 : 0.0);
    grad.push_back(mask[i] ? gv[i] / 0.75 : 0.0);
  }
  expect_close(r.output, out, 1e-6, 1e-6);
  expect_close(dropout_backward(g, r.mask, 0.25), grad, 1e-6, 1e-6);
  for (DType t : {DType::Float16, DType::BFloat16}) {
    Tensor h = x.to(t);
    Generator again(5);
    expect_close(dropout(h, 0.25, true, &again).output, out, 2e-2, 1e-2);
  }
  EXPECT_EQ(dropout(Tensor::empty({0, 3}, DType::Float32, device()), 0.5).output.shape(),
            (Shape{0, 3}));
}

TEST_P(Dropout, Errors) {
  Tensor x = Tensor::empty({4}, DType::Float32, device());
  expect_error<ValueError>([&] { dropout(x, 1.5); }, {"dropout", "p is 1.5", "[0, 1]"});
  expect_error<ValueError>([&] { dropout(x, -0.1); }, {"dropout", "[0, 1]"});
  expect_error<DTypeError>([&] { dropout(Tensor::empty({4}, DType::Int64, device()), 0.5); },
                           {"dropout", "x is [4] int64", "floating"});
  Tensor mask = Tensor::empty({3}, DType::Bool, device());
  expect_error<ShapeError>([&] { dropout_backward(x, mask, 0.5); },
                           {"dropout_backward", "grad is [4] float32", "mask is [3] bool"});
  expect_error<ShapeError>([&] { dropout_backward(x, x, 0.5); },
                           {"dropout_backward", "mask is [4] float32", "bool mask"});
}

EMBER_INSTANTIATE_DEVICE_TEST(BatchNorm);
EMBER_INSTANTIATE_DEVICE_TEST(LayerNorm);
EMBER_INSTANTIATE_DEVICE_TEST(Dropout);

}  // namespace
}  // namespace ember
