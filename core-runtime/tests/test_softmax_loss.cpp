// test_softmax_loss.cpp — softmax, log_softmax, cross_entropy, nll_loss, mse/l1 and binary cross
// entropy with logits: values against references computed in double here (PyTorch's definitions),
// hand-checkable cases, and every backward against central finite differences in float64.
#include <cmath>
#include <functional>
#include <limits>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;
using Values = std::vector<double>;

const double kInf = std::numeric_limits<double>::infinity();

class Softmax : public test::DeviceTest {};
class Loss : public test::DeviceTest {};
EMBER_INSTANTIATE_DEVICE_TEST(Softmax);
EMBER_INSTANTIATE_DEVICE_TEST(Loss);

// Element (outer, k, inner) of a row-major [outer, n, inner] block: softmax runs along k.
struct Lanes {
  int64_t outer = 1, n = 1, inner = 1;
  Lanes(const Shape& shape, int64_t dim) {
    if (shape.empty()) return;
    dim = dim < 0 ? dim + int64_t(shape.size()) : dim;
    n = shape[size_t(dim)];
    for (int64_t d = 0; d < dim; ++d) outer *= shape[size_t(d)];
    for (size_t d = size_t(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  }
  size_t at(int64_t o, int64_t k, int64_t i) const { return size_t((o * n + k) * inner + i); }
};

Values ref_softmax(const Tensor& x, int64_t dim, bool log) {
  Values v = x.to_vector<double>(), y(v.size());
  Lanes L(x.shape(), dim);
  for (int64_t o = 0; o < L.outer; ++o)
    for (int64_t i = 0; i < L.inner; ++i) {
      double m = -kInf, s = 0;
      for (int64_t k = 0; k < L.n; ++k) m = std::max(m, v[L.at(o, k, i)]);
      for (int64_t k = 0; k < L.n; ++k) s += std::exp(v[L.at(o, k, i)] - m);
      for (int64_t k = 0; k < L.n; ++k) {
        double lp = v[L.at(o, k, i)] - m - std::log(s);
        y[L.at(o, k, i)] = log ? lp : std::exp(lp);
      }
    }
  return y;
}

// Central differences of the scalar f at x (float64): d f / d x[i] for every element.
Values numeric_grad(const std::function<double(const Tensor&)>& f, const Tensor& x,
                    double h = 1e-6) {
  Values v = x.to_vector<double>(), g(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    Values p = v, m = v;
    p[i] += h;
    m[i] -= h;
    g[i] = (f(Tensor::from_vector(p, x.shape()).to(x.device())) -
            f(Tensor::from_vector(m, x.shape()).to(x.device()))) /
           (2 * h);
  }
  return g;
}

double dot(const Tensor& t, const Values& w) {
  Values v = t.to_vector<double>();
  double s = 0;
  for (size_t i = 0; i < v.size(); ++i) s += v[i] * w[i];
  return s;
}

// The same values laid out contiguously, transposed, stepped and expanded.
std::vector<Tensor> layouts(DType dtype, Device device, double lo = -3, double hi = 3) {
  return {
      test::random_tensor({3, 4, 5}, 1, dtype, device, lo, hi),
      test::random_tensor({5, 3, 4}, 2, dtype, device, lo, hi).permute({1, 2, 0}),
      test::random_tensor({6, 4, 10}, 3, dtype, device, lo, hi)
          .slice(0, 0, 6, 2)
          .slice(2, 1, 10, 2),
      test::random_tensor({3, 1, 5}, 4, dtype, device, lo, hi).expand({3, 4, 5}),
  };
}

TEST_P(Softmax, EveryDimLayoutAndDtype) {
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    // Half types compute in float and round once: u * |y| (test::unit_roundoff) plus float's
    // error, under 1e-6 for |y| <= 8 here.
    const bool half = dt == DType::Float16 || dt == DType::BFloat16;
    const double atol = dt == DType::Float64 ? 1e-13 : half ? 2e-6 : 1e-6;
    const double rtol = half ? test::unit_roundoff(dt) : atol;
    for (const Tensor& x : layouts(dt, device()))
      for (int64_t dim : {0, 1, 2, -1, -3})
        for (bool log : {false, true}) {
          SCOPED_TRACE(x.str() + " dim " + std::to_string(dim) + (log ? " log" : ""));
          Tensor y = log ? log_softmax(x, dim) : softmax(x, dim);
          EXPECT_EQ(y.shape(), x.shape());
          EXPECT_EQ(y.dtype(), dt);
          expect_close(y, ref_softmax(x, dim, log), atol, rtol);
        }
  }
}

TEST_P(Softmax, LargeAndInfiniteLogitsStayFinite) {
  Tensor x =
      Tensor::from_vector<float>({1000, 1001, 1002, -1000, -INFINITY, 0}, {2, 3}).to(device());
  expect_close(softmax(x, 1), {0.09003057, 0.24472847, 0.66524096, 0, 0, 1}, 1e-6);
  Values lp = log_softmax(x, 1).to_vector<double>();
  EXPECT_NEAR(lp[0], -2.40760596, 1e-5);
  EXPECT_EQ(lp[4], -kInf);  // a masked logit stays -inf, the others stay finite
  EXPECT_NEAR(lp[5], 0.0, 1e-6);
  // Rows long enough for any vectorised path, with a huge offset.
  Tensor wide = test::random_tensor({3, 1000}, 5, DType::Float32, device(), 500, 510);
  expect_close(softmax(wide, -1), ref_softmax(wide, -1, false), 1e-7, 1e-4);
  expect_close(log_softmax(wide, -1), ref_softmax(wide, -1, true), 1e-4, 1e-5);
}

TEST_P(Softmax, EmptySizeOneAndScalar) {
  Tensor e = Tensor::empty({0, 4}, DType::Float32, device());
  EXPECT_EQ(softmax(e, 1).shape(), (Shape{0, 4}));
  EXPECT_EQ(log_softmax(Tensor::empty({3, 0}, DType::Float32, device()), 1).shape(), (Shape{3, 0}));
  Tensor one = test::random_tensor({4, 1}, 6, DType::Float32, device());
  expect_close(softmax(one, 1), {1, 1, 1, 1});
  expect_close(log_softmax(one, 1), {0, 0, 0, 0});
  Tensor s = Tensor::from_vector<double>({3.0}, {}).to(device());
  EXPECT_EQ(softmax(s, 0).dim(), 0);
  EXPECT_EQ(softmax(s, 0).item<double>(), 1.0);
  EXPECT_EQ(log_softmax(s, -1).item<double>(), 0.0);
}

TEST_P(Softmax, BackwardMatchesFiniteDifferences) {
  for (const Tensor& x : layouts(DType::Float64, device()))
    for (int64_t dim : {0, 2, -2})
      for (bool log : {false, true}) {
        SCOPED_TRACE(x.str() + " dim " + std::to_string(dim) + (log ? " log" : ""));
        Tensor xc = x.contiguous();
        Values w = test::random_values(x.numel(), 7);
        auto f = [&](const Tensor& t) {
          return dot(log ? log_softmax(t, dim) : softmax(t, dim), w);
        };
        Tensor y = log ? log_softmax(x, dim) : softmax(x, dim);
        // grad_y non-contiguous too: a transposed copy of w.
        Tensor gy = Tensor::from_vector(w, x.shape())
                        .to(device())
                        .transpose(0, 2)
                        .contiguous()
                        .transpose(0, 2);
        Tensor gx = log ? log_softmax_backward(gy, y, dim) : softmax_backward(gy, y, dim);
        EXPECT_EQ(gx.shape(), x.shape());
        expect_close(gx, numeric_grad(f, xc), 1e-8, 1e-6);
      }
  Tensor h = test::random_tensor({4, 9}, 8, DType::Float16, device());
  Tensor y = softmax(h, 1), g = test::random_tensor({4, 9}, 9, DType::Float16, device());
  Tensor ref = softmax_backward(g.to(DType::Float64), y.to(DType::Float64), 1);
  // Computed in float, rounded once to float16: u * |ref| and float's ~1e-7 (a 9-term dot).
  expect_close(softmax_backward(g, y, 1), ref, 1e-6, test::unit_roundoff(DType::Float16));
}

// Softmax backward over the last dim, from the closed form in double.
Values ref_softmax_backward(const Tensor& g, const Tensor& y, bool log) {
  Values gv = g.to_vector<double>(), yv = y.to_vector<double>(), out(gv.size());
  const int64_t n = y.size(y.dim() - 1);
  for (size_t r = 0; r < gv.size(); r += size_t(n)) {
    double dot = 0;
    for (int64_t k = 0; k < n; ++k) dot += gv[r + size_t(k)] * (log ? 1.0 : yv[r + size_t(k)]);
    for (int64_t k = 0; k < n; ++k) {
      size_t i = r + size_t(k);
      out[i] = log ? gv[i] - std::exp(yv[i]) * dot : yv[i] * (gv[i] - dot);
    }
  }
  return out;
}

TEST_P(Softmax, LongRowsAndVectorisableRows) {
  // Row lengths that take each GPU path: held in registers with 16-byte vectors (1024), in
  // registers element by element (1001), and too long for registers (33000 float32 > 8 vectors x
  // 256 threads).
  for (Shape shape : {Shape{33, 1024}, Shape{5, 1001}, Shape{2, 33000}})
    for (DType dt : {DType::Float32, DType::Float64, DType::BFloat16}) {
      SCOPED_TRACE(shape_str(shape) + " " + dtype_name(dt));
      // bfloat16 computes in float and rounds once: u * |y| (test::unit_roundoff), plus float's
      // relative 1e-5 from the row's sum. A sum kept in bfloat16 would stall long before 33000
      // terms (its spacing passes 1 at 256).
      const bool bf16 = dt == DType::BFloat16;
      const double tol = bf16 ? test::unit_roundoff(dt) + 1e-5 : 1e-6;
      // The backward subtracts nearly equal numbers: its float error is absolute, not relative.
      const double gatol = bf16 ? 1e-5 : dt == DType::Float32 ? 1e-6 : 1e-12;
      const double grtol = bf16 ? test::unit_roundoff(dt) : gatol;
      Tensor x = test::random_tensor(shape, 30, dt, device(), -5, 5);
      Tensor g = test::random_tensor(shape, 31, dt, device());
      for (bool log : {false, true}) {
        Tensor y = log ? log_softmax(x, -1) : softmax(x, -1);
        expect_close(y, ref_softmax(x, -1, log), bf16 ? 1e-7 : tol * 1e-2, tol);
        Tensor gx = log ? log_softmax_backward(g, y, -1) : softmax_backward(g, y, -1);
        expect_close(gx, ref_softmax_backward(g, y, log), gatol, grtol);
      }
    }
}

// [3, n] with rows of stride 1 (read in place by float32 and float64), of stride 3 (the
// transpose of a contiguous [n, 3]) and of stride 2 (every other column).
std::vector<Tensor> row_layouts(int64_t n, DType dtype, Device device) {
  Tensor x = test::random_tensor({3, n}, 60, dtype, device, -8, 8);
  return {x, x.t().contiguous().t(),
          test::random_tensor({3, 2 * n}, 61, dtype, device, -8, 8).slice(1, 0, 2 * n, 2)};
}

TEST_P(Softmax, RowsOfEveryLengthAroundTheLanesAndBlocks) {
  // The row max runs in 32 lanes and the exp sums in blocks of 256: lengths shorter than the
  // lanes, on either side of a lane round and of a block, and several blocks with a tail.
  for (int64_t n : {1, 7, 31, 33, 255, 256, 257, 1031})
    for (DType dt : {DType::Float32, DType::Float64})
      for (const Tensor& x : row_layouts(n, dt, device()))
        for (bool log : {false, true}) {
          SCOPED_TRACE(x.str() + (log ? " log_softmax" : " softmax"));
          const double tol = dt == DType::Float32 ? 2e-6 : 1e-12;
          expect_close(log ? log_softmax(x, 1) : softmax(x, 1), ref_softmax(x, 1, log), tol, tol);
        }
}

// Rows 0-2 of a [4, n] tensor hold one NaN each (first, middle, last element); row 3 none.
Tensor rows_with_nans(int64_t n, DType dtype, Device device) {
  Values v = test::random_values(4 * n, 40, -3, 3);
  v[0] = NAN;
  v[size_t(n + n / 2)] = NAN;
  v[size_t(3 * n - 1)] = NAN;
  return Tensor::from_vector(v, {4, n}).to(device, dtype);
}

// Row r of got (a [4, n] result) is all NaN for r < 3; row 3 is close to want's row 3.
void expect_nan_rows(const Tensor& got, const Values& want, int64_t n, double tol) {
  const Values g = got.to_vector<double>();
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t k = 0; k < n; ++k)
      ASSERT_TRUE(std::isnan(g[size_t(r * n + k)]))
          << "row " << r << " element " << k << " is " << g[size_t(r * n + k)];
  for (int64_t k = 0; k < n; ++k)
    ASSERT_NEAR(g[size_t(3 * n + k)], want[size_t(3 * n + k)], tol) << "row 3 element " << k;
}

