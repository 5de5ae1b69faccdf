// The view and joining ops' gradient rules (src/rules/movement.cpp) against finite differences,
// first and second order, on contiguous and non-contiguous inputs and edge sizes; flip and
// slice_backward forward against brute-force loops; and the shape rules' errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "expect_error.h"
#include "gradcheck.h"

namespace ad = ember::autodiff;
using ember::Shape;
using ember::Tensor;
using Vars = std::vector<ad::Variable>;
using gradcheck::f64_input;
using gradcheck::random;

TEST(MovementViews, ReshapeOfTransposed) {
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::reshape(x[0], {2, -1});
      },
      {random({3, 4}, 1).t()});
  gradcheck::check_rule([](const Vars& x) { return ad::reshape(x[0], {1}); }, {random({}, 2)});
}

TEST(MovementViews, Transpose) {
  gradcheck::check_rule([](const Vars& x) { return ad::transpose(x[0], 0, -1); },
                        {random({2, 3, 5}, 3).transpose(0, 1)});
  gradcheck::check_rule([](const Vars& x) { return ad::transpose(x[0], 0, -1); }, {random({}, 4)});
}

TEST(MovementViews, PermuteUsesTheInversePermutation) {
  // {2, 0, 1} is not its own inverse, so a rule that permuted by dims again would fail.
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::permute(x[0], {2, 0, -2});
      },
      {random({2, 3, 4}, 5).slice(2, 0, 4, 1)});
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::permute(x[0], {1, 2, 0});
      },
      {random({4, 3, 2}, 6).permute({2, 1, 0})});
}

TEST(MovementViews, SliceWithStepAndNegativeStart) {
  // x[:, -6::2] of 7 columns: columns 1, 3, 5.
  gradcheck::check_rule([](const Vars& x) { return ad::slice(x[0], 1, -6, INT64_MAX, 2); },
                        {random({3, 7}, 7)});
  gradcheck::check_rule([](const Vars& x) { return ad::slice(x[0], 0, -4, -1, 3); },
                        {random({5, 3}, 8).t()});
  // start and stop outside the dim clamp, as Python's do
  gradcheck::check_rule([](const Vars& x) { return ad::slice(x[0], 0, -100, 100, 1); },
                        {random({3}, 9)});
  // an empty slice still gives every input element a (zero) gradient
  gradcheck::check_rule([](const Vars& x) { return ad::slice(x[0], 1, 3, 1); },
                        {random({2, 4}, 10)});
}

TEST(MovementViews, SliceBackwardAgainstBruteForce) {
  Tensor g = random({3, 2}, 11);
  ad::Variable out = ad::slice_backward(ad::Variable(g), {3, 5}, 1, -4, INT64_MAX, 2);
  ASSERT_EQ(out.shape(), (Shape{3, 5}));
  auto got = out.data().to_vector<double>(), gv = g.to_vector<double>();
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      const bool kept = j == 1 || j == 3;  // columns -4 (= 1) and 3
      EXPECT_EQ(got[size_t(i * 5 + j)], kept ? gv[size_t(i * 2 + (j - 1) / 2)] : 0.0);
    }
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::slice_backward(x[0], {3, 5}, 1, -4, INT64_MAX, 2);
      },
      {random({2, 3}, 12).t()});
}

TEST(MovementViews, SelectWithNegativeIndex) {
  gradcheck::check_rule([](const Vars& x) { return ad::select(x[0], 1, -1); },
                        {random({3, 4}, 13).t()});
  gradcheck::check_rule([](const Vars& x) { return ad::select(x[0], 0, 2); },
                        {random({3}, 14)});  // -> 0-d
}

TEST(MovementViews, SplitAndChunkAreSlices) {
  gradcheck::check_rule(
      [](const Vars& x) {
        std::vector<ad::Variable> parts = ad::split(x[0], 2, 1);  // sizes 2, 2, 1
        return ad::cat({parts[2], parts[0] * parts[1]}, 1);
      },
      {random({2, 5}, 15)});
  gradcheck::check_rule([](const Vars& x) { return ad::chunk(x[0], 2, 0)[1]; },
                        {random({3, 2}, 16)});
  // as core-runtime: an empty dim gives one empty piece, or `chunks` of them
  ad::Variable empty(random({0, 2}, 17));
  EXPECT_EQ(ad::split(empty, 2).size(), 1u);
  EXPECT_EQ(ad::chunk(empty, 3).size(), 3u);
  EXPECT_THROW(ad::split(empty, 0), ember::ValueError);
}

