// test_reduction.cpp — sum, prod, mean, var/std, amax/amin, max/min, argmax/argmin, logsumexp,
// all/any and norm against brute-force references computed in double in this file.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;
using Values = std::vector<double>;
using Fold = std::function<double(const Values&)>;

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

class Reduction : public test::DeviceTest {};
EMBER_INSTANTIATE_DEVICE_TEST(Reduction);

// Which dims of an ndim tensor `dims` reduces (empty = all).
std::vector<bool> reduced_mask(std::vector<int64_t> dims, int64_t ndim) {
  std::vector<bool> mask(size_t(ndim), dims.empty());
  for (int64_t d : dims) mask[size_t(d < 0 ? d + ndim : d)] = true;
  return mask;
}

Shape ref_shape(const Shape& shape, const std::vector<int64_t>& dims, bool keepdim) {
  std::vector<bool> mask = reduced_mask(dims, int64_t(shape.size()));
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!mask[d]) out.push_back(shape[d]);
    else if (keepdim) out.push_back(1);
  return out;
}

// Brute force: groups the elements of x (row-major) by kept index, each group in row-major
// order over the reduced dims, and folds each group with f.
Values ref_reduce(const Tensor& x, const std::vector<int64_t>& dims, const Fold& f) {
  const Values v = x.to_vector<double>();
  const Shape& shape = x.shape();
  std::vector<bool> mask = reduced_mask(dims, x.dim());
  int64_t outer = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!mask[d]) outer *= shape[d];
  std::vector<Values> groups(static_cast<size_t>(outer));
  for (int64_t i = 0; i < int64_t(v.size()); ++i) {
    int64_t rest = i, o = 0, scale = 1;
    for (int64_t d = x.dim() - 1; d >= 0; --d) {
      int64_t idx = rest % shape[size_t(d)];
      rest /= shape[size_t(d)];
      if (!mask[size_t(d)]) {
        o += idx * scale;
        scale *= shape[size_t(d)];
      }
    }
    groups[size_t(o)].push_back(v[size_t(i)]);
  }
  Values out;
  for (const Values& g : groups) out.push_back(f(g));
  return out;
}

double ref_sum(const Values& g) {
  double s = 0;
  for (double x : g) s += x;
  return s;
}
double ref_prod(const Values& g) {
  double s = 1;
  for (double x : g) s *= x;
  return s;
}
double ref_mean(const Values& g) { return ref_sum(g) / double(g.size()); }
Fold ref_var(int64_t correction) {
  return [correction](const Values& g) {
    double m = ref_mean(g), s = 0;
    for (double x : g) s += (x - m) * (x - m);
    return s / double(int64_t(g.size()) - correction);
  };
}
double ref_amax(const Values& g) {
  double m = -kInf;
  for (double x : g) m = std::isnan(x) || x > m ? x : m;
  return m;
}
double ref_amin(const Values& g) {
  double m = kInf;
  for (double x : g) m = std::isnan(x) || x < m ? x : m;
  return m;
}
double ref_logsumexp(const Values& g) {
  double m = ref_amax(g), s = 0;
  if (std::isinf(m)) return m;
  for (double x : g) s += std::exp(x - m);
  return m + std::log(s);
}
Fold ref_norm(double p) {
  return [p](const Values& g) {
    if (std::isinf(p)) {
      double m = p > 0 ? 0 : kInf;
      for (double x : g) m = p > 0 ? std::max(m, std::fabs(x)) : std::min(m, std::fabs(x));
      return m;
    }
    double s = 0;
    for (double x : g) s += p == 0 ? double(x != 0) : std::pow(std::fabs(x), p);
    return p == 0 ? s : std::pow(s, 1 / p);
  };
}
// Index of the first max (or min), NaN counting as the extreme.
Fold ref_arg(bool is_max) {
  return [is_max](const Values& g) {
    size_t best = 0;
    for (size_t i = 1; i < g.size(); ++i) {
      if (std::isnan(g[best])) break;
      if (std::isnan(g[i]) || (is_max ? g[i] > g[best] : g[i] < g[best])) best = i;
    }
    return double(best);
  };
}

using ReduceFn = std::function<Tensor(const Tensor&, const std::vector<int64_t>&, bool)>;