// A NaN anywhere in a row makes the whole row NaN, as on the CPU and in PyTorch; a max that
// skipped it gave softmax([NaN, 1, 2]) = [0, 0.27, 0.73] on CUDA. The lengths take every GPU
// path: registers element by element (3, 1001), registers with 16-byte vectors (8, 1024), and
// looped (2049: odd and over 8 x 256 elements; 33000); the transposed layout always loops.
TEST_P(Softmax, NanInARowMakesTheRowNan) {
  for (int64_t n : {3, 8, 1001, 1024, 2049, 33000})
    for (DType dt : {DType::Float32, DType::Float16})
      for (bool transposed : {false, true}) {
        SCOPED_TRACE("n " + std::to_string(n) + " " + dtype_name(dt) +
                     (transposed ? " transposed" : ""));
        Tensor x = rows_with_nans(n, dt, device());
        if (transposed) x = x.t().contiguous().t();
        for (bool log : {false, true})
          expect_nan_rows(log ? log_softmax(x, 1) : softmax(x, 1), ref_softmax(x, 1, log), n, 0.01);
      }
  // Cross entropy, forward and backward, reduces the same (max, sum) statistics.
  for (int64_t n : {3, 1024, 2049}) {
    SCOPED_TRACE("cross entropy, n " + std::to_string(n));
    Tensor x = rows_with_nans(n, DType::Float32, device());
    Tensor t = Tensor::from_vector<int64_t>({1, 2, 0, 1}, {4}).to(device());
    Values l = cross_entropy(x, t, Tensor(), -100, LossReduction::None).to_vector<double>();
    for (int r = 0; r < 3; ++r) EXPECT_TRUE(std::isnan(l[size_t(r)])) << "row " << r;
    EXPECT_NEAR(l[3], -ref_softmax(x, 1, true)[size_t(3 * n + 1)], 1e-5);
    Tensor g = Tensor::from_vector<float>({1, 1, 1, 1}, {4}).to(device());
    Values want = ref_softmax(x, 1, false);
    want[size_t(3 * n + 1)] -= 1;  // softmax - one_hot(target)
    expect_nan_rows(cross_entropy_backward(g, x, t, Tensor(), -100, LossReduction::None), want, n,
                    1e-6);
  }
}

