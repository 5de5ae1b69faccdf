// The reduction family's gradient rules against float64 finite differences (first and second
// order) over dims/keepdim combinations, 0-d, size-1 and odd sizes and non-contiguous inputs; and
// the non-smooth cases (ties, zeros of prod, the norm at 0) against their exact values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "ember/autodiff/autodiff.h"
#include "ember/ops/elementwise.h"
#include "gradcheck.h"

namespace ad = ember::autodiff;
using ember::Shape;
using ember::Tensor;
using Dims = std::vector<int64_t>;
using gradcheck::random;

namespace {

const double kInf = std::numeric_limits<double>::infinity();

// f to first and second order, and f(x)^2 to second order: there the gradient arriving at the
// reduction depends on x too, so the rule's own gradient in dy is exercised.
void check_all(const gradcheck::Fn& f, const std::vector<Tensor>& in) {
  gradcheck::check_grad(f, in);
  gradcheck::check_grad_grad(f, in);
  gradcheck::check_grad_grad(
      [&](const std::vector<ad::Variable>& xs) {
        ad::Variable y = f(xs);
        return y * y;
      },
      in);
}

// Values in +-[0.5, 1.5]: away from 0 (prod, norms with p < 1) with both signs.
Tensor signed_random(const Shape& shape, uint64_t seed) {
  return ember::mul(random(shape, seed, 0.5, 1.5), ember::sign(random(shape, seed + 1)));
}

struct Case {
  Tensor x;
  Dims dims;
  bool keepdim;
  std::string str() const {
    return ad::type_of(x).str() + (x.is_contiguous() ? "" : " (strided)") + " dims " +
           ember::shape_str(dims) + (keepdim ? " keepdim" : "");
  }
};

// Every dims/keepdim combination the rules are checked over: all dims, one, several, negative,
// a size-1 dim, odd sizes, 0-d, and transposed and sliced views.
std::vector<Case> cases(Tensor (*make)(const Shape&, uint64_t)) {
  const Tensor t = make({4, 3}, 11).t();                // [3, 4], strides (1, 3)
  const Tensor s = make({3, 9}, 12).slice(1, 1, 9, 2);  // [3, 4], every other column
  return {{make({3, 4}, 1), {}, false},
          {make({3, 4}, 2), {1}, true},
          {make({2, 3, 5}, 3), {0, -1}, false},
          {make({2, 3, 5}, 4), {-2}, true},
          {make({2, 1, 3}, 5), {1}, false},
          {make({5}, 6), {0}, false},
          {make({}, 7), {}, false},
          {make({}, 8), {0}, true},
          {t, {0}, false},
          {t, {}, true},
          {s, {1}, false},
          {s, {0, 1}, true}};
}
Tensor uniform(const Shape& shape, uint64_t seed) { return random(shape, seed); }

using Reduce = ad::Variable (*)(const ad::Variable&, const Dims&, bool);

void check_reduction(Reduce op, Tensor (*make)(const Shape&, uint64_t) = uniform) {
  for (const Case& c : cases(make)) {
    SCOPED_TRACE(c.str());
    check_all([&](const std::vector<ad::Variable>& xs) { return op(xs[0], c.dims, c.keepdim); },
              {c.x});
  }
}

// d sum(w * f(x)) / dx for a fixed weight w of f's shape, as a flat vector.
std::vector<double> weighted_grad(const std::function<ad::Variable(const ad::Variable&)>& f,
                                  const Tensor& x_value, const Tensor& w = Tensor()) {
  ad::Variable x(x_value, true);
  ad::Variable y = f(x);
  ad::Variable weight(w.defined() ? w : ember::ones_like(y.data()));
  return ad::grad({y}, {x}, {weight})[0].data().contiguous().to_vector<double>();
}

Tensor vec(const std::vector<double>& v, const Shape& shape) {
  return Tensor::from_vector<double>(v, shape);
}

void expect_values(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "element " << i;
}

}  // namespace

TEST(ReductionGrad, Sum) {
  check_reduction([](const ad::Variable& x, const Dims& d, bool k) { return ad::sum(x, d, k); });
}