// Checks fn(x, dims, keepdim) for both keepdim values: shape and every value against f.
void check_reduce(const ReduceFn& fn, const Fold& f, const Tensor& x,
                  const std::vector<int64_t>& dims, double atol, double rtol) {
  Values expected = ref_reduce(x, dims, f);
  for (bool keepdim : {false, true}) {
    SCOPED_TRACE(x.str() + " dims " + shape_str(dims) + (keepdim ? " keepdim" : ""));
    Tensor got = fn(x, dims, keepdim);
    EXPECT_EQ(got.shape(), ref_shape(x.shape(), dims, keepdim));
    expect_close(got, expected, atol, rtol);
  }
}

const std::vector<std::vector<int64_t>> kDimSets = {{},     {0},    {1},      {2},      {-1},
                                                    {0, 2}, {2, 0}, {-1, -2}, {0, 1, 2}};

// The same values laid out in different ways: contiguous, transposed, stepped, expanded.
std::vector<Tensor> layouts(DType dtype, Device device, double lo = -1, double hi = 1) {
  Tensor base = test::random_tensor({4, 6, 10}, 11, dtype, device, lo, hi);
  return {
      base,
      test::random_tensor({10, 4, 6}, 12, dtype, device, lo, hi).permute({1, 2, 0}),
      test::random_tensor({8, 6, 21}, 13, dtype, device, lo, hi)
          .slice(0, 0, 8, 2)
          .slice(2, 1, 21, 2),
      test::random_tensor({4, 1, 10}, 14, dtype, device, lo, hi).expand({4, 6, 10}),
  };
}

TEST_P(Reduction, SumOverEveryDimSetAndLayout) {
  for (DType dt : {DType::Float32, DType::Float64})
    for (const Tensor& x : layouts(dt, device()))
      for (const auto& dims : kDimSets)
        check_reduce([](auto& x, auto& d, bool k) { return sum(x, d, k); }, ref_sum, x, dims, 1e-5,
                     1e-5);
}

TEST_P(Reduction, MeanProdOverDimSets) {
  for (const Tensor& x : layouts(DType::Float64, device(), 0.5, 1.5))
    for (const auto& dims : kDimSets) {
      check_reduce([](auto& x, auto& d, bool k) { return mean(x, d, k); }, ref_mean, x, dims, 1e-12,
                   1e-12);
      check_reduce([](auto& x, auto& d, bool k) { return prod(x, d, k); }, ref_prod, x, dims, 1e-12,
                   1e-10);
    }
}

TEST_P(Reduction, SumDtypes) {
  Tensor i32 =
      Tensor::from_vector<int32_t>({1, -2, 3, 2000000000, 2000000000, 6}, {2, 3}).to(device());
  Tensor s = sum(i32, {1});
  EXPECT_EQ(s.dtype(), DType::Int64);  // exact, no int32 overflow
  expect_close(s, {2, 4000000006.0}, 0, 0);
  Tensor b = Tensor::from_vector<bool>({true, false, true, true}, {4}).to(device());
  EXPECT_EQ(sum(b).dtype(), DType::Int64);
  EXPECT_EQ(sum(b).item<int64_t>(), 3);
  Tensor u8 = Tensor::from_vector<uint8_t>({200, 200, 7}, {3}).to(device());
  EXPECT_EQ(sum(u8).item<int64_t>(), 407);
  EXPECT_EQ(prod(u8.to(DType::Int16)).item<int64_t>(), 280000);
  for (DType dt : {DType::UInt8, DType::Int8, DType::Int16, DType::Int32, DType::Int64})
    for (const Tensor& x : layouts(dt, device(), 0, 100))
      for (const auto& dims : kDimSets)
        check_reduce([](auto& x, auto& d, bool k) { return sum(x, d, k); }, ref_sum, x, dims, 0, 0);
  // The inputs are exact in the half type; the sum is accumulated in float and rounded once: at
  // most u * |sum| off (test::unit_roundoff), plus float's n * 2^-24 * sum |x|. Accumulated in
  // the half type, 1000 values in [0, 1] would stall once the partial sum's spacing outgrew them
  // (float16 steps by 0.25 above 256, bfloat16 by 2): off by units, where the bound allows 0.2
  // (float16) and 2 (bfloat16) at a sum near 500; over 40 values in [-1, 1], by ~4e-3 against
  // 2e-3 (float16).
  for (DType dt : {DType::Float16, DType::BFloat16})
    for (int64_t n : {40, 1000}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " n " + std::to_string(n));
      const double u = test::unit_roundoff(dt);
      Tensor x = test::random_tensor({5, n}, 3, dt, device(), n == 40 ? -1.0 : 0.0, 1.0);
      Tensor got = sum(x, {1});
      EXPECT_EQ(got.dtype(), dt);
      expect_close(got, ref_reduce(x, {1}, ref_sum), 2.0 * double(n * n) * 0x1p-24, u);
      expect_close(mean(x, {0}), ref_reduce(x, {0}, ref_mean), 2.0 * 25 * 0x1p-24, u);
    }
}