TEST_P(Softmax, Errors) {
  Tensor i = Tensor::empty({2, 3}, DType::Int64, device());
  expect_error<DTypeError>([&] { softmax(i, 1); }, {"softmax", "[2, 3] int64", "floating"});
  Tensor x = Tensor::empty({2, 3}, DType::Float32, device());
  expect_error<IndexError>([&] { log_softmax(x, 2); },
                           {"log_softmax", "[2, 3] float32", "dim 2", "[-2, 1]"});
  expect_error<ShapeError>(
      [&] {
        softmax_backward(x, Tensor::empty({3, 2}, DType::Float32, device()), 1);
      },
      {"softmax_backward", "grad_y is [2, 3] float32", "y is [3, 2] float32"});
  expect_error<DTypeError>([&] { log_softmax_backward(x.to(DType::Float64), x, 1); },
                           {"log_softmax_backward", "[2, 3] float64", "[2, 3] float32"});
}

// ---- class-index losses ----

struct CeCase {
  Tensor weight;
  int64_t ignore_index = -100;
  LossReduction reduction = LossReduction::Mean;
  double smoothing = 0;
};

// PyTorch's cross_entropy (smoothing > 0 included) or nll_loss (log_input: x holds log-probs),
// for logits [N, C, d...] and target [N, d...], in double.
Values ref_class_loss(const Tensor& x, const Tensor& target, const CeCase& c, bool nll) {
  Values v = x.to_vector<double>();
  std::vector<int64_t> t = target.to_vector<int64_t>();
  Lanes L(x.shape(), 1);
  Values w(size_t(L.n), 1.0);
  if (c.weight.defined()) w = c.weight.to_vector<double>();
  Values losses;
  double total = 0, wsum = 0;
  for (int64_t o = 0; o < L.outer; ++o)
    for (int64_t i = 0; i < L.inner; ++i) {
      int64_t ti = t[size_t(o * L.inner + i)];
      if (ti == c.ignore_index) {
        losses.push_back(0);
        continue;
      }
      Values lp(size_t(L.n));
      double m = -kInf, s = 0;
      for (int64_t k = 0; k < L.n; ++k) m = std::max(m, v[L.at(o, k, i)]);
      for (int64_t k = 0; k < L.n; ++k) s += std::exp(v[L.at(o, k, i)] - m);
      for (int64_t k = 0; k < L.n; ++k)
        lp[size_t(k)] = nll ? v[L.at(o, k, i)] : v[L.at(o, k, i)] - m - std::log(s);
      double smooth = 0;
      for (int64_t k = 0; k < L.n; ++k) smooth -= w[size_t(k)] * lp[size_t(k)];
      double l =
          -(1 - c.smoothing) * w[size_t(ti)] * lp[size_t(ti)] + c.smoothing / double(L.n) * smooth;
      losses.push_back(l);
      total += l;
      wsum += w[size_t(ti)];
    }
  if (c.reduction == LossReduction::None) return losses;
  if (c.reduction == LossReduction::Sum) return {total};
  return {total / wsum};
}

