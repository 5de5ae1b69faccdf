// test_unary_schema.cpp — every op of ember/ops/unary.def, as that file declares it: a reference
// computed here in double for each (a new line there without one fails the first test), its
// dtype rule, and its three spellings, name(x), name(x, out) and name_out(out, x), giving one
// result.
#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "test_util.h"

namespace ember {
namespace {

using test::elementwise_tol;
using test::expect_close;
using test::expect_error;
using test::map_ref;
using test::random_tensor;

class UnarySchema : public test::DeviceTest {};
EMBER_INSTANTIATE_DEVICE_TEST(UnarySchema);

struct Schema {
  std::function<Tensor(const Tensor&, OutArg)> op;
  std::function<const Tensor&(const Tensor&, const Tensor&)> op_out;
  UnaryDTypes dtypes;
};

// Every line of unary.def, by name.
std::map<std::string, Schema> schema() {
  std::map<std::string, Schema> ops;
#define EMBER_UNARY_OP(name, Formula, dtypes, cost, api, doc)             \
  ops[#name] = {[](const Tensor& x, OutArg out) { return name(x, out); }, \
                [](const Tensor& out, const Tensor& x) -> const Tensor& { \
                  return name##_out(out, x);                              \
                },                                                        \
                UnaryDTypes::dtypes};
#include "ember/ops/unary.def"
#undef EMBER_UNARY_OP
  return ops;
}

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }

struct Reference {
  std::function<double(double)> f;
  double lo, hi;  // the input range tested
};

// The reference of each op, in double.
const std::map<std::string, Reference>& references() {
  static const std::map<std::string, Reference> refs = {
      {"neg", {[](double x) { return -x; }, -3, 3}},
      {"abs", {[](double x) { return std::fabs(x); }, -3, 3}},
      {"sign", {[](double x) { return double((x > 0) - (x < 0)); }, -3, 3}},
      {"exp", {[](double x) { return std::exp(x); }, -3, 3}},
      {"expm1", {[](double x) { return std::expm1(x); }, -3, 3}},
      {"log", {[](double x) { return std::log(x); }, 0.1, 5}},
      {"log1p", {[](double x) { return std::log1p(x); }, -0.5, 3}},
      {"sqrt", {[](double x) { return std::sqrt(x); }, 0, 5}},
      {"rsqrt", {[](double x) { return 1 / std::sqrt(x); }, 0.2, 5}},
      {"sin", {[](double x) { return std::sin(x); }, -4, 4}},
      {"cos", {[](double x) { return std::cos(x); }, -4, 4}},
      {"tanh", {[](double x) { return std::tanh(x); }, -3, 3}},
      {"sigmoid", {sigmoid_ref, -6, 6}},
      {"erf", {[](double x) { return std::erf(x); }, -3, 3}},
      {"reciprocal", {[](double x) { return 1 / x; }, 0.3, 4}},
      {"floor", {[](double x) { return std::floor(x); }, -3, 3}},
      {"ceil", {[](double x) { return std::ceil(x); }, -3, 3}},
      {"round", {[](double x) { return std::nearbyint(x); }, -3, 3}},
      {"trunc", {[](double x) { return std::trunc(x); }, -3, 3}},
      {"relu", {[](double x) { return x > 0 ? x : 0.0; }, -3, 3}},
      {"silu", {[](double x) { return x * sigmoid_ref(x); }, -5, 5}},
  };
  return refs;
}

TEST_P(UnarySchema, EveryOpMatchesItsReferenceInEveryFloatingDtypeAndLayout) {
  for (const auto& [name, op] : schema()) {
    ASSERT_EQ(references().count(name), 1u) << name << " has no reference in this test";
    const Reference& ref = references().at(name);
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      const Tensor base = random_tensor({4, 10}, 7, dt, device(), ref.lo, ref.hi);
      // contiguous, transposed, stepped, 0-d, empty, odd length
      for (const Tensor& x :
           {base, base.t(), base.slice(1, 1, 10, 2), base.select(0, 1).select(0, 3),
            base.slice(1, 0, 0), base.reshape({40}).slice(0, 0, 37)}) {
        SCOPED_TRACE(name + " " + x.str() + (x.is_contiguous() ? "" : " strided"));
        const Tensor y = op.op(x, {});
        EXPECT_EQ(y.dtype(), dt);
        EXPECT_EQ(y.shape(), x.shape());
        // Rounding is exact; the others within the dtype's tolerance.
        expect_close(y, map_ref(x, ref.f), elementwise_tol(dt), elementwise_tol(dt));
      }
    }
  }
}

