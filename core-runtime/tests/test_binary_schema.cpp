// test_binary_schema.cpp — every op of ember/ops/binary.def, as that file declares it: a reference
// computed here in double for each (a new line there without one fails the first test), checked
// in every dtype its rule admits on broadcast and non-contiguous operands; its dtype rule; its
// spellings name(a, b) and name_out(out, a, b), and the scalar forms its scalar column promises.
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
using test::random_values;

class BinarySchema : public test::DeviceTest {};
EMBER_INSTANTIATE_DEVICE_TEST(BinarySchema);

using TensorOp = std::function<Tensor(const Tensor&, const Tensor&)>;
using ScalarOp = std::function<Tensor(const Tensor&, double)>;

struct Schema {
  TensorOp op;
  std::function<const Tensor&(const Tensor&, const Tensor&, const Tensor&)> op_out;
  BinaryDTypes dtypes;
  ScalarOp right;  // name(a, s), where the scalar column gives it
  ScalarOp left;   // name(s, a), as the above, with s first
};

// The scalar forms of a line, as its scalar column declares them.
#define EMBER_TEST_RIGHT(name) [](const Tensor& a, double s) { return name(a, s); }
#define EMBER_TEST_LEFT(name) [](const Tensor& a, double s) { return name(s, a); }
#define EMBER_TEST_SCALAR_None(name) ScalarOp(), ScalarOp()
#define EMBER_TEST_SCALAR_Right(name) EMBER_TEST_RIGHT(name), ScalarOp()
#define EMBER_TEST_SCALAR_Both(name) EMBER_TEST_RIGHT(name), EMBER_TEST_LEFT(name)

