// The gradient rules of matmul and linear against float64 finite differences (first and second
// order), in every form of matmul, with broadcast batch dims, non-contiguous operands and edge
// sizes; their shape rules against core-runtime's results and their error messages.
#include <gtest/gtest.h>

#include "ember/autodiff/autodiff.h"
#include "ember/ops/matmul.h"
#include "expect_error.h"
#include "gradcheck.h"

namespace ad = ember::autodiff;
using ember::Shape;
using ember::Tensor;
using gradcheck::random;
using Vars = std::vector<ad::Variable>;

namespace {

void check_matmul(const Shape& a, const Shape& b) {
  SCOPED_TRACE(ember::shape_str(a) + " @ " + ember::shape_str(b));
  gradcheck::check_rule([](const Vars& v) { return ad::matmul(v[0], v[1]); },
                        {random(a, 1), random(b, 2)});
}

// The type a graph infers for matmul(a, b) is the type of core-runtime's result.
void expect_infer_matches(const Tensor& a, const Tensor& b) {
  ad::Graph g;
  ad::Val y = ad::matmul(g.input(ad::type_of(a)), g.input(ad::type_of(b)));
  EXPECT_EQ(y.type(), ad::type_of(ember::matmul(a, b)))
      << ember::shape_str(a.shape()) << " @ " << ember::shape_str(b.shape());
}

}  // namespace

TEST(MatmulGrad, VectorDotVector) { check_matmul({4}, {4}); }
TEST(MatmulGrad, VectorMatrix) { check_matmul({3}, {3, 4}); }
TEST(MatmulGrad, MatrixVector) { check_matmul({2, 3}, {3}); }
TEST(MatmulGrad, MatrixMatrix) { check_matmul({2, 3}, {3, 4}); }
TEST(MatmulGrad, BatchedBroadcastBothSides) { check_matmul({2, 1, 2, 3}, {3, 3, 4}); }
TEST(MatmulGrad, BatchedTimesMatrix) { check_matmul({2, 3, 2, 3}, {3, 4}); }
TEST(MatmulGrad, MatrixTimesBatched) { check_matmul({2, 3}, {2, 3, 4}); }
TEST(MatmulGrad, VectorTimesBatched) { check_matmul({3}, {2, 3, 4}); }
TEST(MatmulGrad, BatchedTimesVector) { check_matmul({2, 2, 3}, {3}); }
TEST(MatmulGrad, SizeOneBatchAndInnerDims) {
  check_matmul({1, 1, 1}, {1, 5});
  check_matmul({3, 1}, {2, 1, 1});
}

TEST(MatmulGrad, NonContiguousOperands) {
  // a: [2, 3] as a transposed view, b: [2, 3, 4] as a permuted view, c: a column of a matrix.
  Tensor a = random({3, 2}, 3).transpose(0, 1);
  Tensor b = random({4, 2, 3}, 4).permute({1, 2, 0});
  Tensor c = random({4, 3}, 5).transpose(0, 1).select(1, 2);  // [3], stride 4
  ASSERT_FALSE(a.is_contiguous());
  ASSERT_FALSE(b.is_contiguous());
  gradcheck::check_rule([](const Vars& v) { return ad::matmul(v[0], v[1]); }, {a, b});
  gradcheck::check_rule([](const Vars& v) { return ad::matmul(v[0], v[1]); }, {a, c});
}

TEST(MatmulGrad, OperandUsedTwice) {
  // x @ x^T @ x: the driver sums the gradients of the three uses.
  gradcheck::check_rule(
      [](const Vars& v) { return ad::matmul(ad::matmul(v[0], ad::transpose(v[0], 0, 1)), v[0]); },
      {random({3, 2}, 6)});
}

TEST(MatmulGrad, ZeroSizedRows) {
  ad::Variable a(random({0, 3}, 7), true), b(random({3, 2}, 8), true);
  ad::Variable y = ad::matmul(a, b);
  auto g = ad::grad({y}, {a, b}, {ad::Variable(ember::zeros({0, 2}, ember::DType::Float64))});
  EXPECT_EQ(g[0].shape(), (Shape{0, 3}));
  EXPECT_EQ(g[1].shape(), (Shape{3, 2}));
  EXPECT_EQ(ember::sum(ember::abs(g[1].data())).item<double>(), 0.0);
}