Tensor run_ce(const Tensor& x, const Tensor& t, const CeCase& c) {
  return cross_entropy(x, t, c.weight, c.ignore_index, c.reduction, c.smoothing);
}

TEST_P(Loss, CrossEntropyHandCheckedValues) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {1, 3}).to(device());
  Tensor t = Tensor::from_vector<int64_t>({2}, {1}).to(device());
  Tensor l = cross_entropy(x, t);
  EXPECT_EQ(l.dim(), 0);
  EXPECT_NEAR(l.item<double>(), 0.40760596444438013, 1e-6);
  EXPECT_NEAR(cross_entropy(x, t, Tensor(), -100, LossReduction::Mean, 0.1).item<double>(),
              0.5076059644443801, 1e-6);
  Tensor x2 = Tensor::from_vector<double>({1, 2, 3, 1, 1, 1}, {2, 3}).to(device());
  Tensor t2 = Tensor::from_vector<int64_t>({0, 2}, {2}).to(device());
  Tensor w = Tensor::from_vector<double>({1, 2, 3}, {3}).to(device());
  // mean divides by w[0] + w[2] = 4, not by N = 2
  EXPECT_NEAR(cross_entropy(x2, t2, w).item<double>(), 1.4258607076121772, 1e-12);
  EXPECT_NEAR(cross_entropy(x2, t2, w, -100, LossReduction::Mean, 0.1).item<double>(),
              1.3919188828399174, 1e-12);
  // one unbatched sample: logits [C], target []
  Tensor single = cross_entropy(x.view({3}), t.view({}), Tensor(), -100, LossReduction::None);
  EXPECT_EQ(single.dim(), 0);
  EXPECT_NEAR(single.item<double>(), 0.40760596444438013, 1e-6);
}

TEST_P(Loss, CrossEntropyEveryOptionMatchesReference) {
  Tensor weight = test::random_tensor({5}, 10, DType::Float64, device(), 0.5, 2.0);
  std::vector<CeCase> cases;
  for (LossReduction r : {LossReduction::Mean, LossReduction::Sum, LossReduction::None})
    for (double eps : {0.0, 0.2})
      for (bool weighted : {false, true})
        for (int64_t ignore : {-100, 3})
          cases.push_back({weighted ? weight : Tensor(), ignore, r, eps});
  // [N, C] = [6, 5] and [N, C, d1, d2] = [2, 5, 3, 2]; logits transposed / stepped too.
  Tensor x2 = test::random_tensor({5, 6}, 11, DType::Float64, device(), -4, 4).t();
  Tensor t2 = Tensor::from_vector<int64_t>({0, 3, 4, 3, 1, 2}, {6}).to(device());
  Tensor x4 =
      test::random_tensor({2, 5, 3, 4}, 12, DType::Float64, device(), -4, 4).slice(3, 0, 4, 2);
  Tensor t4 =
      Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 3, 3, 3, 1, 0, 2, 4}, {2, 3, 2}).to(device());
  for (const CeCase& c : cases)
    for (auto [x, t] : {std::pair{x2, t2}, std::pair{x4, t4}}) {
      SCOPED_TRACE(x.str() + " eps " + std::to_string(c.smoothing) + " ignore " +
                   std::to_string(c.ignore_index) + " weighted " +
                   std::to_string(c.weight.defined()) + " reduction " +
                   std::to_string(int(c.reduction)));
      Tensor got = run_ce(x, t, c);
      EXPECT_EQ(got.shape(), c.reduction == LossReduction::None ? t.shape() : Shape{});
      expect_close(got, ref_class_loss(x, t, c, false), 1e-12, 1e-12);
      Tensor lp = log_softmax(x, 1);
      if (c.smoothing == 0)
        expect_close(nll_loss(lp, t, c.weight, c.ignore_index, c.reduction),
                     ref_class_loss(lp, t, c, true), 1e-12, 1e-12);
    }
}