TEST(ReductionGrad, Mean) {
  check_reduction([](const ad::Variable& x, const Dims& d, bool k) { return ad::mean(x, d, k); });
}

TEST(ReductionGrad, Prod) {
  check_reduction([](const ad::Variable& x, const Dims& d, bool k) { return ad::prod(x, d, k); },
                  signed_random);
}

TEST(ReductionGrad, Amax) {
  check_reduction([](const ad::Variable& x, const Dims& d, bool k) { return ad::amax(x, d, k); });
}

TEST(ReductionGrad, Amin) {
  check_reduction([](const ad::Variable& x, const Dims& d, bool k) { return ad::amin(x, d, k); });
}

TEST(ReductionGrad, Logsumexp) {
  check_reduction(
      [](const ad::Variable& x, const Dims& d, bool k) { return ad::logsumexp(x, d, k); });
}

TEST(ReductionGrad, VarAndStdWithCorrection0And1) {
  for (int64_t correction : {0, 1}) {
    for (const Case& c : cases(uniform)) {
      // n <= correction gives inf or NaN (as PyTorch): nothing to check there.
      const int64_t n = c.x.numel() / ember::sum(c.x, c.dims).numel();
      if (n <= correction) continue;
      SCOPED_TRACE(c.str() + " correction " + std::to_string(correction));
      check_all([&](const auto& xs) { return ad::var(xs[0], c.dims, correction, c.keepdim); },
                {c.x});
      check_all([&](const auto& xs) { return ad::std(xs[0], c.dims, correction, c.keepdim); },
                {c.x});
    }
  }
}

TEST(ReductionGrad, NormForSeveralP) {
  for (double p : {2.0, 1.0, 3.0, 1.5, 0.5, 0.0, kInf, -kInf}) {
    for (const Case& c : cases(signed_random)) {
      SCOPED_TRACE(c.str() + " p " + std::to_string(p));
      check_all([&](const auto& xs) { return ad::norm(xs[0], p, c.dims, c.keepdim); }, {c.x});
    }
  }
}

TEST(ReductionGrad, MaxAndMinAlongDim) {
  const Tensor t = random({4, 3}, 21).t();
  const std::vector<std::tuple<Tensor, int64_t, bool>> along = {{random({3, 4}, 22), 0, false},
                                                                {random({3, 4}, 23), -1, true},
                                                                {random({2, 3, 5}, 24), 1, false},
                                                                {random({2, 1, 3}, 25), 1, true},
                                                                {random({5}, 26), 0, true},
                                                                {random({}, 27), 0, false},
                                                                {t, 0, false},
                                                                {t, 1, true}};
  for (const auto& [x, dim, keepdim] : along) {
    SCOPED_TRACE(ad::type_of(x).str() + " dim " + std::to_string(dim));
    check_all([&](const auto& xs) { return ad::max(xs[0], dim, keepdim).first; }, {x});
    check_all([&](const auto& xs) { return ad::min(xs[0], dim, keepdim).first; }, {x});
  }
}

TEST(ReductionGrad, ExpandAndSumTo) {
  // x: [2, 3, 4], w: [3, 1] broadcast to x, the product summed back to [3, 1] and to [4].
  const Tensor x = random({2, 3, 4}, 31), w = random({3, 1}, 32);
  check_all(
      [](const auto& xs) {
        return ad::sum_to(ad::expand(xs[1], {2, 3, 4}) * xs[0], {3, 1});
      },
      {x, w});
  check_all(
      [](const auto& xs) {
        return ad::sum_to(ad::expand(xs[1], {2, 3, 4}) * xs[0], {4});
      },
      {x, w});
  // Strided x, a 0-d w, sums to 0-d and to the same shape (nothing to sum).
  const Tensor t = random({4, 3}, 33).t(), w0 = random({}, 34);
  check_all(
      [](const auto& xs) {
        return ad::sum_to(ad::expand(xs[1], {3, 4}) * xs[0], {});
      },
      {t, w0});
  check_all(
      [](const auto& xs) {
        return ad::sum_to(ad::expand(xs[1], {3, 4}) * xs[0], {3, 4});
      },
      {t, w0});
}

