// The padding and indexing ops' gradient rules (src/rules/indexing.cpp) against finite
// differences, first and second order, with repeated indices (fan-in) and non-contiguous inputs;
// circular padding (new in this layer) and index_put against brute force; and the shape rules'
// errors.
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
using gradcheck::random;

namespace {

Tensor indices(const std::vector<int64_t>& values, const Shape& shape) {
  return Tensor::from_vector(values, shape);
}

ad::Val input(ad::Graph& g, const Shape& shape, ember::DType dtype = ember::DType::Float64) {
  return g.input(ad::TensorType{shape, dtype, ember::Device()});
}

}  // namespace

TEST(MovementPad, ConstantWithPadsAndCrops) {
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::pad(x[0], {1, 2, 0, 1}, "constant", 0.5);
      },
      {random({3, 2}, 1).t()});
  // negative pads crop: the cropped elements get no gradient
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::pad(x[0], {-1, 2, 1, -2});
      },
      {random({3, 4}, 2)});
  gradcheck::check_rule([](const Vars& x) { return ad::pad(x[0], {}); }, {random({}, 3)});
}

TEST(MovementPad, EveryModeFirstAndSecondOrder) {
  for (const char* mode : {"reflect", "replicate", "circular"}) {
    SCOPED_TRACE(mode);
    gradcheck::check_rule(
        [&](const Vars& x) {
          return ad::pad(x[0], {2, 1, 1, 2}, mode);
        },
        {random({2, 4, 3}, 4).transpose(1, 2)});  // [2, 3, 4], non-contiguous
    gradcheck::check_rule(
        [&](const Vars& x) {
          return ad::pad(x[0], {0, 2}, mode);
        },
        {random({1, 3}, 5)});
  }
}

TEST(MovementPad, CircularAgainstBruteForce) {
  const Tensor x = random({2, 3}, 6);
  const Tensor y = ad::pad(ad::Variable(x), {3, 1, 1, 0}, "circular").data();
  ASSERT_EQ(y.shape(), (Shape{3, 7}));
  auto xv = x.to_vector<double>(), yv = y.to_vector<double>();
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 7; ++j) {
      const int64_t si = ((i - 1) % 2 + 2) % 2, sj = ((j - 3) % 3 + 3) % 3;
      EXPECT_EQ(yv[size_t(i * 7 + j)], xv[size_t(si * 3 + sj)]) << i << "," << j;
    }
  // its backward is its adjoint: <pad(x), g> = <x, pad_backward(g)>
  const Tensor g = random({3, 7}, 7);
  const Tensor back = ad::pad_backward(ad::Variable(g), {2, 3}, {3, 1, 1, 0}, "circular").data();
  EXPECT_NEAR(gradcheck::dot(y, g), gradcheck::dot(x, back), 1e-12);
}

TEST(MovementPad, PadBackwardEveryMode) {
  for (const char* mode : {"constant", "reflect", "replicate", "circular"}) {
    SCOPED_TRACE(mode);
    gradcheck::check_rule(
        [&](const Vars& g) {
          return ad::pad_backward(g[0], {3, 4}, {1, 2, 2, 0}, mode);
        },
        {random({7, 5}, 8).t()});
  }
}

TEST(MovementIndex, IndexSelectWithRepeatedIndices) {
  const Tensor index = indices({2, 0, 2, 2}, {4});
  gradcheck::check_rule([](const Vars& x) { return ad::index_select(x[0], 1, x[1]); },
                        {random({3, 8}, 9).slice(1, 1, 8, 2), index});
  gradcheck::check_rule([](const Vars& x) { return ad::index_select(x[0], 0, x[1]); },
                        {random({4, 3}, 10).t(), index});
  gradcheck::check_rule([](const Vars& x) { return ad::index_select(x[0], 0, x[1]); },
                        {random({3}, 11), indices({}, {0})});
}

TEST(MovementIndex, IndexAddGradientsForXAndSrc) {
  gradcheck::check_rule([](const Vars& x) { return ad::index_add(x[0], 1, x[1], x[2]); },
                        {random({2, 3}, 12), indices({1, 1, 0, 1}, {4}), random({4, 2}, 13).t()});
}

TEST(MovementIndex, GatherWithRepeatedIndices) {
  // index smaller than x in the other dim; rows 0 and 1 read column 2 several times
  const Tensor index = indices({2, 2, 0, 1, 2, 1}, {2, 3});
  gradcheck::check_rule([](const Vars& x) { return ad::gather(x[0], 1, x[1]); },
                        {random({4, 3}, 14), index});
  gradcheck::check_rule([](const Vars& x) { return ad::gather(x[0], 0, x[1]); },
                        {random({3, 4}, 15).t(), indices({3, 3, 0, 3}, {4, 1})});
}