TEST_P(Reduction, LargeFullSumIsAccurateAndSplitOverThreads) {
  // 2^24 elements: the path that splits one output over threads. A naive float loop would drift
  // by ~1e-3 relative here; pairwise summation keeps the error near float's epsilon.
  const int64_t n = int64_t(1) << 24;
  Tensor x = test::random_tensor({n}, 5, DType::Float64, Device(), 0.0, 1.0);
  double exact = sum(x).item<double>();
  Tensor xf = x.to(device(), DType::Float32);
  double exact_f = 0;
  for (float v : xf.to_vector<float>()) exact_f += double(v);
  EXPECT_NEAR(exact, exact_f, 1e-3);  // float rounding of the inputs themselves
  EXPECT_NEAR(sum(xf).item<double>(), exact_f, 1e-6 * exact_f);
  EXPECT_NEAR(mean(xf).item<double>(), exact_f / double(n), 1e-6);
  Tensor ones = Tensor::empty({n}, DType::Float32, device()).fill_(0.1);
  EXPECT_NEAR(sum(ones).item<double>(), double(0.1f) * double(n), 1e-6 * double(n) * 0.1);
}

TEST_P(Reduction, ColumnAndRowReductionsOfWideAndTallMatrices) {
  // Reducing dim 0 of a contiguous matrix walks columns (the tiled path); dim 1 walks rows.
  for (Shape shape : {Shape{1000, 37}, Shape{37, 1000}, Shape{300, 70}}) {
    Tensor x = test::random_tensor(shape, 21, DType::Float32, device());
    for (std::vector<int64_t> dims : {std::vector<int64_t>{0}, std::vector<int64_t>{1}}) {
      check_reduce([](auto& x, auto& d, bool k) { return sum(x, d, k); }, ref_sum, x, dims, 1e-4,
                   1e-5);
      check_reduce([](auto& x, auto& d, bool k) { return amax(x, d, k); }, ref_amax, x, dims, 0, 0);
      check_reduce([](auto& x, auto& d, bool k) { return argmin(x, d[0], k); }, ref_arg(false), x,
                   dims, 0, 0);
    }
  }
}

// [3, n] float32 with a NaN in row 1 at `nan_at` (none if negative), contiguous or as the
// transpose of a [n, 3] tensor (rows of stride 3), and the same values as a stepped view.
std::vector<Tensor> rows_for_fast_paths(int64_t n, int64_t nan_at, Device device) {
  Values v = test::random_values(3 * n, 50, -10, 10);
  if (nan_at >= 0) v[size_t(n + nan_at)] = kNaN;
  Tensor x = Tensor::from_vector(v, {3, n}).to(device, DType::Float32);
  Tensor wide = test::random_tensor({3, 2 * n}, 51, DType::Float32, device).slice(1, 0, 2 * n, 2);
  return {x, x.t().contiguous().t(), wide};
}