TEST(MovementViews, SqueezeUnsqueezeFlatten) {
  const Tensor x = random({1, 3, 1, 2}, 17);
  gradcheck::check_rule([](const Vars& x) { return ad::squeeze(x[0]); }, {x});
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::squeeze(x[0], {-2, 1});
      },
      {x});  // dim 1 is kept
  gradcheck::check_rule([](const Vars& x) { return ad::squeeze(x[0], {0}); }, {random({}, 18)});
  gradcheck::check_rule([](const Vars& x) { return ad::unsqueeze(x[0], -1); },
                        {random({3, 2}, 19).t()});
  gradcheck::check_rule([](const Vars& x) { return ad::unsqueeze(x[0], 0); }, {random({}, 20)});
  gradcheck::check_rule([](const Vars& x) { return ad::flatten(x[0], 1, 2); },
                        {random({2, 3, 4}, 21)});
  gradcheck::check_rule([](const Vars& x) { return ad::flatten(x[0]); }, {random({3, 2}, 22).t()});
  gradcheck::check_rule([](const Vars& x) { return ad::flatten(x[0]); },
                        {random({}, 23)});  // -> [1]
  {
    ad::Variable v(x);
    EXPECT_EQ(ad::squeeze(v, {-2, 1}).shape(), (Shape{1, 3, 2}));
    EXPECT_EQ(ad::squeeze(v).shape(), (Shape{3, 2}));
  }
}

TEST(MovementViews, Contiguous) {
  gradcheck::check_rule([](const Vars& x) { return ad::contiguous(x[0]); },
                        {random({3, 4}, 24).t()});
  ad::Variable y = ad::contiguous(ad::Variable(random({3, 4}, 24).t()));
  EXPECT_TRUE(y.data().is_contiguous());
}

TEST(MovementFlip, ForwardAgainstBruteForce) {
  const Tensor x = random({2, 3, 4}, 25);
  const Tensor y = ad::flip(ad::Variable(x.transpose(0, 2)), {0, -1}).data();  // [4, 3, 2]
  ASSERT_EQ(y.shape(), (Shape{4, 3, 2}));
  auto xv = x.to_vector<double>(), yv = y.to_vector<double>();
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 2; ++k) {
        // y[i][j][k] = xt[3 - i][j][1 - k], xt[a][b][c] = x[c][b][a]
        const double want = xv[size_t((1 - k) * 12 + j * 4 + (3 - i))];
        EXPECT_EQ(yv[size_t(i * 6 + j * 2 + k)], want) << i << "," << j << "," << k;
      }
}

TEST(MovementFlip, Gradients) {
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::flip(x[0], {0, 2});
      },
      {random({3, 2, 5}, 26).transpose(0, 1)});
  gradcheck::check_rule([](const Vars& x) { return ad::flip(x[0], {}); }, {random({3}, 27)});
  gradcheck::check_rule([](const Vars& x) { return ad::flip(x[0], {0}); }, {random({}, 28)});
  gradcheck::check_rule([](const Vars& x) { return ad::flip(x[0], {1}); }, {random({2, 0}, 29)});
  // flip is a copy even when nothing is reversed: writes to it must not reach x
  const Tensor x = random({3}, 30);
  EXPECT_FALSE(ad::flip(ad::Variable(x), {}).data().shares_storage(x));
}

TEST(MovementJoin, CatOfThreeDifferentSizes) {
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::cat({x[0], x[1], x[2]}, 1);
      },
      {random({2, 3}, 31), random({1, 2}, 32).t(), random({2, 4}, 33).slice(1, 0, 4, 2)});
  // negative dim, an empty piece and one input used twice (fan-out summed by the driver)
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::cat({x[0], x[1], x[0]}, -2);
      },
      {random({3, 2}, 34), random({0, 2}, 35)});
}

TEST(MovementJoin, Stack) {
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::stack({x[0], x[1], x[2]}, -1);
      },
      {random({2, 3}, 36), random({3, 2}, 37).t(), random({2, 3}, 38)});
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::stack({x[0], x[1]}, 0);
      },
      {random({}, 39), random({}, 40)});
}