TEST(MovementIndex, ScatterAddWithRepeatedIndices) {
  // src [4, 3] is larger than index [2, 3]: the src elements index does not reach get no gradient
  gradcheck::check_rule([](const Vars& x) { return ad::scatter_add(x[0], 1, x[1], x[2]); },
                        {random({2, 3}, 16), indices({0, 0, 2, 1, 1, 1}, {2, 3}),
                         random({4, 3}, 17).t()});
  gradcheck::check_rule([](const Vars& x) { return ad::scatter_add(x[0], 0, x[1], x[2]); },
                        {random({3}, 18), indices({2, 2, 2}, {3}), random({3}, 19)});
}

TEST(MovementIndex, EmbeddingWithRepeatedIndices) {
  gradcheck::check_rule([](const Vars& x) { return ad::embedding(x[0], x[1]); },
                        {random({3, 4}, 20).t(), indices({1, 3, 1, 1, 0, 3}, {2, 3})});
  gradcheck::check_rule([](const Vars& x) { return ad::embedding(x[0], x[1]); },
                        {random({3, 2}, 21), indices({2}, {})});  // a 0-d index -> [2]
  gradcheck::check_rule([](const Vars& x) { return ad::embedding_backward(x[0], x[1], 4); },
                        {random({2, 3, 2}, 22), indices({1, 3, 1, 1, 0, 1}, {2, 3})});
}

TEST(MovementIndex, OneHotHasNoGradient) {
  ad::Variable y = ad::one_hot(ad::Variable(indices({2, 0, 2}, {3})), 4);
  EXPECT_EQ(y.dtype(), ember::DType::Int64);
  EXPECT_EQ(y.data().to_vector<int64_t>(),
            (std::vector<int64_t>{0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0}));
  EXPECT_FALSE(y.requires_grad());
  ad::Graph g;
  ad::Val h = ad::one_hot(input(g, {3}, ember::DType::Int32), 5);
  EXPECT_EQ(h.type().str(), "i64[3,5]");
}

// x [3, 4] (a transposed view) with x[i, j] = v: distinct positions, one negative index.
TEST(MovementIndexPut, GradientsForXAndValues) {
  const auto put = [](const Vars& x) { return ad::index_put(x[0], {x[2], x[3]}, x[1]); };
  gradcheck::check_rule(put, {random({4, 3}, 30).t(), random({3}, 31), indices({2, 0, 1}, {3}),
                              indices({1, -1, 0}, {3})});
  // i [2, 1] and j [3] broadcast to [2, 3]; values [3] broadcast along the rows
  gradcheck::check_rule(put, {random({3, 4}, 32), random({3}, 33), indices({0, 2}, {2, 1}),
                              indices({0, 1, 3}, {3})});
  // one index: whole rows [2, 4] written, values [1, 4] broadcast
  gradcheck::check_rule([](const Vars& x) { return ad::index_put(x[0], {x[2]}, x[1]); },
                        {random({3, 4}, 34), random({1, 4}, 35), indices({2, 0}, {2})});
  // no index: all of x is written
  gradcheck::check_rule([](const Vars& x) { return ad::index_put(x[0], {}, x[1]); },
                        {random({2, 3}, 36), random({3}, 37)});
}

TEST(MovementIndexPut, AccumulateWithRepeatedIndices) {
  const auto put = [](const Vars& x) { return ad::index_put(x[0], {x[2]}, x[1], true); };
  gradcheck::check_rule(put, {random({3, 6}, 38).slice(1, 0, 6, 3), random({4, 2}, 39),
                              indices({1, 1, 0, 1}, {4})});
  // rows as int32 with negatives, columns int64: positions (1, 2), (0, 2), (1, 2); values 0-d
  const Tensor rows = indices({-1, 0, -1}, {3}).to(ember::DType::Int32);
  gradcheck::check_rule(
      [](const Vars& x) {
        return ad::index_put(x[0], {x[2], x[3]}, x[1], true);
      },
      {random({2, 3}, 40), random({}, 41), rows, indices({2, 2, 2}, {3})});
}

TEST(MovementIndexPut, ValuesAgainstBruteForce) {
  const Tensor x = random({3, 2}, 42), v = random({4, 2}, 43), i = indices({2, 0, 2, 2}, {4});
  const auto xv = x.to_vector<double>(), vv = v.to_vector<double>();
  std::vector<double> put = xv, added = xv;
  for (size_t k = 0; k < 4; ++k)
    for (size_t c = 0; c < 2; ++c) {
      const size_t row = size_t(i.to_vector<int64_t>()[k]);
      put[row * 2 + c] = vv[k * 2 + c];  // the last write of a repeated row wins on the CPU
      added[row * 2 + c] += vv[k * 2 + c];
    }
  ad::Variable xs(x), vs(v), is(i);
  EXPECT_EQ(ad::index_put(xs, {is}, vs).data().to_vector<double>(), put);
  const auto got = ad::index_put(xs, {is}, vs, true).data().to_vector<double>();
  for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], added[k], 1e-15) << k;
  EXPECT_EQ(x.to_vector<double>(), xv);  // out of place: x is unchanged
}