TEST(MatmulInfer, TypesMatchCoreRuntime) {
  const std::vector<std::pair<Shape, Shape>> cases = {{{4}, {4}},
                                                      {{3}, {3, 4}},
                                                      {{2, 3}, {3}},
                                                      {{2, 3}, {3, 4}},
                                                      {{2, 1, 2, 3}, {3, 3, 4}},
                                                      {{2, 2, 3}, {3, 4}},
                                                      {{3}, {2, 3, 4}},
                                                      {{2, 2, 3}, {3}}};
  for (const auto& [a, b] : cases) expect_infer_matches(random(a, 1), random(b, 2));
  // Integer operands keep their dtype.
  Tensor i = ember::ones({2, 2}, ember::DType::Int32);
  expect_infer_matches(i, i);
}

TEST(MatmulErrors, InnerDimMismatch) {
  ad::Graph g;
  ad::Val a = g.input({{2, 3}, ember::DType::Float32});
  ad::Val b = g.input({{4, 5}, ember::DType::Float32});
  const std::string msg = error_of<ember::ShapeError>([&] { ad::matmul(a, b); });
  EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a is f32[2,3], b is f32[4,5]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("a.shape[-1] (3) must equal b.shape[-2] (4)"), std::string::npos) << msg;
}

TEST(MatmulErrors, BatchDimsAndDtypesAndScalars) {
  ad::Graph g;
  ad::Val a = g.input({{2, 2, 3}, ember::DType::Float32});
  ad::Val b = g.input({{3, 3, 4}, ember::DType::Float32});
  ad::Val d = g.input({{3, 4}, ember::DType::Float64});
  ad::Val s = g.input({{}, ember::DType::Float32});
  EXPECT_NE(error_of<ember::ShapeError>([&] {
              ad::matmul(a, b);
            }).find("the batch dims [2] and [3] must broadcast"),
            std::string::npos);
  EXPECT_NE(error_of<ember::DTypeError>([&] { ad::matmul(a, d); }).find("one dtype"),
            std::string::npos);
  EXPECT_NE(error_of<ember::ShapeError>([&] { ad::matmul(s, a); }).find("at least 1 dim"),
            std::string::npos);
}

TEST(MatmulLinearGrad, ThreeDimInputWithBias) {
  gradcheck::check_rule([](const Vars& v) { return ad::linear(v[0], v[1], v[2]); },
                        {random({2, 3, 4}, 1), random({5, 4}, 2), random({5}, 3)});
}

TEST(MatmulLinearGrad, VectorInputWithoutBias) {
  gradcheck::check_rule([](const Vars& v) { return ad::linear(v[0], v[1]); },
                        {random({4}, 4), random({3, 4}, 5)});
}

TEST(MatmulLinearGrad, NonContiguousInputAndWeight) {
  Tensor x = random({4, 3}, 6).transpose(0, 1);  // [3, 4]
  Tensor w = random({4, 2}, 7).transpose(0, 1);  // [2, 4]
  gradcheck::check_rule([](const Vars& v) { return ad::linear(v[0], v[1], v[2]); },
                        {x, w, random({2}, 8)});
}

TEST(MatmulLinearGrad, MatchesMatmulPlusBias) {
  Tensor x = random({2, 3, 4}, 9), w = random({5, 4}, 10), b = random({5}, 11);
  Tensor want = ember::add(ember::matmul(x, w.transpose(0, 1)), b);
  Tensor got = ad::linear(ad::Variable(x), ad::Variable(w), ad::Variable(b)).data();
  EXPECT_LT(ember::amax(ember::abs(ember::sub(got, want))).item<double>(), 1e-12);
}

TEST(MatmulLinearInfer, TypesAndErrors) {
  ad::Graph g;
  ad::Val x = g.input({{2, 3, 4}, ember::DType::Float32});
  ad::Val w = g.input({{5, 4}, ember::DType::Float32});
  ad::Val b = g.input({{5}, ember::DType::Float32});
  EXPECT_EQ(ad::linear(x, w, b).shape(), (Shape{2, 3, 5}));
  ad::Val w_bad = g.input({{5, 3}, ember::DType::Float32});
  const std::string msg = error_of<ember::ShapeError>([&] { ad::linear(x, w_bad); });
  EXPECT_NE(msg.find("x.shape[-1] must equal weight.shape[1] (3)"), std::string::npos) << msg;
  ad::Val b_bad = g.input({{4}, ember::DType::Float32});
  EXPECT_NE(error_of<ember::ShapeError>([&] {
              ad::linear(x, w, b_bad);
            }).find("bias must be [5] (weight.shape[0])"),
            std::string::npos);
}