// expm1's point: e^x - 1 keeps its digits where exp(x) - 1 cancels.
TEST_P(UnarySchema, Expm1IsAccurateNearZero) {
  const std::vector<double> tiny = {1e-10, -1e-10, 1e-7, -3e-6, 0.0, 1e-300};
  const Tensor x = Tensor::from_vector(tiny, {6}).to(device(), DType::Float64);
  const std::vector<double> got = expm1(x).to_vector<double>();
  for (size_t i = 0; i < tiny.size(); ++i)
    EXPECT_NEAR(got[i], std::expm1(tiny[i]), 1e-15 * std::fabs(std::expm1(tiny[i])) + 1e-320);
  const Tensor f = Tensor::from_vector(tiny, {6}).to(device(), DType::Float32);
  const std::vector<double> got32 = expm1(f).to_vector<double>();
  for (size_t i = 0; i < tiny.size(); ++i) {
    const double want = std::expm1(double(float(tiny[i])));
    EXPECT_NEAR(got32[i], want, 3e-7 * std::fabs(want)) << "element " << i;
  }
}

TEST_P(UnarySchema, DTypeRules) {
  const Tensor ints = Tensor::from_vector<int64_t>({-2, 0, 3}, {3}).to(device());
  const Tensor bools = Tensor::from_vector<int64_t>({1, 0}, {2}).to(device(), DType::Bool);
  for (const auto& [name, op] : schema()) {
    SCOPED_TRACE(name);
    if (op.dtypes == UnaryDTypes::Numeric) {  // integers kept, bool refused
      EXPECT_EQ(op.op(ints, {}).dtype(), DType::Int64);
      expect_error<DTypeError>([&] { op.op(bools, {}); }, {name, "bool"});
    } else {  // integers and bool computed in float32
      EXPECT_EQ(op.op(ints, {}).dtype(), DType::Float32);
      EXPECT_EQ(op.op(bools, {}).dtype(), DType::Float32);
    }
  }
}

TEST_P(UnarySchema, TheOutArgumentAndTheOutFormWriteOneResult) {
  for (const auto& [name, op] : schema()) {
    SCOPED_TRACE(name);
    const Reference& ref = references().at(name);
    const Tensor x = random_tensor({3, 5}, 3, DType::Float32, device(), ref.lo, ref.hi);
    const Tensor want = op.op(x, {});
    // into a transposed view of a larger tensor: written through its strides, and returned
    const Tensor big = zeros({5, 4}, DType::Float32, device());
    const Tensor view = big.slice(1, 0, 3).t();
    const Tensor got = op.op(x, view);
    EXPECT_TRUE(got.shares_storage(big));
    expect_close(view, want.to_vector<double>(), 1e-6, 1e-6);  // strided: maybe not SIMD
    const Tensor other = zeros({3, 5}, DType::Float32, device());
    EXPECT_EQ(&op.op_out(other, x), &other);
    expect_close(other, want.to_vector<double>(), 1e-6, 1e-6);
    // out must have the result's exact shape and dtype
    expect_error<ShapeError>(
        [&] {
          op.op(x, zeros({5, 3}, DType::Float32, device()));
        },
        {name, "out"});
    expect_error<DTypeError>(
        [&] {
          op.op(x, zeros({3, 5}, DType::Float64, device()));
        },
        {name, "out"});
  }
}

}  // namespace
}  // namespace ember