// Every line of binary.def, by name.
std::map<std::string, Schema> schema() {
  std::map<std::string, Schema> ops;
#define EMBER_BINARY_OP(name, Formula, dtypes, scalar, api, doc)                           \
  ops[#name] = {[](const Tensor& a, const Tensor& b) { return name(a, b); },               \
                [](const Tensor& out, const Tensor& a, const Tensor& b) -> const Tensor& { \
                  return name##_out(out, a, b);                                            \
                },                                                                         \
                BinaryDTypes::dtypes, EMBER_TEST_SCALAR_##scalar(name)};
#include "ember/ops/binary.def"
#undef EMBER_BINARY_OP
  return ops;
}

struct Reference {
  std::function<double(double, double)> f;
  double a_lo, a_hi, b_lo, b_hi;  // the operands' ranges tested
  double step;                    // values on a grid of this step (0: any), so that ties occur
};

double floor_div(double a, double b) { return std::floor(a / b); }
bool truth(double x) { return x != 0; }  // NaN is true

// The reference of each op, in double. The divisors of floor_divide, remainder and fmod stay away
// from 0 (integer division by zero is a convention, tested in test_elementwise.cpp).
const std::map<std::string, Reference>& references() {
  static const std::map<std::string, Reference> refs = {
      {"add", {[](double a, double b) { return a + b; }, -3, 3, -3, 3, 0}},
      {"sub", {[](double a, double b) { return a - b; }, -3, 3, -3, 3, 0}},
      {"mul", {[](double a, double b) { return a * b; }, -3, 3, -3, 3, 0}},
      {"div", {[](double a, double b) { return a / b; }, -3, 3, 1, 4, 0}},
      {"pow", {[](double a, double b) { return std::pow(a, b); }, 0.5, 3, 0, 4, 0}},
      {"maximum", {[](double a, double b) { return std::fmax(a, b); }, -2, 2, -2, 2, 0.5}},
      {"minimum", {[](double a, double b) { return std::fmin(a, b); }, -2, 2, -2, 2, 0.5}},
      {"floor_divide", {floor_div, -7, 7, 1, 4, 0.25}},
      {"remainder",
       {[](double a, double b) { return a - b * floor_div(a, b); }, -7, 7, 1, 4, 0.25}},
      {"fmod", {[](double a, double b) { return std::fmod(a, b); }, -7, 7, 1, 4, 0.25}},
      {"atan2", {[](double a, double b) { return std::atan2(a, b); }, -3, 3, -3, 3, 0}},
      {"hypot", {[](double a, double b) { return std::hypot(a, b); }, -3, 3, -3, 3, 0}},
      {"bitwise_and",
       {[](double a, double b) { return double(int64_t(a) & int64_t(b)); }, -9, 9, -9, 9, 1}},
      {"bitwise_or",
       {[](double a, double b) { return double(int64_t(a) | int64_t(b)); }, -9, 9, -9, 9, 1}},
      {"bitwise_xor",
       {[](double a, double b) { return double(int64_t(a) ^ int64_t(b)); }, -9, 9, -9, 9, 1}},
      {"eq", {[](double a, double b) { return double(a == b); }, -2, 2, -2, 2, 1}},
      {"ne", {[](double a, double b) { return double(a != b); }, -2, 2, -2, 2, 1}},
      {"lt", {[](double a, double b) { return double(a < b); }, -2, 2, -2, 2, 1}},
      {"le", {[](double a, double b) { return double(a <= b); }, -2, 2, -2, 2, 1}},
      {"gt", {[](double a, double b) { return double(a > b); }, -2, 2, -2, 2, 1}},
      {"ge", {[](double a, double b) { return double(a >= b); }, -2, 2, -2, 2, 1}},
      {"logical_and",
       {[](double a, double b) { return double(truth(a) && truth(b)); }, -1, 1, -1, 1, 1}},
      {"logical_or",
       {[](double a, double b) { return double(truth(a) || truth(b)); }, -1, 1, -1, 1, 1}},
      {"logical_xor",
       {[](double a, double b) { return double(truth(a) != truth(b)); }, -1, 1, -1, 1, 1}},
  };
  return refs;
}

// A tensor of `shape` with values in [lo, hi] on the grid of `step`, made in float64 and cast.
Tensor operand(const Shape& shape, uint32_t seed, double lo, double hi, double step, DType dtype,
               Device device) {
  std::vector<double> v = random_values(shape_numel(shape), seed, lo, hi);
  if (step > 0)
    for (double& x : v) x = std::round(x / step) * step;
  return Tensor::from_vector(v, shape).to(device, dtype);
}

// The dtypes a rule is checked in: every one it admits among these.
std::vector<DType> dtypes_of(BinaryDTypes rule) {
  if (rule == BinaryDTypes::Integral) return {DType::Int32, DType::Int64, DType::UInt8};
  return {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int64};
}

// The result dtype of operands of dtype t under each rule.
DType expected_dtype(BinaryDTypes rule, DType t) {
  if (rule == BinaryDTypes::Bool) return DType::Bool;
  if (rule == BinaryDTypes::Floating && !is_floating(t)) return DType::Float32;
  return t;
}

// f of a and b broadcast to `shape`, element by element in double.
std::vector<double> reference(const Reference& ref, const Tensor& a, const Tensor& b,
                              const Shape& shape) {
  const std::vector<double> x = a.expand(shape).contiguous().to_vector<double>();
  const std::vector<double> y = b.expand(shape).contiguous().to_vector<double>();
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = ref.f(x[i], y[i]);
  return out;
}

TEST_P(BinarySchema, EveryOpMatchesItsReferenceOnBroadcastAndStridedOperands) {
  for (const auto& [name, op] : schema()) {
    ASSERT_EQ(references().count(name), 1u) << name << " has no reference in this test";
    const Reference& r = references().at(name);
    // Unsigned operands stay non-negative.
    for (DType dt : dtypes_of(op.dtypes)) {
      const double a_lo = dt == DType::UInt8 ? 0 : r.a_lo, b_lo = dt == DType::UInt8 ? 0 : r.b_lo;
      const Tensor a = operand({4, 10}, 11, a_lo, r.a_hi, r.step, dt, device());
      const Tensor b = operand({4, 10}, 12, b_lo, r.b_hi, r.step, dt, device());
      const Tensor row = operand({10}, 13, b_lo, r.b_hi, r.step, dt, device());
      const Tensor col = operand({4, 1}, 14, b_lo, r.b_hi, r.step, dt, device());
      const Tensor scalar = operand({}, 15, b_lo, r.b_hi, r.step, dt, device());
      // same shape; a transposed beside a broadcast column; a step-sliced beside a row; b
      // broadcast both ways; a 0-d operand; an expanded view; empty operands
      const std::vector<std::pair<Tensor, Tensor>> cases = {
          {a, b},
          {a.t(), col.reshape({4}).unsqueeze(0).expand({10, 4})},
          {a.slice(1, 1, 10, 2), row.slice(0, 0, 5)},
          {col, row},
          {a, scalar},
          {scalar, b.t()},
          {row.unsqueeze(0).expand({3, 10}), b.slice(0, 1, 4)},
          {a.slice(1, 0, 0), col},
      };
      for (const auto& [x, y] : cases) {
        SCOPED_TRACE(name + " " + x.str() + (x.is_contiguous() ? "" : " strided") + ", " + y.str() +
                     (y.is_contiguous() ? "" : " strided"));
        const Tensor z = op.op(x, y);
        const Shape shape = broadcast_shapes(x.shape(), y.shape(), name.c_str());
        EXPECT_EQ(z.shape(), shape);
        EXPECT_EQ(z.dtype(), expected_dtype(op.dtypes, dt));
        // Floating results within the result dtype's tolerance; the others exact.
        const double tol = is_floating(z.dtype()) ? elementwise_tol(z.dtype()) : 0.0;
        expect_close(z, reference(r, x, y, shape), tol, tol);
      }
    }
  }
}

TEST_P(BinarySchema, DTypeRules) {
  const Tensor ints = Tensor::from_vector<int64_t>({-2, 0, 3}, {3}).to(device(), DType::Int32);
  const Tensor halves = Tensor::from_vector<double>({1, 2, 3}, {3}).to(device(), DType::Float16);
  const Tensor bools = Tensor::from_vector<int64_t>({1, 0, 1}, {3}).to(device(), DType::Bool);
  for (const auto& [name, op] : schema()) {
    SCOPED_TRACE(name);
    switch (op.dtypes) {
      case BinaryDTypes::Promoted:  // int32 with float16 gives float16; bools stay bool
        EXPECT_EQ(op.op(ints, halves).dtype(), DType::Float16);
        EXPECT_EQ(op.op(bools, bools).dtype(), DType::Bool);
        break;
      case BinaryDTypes::Numeric:  // as Promoted, but two bools are refused
        EXPECT_EQ(op.op(ints, halves).dtype(), DType::Float16);
        EXPECT_EQ(op.op(bools, ints).dtype(), DType::Int32);
        expect_error<DTypeError>([&] { op.op(bools, bools); }, {name, "bool"});
        break;
      case BinaryDTypes::Floating:  // integers and bools computed in float32
        EXPECT_EQ(op.op(ints, ints).dtype(), DType::Float32);
        EXPECT_EQ(op.op(bools, bools).dtype(), DType::Float32);
        EXPECT_EQ(op.op(ints, halves).dtype(), DType::Float16);
        break;
      case BinaryDTypes::Integral:  // integers and bools; a floating operand refused
        EXPECT_EQ(op.op(ints, bools).dtype(), DType::Int32);
        EXPECT_EQ(op.op(bools, bools).dtype(), DType::Bool);
        expect_error<DTypeError>([&] { op.op(ints, halves); }, {name, "integer or bool"});
        break;
      case BinaryDTypes::Bool:  // bool out, whatever the operands
        EXPECT_EQ(op.op(ints, halves).dtype(), DType::Bool);
        EXPECT_EQ(op.op(bools, bools).dtype(), DType::Bool);
        break;
    }
  }
}

TEST_P(BinarySchema, TheOutFormWritesTheResultThroughItsStrides) {
  for (const auto& [name, op] : schema()) {
    SCOPED_TRACE(name);
    const Reference& r = references().at(name);
    const DType dt = dtypes_of(op.dtypes).front();
    const Tensor a = operand({3, 5}, 21, r.a_lo, r.a_hi, r.step, dt, device());
    const Tensor b = operand({5}, 22, r.b_lo, r.b_hi, r.step, dt, device());
    const Tensor want = op.op(a, b);
    // into a transposed view of a larger tensor: written through its strides, and returned
    const Tensor big = zeros({5, 4}, want.dtype(), device());
    const Tensor view = big.slice(1, 0, 3).t();
    EXPECT_EQ(&op.op_out(view, a, b), &view);
    expect_close(view, want.to_vector<double>(), 0, 0);
    // out must have the result's exact shape and dtype
    expect_error<ShapeError>(
        [&] {
          op.op_out(zeros({5, 3}, want.dtype(), device()), a, b);
        },
        {name, "out"});
    const DType wrong = want.dtype() == DType::Int64 ? DType::Int32 : DType::Int64;
    expect_error<DTypeError>(
        [&] {
          op.op_out(zeros({3, 5}, wrong, device()), a, b);
        },
        {name, "out"});
  }
}

// A scalar form is the op with the scalar as a 0-d tensor of the scalar rule's dtype.
TEST_P(BinarySchema, TheScalarFormsAreTheOpWithA0dOperand) {
  for (const auto& [name, op] : schema()) {
    SCOPED_TRACE(name);
    const Reference& r = references().at(name);
    const DType dt = dtypes_of(op.dtypes).front();
    const Tensor a = operand({2, 3}, 31, r.b_lo, r.b_hi, r.step, dt, device()).t();
    const double s = std::round(r.b_hi) == 0 ? 1 : std::round(r.b_hi);
    const Tensor s_tensor = full({}, s, dt, device());
    if (op.right) expect_close(op.right(a, s), op.op(a, s_tensor).to_vector<double>(), 0, 0);
    if (op.left) expect_close(op.left(a, s), op.op(s_tensor, a).to_vector<double>(), 0, 0);
  }
}

}  // namespace
}  // namespace ember