TEST_P(Reduction, LanesAndTailsAtEveryRowLengthWithNaNAnywhere) {
  // Runs fold into 32 lanes in blocks of 2048, pairwise above; the lengths cover a run shorter
  // than the lanes (1, 7, 31), whole and partial lane rounds, and blocks with tails (1031, 2053,
  // 4099).
  // A NaN first, in the middle or last of row 1 makes its amax, amin and argmax NaN.
  for (int64_t n : {1, 7, 31, 32, 33, 257, 1031, 2053, 4099})
    for (int64_t nan_at : {int64_t(-1), int64_t(0), n / 2, n - 1})
      for (const Tensor& x : rows_for_fast_paths(n, nan_at, device()))
        for (std::vector<int64_t> dims : {std::vector<int64_t>{1}, std::vector<int64_t>{0}}) {
          SCOPED_TRACE("n " + std::to_string(n) + " NaN at " + std::to_string(nan_at));
          check_reduce([](auto& x, auto& d, bool k) { return sum(x, d, k); }, ref_sum, x, dims,
                       1e-4, 1e-5);
          check_reduce([](auto& x, auto& d, bool k) { return amax(x, d, k); }, ref_amax, x, dims, 0,
                       0);
          check_reduce([](auto& x, auto& d, bool k) { return amin(x, d, k); }, ref_amin, x, dims, 0,
                       0);
          check_reduce([](auto& x, auto& d, bool k) { return argmax(x, d[0], k); }, ref_arg(true),
                       x, dims, 0, 0);
        }
}

TEST_P(Reduction, ColumnTilesWiderThanOneTileAndThanTheThreads) {
  // A column reduction accumulates up to 4096 float (2048 double) neighbouring outputs at once,
  // split so each thread gets a tile: widths on both sides of those, long columns flushed every
  // 128 rows.
  for (Shape shape : {Shape{300, 2049}, Shape{5, 5000}, Shape{1100, 2}, Shape{129, 4097}})
    for (DType dt : {DType::Float32, DType::Float64}) {
      Tensor x = test::random_tensor(shape, 52, dt, device());
      check_reduce([](auto& x, auto& d, bool k) { return sum(x, d, k); }, ref_sum, x, {0}, 1e-4,
                   1e-5);
      check_reduce([](auto& x, auto& d, bool k) { return amax(x, d, k); }, ref_amax, x, {0}, 0, 0);
      check_reduce([](auto& x, auto& d, bool k) { return var(x, d, 1, k); }, ref_var(1), x, {0},
                   1e-5, 1e-4);
    }
}

TEST_P(Reduction, TallColumnSumsInEveryFloatDtype) {
  // A bias gradient's shape: few outputs over thousands of rows, which CUDA splits over many
  // blocks (chunks of 64 rows) and combines; bfloat16 and float16 accumulate in float32 and round
  // once at the end.
  for (DType dt : {DType::BFloat16, DType::Float16, DType::Float32, DType::Float64})
    for (Shape shape : {Shape{4096, 96}, Shape{8, 1000, 40}, Shape{65, 33}}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + shape_str(shape));
      Tensor x = test::random_tensor(shape, 53, dt, device());
      const bool half = dt == DType::BFloat16 || dt == DType::Float16;
      std::vector<int64_t> dims(shape.size() - 1);
      std::iota(dims.begin(), dims.end(), int64_t(0));
      check_reduce([](auto& x, auto& d, bool k) { return sum(x, d, k); }, ref_sum, x, dims,
                   half ? 1e-2 : 1e-4, half ? 5e-2 : 1e-5);
    }
}

TEST_P(Reduction, VarAndStdWithCorrectionsAndLargeOffset) {
  for (const Tensor& x : layouts(DType::Float64, device()))
    for (const auto& dims : kDimSets)
      for (int64_t c : {0, 1, 2}) {
        check_reduce([c](auto& x, auto& d, bool k) { return var(x, d, c, k); }, ref_var(c), x, dims,
                     1e-12, 1e-10);
        Fold sd = [c](const Values& g) { return std::sqrt(ref_var(c)(g)); };
        check_reduce([c](auto& x, auto& d, bool k) { return ember::std(x, d, c, k); }, sd, x, dims,
                     1e-12, 1e-10);
      }
  // float32 values 1e4 + U(-1, 1): sum(x^2) - sum(x)^2/n would cancel to garbage.
  Tensor x = test::random_tensor({3, 5000}, 8, DType::Float32, device(), 1e4 - 1, 1e4 + 1);
  expect_close(var(x, {1}), ref_reduce(x, {1}, ref_var(1)), 0, 1e-3);
  expect_close(var(test::random_tensor({64}, 9, DType::BFloat16, device()), {}, 1),
               ref_reduce(test::random_tensor({64}, 9, DType::BFloat16), {}, ref_var(1)), 0, 0.01);
}