// d loss_r / d x[r, k] of ref_class_loss's per-sample losses (reduction None), scaled by g[r]:
// (1 - eps) w[t] (p[k] - [k == t]) + eps / C (p[k] sum(w) - w[k]).
Values ref_ce_grad(const Tensor& x, const std::vector<int64_t>& t, const Values& w, double eps,
                   const Values& g) {
  const Values v = x.to_vector<double>();
  const int64_t rows = x.size(0), n = x.size(1);
  double wsum = 0;
  for (double wk : w) wsum += wk;
  Values d(v.size());
  for (int64_t r = 0; r < rows; ++r) {
    double m = -kInf, s = 0;
    for (int64_t k = 0; k < n; ++k) m = std::max(m, v[size_t(r * n + k)]);
    for (int64_t k = 0; k < n; ++k) s += std::exp(v[size_t(r * n + k)] - m);
    const int64_t tr = t[size_t(r)];
    for (int64_t k = 0; k < n; ++k) {
      const double p = std::exp(v[size_t(r * n + k)] - m) / s;
      d[size_t(r * n + k)] = g[size_t(r)] * ((1 - eps) * w[size_t(tr)] * (p - (k == tr ? 1 : 0)) +
                                             eps / double(n) * (p * wsum - w[size_t(k)]));
    }
  }
  return d;
}

TEST_P(Loss, CrossEntropyRowsOfEveryLengthAroundTheLanesAndBlocks) {
  // The lengths and layouts of Softmax.RowsOfEveryLengthAroundTheLanesAndBlocks, forward and
  // backward, with and without class weights and label smoothing.
  for (int64_t n : {1, 7, 31, 33, 255, 256, 257, 1031})
    for (DType dt : {DType::Float32, DType::Float64})
      for (const Tensor& x : row_layouts(n, dt, device()))
        for (double eps : {0.0, 0.2})
          for (bool weighted : {false, true}) {
            SCOPED_TRACE(x.str() + " eps " + std::to_string(eps) + (weighted ? " weighted" : ""));
            const std::vector<int64_t> t = {0, n / 2, n - 1};
            Tensor target = Tensor::from_vector<int64_t>(t, {3}).to(device());
            Tensor w = weighted ? test::random_tensor({n}, 62, dt, device(), 0.5, 2) : Tensor();
            const Values wv = weighted ? w.to_vector<double>() : Values(size_t(n), 1.0);
            const CeCase c{w, -100, LossReduction::None, eps};
            const double tol = dt == DType::Float32 ? 1e-5 : 1e-12;
            expect_close(run_ce(x, target, c), ref_class_loss(x, target, c, false), tol, tol);
            const Values g = {0.5, -1.0, 2.0};
            Tensor gt = Tensor::from_vector(g, {3}).to(device(), dt);
            expect_close(cross_entropy_backward(gt, x, target, w, -100, LossReduction::None, eps),
                         ref_ce_grad(x, t, wv, eps, g), tol, tol);
          }
}

