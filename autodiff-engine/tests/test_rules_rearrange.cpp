// The rules of sorting, running sums and products, tril/triu, roll, repeat, interpolate, scatter
// and the rounding and value ops (src/rules/rearrange.cpp, indexing.cpp, elementwise.cpp) against
// finite differences, first and second order, on non-contiguous, 0-d and odd-sized inputs; and
// the shape rules' types and errors.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "expect_error.h"
#include "gradcheck.h"

namespace ad = ember::autodiff;
using ember::DType;
using ember::Shape;
using ember::Tensor;
using Vars = std::vector<ad::Variable>;
using gradcheck::f64_input;
using gradcheck::random;

namespace {

Tensor index_tensor(const std::vector<int64_t>& values, const Shape& shape) {
  return Tensor::from_vector(values, shape);
}

}  // namespace

TEST(RearrangeRules, SortRoutesTheGradientToWhereEachValueCameFrom) {
  gradcheck::check_rule([](const Vars& x) { return ad::sort(x[0], 1).first; }, {random({3, 5}, 1)});
  gradcheck::check_rule([](const Vars& x) { return ad::sort(x[0], 0, true).first; },
                        {random({4, 3}, 2).t()});
  gradcheck::check_rule([](const Vars& x) { return ad::sort(x[0]).first; }, {random({}, 3)});
}

TEST(RearrangeRules, TopkScattersIntoTheFullShape) {
  gradcheck::check_rule([](const Vars& x) { return ad::topk(x[0], 2, -1).first; },
                        {random({3, 5}, 4)});
  gradcheck::check_rule([](const Vars& x) { return ad::topk(x[0], 3, 0, false).first; },
                        {random({5, 2}, 5).t().t()});
}

TEST(RearrangeRules, SortTypesAndErrors) {
  ad::Graph g;
  auto [values, indices] = ad::sort(f64_input(g, {2, 7}), 0);
  EXPECT_EQ(values.shape(), (Shape{2, 7}));
  EXPECT_EQ(indices.dtype(), DType::Int64);
  EXPECT_EQ(ad::topk(f64_input(g, {2, 7}), 3).second.shape(), (Shape{2, 3}));
  EXPECT_EQ(ad::argsort(f64_input(g, {4})).dtype(), DType::Int64);
  expect_error<ember::ValueError>(
      [](ad::Graph& g) {
        ad::topk(f64_input(g, {2, 7}), 8);
      },
      {"topk", "k = 8", "size 7"});
  expect_error<ember::IndexError>(
      [](ad::Graph& g) {
        ad::sort(f64_input(g, {2, 7}), 2);
      },
      {"sort", "f64[2,7]"});
}

TEST(RearrangeRules, CumsumIsAReversedCumsum) {
  gradcheck::check_rule([](const Vars& x) { return ad::cumsum(x[0], 1); }, {random({3, 4}, 6)});
  gradcheck::check_rule([](const Vars& x) { return ad::cumsum(x[0], -2); },
                        {random({4, 3}, 7).t()});
  gradcheck::check_rule([](const Vars& x) { return ad::cumsum(x[0], 0); }, {random({}, 8)});
}

TEST(RearrangeRules, CumprodWithoutZerosToSecondOrder) {
  gradcheck::check_rule([](const Vars& x) { return ad::cumprod(x[0], 1); },
                        {random({2, 5}, 9, 0.5, 1.5)});
  gradcheck::check_rule([](const Vars& x) { return ad::cumprod(x[0], 0); },
                        {random({3, 4}, 10, -1.5, -0.5).t()});
}

TEST(RearrangeRules, CumprodWithZerosIsExactToFirstOrder) {
  // One zero, two zeros (the first at the start), a zero at the end.
  for (const std::vector<double>& v :
       {std::vector<double>{2.0, 0.0, 3.0, -4.0}, std::vector<double>{0.0, 2.0, 0.0, 5.0},
        std::vector<double>{1.5, -2.0, 3.0, 0.0}})
    gradcheck::check_grad([](const Vars& x) { return ad::cumprod(x[0], 0); },
                          {Tensor::from_vector(v, {4})});
}

TEST(RearrangeRules, IntegerScansGiveInt64) {
  ad::Graph g;
  ad::Val i = g.input(ad::TensorType{{3}, DType::Int32, ember::Device()});
  EXPECT_EQ(ad::cumsum(i, 0).dtype(), DType::Int64);
  EXPECT_EQ(ad::cumprod(i, 0, DType::Float64).dtype(), DType::Float64);
}

TEST(RearrangeRules, TrilTriuRollRepeat) {
  gradcheck::check_rule([](const Vars& x) { return ad::tril(x[0], -1); }, {random({2, 3, 4}, 11)});
  gradcheck::check_rule([](const Vars& x) { return ad::triu(x[0], 1); }, {random({4, 3}, 12).t()});
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::roll(x[0], {1, -2}, {0, 1});
      },
      {random({3, 4}, 13)});
  gradcheck::check_rule([](const Vars& x) { return ad::roll(x[0], {5}); },
                        {random({4, 3}, 14).t()});
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::repeat(x[0], {2, 1, 3});
      },
      {random({3, 2}, 15).t()});
  gradcheck::check_rule([](const Vars& x) { return ad::tile(x[0], {2}); }, {random({3}, 16)});
  gradcheck::check_rule([](const Vars& x) { return ad::repeat(x[0], {3}); }, {random({}, 17)});
}