TEST_P(Reduction, VarOfTooFewElementsIsNaNOrInf) {
  Tensor one = Tensor::from_vector<double>({3.0}, {1}).to(device());
  EXPECT_TRUE(std::isnan(var(one).item<double>()));
  EXPECT_EQ(var(one, {}, 0).item<double>(), 0.0);
  Tensor two = Tensor::from_vector<double>({1.0, 3.0}, {2}).to(device());
  EXPECT_EQ(var(two, {}, 2).item<double>(), kInf);
  EXPECT_DOUBLE_EQ(ember::std(two).item<double>(), std::sqrt(2.0));
}

TEST_P(Reduction, AmaxAminEveryDtypeAndNaN) {
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int32,
                   DType::Int8, DType::UInt8, DType::Int64, DType::Int16}) {
    // uint8 cannot hold the negatives (float -> uint8 of a negative is undefined).
    for (const Tensor& x : layouts(dt, device(), dt == DType::UInt8 ? 0 : -100, 100)) {
      for (const auto& dims : kDimSets) {
        check_reduce([](auto& x, auto& d, bool k) { return amax(x, d, k); }, ref_amax, x, dims, 0,
                     0);
        check_reduce([](auto& x, auto& d, bool k) { return amin(x, d, k); }, ref_amin, x, dims, 0,
                     0);
      }
    }
  }
  Tensor b = Tensor::from_vector<bool>({false, true, false, false}, {2, 2}).to(device());
  expect_close(amax(b, {1}), {1, 0}, 0, 0);
  Tensor x = Tensor::from_vector<float>({1, NAN, 3, -1, 2, 5}, {2, 3}).to(device());
  expect_close(amax(x, {1}), {kNaN, 5});
  expect_close(amin(x, {1}), {kNaN, -1});
  expect_close(amax(x, {0}), {1, kNaN, 5});
}

TEST_P(Reduction, MaxMinValuesAndIndicesFirstOnTies) {
  Tensor x =
      Tensor::from_vector<float>({3, 7, 7, 1, 5, 1, 1, 9, 2, NAN, 4, 2}, {3, 4}).to(device());
  ValuesIndices mx = max(x, 1);
  expect_close(mx.values, {7, 9, kNaN});
  expect_close(mx.indices, {1, 3, 1}, 0, 0);
  EXPECT_EQ(mx.indices.dtype(), DType::Int64);
  ValuesIndices mn = min(x, -1, true);
  EXPECT_EQ(mn.values.shape(), (Shape{3, 1}));
  expect_close(mn.values, {1, 1, kNaN});
  expect_close(mn.indices, {3, 1, 1}, 0, 0);
  ValuesIndices col = max(x, 0);
  expect_close(col.values, {5, kNaN, 7, 9});
  expect_close(col.indices, {1, 2, 0, 1}, 0, 0);
  for (DType dt : {DType::Float32, DType::Int32, DType::Float16})
    for (const Tensor& t : layouts(dt, device(), -5, 5))  // small integers: many ties
      for (int64_t d : {0, 1, 2, -1}) {
        SCOPED_TRACE(t.str() + " dim " + std::to_string(d));
        ValuesIndices got = min(t, d);
        expect_close(got.values, ref_reduce(t, {d}, ref_amin), 0, 0);
        expect_close(got.indices, ref_reduce(t, {d}, ref_arg(false)), 0, 0);
        expect_close(max(t, d).indices, ref_reduce(t, {d}, ref_arg(true)), 0, 0);
      }
}

TEST_P(Reduction, ArgExtremesKeepTheFirstOfTiesOnEveryPath) {
  // Values from {0, 1, 2}: ties everywhere. Rows shorter than the lanes, folded in lanes, cut into
  // blocks combined pairwise; as rows (unit stride), as columns (the tiled path), and one long row
  // alone (a single output, its elements split over threads); with NaNs, which win.
  for (int64_t n : {5, 33, 2053, 4099, 70000})
    for (bool with_nan : {false, true}) {
      Values v = test::random_values(2 * n, 60, 0, 3);
      for (double& e : v) e = std::floor(e);
      if (with_nan) v[size_t(n / 3)] = v[size_t(n + n / 2)] = v[size_t(n + n - 1)] = kNaN;
      Tensor rows = Tensor::from_vector(v, {2, n}).to(device(), DType::Float32);
      for (const Tensor& x : {rows, rows.t().contiguous().t(), rows.select(0, 1)})
        for (int64_t d = 0; d < x.dim(); ++d) {
          SCOPED_TRACE(x.str() + (with_nan ? " NaN" : "") + " dim " + std::to_string(d) +
                       (x.is_contiguous() ? "" : " columns"));
          const Values first_max = ref_reduce(x, {d}, ref_arg(true));
          expect_close(argmax(x, d), first_max, 0, 0);
          expect_close(max(x, d).indices, first_max, 0, 0);
          expect_close(argmin(x, d), ref_reduce(x, {d}, ref_arg(false)), 0, 0);
        }
    }
}