TEST_P(Loss, CrossEntropyOverAVocabulary) {
  // GPT-2's 50257 classes: rows that start off every 16-byte boundary, read 16 bytes a load on
  // the GPU, in float32 and bfloat16.
  const int64_t n = 50257;
  const std::vector<int64_t> t = {3, n - 1, 20000};
  Tensor target = Tensor::from_vector<int64_t>(t, {3}).to(device());
  const Values g = {0.5, -1.0, 2.0};
  for (DType dt : {DType::Float32, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = test::random_tensor({3, n}, 63, DType::Float32, device(), -8, 8).to(dt);
    const CeCase c{Tensor(), -100, LossReduction::None, 0.1};
    // float32: the sums' rounding over 50257 terms; bfloat16: one rounding of each result.
    const double rtol = dt == DType::Float32 ? 1e-4 : 2 * test::unit_roundoff(dt), atol = 1e-9;
    expect_close(run_ce(x, target, c), ref_class_loss(x, target, c, false), atol, rtol);
    Tensor gt = Tensor::from_vector(g, {3}).to(device(), dt);
    expect_close(cross_entropy_backward(gt, x, target, Tensor(), -100, LossReduction::None, 0.1),
                 ref_ce_grad(x, t, Values(size_t(n), 1.0), 0.1, g), atol, rtol);
  }
}

TEST_P(Loss, CrossEntropyWithInfiniteLogits) {
  // Infinite logits, on rows short enough for one element a load and long enough for vectors: a
  // +inf logit away from the target leaves no finite loss (+inf, or NaN as PyTorch's inf - inf
  // gives); a row that is -inf but at its target has loss 0 and gradient 0; -inf logits elsewhere
  // add nothing to the row's sum of exps.
  for (int64_t n : {5, 2049}) {
    SCOPED_TRACE("n " + std::to_string(n));
    Values v = test::random_values(3 * n, 64, -3, 3);
    v[size_t(n / 3 + 1)] = kInf;
    for (int64_t k = 0; k < n; ++k) v[size_t(n + k)] = -kInf;
    v[size_t(n + n / 2)] = 0.5;
    for (int64_t k = 0; k < n; k += 2) v[size_t(2 * n + k)] = -kInf;
    Tensor x = Tensor::from_vector(v, {3, n}).to(device(), DType::Float32);
    Tensor t = Tensor::from_vector<int64_t>({0, n / 2, 1}, {3}).to(device());
    const Values l = cross_entropy(x, t, Tensor(), -100, LossReduction::None).to_vector<double>();
    EXPECT_FALSE(std::isfinite(l[0])) << l[0];
    EXPECT_EQ(l[1], 0.0);
    double sum = 0;
    for (int64_t k = 1; k < n; k += 2) sum += std::exp(v[size_t(2 * n + k)]);
    EXPECT_NEAR(l[2], std::log(sum) - v[size_t(2 * n + 1)], 1e-5);
    Tensor g = Tensor::from_vector<float>({0, 1, 0}, {3}).to(device());
    const Values d =
        cross_entropy_backward(g, x, t, Tensor(), -100, LossReduction::None).to_vector<double>();
    for (int64_t k = 0; k < n; ++k) ASSERT_EQ(d[size_t(n + k)], 0.0) << "element " << k;
  }
}

TEST_P(Loss, CrossEntropyWithManyClasses) {
  // 3000 classes: a whole block of threads per row on the GPU.
  const int64_t n = 4, classes = 3000;
  Tensor x = test::random_tensor({n, classes}, 40, DType::Float64, device(), -6, 6);
  Tensor w = test::random_tensor({classes}, 41, DType::Float64, device(), 0.5, 2);
  Tensor t = Tensor::from_vector<int64_t>({2999, 0, 1234, 7}, {n}).to(device());
  CeCase c{w, -100, LossReduction::Mean, 0.1};
  expect_close(run_ce(x, t, c), ref_class_loss(x, t, c, false), 1e-12, 1e-10);
  // grad = g/W * ((1 - eps) w[t] (p - onehot) + eps / C (p sum(w) - w)), from the closed form.
  Tensor grad = cross_entropy_backward(Tensor::from_vector<double>({1.0}, {}).to(device()), x, t, w,
                                       -100, LossReduction::Mean, 0.1);
  Values p = ref_softmax(x, 1, false), wv = w.to_vector<double>(), expected(p.size());
  std::vector<int64_t> tv = t.to_vector<int64_t>();
  double wsum = 0, wt = 0;
  for (double v : wv) wsum += v;
  for (int64_t r = 0; r < n; ++r) wt += wv[size_t(tv[size_t(r)])];
  for (int64_t r = 0; r < n; ++r)
    for (int64_t k = 0; k < classes; ++k) {
      size_t i = size_t(r * classes + k);
      double hard = 0.9 * wv[size_t(tv[size_t(r)])] * (p[i] - double(k == tv[size_t(r)]));
      expected[i] = (hard + 0.1 / double(classes) * (p[i] * wsum - wv[size_t(k)])) / wt;
    }
  expect_close(grad, expected, 1e-14, 1e-9);
}

TEST_P(Loss, CrossEntropyHalfTypesAndAllIgnored) {
  Tensor x = test::random_tensor({64, 10}, 13, DType::Float64, device(), -3, 3);
  std::vector<int64_t> tv;
  for (int64_t i = 0; i < 64; ++i) tv.push_back(i * 7 % 10);
  Tensor t = Tensor::from_vector(tv, {64}).to(device());
  // The reference sees the logits rounded to dt; the loss is computed and averaged in float and
  // rounded once: u * |loss| (test::unit_roundoff) plus float's ~1e-6. A mean kept in the half
  // type would be off by several u.
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
    Tensor xd = x.to(dt);
    const double ref = cross_entropy(xd.to(DType::Float64), t).item<double>();
    Tensor l = cross_entropy(xd, t);
    EXPECT_EQ(l.dtype(), dt);
    EXPECT_NEAR(l.item<double>(), ref, test::unit_roundoff(dt) * std::fabs(ref) + 1e-5)
        << dtype_name(dt);
  }
  Tensor ignored = Tensor::from_vector<int64_t>({-100, -100}, {2}).to(device());
  Tensor x2 = test::random_tensor({2, 3}, 14, DType::Float32, device());
  EXPECT_TRUE(std::isnan(cross_entropy(x2, ignored).item<double>()));  // 0 / 0, as PyTorch
  EXPECT_EQ(cross_entropy(x2, ignored, Tensor(), -100, LossReduction::Sum).item<double>(), 0.0);
  Tensor empty = cross_entropy(Tensor::empty({0, 3}, DType::Float32, device()),
                               Tensor::empty({0}, DType::Int64, device()), Tensor(), -100,
                               LossReduction::None);
  EXPECT_EQ(empty.shape(), (Shape{0}));
}