// Mixed dtypes promote (float32 with float64 -> float64); each input's gradient comes back in
// its own dtype and shape.
TEST(MovementJoin, MixedDtypesPromoteAndGradientsKeepTheirDtype) {
  ad::Variable a(random({2, 3}, 41).to(ember::DType::Float32), true);
  ad::Variable b(random({1, 3}, 42), true);
  ad::Variable i(Tensor::from_vector<int32_t>({1, 2, 3}, {1, 3}));
  ad::Variable y = ad::cat({a, b, i}, 0);
  EXPECT_EQ(y.dtype(), ember::DType::Float64);
  EXPECT_EQ(y.shape(), (Shape{4, 3}));
  ad::Variable w(random({4, 3}, 43));
  ad::sum(y * w).backward();
  EXPECT_EQ(a.grad().dtype(), ember::DType::Float32);
  EXPECT_EQ(b.grad().dtype(), ember::DType::Float64);
  EXPECT_EQ(a.grad().data().to_vector<double>(),
            w.data().slice(0, 0, 2).to(ember::DType::Float32).to_vector<double>());
  EXPECT_EQ(b.grad().data().to_vector<double>(), w.data().slice(0, 2, 3).to_vector<double>());
  ad::Variable c(random({3}, 44).to(ember::DType::Float32), true), d(random({3}, 45), true);
  ad::Variable s = ad::stack({c, d}, 1);
  EXPECT_EQ(s.dtype(), ember::DType::Float64);
  ad::sum(s).backward();
  EXPECT_EQ(c.grad().dtype(), ember::DType::Float32);
  EXPECT_EQ(c.grad().shape(), (Shape{3}));
  EXPECT_EQ(d.grad().dtype(), ember::DType::Float64);
}

TEST(MovementErrors, PermuteWithARepeatedDim) {
  expect_error<ember::ValueError>(
      [](ad::Graph& g) {
        ad::permute(f64_input(g, {2, 3, 4}), {0, 2, -1});
      },
      {"permute", "dim 2 repeated in [0, 2, -1]", "f64[2,3,4]"});
  expect_error<ember::ShapeError>(
      [](ad::Graph& g) {
        ad::permute(f64_input(g, {2, 3}), {0});
      },
      {"permute", "[0]", "f64[2,3]", "all 2 dims"});
}

TEST(MovementErrors, CatWithMismatchedShapes) {
  expect_error<ember::ShapeError>(
      [](ad::Graph& g) {
        ad::cat({f64_input(g, {2, 3}), f64_input(g, {3, 3})}, 1);
      },
      {"cat", "input 1 is f64[3,3], input 0 is f64[2,3]", "every dim but dim 1 must match"});
  expect_error<ember::ShapeError>(
      [](ad::Graph& g) {
        ad::stack({f64_input(g, {2}), f64_input(g, {3})});
      },
      {"stack", "f64[3]", "one shape"});
}

TEST(MovementErrors, SliceSelectFlip) {
  expect_error<ember::ValueError>([](ad::Graph& g) { ad::slice(f64_input(g, {4}), 0, 0, 4, 0); },
                                  {"slice", "step 0 must be positive", "flip"});
  expect_error<ember::IndexError>([](ad::Graph& g) { ad::slice(f64_input(g, {}), 0, 0, 1); },
                                  {"slice", "0-d"});
  expect_error<ember::IndexError>(
      [](ad::Graph& g) {
        ad::select(f64_input(g, {2, 3}), 1, 3);
      },
      {"select", "index 3 is out of range for dim 1", "f64[2,3]", "[-3, 2]"});
  expect_error<ember::ValueError>(
      [](ad::Graph& g) {
        ad::flip(f64_input(g, {2, 3}), {1, -1});
      },
      {"flip", "dim 1 repeated"});
  expect_error<ember::ShapeError>(
      [](ad::Graph& g) { ad::slice_backward(f64_input(g, {2}), {5}, 0, 0, 5, 2); },
      {"slice_backward", "f64[2]", "expected the slice's shape [3]"});
  expect_error<ember::ValueError>(
      [](ad::Graph& g) {
        ad::flatten(f64_input(g, {2, 3, 4}), 2, 1);
      },
      {"flatten", "start_dim 2 comes after end_dim 1"});
}

TEST(MovementGraph, SymbolicGradientOfASliceRunsInTheExecutor) {
  ad::Graph g;
  ad::Val x = f64_input(g, {2, 5});
  ad::Val y = ad::sum(ad::flip(ad::slice(x, 1, -4, INT64_MAX, 2), {0}));
  ad::Val dx = ad::grad({y}, {x})[0];
  EXPECT_NE(g.str().find("slice_backward"), std::string::npos) << g.str();
  const Tensor got = ad::run(g, {random({2, 5}, 41)}, {dx.id})[0];
  EXPECT_EQ(got.to_vector<double>(), (std::vector<double>{0, 1, 0, 1, 0, 0, 1, 0, 1, 0}));
}