TEST_P(Reduction, ArgmaxFlattensWithoutDim) {
  for (const Tensor& x : layouts(DType::Float32, device())) {
    SCOPED_TRACE(x.str());
    // The index is into x's logical row-major order, whatever its strides.
    expect_close(argmax(x), ref_reduce(x, {}, ref_arg(true)), 0, 0);
    expect_close(argmin(x), ref_reduce(x, {}, ref_arg(false)), 0, 0);
    EXPECT_EQ(argmax(x, std::nullopt, true).shape(), (Shape{1, 1, 1}));
    expect_close(argmax(x, 1), ref_reduce(x, {1}, ref_arg(true)), 0, 0);
  }
  Tensor big = Tensor::empty({200000}, DType::Float32, device()).fill_(1.0);
  big.narrow(0, 123456, 2).fill_(2.0);  // a tie across chunk-split halves: first index wins
  EXPECT_EQ(argmax(big).item<int64_t>(), 123456);
  big.narrow(0, 150001, 1).fill_(NAN);
  EXPECT_EQ(argmax(big).item<int64_t>(), 150001);
}

TEST_P(Reduction, LogSumExpIsStable) {
  for (const Tensor& x : layouts(DType::Float64, device(), -50, 50))
    for (const auto& dims : kDimSets)
      check_reduce([](auto& x, auto& d, bool k) { return logsumexp(x, d, k); }, ref_logsumexp, x,
                   dims, 1e-12, 1e-12);
  Tensor big = Tensor::from_vector<float>({1000, 1000, -1000, 0}, {2, 2}).to(device());
  expect_close(logsumexp(big, {1}), {1000 + std::log(2.0), std::log1p(std::exp(-1000.0))}, 1e-4);
  Tensor inf =
      Tensor::from_vector<float>({-INFINITY, -INFINITY, INFINITY, 1, NAN, 1}, {3, 2}).to(device());
  Values got = logsumexp(inf, {1}).to_vector<double>();  // expect_close cannot compare infs
  EXPECT_EQ(got[0], -kInf);
  EXPECT_EQ(got[1], kInf);
  EXPECT_TRUE(std::isnan(got[2]));
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    Tensor h = test::random_tensor({4, 33}, 4, dt, device(), -5, 5);
    expect_close(logsumexp(h, {1}), ref_reduce(h, {1}, ref_logsumexp), 0.02, 0.01);
  }
}

TEST_P(Reduction, AllAny) {
  Tensor x = Tensor::from_vector<float>({1, 0, 2, 3, 4, 5, 0, 0, 0}, {3, 3}).to(device());
  Tensor a = all(x, {1});
  EXPECT_EQ(a.dtype(), DType::Bool);
  expect_close(a, {0, 1, 0}, 0, 0);
  expect_close(any(x, {1}), {1, 1, 0}, 0, 0);
  expect_close(all(x.t(), {1}, true), {0, 0, 0}, 0, 0);
  expect_close(any(x.t(), {0}), {1, 1, 0}, 0, 0);
  Tensor i = Tensor::from_vector<int64_t>({7, -1}, {2}).to(device());
  EXPECT_TRUE(all(i).item<bool>());
  Tensor b = Tensor::from_vector<bool>({false, false}, {2}).to(device());
  EXPECT_FALSE(any(b).item<bool>());
  Tensor h = Tensor::from_vector<float>({0.0f, 1e-3f}, {2}).to(device(), DType::Float16);
  EXPECT_TRUE(any(h).item<bool>());
  EXPECT_FALSE(all(h).item<bool>());
}