TEST(ReductionGrad, OverAnEmptyDim) {
  // x: [0, 3]: sums, means and products of nothing have an empty gradient of x's shape.
  const std::vector<Reduce> ops = {
      [](const ad::Variable& v, const Dims& d, bool k) { return ad::sum(v, d, k); },
      [](const ad::Variable& v, const Dims& d, bool k) { return ad::mean(v, d, k); },
      [](const ad::Variable& v, const Dims& d, bool k) { return ad::prod(v, d, k); }};
  for (const Reduce op : ops) {
    for (const Dims& dims : {Dims{0}, Dims{1}, Dims{}}) {
      SCOPED_TRACE(ember::shape_str(dims));
      auto f = [&](const ad::Variable& v) { return op(v, dims, true); };
      EXPECT_EQ(weighted_grad(f, random({0, 3}, 41)).size(), 0u);
      gradcheck::check_grad([&](const auto& xs) { return op(xs[0], dims, false); },
                            {random({0, 3}, 41)});
    }
  }
}

// ---- the non-smooth and singular cases, against exact values ----

TEST(ReductionGrad, AmaxAndAminSplitTiesEqually) {
  // Row 0 has two tied maxima, row 1 three.
  const Tensor x = vec({1, 3, 3, 2, 2, 2}, {2, 3});
  auto amax1 = [](const ad::Variable& v) { return ad::amax(v, {1}); };
  expect_values(weighted_grad(amax1, x), {0, 0.5, 0.5, 1.0 / 3, 1.0 / 3, 1.0 / 3});
  auto amin_all = [](const ad::Variable& v) { return ad::amin(v); };
  expect_values(weighted_grad(amin_all, vec({1, 3, 1, 2, 1, 2}, {2, 3})),
                {1.0 / 3, 0, 1.0 / 3, 0, 1.0 / 3, 0});
  // The split scales the incoming gradient (here 4 and -2 per row) and keeps its sign.
  expect_values(weighted_grad(amax1, x, vec({4, -2}, {2})),
                {0, 2, 2, -2.0 / 3, -2.0 / 3, -2.0 / 3});
  // Two tied maxima: the equal split is also what central differences see (to first order; the
  // second differs across the tie, where the function is not differentiable).
  gradcheck::check_grad([](const auto& xs) { return ad::amax(xs[0], {1}); },
                        {vec({1, 3, 3, 2, 5, 0}, {2, 3})});
}