TEST(RearrangeRules, MovingErrors) {
  expect_error<ember::ShapeError>([](ad::Graph& g) { ad::tril(f64_input(g, {3})); },
                                  {"tril", "at least 2 dims"});
  expect_error<ember::ValueError>(
      [](ad::Graph& g) {
        ad::roll(f64_input(g, {3}), {1, 2}, {0});
      },
      {"roll", "shifts [1, 2]"});
  expect_error<ember::ShapeError>(
      [](ad::Graph& g) {
        ad::repeat(f64_input(g, {2, 3}), {2});
      },
      {"repeat", "1 repeats for 2 dims"});
  expect_error<ember::ValueError>(
      [](ad::Graph& g) {
        ad::repeat(f64_input(g, {2, 3}), {1, -1});
      },
      {"repeat", "-1"});
}

TEST(RearrangeRules, InterpolateAndItsBackwardAreAdjoint) {
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::interpolate(x[0], {5, 3}, {}, "bilinear");
      },
      {random({1, 2, 3, 4}, 18)});
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::interpolate(x[0], {4, 4}, {}, "bilinear", true);
      },
      {random({1, 2, 3, 2}, 19)});
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::interpolate(x[0], {}, {2.0, 1.5});
      },
      {random({2, 1, 2, 3}, 20)});
  ad::Graph g;
  EXPECT_EQ(ad::interpolate(f64_input(g, {1, 2, 3, 5}), {}, {1.5, 0.5}).shape(),
            (Shape{1, 2, 4, 2}));
  expect_error<ember::ValueError>(
      [](ad::Graph& g) {
        ad::interpolate(f64_input(g, {1, 1, 2, 2}), {4, 4}, {}, "bicubic");
      },
      {"interpolate", "bicubic"});
  expect_error<ember::ShapeError>(
      [](ad::Graph& g) {
        ad::interpolate(f64_input(g, {2, 2, 2}), {4, 4});
      },
      {"interpolate", "4 dims"});
}

TEST(RearrangeRules, ScatterInXAndSrc) {
  const Tensor index = index_tensor({2, 0, 1, 0, 1, 2}, {2, 3});
  gradcheck::check_rule(
      [&](const Vars& x) { return ad::scatter(x[0], 0, ad::Variable(index), x[1]); },
      {random({3, 4}, 21), random({3, 3}, 22)});
  gradcheck::check_rule(
      [&](const Vars& x) { return ad::scatter(x[0], -1, ad::Variable(index), 0.25); },
      {random({4, 2}, 23).t()});
  // Out of range: the message names the op, the value and the size.
  expect_error<ember::IndexError>(
      [&](ad::Graph&) {
        ad::scatter(ad::Variable(random({2, 2}, 24)), 1, ad::Variable(index_tensor({2}, {1, 1})),
                    1.0);
      },
      {"scatter", "index 2", "size 2"});
}

TEST(ElementwiseRules, ReciprocalRoundingAndNanToNum) {
  gradcheck::check_rule([](const Vars& x) { return ad::reciprocal(x[0]); },
                        {random({2, 3}, 25, 0.5, 2.0).t()});
  gradcheck::check_rule([](const Vars& x) { return ad::square(x[0]); }, {random({3}, 26)});
  gradcheck::check_rule([](const Vars& x) { return ad::nan_to_num(x[0]) * x[0]; },
                        {random({2, 2}, 27)});
  // Rounding has a gradient, of zeros.
  for (auto f : {+[](const ad::Variable& v) { return ad::floor(v); },
                 +[](const ad::Variable& v) { return ad::ceil(v); },
                 +[](const ad::Variable& v) { return ad::round(v, 1); },
                 +[](const ad::Variable& v) { return ad::trunc(v); }}) {
    ad::Variable x(random({3}, 28), true);
    ad::Variable y = f(x);
    ASSERT_TRUE(y.requires_grad());
    ad::sum(y).backward();
    EXPECT_EQ(x.grad().data().to_vector<double>(), (std::vector<double>{0, 0, 0}));
  }
  const double inf = std::numeric_limits<double>::infinity();
  ad::Variable x(Tensor::from_vector<double>({1.0, inf, -inf, std::nan("")}, {4}), true);
  ad::sum(ad::nan_to_num(x, 0.0, 5.0, -5.0)).backward();
  EXPECT_EQ(x.grad().data().to_vector<double>(), (std::vector<double>{1, 0, 0, 0}));
  ad::Graph g;
  EXPECT_EQ(ad::isnan(f64_input(g, {2})).dtype(), DType::Bool);
}