TEST(MovementErrors, IndexingShapeRules) {
  expect_error<ember::DTypeError>(
      [](ad::Graph& g) {
        ad::gather(input(g, {2, 3}), 1, input(g, {2, 3}));
      },
      {"gather", "index is f64[2,3]", "integer indices", "int64"});
  expect_error<ember::ShapeError>(
      [](ad::Graph& g) {
        ad::gather(input(g, {2, 3}), 1, input(g, {3, 1}, ember::DType::Int64));
      },
      {"gather", "x is f64[2,3], index is i64[3,1]", "every d but dim 1"});
  expect_error<ember::ShapeError>(
      [](ad::Graph& g) {
        ad::index_add(input(g, {2, 3}), 0, input(g, {4}, ember::DType::Int64), input(g, {3, 3}));
      },
      {"index_add", "src is f64[3,3]", "expected src of shape [4, 3]"});
  expect_error<ember::DTypeError>(
      [](ad::Graph& g) {
        ad::scatter_add(input(g, {2}), 0, input(g, {2}, ember::DType::Int64),
                        input(g, {2}, ember::DType::Float32));
      },
      {"scatter_add", "src is f32[2]", "x's dtype"});
  expect_error<ember::ShapeError>(
      [](ad::Graph& g) { ad::embedding(input(g, {4}), input(g, {2}, ember::DType::Int64)); },
      {"embedding", "weight is f64[4]", "2-D"});
  expect_error<ember::NotSupportedError>(
      [](ad::Graph& g) { ad::one_hot(input(g, {3}, ember::DType::Int64)); },
      {"one_hot", "pass it"});
}

TEST(MovementErrors, IndexPutShapeRules) {
  const auto i64 = ember::DType::Int64;
  expect_error<ember::DTypeError>(
      [](ad::Graph& g) {
        ad::index_put(input(g, {2, 3}), {input(g, {2})}, input(g, {3}));
      },
      {"index_put", "indices[0] is f64[2]", "int64"});
  expect_error<ember::DTypeError>(
      [&](ad::Graph& g) {
        ad::index_put(input(g, {2, 3}), {input(g, {2}, i64)}, input(g, {3}, ember::DType::Float32));
      },
      {"index_put", "x is f64[2,3], values is f32[3]", "x's dtype"});
  expect_error<ember::ShapeError>(
      [&](ad::Graph& g) {
        ad::index_put(input(g, {2, 3}), {input(g, {4}, i64)}, input(g, {2}));
      },
      {"index_put", "values is f64[2]", "[4, 3]"});
  expect_error<ember::ShapeError>(
      [&](ad::Graph& g) {
        ad::index_put(input(g, {2, 3}), {input(g, {2}, i64), input(g, {3}, i64)}, input(g, {}));
      },
      {"index_put", "indices[0] is i64[2], indices[1] is i64[3]", "broadcast together"});
  expect_error<ember::IndexError>(
      [&](ad::Graph& g) {
        ad::index_put(input(g, {2}), {input(g, {1}, i64), input(g, {1}, i64)}, input(g, {}));
      },
      {"index_put", "2 index tensors for its 1 dims"});
}

TEST(MovementErrors, PadShapeRules) {
  expect_error<ember::ValueError>(
      [](ad::Graph& g) {
        ad::pad(input(g, {2, 3}), {3, 0}, "reflect");
      },
      {"pad", "reflect pads (3, 0) do not fit dim 1 of [2, 3]"});
  expect_error<ember::ValueError>(
      [](ad::Graph& g) {
        ad::pad(input(g, {2, 3}), {4, 0}, "circular");
      },
      {"pad", "circular pads (4, 0)"});
  expect_error<ember::ValueError>(
      [](ad::Graph& g) {
        ad::pad(input(g, {2}), {1, 1}, "wrap");
      },
      {"pad", "unknown mode 'wrap'"});
  expect_error<ember::ValueError>(
      [](ad::Graph& g) {
        ad::pad(input(g, {2}), {1, 1, 1});
      },
      {"pad", "[1, 1, 1]", "even number"});
  expect_error<ember::ShapeError>(
      [](ad::Graph& g) {
        ad::pad_backward(input(g, {4}), {3}, {1, 1});
      },
      {"pad_backward", "grad is f64[4]", "expected the padded shape [5]"});
}