TEST_P(Loss, CrossEntropyAndNllBackwardMatchFiniteDifferences) {
  Tensor weight = test::random_tensor({4}, 15, DType::Float64, device(), 0.5, 2.0);
  Tensor x = test::random_tensor({2, 4, 3}, 16, DType::Float64, device(), -2, 2);
  Tensor t = Tensor::from_vector<int64_t>({0, 3, 1, 2, -1, 3}, {2, 3}).to(device());
  Values upstream = test::random_values(6, 17, 0.5, 1.5);
  for (LossReduction r : {LossReduction::Mean, LossReduction::Sum, LossReduction::None})
    for (double eps : {0.0, 0.3})
      for (bool weighted : {false, true}) {
        CeCase c{weighted ? weight : Tensor(), -1, r, eps};
        SCOPED_TRACE("reduction " + std::to_string(int(r)) + " eps " + std::to_string(eps) +
                     " weighted " + std::to_string(weighted));
        const bool none = r == LossReduction::None;
        Tensor g = none ? Tensor::from_vector(upstream, {2, 3}).to(device())
                        : Tensor::from_vector<double>({1.7}, {}).to(device());
        auto scalar = [&](const Tensor& loss) {
          return none ? dot(loss, upstream) : 1.7 * loss.item<double>();
        };
        Tensor grad = cross_entropy_backward(g, x, t, c.weight, c.ignore_index, r, eps);
        EXPECT_EQ(grad.shape(), x.shape());
        expect_close(grad,
                     numeric_grad([&](const Tensor& xx) { return scalar(run_ce(xx, t, c)); }, x),
                     1e-8, 1e-6);
        if (eps != 0) continue;
        Tensor lp = log_softmax(x, 1);
        Tensor ngrad = nll_loss_backward(g, lp, t, c.weight, c.ignore_index, r);
        expect_close(ngrad,
                     numeric_grad(
                         [&](const Tensor& p) {
                           return scalar(nll_loss(p, t, c.weight, c.ignore_index, r));
                         },
                         lp),
                     1e-8, 1e-6);
      }
  // float32 logits [N, C] with a non-contiguous layout: compare with the float64 gradient.
  Tensor xf = test::random_tensor({7, 3}, 18, DType::Float32, device()).t();
  Tensor tf = Tensor::from_vector<int64_t>({0, 1, 2}, {3}).to(device());
  Tensor one = Tensor::from_vector<float>({1}, {}).to(device());
  Tensor ref = cross_entropy_backward(one.to(DType::Float64), xf.to(DType::Float64), tf);
  expect_close(cross_entropy_backward(one, xf, tf), ref, 1e-7, 1e-5);
}

TEST_P(Loss, ClassLossErrors) {
  Tensor x = Tensor::empty({4, 5}, DType::Float32, device());
  Tensor t = Tensor::from_vector<int64_t>({0, 5, 1, 2}, {4}).to(device());
  expect_error<IndexError>([&] { cross_entropy(x, t); },
                           {"cross_entropy", "logits is [4, 5] float32", "target is [4] int64",
                            "holds 5", "[0, 5)"});
  Tensor neg = Tensor::from_vector<int64_t>({0, -3, 1, 2}, {4}).to(device());
  expect_error<IndexError>([&] { nll_loss(x, neg); }, {"nll_loss", "holds -3", "[0, 5)"});
  expect_error<IndexError>(
      [&] { cross_entropy_backward(Tensor::from_vector<float>({1}, {}).to(device()), x, t); },
      {"cross_entropy_backward", "holds 5"});
  expect_error<ShapeError>([&] { cross_entropy(x, Tensor::empty({5}, DType::Int64, device())); },
                           {"cross_entropy", "[4, 5] float32", "[5] int64", "must be [4]"});
  expect_error<DTypeError>([&] { cross_entropy(x, t.to(DType::Int32)); },
                           {"cross_entropy", "[4] int32", "int64"});
  expect_error<ShapeError>(
      [&] { cross_entropy(x, t, Tensor::empty({4}, DType::Float32, device())); },
      {"cross_entropy", "weight is [4] float32", "must be [5]"});
  Tensor ok = Tensor::from_vector<int64_t>({0, 1, 1, 2}, {4}).to(device());
  expect_error<ValueError>([&] { cross_entropy(x, ok, Tensor(), -100, LossReduction::Mean, 1.5); },
                           {"cross_entropy", "label_smoothing", "[0, 1]"});
  expect_error<ShapeError>(
      [&] {
        cross_entropy_backward(Tensor::empty({3}, DType::Float32, device()), x, ok, Tensor(), -100,
                               LossReduction::None);
      },
      {"cross_entropy_backward", "grad_loss is [3] float32", "[4]"});
  expect_error<ValueError>([] { loss_reduction("avg"); }, {"'avg'", "'mean'"});
  EXPECT_EQ(loss_reduction("sum"), LossReduction::Sum);
}

// ---- pointwise losses ----

using PointwiseRef = std::function<double(double, double, double)>;

Values ref_pointwise(const Tensor& x, const Tensor& y, const Values& w, const PointwiseRef& f,
                     LossReduction r) {
  Values a = x.to_vector<double>(), b = y.to_vector<double>(), out;
  double total = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    out.push_back(f(a[i], b[i], w.empty() ? 1.0 : w[i]));
    total += out.back();
  }
  if (r == LossReduction::None) return out;
  return {r == LossReduction::Sum ? total : total / double(a.size())};
}

double bce_ref(double x, double y, double w) {  // the textbook form, in double
  double s = 1 / (1 + std::exp(-x));
  return -(w * y * std::log(s) + (1 - y) * std::log(1 - s));
}