TEST(ReductionGrad, MaxAlongDimGivesTiesToTheIndexedElement) {
  const Tensor x = vec({1, 3, 3, 2, 2, 2}, {2, 3});
  ad::Variable v(x, true);
  auto [values, indices] = ad::max(v, 1);
  EXPECT_EQ(indices.data().to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  expect_values(weighted_grad([](const ad::Variable& u) { return ad::max(u, 1).first; }, x),
                {0, 1, 0, 1, 0, 0});
  expect_values(weighted_grad([](const ad::Variable& u) { return ad::min(u, 0, true).first; }, x,
                              vec({1, 2, 3}, {1, 3})),
                {1, 0, 0, 0, 2, 3});
}

TEST(ReductionGrad, ProdWithZeros) {
  auto prod_all = [](const ad::Variable& v) { return ad::prod(v); };
  expect_values(weighted_grad(prod_all, vec({2, 0, 3, 4}, {4})), {0, 24, 0, 0});
  expect_values(weighted_grad(prod_all, vec({2, 0, 3, 0}, {4})), {0, 0, 0, 0});
  // Per row: no zero, one zero, two zeros, three zeros.
  const Tensor x = vec({2, -1, 3, 0.5, 0, 3, 0, 2, 0, 0, 0, 0}, {4, 3});
  expect_values(weighted_grad([](const ad::Variable& v) { return ad::prod(v, {1}); }, x),
                {-3, 6, -2, 0, 1.5, 0, 0, 0, 0, 0, 0, 0});
  // The second derivative is exact with zeros too: d2 prod / dx1 dx3 = 2 * 3 for [2, 0, 3, 0].
  ad::Variable v(vec({2, 0, 3, 0}, {4}), true);
  ad::Variable g = ad::grad({ad::prod(v)}, {v}, {}, false, true)[0];
  ad::Variable h = ad::grad({g}, {v}, {ad::Variable(vec({0, 0, 0, 1}, {4}))})[0];
  expect_values(h.data().to_vector<double>(), {0, 6, 0, 0});
  for (const Dims& dims : {Dims{1}, Dims{0}, Dims{}}) {
    SCOPED_TRACE(ember::shape_str(dims));
    check_all([&](const auto& xs) { return ad::prod(xs[0], dims); }, {x});
    check_all([&](const auto& xs) { return ad::prod(xs[0], dims, true); }, {x.t()});
  }
}

TEST(ReductionGrad, NormIsZeroAtZeroAndSplitsInfTies) {
  const Tensor zero = vec({0, 0, 0}, {3});
  for (double p : {2.0, 3.0, 1.5, 0.5, kInf}) {
    SCOPED_TRACE(p);
    expect_values(weighted_grad([p](const ad::Variable& v) { return ad::norm(v, p); }, zero),
                  {0, 0, 0});
  }
  // Closed forms: p = 2: x / |x|; p = 0.5 at a zero element: 0 there (as PyTorch).
  expect_values(weighted_grad([](const ad::Variable& v) { return ad::norm(v); }, vec({3, -4}, {2})),
                {0.6, -0.8});
  // |4|^(p-1) / y^(p-1) with y = (sqrt 4)^2 = 4: 1.
  expect_values(weighted_grad([](const ad::Variable& v) { return ad::norm(v, 0.5); },
                              vec({0, 4}, {2})),
                {0, 1});
  // max|x| tied between -3 and 3: each gets half, with its sign.
  expect_values(weighted_grad([](const ad::Variable& v) { return ad::norm(v, kInf); },
                              vec({-3, 3, 1}, {3})),
                {-0.5, 0.5, 0});
}

TEST(ReductionGrad, StdOfConstantSliceIsZeroNotNaN) {
  // Row 1, [1, 2, 6]: deviations -2, -1, 3, std sqrt(7); dx = deviation / (2 std).
  auto std1 = [](const ad::Variable& v) { return ad::std(v, {1}); };
  expect_values(weighted_grad(std1, vec({2, 2, 2, 1, 2, 6}, {2, 3})),
                {0, 0, 0, -1 / std::sqrt(7.0), -0.5 / std::sqrt(7.0), 1.5 / std::sqrt(7.0)});
}

TEST(ReductionGrad, VarClosedForm) {
  // x = [1, 2, 3, 4]: mean 2.5, sum of squares 5; var = 5/3 (correction 1), 5/4 (0).
  const Tensor x = vec({1, 2, 3, 4}, {4});
  EXPECT_NEAR(ad::var(ad::Variable(x)).data().item<double>(), 5.0 / 3, 1e-12);
  EXPECT_NEAR(ad::var(ad::Variable(x), {}, 0).data().item<double>(), 1.25, 1e-12);
  for (int64_t correction : {0, 1}) {
    const double d = 4.0 - double(correction);
    expect_values(weighted_grad([&](const ad::Variable& v) { return ad::var(v, {0}, correction); },
                                x),
                  {2 * -1.5 / d, 2 * -0.5 / d, 2 * 0.5 / d, 2 * 1.5 / d});
  }
}

TEST(ReductionGrad, LogsumexpOfLargeValues) {
  const Tensor x = vec({1000, 1000, 999}, {3});
  const double z = 2 + std::exp(-1.0);
  EXPECT_NEAR(ad::logsumexp(ad::Variable(x)).data().item<double>(), 1000 + std::log(z), 1e-9);
  expect_values(weighted_grad([](const ad::Variable& v) { return ad::logsumexp(v); }, x),
                {1 / z, 1 / z, std::exp(-1.0) / z});
}
