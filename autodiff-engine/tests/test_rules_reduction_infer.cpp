// The reduction family's shape/dtype rules: the types they infer equal what core-runtime returns,
// bad input is a typed error naming the op, and forward values against brute force.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "ember/autodiff/autodiff.h"
#include "ember/ops/reduction.h"
#include "gradcheck.h"

namespace ad = ember::autodiff;
using ember::DType;
using ember::Shape;
using ember::Tensor;
using Dims = std::vector<int64_t>;

namespace {

std::string types_str(const std::vector<ad::TensorType>& types) {
  std::string s;
  for (const ad::TensorType& t : types) s += t.str() + " ";
  return s;
}

// The op's infer rule against the types of what its run returns.
void expect_types_match(const std::string& op, const ad::Attrs& attrs, const Tensor& x) {
  const ad::OpDef& def = ad::op_def(op);
  std::vector<ad::TensorType> ran;
  for (const Tensor& t : def.run({x}, attrs)) ran.push_back(ad::type_of(t));
  EXPECT_EQ(types_str(def.infer({ad::type_of(x)}, attrs)), types_str(ran))
      << op << attrs.str() << " on " << ad::type_of(x).str();
}

Tensor of_dtype(const Shape& shape, DType dtype) {
  return gradcheck::random(shape, 7, -3.0, 3.0).to(dtype);
}

// The (shape, dims, keepdim) combinations every type test runs over.
struct Case {
  Shape shape;
  Dims dims;
  bool keepdim;
};
const std::vector<Case> kCases = {
    {{2, 3}, {}, false}, {{2, 3}, {1}, true}, {{2, 3, 4}, {0, -1}, false},
    {{}, {}, true},      {{}, {0}, false},    {{4, 1, 2}, {-2}, false}};

template <class F> void for_each_case(F f) {
  for (const Case& c : kCases) f(c, ad::Attrs{{"dims", c.dims}, {"keepdim", int64_t(c.keepdim)}});
}

// The error that building op(x) in a graph throws, as its message; "" when none.
template <class E, class F> std::string error_of(const ad::TensorType& x, F build) {
  ad::Graph g;
  ad::Val v = g.input(x);
  try {
    build(v);
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error of the expected type";
  return "";
}

}  // namespace

TEST(ReductionInfer, SumLikeTypesMatchCore) {
  for (DType dtype : {DType::Float64, DType::Float32, DType::Int32, DType::Int64, DType::Bool})
    for_each_case([&](const Case& c, const ad::Attrs& a) {
      for (const char* op : {"sum", "prod", "amax", "amin", "all", "any"})
        expect_types_match(op, a, of_dtype(c.shape, dtype));
    });
}

TEST(ReductionInfer, FloatingTypesMatchCore) {
  for (DType dtype : {DType::Float64, DType::Float32})
    for_each_case([&](const Case& c, ad::Attrs a) {
      for (const char* op : {"mean", "logsumexp"})
        expect_types_match(op, a, of_dtype(c.shape, dtype));
      a.set("correction", int64_t(0));
      for (const char* op : {"var", "std"}) expect_types_match(op, a, of_dtype(c.shape, dtype));
      for (double p : {2.0, 0.5, std::numeric_limits<double>::infinity()}) {
        a.set("p", p);
        expect_types_match("norm", a, of_dtype(c.shape, dtype));
      }
    });
}

TEST(ReductionInfer, IndexTypesMatchCore) {
  for (DType dtype : {DType::Float64, DType::Int32}) {
    for (const Shape& shape : {Shape{2, 3}, Shape{}, Shape{3, 1, 2}}) {
      for (int64_t keepdim : {0, 1}) {
        const Tensor x = of_dtype(shape, dtype);
        for (const char* op : {"max_dim", "min_dim", "argmax", "argmin"})
          expect_types_match(op, {{"dim", int64_t(-1)}, {"keepdim", keepdim}}, x);
        for (const char* op : {"argmax", "argmin"})
          expect_types_match(op, {{"keepdim", keepdim}}, x);
      }
    }
  }
}

TEST(ReductionInfer, EmptyDimsWhereCoreAllows) {
  const Tensor x = of_dtype({0, 3}, DType::Float64);
  for (const char* op : {"sum", "prod", "mean", "logsumexp", "all", "any"})
    for (const Dims& dims : {Dims{0}, Dims{1}, Dims{}})
      expect_types_match(op, {{"dims", dims}, {"keepdim", int64_t(0)}}, x);
  // amax of the empty dim is an error, but of the non-empty one an empty result.
  expect_types_match("amax", {{"dims", Dims{1}}, {"keepdim", int64_t(1)}}, x);
}

TEST(ReductionInfer, IntegerSumAndProdAreInt64InEagerMode) {
  ad::Variable x(Tensor::from_vector<int32_t>({1, 2, 3, 4}, {2, 2}));
  ad::Variable s = ad::sum(x, {1}), p = ad::prod(x);
  EXPECT_EQ(s.dtype(), DType::Int64);
  EXPECT_EQ(s.data().to_vector<int64_t>(), (std::vector<int64_t>{3, 7}));
  EXPECT_EQ(p.dtype(), DType::Int64);
  EXPECT_EQ(p.data().item<int64_t>(), 24);
}

TEST(ReductionInfer, DimOutOfRangeIsIndexErrorNamingTheOp) {
  const ad::TensorType x{{2, 3}, DType::Float64, {}};
  std::string msg = error_of<ember::IndexError>(x, [](ad::Val v) { ad::amax(v, {2}); });
  EXPECT_NE(msg.find("amax"), std::string::npos) << msg;
  EXPECT_NE(msg.find("f64[2,3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected a dim in [-2, 1]"), std::string::npos) << msg;
  msg = error_of<ember::IndexError>(x, [](ad::Val v) { ad::max(v, -3); });
  EXPECT_NE(msg.find("max_dim"), std::string::npos) << msg;
  msg = error_of<ember::IndexError>(x, [](ad::Val v) { ad::var(v, {0, 5}); });
  EXPECT_NE(msg.find("var"), std::string::npos) << msg;
  msg = error_of<ember::IndexError>(x, [](ad::Val v) { ad::argmin(v, 2); });
  EXPECT_NE(msg.find("argmin"), std::string::npos) << msg;
  // A 0-d x has one implicit dim: 0 and -1 reduce it, 1 does not.
  msg = error_of<ember::IndexError>({{}, DType::Float64, {}}, [](ad::Val v) { ad::sum(v, {1}); });
  EXPECT_NE(msg.find("sum"), std::string::npos) << msg;
}

TEST(ReductionInfer, RepeatedDimIsValueError) {
  const std::string msg = error_of<ember::ValueError>({{2, 3}, DType::Float64, {}}, [](ad::Val v) {
    ad::mean(v, {1, -1});
  });
  EXPECT_NE(msg.find("mean"), std::string::npos) << msg;
  EXPECT_NE(msg.find("appears more than once"), std::string::npos) << msg;
}

TEST(ReductionInfer, IntegerInputToFloatingReductionIsDTypeError) {
  const ad::TensorType x{{2, 3}, DType::Int32, {}};
  for (auto build : {+[](ad::Val v) { ad::mean(v); }, +[](ad::Val v) { ad::std(v); },
                     +[](ad::Val v) { ad::logsumexp(v); }, +[](ad::Val v) { ad::norm(v); }}) {
    const std::string msg = error_of<ember::DTypeError>(x, build);
    EXPECT_NE(msg.find("i32[2,3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected a floating dtype"), std::string::npos) << msg;
  }
}

TEST(ReductionInfer, ExtremeOfNothingIsValueError) {
  const ad::TensorType x{{2, 0}, DType::Float64, {}};
  std::string msg = error_of<ember::ValueError>(x, [](ad::Val v) { ad::amin(v, {1}); });
  EXPECT_NE(msg.find("amin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("hold no elements"), std::string::npos) << msg;
  msg = error_of<ember::ValueError>(x, [](ad::Val v) { ad::max(v, 1); });
  EXPECT_NE(msg.find("max_dim"), std::string::npos) << msg;
  msg = error_of<ember::ValueError>(x, [](ad::Val v) { ad::argmax(v); });
  EXPECT_NE(msg.find("argmax"), std::string::npos) << msg;
  msg = error_of<ember::ValueError>(x, [](ad::Val v) {
    ad::norm(v, std::numeric_limits<double>::infinity());
  });
  EXPECT_NE(msg.find("norm"), std::string::npos) << msg;
}

TEST(ReductionInfer, NormOfNaNPowerIsValueError) {
  const std::string msg = error_of<ember::ValueError>({{3}, DType::Float64, {}},
                                                      [](ad::Val v) { ad::norm(v, std::nan("")); });
  EXPECT_NE(msg.find("norm"), std::string::npos) << msg;
  EXPECT_NE(msg.find("NaN"), std::string::npos) << msg;
}

TEST(ReductionInfer, ExpandAndSumToRejectShapesThatDoNotBroadcast) {
  const ad::TensorType x{{2, 3}, DType::Float64, {}};
  std::string msg = error_of<ember::ShapeError>(x, [](ad::Val v) { ad::expand(v, {4, 3}); });
  EXPECT_NE(msg.find("expand"), std::string::npos) << msg;
  msg = error_of<ember::ShapeError>(x, [](ad::Val v) { ad::sum_to(v, {2, 2}); });
  EXPECT_NE(msg.find("sum_to"), std::string::npos) << msg;
}

TEST(ReductionInfer, SumToKeepsIntegerDtype) {
  const Tensor x = Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_types_match("sum_to", {{"shape", Shape{1, 3}}}, x);
  const Tensor s = ad::op_def("sum_to").run({x}, {{"shape", Shape{3}}})[0];
  EXPECT_EQ(s.to_vector<int32_t>(), (std::vector<int32_t>{5, 7, 9}));
}

TEST(ReductionForward, ArgAndLogicalAgainstBruteForce) {
  // x: [2, 3], row-major: the flattened argmax is 4 (the 9), the argmin 2 (the -4).
  ad::Variable x(Tensor::from_vector<double>({1, 5, -4, 0, 9, 9}, {2, 3}));
  EXPECT_EQ(ad::argmax(x).data().item<int64_t>(), 4);
  EXPECT_EQ(ad::argmin(x).data().item<int64_t>(), 2);
  EXPECT_EQ(ad::argmax(x, 1).data().to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(ad::argmax(x, {}, true).shape(), (Shape{1, 1}));
  auto [values, indices] = ad::min(x, 0, true);
  EXPECT_EQ(values.data().to_vector<double>(), (std::vector<double>{0, 5, -4}));
  EXPECT_EQ(indices.data().to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0}));
  EXPECT_EQ(indices.dtype(), DType::Int64);
  auto as_ints = [](const ad::Variable& b) {
    return b.data().to(DType::Int64).to_vector<int64_t>();
  };
  EXPECT_EQ(as_ints(ad::all(x, {1})), (std::vector<int64_t>{1, 0}));  // row 1 holds a 0
  EXPECT_EQ(as_ints(ad::any(x, {0})), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(ad::all(x).dtype(), DType::Bool);
}

TEST(ReductionForward, OpsWithoutGradientHaveNoRule) {
  for (const char* op : {"all", "any", "argmax", "argmin"})
    EXPECT_EQ(ad::op_def(op).grad, nullptr) << op;
  // Their results stop gradients: an argmax of a Variable that requires grad records nothing.
  ad::Variable x(gradcheck::random({3, 4}, 1), true);
  EXPECT_FALSE(ad::argmax(x, 1).requires_grad());
  EXPECT_FALSE(ad::any(x).requires_grad());
  EXPECT_FALSE(ad::max(x, 1).second.requires_grad());
  EXPECT_TRUE(ad::max(x, 1).first.requires_grad());
}