TEST_P(Loss, PointwiseLossValuesAndGradients) {
  Tensor x = test::random_tensor({4, 6}, 20, DType::Float64, device(), -3, 3).t();
  Tensor y = test::random_tensor({6, 4}, 21, DType::Float64, device(), 0, 1);
  Tensor pw = test::random_tensor({4}, 22, DType::Float64, device(), 0.5, 3);
  Values pw_full;
  for (int64_t i = 0; i < 24; ++i) pw_full.push_back(pw.to_vector<double>()[size_t(i % 4)]);
  Values upstream = test::random_values(24, 23);
  for (LossReduction r : {LossReduction::Mean, LossReduction::Sum, LossReduction::None}) {
    SCOPED_TRACE("reduction " + std::to_string(int(r)));
    const bool none = r == LossReduction::None;
    Tensor g = none ? Tensor::from_vector(upstream, {6, 4}).to(device())
                    : Tensor::from_vector<double>({0.7}, {}).to(device());
    auto scalar = [&](const Tensor& loss) {
      return none ? dot(loss, upstream) : 0.7 * loss.item<double>();
    };

    expect_close(mse_loss(x, y, r),
                 ref_pointwise(
                     x, y, {}, [](double a, double b, double) { return (a - b) * (a - b); }, r),
                 1e-12, 1e-12);
    expect_close(mse_loss_backward(g, x, y, r),
                 numeric_grad([&](const Tensor& t) { return scalar(mse_loss(t, y, r)); }, x), 1e-8,
                 1e-6);
    expect_close(l1_loss(x, y, r),
                 ref_pointwise(
                     x, y, {}, [](double a, double b, double) { return std::fabs(a - b); }, r),
                 1e-12, 1e-12);
    expect_close(l1_loss_backward(g, x, y, r),
                 numeric_grad([&](const Tensor& t) { return scalar(l1_loss(t, y, r)); }, x), 1e-8,
                 1e-6);
    for (bool weighted : {false, true}) {
      Tensor p = weighted ? pw : Tensor();
      expect_close(binary_cross_entropy_with_logits(x, y, p, r),
                   ref_pointwise(x, y, weighted ? pw_full : Values{}, bce_ref, r), 1e-12, 1e-10);
      expect_close(binary_cross_entropy_with_logits_backward(g, x, y, p, r),
                   numeric_grad(
                       [&](const Tensor& t) {
                         return scalar(binary_cross_entropy_with_logits(t, y, p, r));
                       },
                       x),
                   1e-8, 1e-6);
    }
  }
}

TEST_P(Loss, PointwiseLossesStableAndInLowPrecision) {
  Tensor x = Tensor::from_vector<float>({1000, -1000, 0, 30}, {4}).to(device());
  Tensor y = Tensor::from_vector<float>({0, 1, 0.5, 1}, {4}).to(device());
  Tensor l = binary_cross_entropy_with_logits(x, y, Tensor(), LossReduction::None);
  expect_close(l, {1000, 1000, std::log(2.0), std::log1p(std::exp(-30.0))}, 1e-6, 1e-6);
  Tensor one = Tensor::from_vector<float>({1}, {}).to(device());
  expect_close(binary_cross_entropy_with_logits_backward(one, x, y, Tensor(), LossReduction::Sum),
               {1, -1, 0, -std::exp(-30.0)}, 1e-7, 1e-5);
  // l1 at a tie has gradient 0 (sign(0)), as PyTorch
  expect_close(l1_loss_backward(one, y, y, LossReduction::Sum), {0, 0, 0, 0});
  // Each element's loss is computed in float and rounded to dt (u * |l|, test::unit_roundoff);
  // the mean of those non-negative losses is taken in float and rounded again: 2u * |mean| in
  // all. A mean accumulated in the half type would drift by far more over 128 terms.
  for (DType dt : {DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    const double u = test::unit_roundoff(dt);
    Tensor a = test::random_tensor({8, 16}, 24, dt, device(), -2, 2);
    Tensor b = test::random_tensor({8, 16}, 25, dt, device(), 0, 1);
    Tensor got = mse_loss(a, b);
    EXPECT_EQ(got.dtype(), dt);
    const double want = mse_loss(a.to(DType::Float64), b.to(DType::Float64)).item<double>();
    EXPECT_NEAR(got.item<double>(), want, 2 * u * want + 1e-5);
    expect_close(binary_cross_entropy_with_logits(a, b, Tensor(), LossReduction::None),
                 binary_cross_entropy_with_logits(a.to(DType::Float64), b.to(DType::Float64),
                                                  Tensor(), LossReduction::None),
                 1e-6, u);
  }
}

TEST_P(Loss, PointwiseErrors) {
  Tensor x = Tensor::empty({2, 3}, DType::Float32, device());
  expect_error<ShapeError>(
      [&] {
        mse_loss(x, Tensor::empty({3, 2}, DType::Float32, device()));
      },
      {"mse_loss", "input is [2, 3] float32", "target is [3, 2] float32"});
  expect_error<DTypeError>([&] { l1_loss(x, x.to(DType::Float64)); },
                           {"l1_loss", "[2, 3] float32", "[2, 3] float64"});
  expect_error<ShapeError>(
      [&] { binary_cross_entropy_with_logits(x, x, Tensor::empty({2}, DType::Float32, device())); },
      {"binary_cross_entropy_with_logits", "pos_weight is [2] float32", "[C]"});
  expect_error<ShapeError>(
      [&] {
        mse_loss_backward(Tensor::empty({2}, DType::Float32, device()), x, x, LossReduction::Mean);
      },
      {"mse_loss_backward", "grad_loss is [2] float32", "one element"});
  Tensor i = Tensor::empty({2, 3}, DType::Int32, device());
  expect_error<DTypeError>([&] { mse_loss(i, i); }, {"mse_loss", "[2, 3] int32", "floating"});
}

}  // namespace
}  // namespace ember