TEST_P(Reduction, NormForEveryP) {
  for (const Tensor& x : layouts(DType::Float64, device()))
    for (double p : {2.0, 1.0, 3.0, 0.5, 0.0, kInf, -kInf})
      for (const auto& dims :
           {std::vector<int64_t>{}, std::vector<int64_t>{1}, std::vector<int64_t>{0, -1}})
        check_reduce([p](auto& x, auto& d, bool k) { return norm(x, p, d, k); }, ref_norm(p), x,
                     dims, 1e-12, 1e-10);
  Tensor x = Tensor::from_vector<float>({3, -4, 0, 0}, {2, 2}).to(device());
  expect_close(norm(x, 2, {1}), {5, 0});
  expect_close(norm(x.to(DType::BFloat16)), {5}, 0, 0);
}

TEST_P(Reduction, EmptyReductions) {
  Tensor e = Tensor::empty({0, 3}, DType::Float32, device());
  expect_close(sum(e, {0}), {0, 0, 0});
  EXPECT_EQ(sum(e, {1}).shape(), (Shape{0}));
  EXPECT_EQ(sum(e).item<double>(), 0.0);
  EXPECT_EQ(prod(e).item<double>(), 1.0);
  EXPECT_TRUE(std::isnan(mean(e).item<double>()));
  EXPECT_EQ(logsumexp(e).item<double>(), -kInf);
  EXPECT_TRUE(all(e).item<bool>());
  EXPECT_FALSE(any(e).item<bool>());
  EXPECT_EQ(norm(e).item<double>(), 0.0);
  EXPECT_EQ(amax(e, {1}).shape(), (Shape{0}));  // nothing to reduce per output: fine
  expect_error<ValueError>([&] { amax(e); }, {"amax", "[0, 3] float32", "no elements"});
  expect_error<ValueError>([&] { amin(e, {0}); }, {"amin", "[0, 3] float32", "dims [0]"});
  expect_error<ValueError>([&] { max(e, 0); }, {"max", "[0, 3] float32", "no elements"});
  expect_error<ValueError>([&] { argmin(e); }, {"argmin", "[0, 3] float32"});
  expect_error<ValueError>([&] { norm(e, kInf); }, {"norm", "[0, 3] float32"});
}

TEST_P(Reduction, SizeOneDimsAndScalars) {
  Tensor x = test::random_tensor({1, 5, 1}, 2, DType::Float64, device());
  for (const auto& dims : {std::vector<int64_t>{0}, std::vector<int64_t>{2},
                           std::vector<int64_t>{0, 2}, std::vector<int64_t>{1}})
    check_reduce([](auto& x, auto& d, bool k) { return sum(x, d, k); }, ref_sum, x, dims, 1e-12,
                 1e-12);
  Tensor s = Tensor::from_vector<double>({2.5}, {}).to(device());
  EXPECT_EQ(sum(s).dim(), 0);
  EXPECT_EQ(sum(s).item<double>(), 2.5);
  EXPECT_EQ(sum(s, {0}).item<double>(), 2.5);
  EXPECT_EQ(amax(s, {-1}, true).dim(), 0);
  EXPECT_EQ(argmax(s).item<int64_t>(), 0);
  EXPECT_TRUE(std::isnan(var(s).item<double>()));
}

TEST_P(Reduction, ErrorsNameTheOpAndOperand) {
  Tensor x = Tensor::empty({2, 3}, DType::Float32, device());
  expect_error<IndexError>([&] { sum(x, {2}); }, {"sum", "[2, 3] float32", "dim 2", "[-2, 1]"});
  expect_error<IndexError>([&] { max(x, -3); }, {"max", "[2, 3] float32", "dim -3"});
  expect_error<ValueError>(
      [&] {
        sum(x, {1, -1});
      },
      {"sum", "[2, 3] float32", "dim -1 appears more than once"});
  Tensor i = Tensor::empty({4}, DType::Int32, device());
  expect_error<DTypeError>([&] { mean(i); }, {"mean", "[4] int32", "floating"});
  expect_error<DTypeError>([&] { var(i); }, {"var", "[4] int32", "floating"});
  expect_error<DTypeError>([&] { logsumexp(i); }, {"logsumexp", "[4] int32"});
  expect_error<DTypeError>([&] { norm(i); }, {"norm", "[4] int32"});
  expect_error<ValueError>([&] { sum(Tensor()); }, {"sum", "undefined"});
  expect_error<ValueError>([&] { norm(x, NAN); }, {"norm", "NaN"});
}

}  // namespace
}  // namespace ember
