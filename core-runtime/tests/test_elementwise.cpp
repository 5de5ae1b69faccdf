// test_elementwise.cpp — unary ops, activations and their backward, binary arithmetic,
// comparisons, in-place ops, where and clamp, against references computed here in double.
#include <cmath>
#include <functional>
#include <limits>

#include "test_util.h"

namespace ember {
namespace {

using test::elementwise_tol;
using test::expect_close;
using test::expect_error;
using test::expect_exact;
using test::map_ref;
using test::random_tensor;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

class Elementwise : public test::DeviceTest {};
EMBER_INSTANTIATE_DEVICE_TEST(Elementwise);

// f(a, b) elementwise over a and b broadcast to `shape`.
std::vector<double> zip_ref(const Tensor& a, const Tensor& b, const Shape& shape,
                            const std::function<double(double, double)>& f) {
  std::vector<double> va = a.expand(shape).to_vector<double>();
  std::vector<double> vb = b.expand(shape).to_vector<double>();
  for (size_t i = 0; i < va.size(); ++i) va[i] = f(va[i], vb[i]);
  return va;
}

// Three layouts of the same-shaped [4, 5] input: contiguous, transposed, stepped slice.
std::vector<Tensor> layouts(uint32_t seed, DType dtype, Device device, double lo, double hi) {
  return {random_tensor({4, 5}, seed, dtype, device, lo, hi),
          random_tensor({5, 4}, seed + 1, dtype, device, lo, hi).t(),
          random_tensor({4, 10}, seed + 2, dtype, device, lo, hi).slice(1, 1, 10, 2)};
}

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double gelu_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_ref(double x) {
  double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}
double softplus_ref(double x, double beta, double threshold) {
  return beta * x > threshold ? x : std::log(1.0 + std::exp(beta * x)) / beta;
}

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  double lo, hi;  // input range
};

std::vector<UnaryCase> unary_cases() {
  return {
      {"neg", [](const Tensor& x) { return neg(x); }, [](double x) { return -x; }, -3, 3},
      {"abs", [](const Tensor& x) { return abs(x); }, [](double x) { return std::fabs(x); }, -3, 3},
      {"sign", [](const Tensor& x) { return sign(x); },
       [](double x) { return double((x > 0) - (x < 0)); }, -3, 3},
      {"exp", [](const Tensor& x) { return exp(x); }, [](double x) { return std::exp(x); }, -3, 3},
      {"log", [](const Tensor& x) { return log(x); }, [](double x) { return std::log(x); }, 0.1, 5},
      {"log1p", [](const Tensor& x) { return log1p(x); }, [](double x) { return std::log1p(x); },
       -0.5, 3},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); }, 0,
       5},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); },
       0.2, 5},
      {"sin", [](const Tensor& x) { return sin(x); }, [](double x) { return std::sin(x); }, -4, 4},
      {"cos", [](const Tensor& x) { return cos(x); }, [](double x) { return std::cos(x); }, -4, 4},
      {"tanh", [](const Tensor& x) { return tanh(x); }, [](double x) { return std::tanh(x); }, -3,
       3},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, sigmoid_ref, -6, 6},
      {"relu", [](const Tensor& x) { return relu(x); }, [](double x) { return x > 0 ? x : 0.0; },
       -3, 3},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.2); },
       [](double x) { return x > 0 ? x : 0.2 * x; }, -3, 3},
      {"elu", [](const Tensor& x) { return elu(x, 1.5); },
       [](double x) { return x > 0 ? x : 1.5 * (std::exp(x) - 1); }, -3, 3},
      {"gelu", [](const Tensor& x) { return gelu(x); }, gelu_ref, -4, 4},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); }, gelu_tanh_ref, -4, 4},
      {"silu", [](const Tensor& x) { return silu(x); }, [](double x) { return x * sigmoid_ref(x); },
       -5, 5},
      {"softplus", [](const Tensor& x) { return softplus(x, 2.0, 3.0); },
       [](double x) { return softplus_ref(x, 2.0, 3.0); }, -4, 4},
  };
}

TEST_P(Elementwise, UnaryOpsMatchReferenceOnEveryLayoutAndFloatingDtype) {
  for (const UnaryCase& c : unary_cases()) {
    for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      for (const Tensor& x : layouts(11, dt, device(), c.lo, c.hi)) {
        SCOPED_TRACE(std::string(c.name) + " " + x.str() + (x.is_contiguous() ? "" : " strided"));
        Tensor y = c.op(x);
        EXPECT_EQ(y.dtype(), dt);
        EXPECT_EQ(y.shape(), x.shape());
        EXPECT_EQ(y.device(), device());
        expect_close(y, map_ref(x, c.ref), elementwise_tol(dt), elementwise_tol(dt));
      }
    }
  }
}

// The float32 formulas over exp, log, tanh, erf and sigmoid (vectorised on the CPU) on a long
// run of odd length (vector tails), contiguous and strided, over a wide range of inputs with
// +-inf, NaN, zeros and subnormals among them: within a few float ulps of the double result.
TEST_P(Elementwise, TranscendentalFloatOpsOnLongRunsAndSpecialValues) {
  std::vector<double> values = test::random_values(1031, 21, -12, 12);
  const double specials[] = {0.0,   -0.0,   kInf,     -kInf,     kNaN, 1e-40, -1e-40, 1e-30,
                             0.625, -0.625, 0.921875, -0.921875, 4.0,  -4.0,  95.0,   -95.0};
  for (size_t i = 0; i < std::size(specials); ++i) values[i * 61] = specials[i];
  const Tensor flat = Tensor::from_vector(values, {1031}).to(device(), DType::Float32);
  std::vector<UnaryCase> ops = {
      {"erf", [](const Tensor& x) { return erf(x); }, [](double x) { return std::erf(x); }, 0, 0}};
  for (const UnaryCase& c : unary_cases()) {
    for (const char* name : {"exp", "log", "tanh", "sigmoid", "gelu", "gelu_tanh", "silu"})
      if (std::string(c.name) == name) ops.push_back(c);
  }
  for (const UnaryCase& c : ops) {
    for (const Tensor& x : {flat, flat.slice(0, 1, 1031, 3), abs(flat)}) {  // abs: log's domain
      SCOPED_TRACE(std::string(c.name) + (x.is_contiguous() ? "" : " strided"));
      const std::vector<double> got = c.op(x).to_vector<double>(), want = map_ref(x, c.ref);
      for (size_t i = 0; i < got.size(); ++i) {
        const double rounded = double(float(want[i]));  // inf where float overflows
        if (std::isnan(rounded)) {
          EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
        } else if (std::isinf(rounded)) {
          EXPECT_EQ(got[i], rounded) << "element " << i;
        } else {  // 4 ulps, and an absolute part for the formulas that cancel (gelu's 1 + erf)
          EXPECT_NEAR(got[i], want[i], 1e-6 + 4.8e-7 * std::fabs(want[i])) << "element " << i;
        }
      }
    }
  }
}

TEST_P(Elementwise, UnaryOpsOnExpandedInputAndSizeOneDims) {
  Tensor row = random_tensor({1, 3}, 5, DType::Float32, device(), -2, 2);
  Tensor x = row.expand({4, 3});  // stride 0 in dim 0
  expect_close(exp(x), map_ref(x, [](double v) { return std::exp(v); }), 1e-6, 1e-6);
  Tensor y = random_tensor({1, 1, 5}, 6, DType::Float64, device());
  expect_close(tanh(y), map_ref(y, [](double v) { return std::tanh(v); }), 1e-12, 1e-12);
}

TEST_P(Elementwise, IntegerInputsKeepDtypeForSignOpsAndPromoteForMath) {
  Tensor x = Tensor::from_vector<int64_t>({-3, 0, 2, -1}, {4}, device());
  Tensor n = neg(x), a = abs(x), s = sign(x), r = relu(x);
  for (const Tensor& t : {n, a, s, r}) EXPECT_EQ(t.dtype(), DType::Int64);
  EXPECT_EQ(n.to_vector<int64_t>(), (std::vector<int64_t>{3, 0, -2, 1}));
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{3, 0, 2, 1}));
  EXPECT_EQ(s.to_vector<int64_t>(), (std::vector<int64_t>{-1, 0, 1, -1}));
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 2, 0}));
  Tensor u8 = Tensor::from_vector<uint8_t>({0, 1, 200}, {3}, device());
  EXPECT_EQ(neg(u8).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 255, 56}));  // wraps
  EXPECT_EQ(sign(u8).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 1}));
  Tensor i8 = Tensor::from_vector<int8_t>({-5, 7}, {2}, device());
  EXPECT_EQ(abs(i8).to_vector<int8_t>(), (std::vector<int8_t>{5, 7}));

  Tensor e = exp(x);
  EXPECT_EQ(e.dtype(), DType::Float32);
  expect_close(e, {std::exp(-3.0), 1, std::exp(2.0), std::exp(-1.0)}, 1e-6, 1e-6);
  Tensor b = Tensor::from_vector<bool>({true, false}, {2}, device());
  EXPECT_EQ(sigmoid(b).dtype(), DType::Float32);
  expect_close(sigmoid(b), {sigmoid_ref(1), 0.5}, 1e-6, 1e-6);
  expect_error<DTypeError>([&] { neg(b); }, {"neg", "x is [2] bool", "numeric"});
}

TEST_P(Elementwise, SpecialValues) {
  Tensor x = Tensor::from_vector<double>({kNaN, -kInf, kInf, -0.0, 0.0}, {5}, device());
  expect_exact(relu(x), {kNaN, 0, kInf, 0, 0});
  expect_exact(sign(x), {kNaN, -1, 1, 0, 0});
  expect_exact(sigmoid(x), {kNaN, 0, 1, 0.5, 0.5});
  expect_exact(exp(x), {kNaN, 0, kInf, 1, 1});
  Tensor big = Tensor::from_vector<float>({-100.f, 100.f}, {2}, device());
  expect_close(softplus(big), {0, 100}, 1e-6, 1e-6);  // threshold keeps exp from overflowing
  expect_exact(log(Tensor::from_vector<float>({0.f, -1.f}, {2}, device())), {-kInf, kNaN});
}

TEST_P(Elementwise, ActivationArgumentErrors) {
  Tensor x = random_tensor({2, 3}, 1, DType::Float32, device());
  expect_error<ValueError>([&] { gelu(x, "fast"); }, {"gelu", "\"fast\"", "\"tanh\""});
  expect_error<ValueError>([&] { gelu_backward(x, x, "erf"); }, {"gelu_backward", "\"erf\""});
  expect_error<ValueError>([&] { exp(Tensor()); }, {"exp", "undefined"});
}

// ---- backward ----

struct BackwardCase {
  const char* name;
  std::function<Tensor(const Tensor&)> forward;
  std::function<Tensor(const Tensor&, const Tensor&)> backward;  // (grad, x)
  bool from_output;  // backward takes y = forward(x) instead of x
};

std::vector<BackwardCase> backward_cases() {
  return {
      {"relu", [](const Tensor& x) { return relu(x); }, relu_backward, false},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x, 0.1); },
       [](const Tensor& g, const Tensor& x) { return leaky_relu_backward(g, x, 0.1); }, false},
      {"elu", [](const Tensor& x) { return elu(x, 0.7); },
       [](const Tensor& g, const Tensor& x) { return elu_backward(g, x, 0.7); }, false},
      {"gelu", [](const Tensor& x) { return gelu(x); },
       [](const Tensor& g, const Tensor& x) { return gelu_backward(g, x); }, false},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, "tanh"); },
       [](const Tensor& g, const Tensor& x) { return gelu_backward(g, x, "tanh"); }, false},
      {"silu", [](const Tensor& x) { return silu(x); }, silu_backward, false},
      {"softplus", [](const Tensor& x) { return softplus(x, 1.5, 2.0); },
       [](const Tensor& g, const Tensor& x) { return softplus_backward(g, x, 1.5, 2.0); }, false},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, sigmoid_backward, true},
      {"tanh", [](const Tensor& x) { return tanh(x); }, tanh_backward, true},
  };
}

TEST_P(Elementwise, BackwardMatchesFiniteDifferencesInFloat64) {
  const double h = 1e-6;
  for (const BackwardCase& c : backward_cases()) {
    SCOPED_TRACE(c.name);
    // x avoids the kinks: values in +-[0.05, 2.5] (softplus switches at beta x = 2, x = 4/3).
    std::vector<double> xs = test::random_values(30, 3, 0.05, 2.5);
    for (size_t i = 0; i < xs.size(); i += 2) xs[i] = -xs[i];
    Tensor x = Tensor::from_vector(xs, {5, 6}, device());
    Tensor g = random_tensor({6, 5}, 4, DType::Float64, device()).t();  // non-contiguous grad
    Tensor fd = (c.forward(x + h) - c.forward(x - h)) / (2 * h);
    Tensor expected = g * fd;
    Tensor got = c.backward(g, c.from_output ? c.forward(x) : x);
    EXPECT_EQ(got.dtype(), DType::Float64);
    expect_close(got, expected, 1e-7, 1e-7);

    // float32 and bfloat16 agree with the float64 result to their precision.
    for (DType dt : {DType::Float32, DType::BFloat16}) {
      Tensor xd = x.to(dt), gd = g.to(dt);
      Tensor exact =
          c.backward(gd.to(DType::Float64),
                     c.from_output ? c.forward(xd.to(DType::Float64)) : xd.to(DType::Float64));
      Tensor low = c.backward(gd, c.from_output ? c.forward(xd) : xd);
      EXPECT_EQ(low.dtype(), dt);
      expect_close(low, exact, 3 * elementwise_tol(dt), 3 * elementwise_tol(dt));
    }
  }
}

TEST_P(Elementwise, BackwardBroadcastsAndChecksDtypes) {
  Tensor x = random_tensor({3, 4}, 8, DType::Float32, device());
  Tensor g = Tensor::from_vector<float>({2.f}, {1}, device());
  Tensor dx = relu_backward(g, x);
  expect_close(dx, map_ref(x, [](double v) { return v > 0 ? 2.0 : 0.0; }));
  Tensor xi = Tensor::from_vector<int64_t>({1, 2}, {2}, device());
  expect_error<DTypeError>([&] { relu_backward(xi.to(DType::Float32), xi); },
                           {"relu_backward", "grad is [2] float32", "x is [2] int64", "floating"});
  expect_error<ShapeError>([&] { tanh_backward(x, x.slice(1, 0, 3)); },
                           {"tanh_backward", "grad is [3, 4] float32", "y is [3, 3] float32",
                            "cannot be broadcast"});
}

// ---- binary arithmetic ----

TEST_P(Elementwise, BinaryOpsBroadcastOverNonContiguousOperands) {
  Tensor a = random_tensor({4, 3}, 20, DType::Float32, device(), 0.5, 2).t();             // [3, 4]
  Tensor b = random_tensor({8}, 21, DType::Float32, device(), 0.5, 2).slice(0, 0, 8, 2);  // [4]
  Tensor c = random_tensor({3, 1}, 22, DType::Float32, device(), 0.5, 2);
  Shape s{3, 4};
  expect_close(add(a, b), zip_ref(a, b, s, [](double x, double y) { return x + y; }));
  expect_close(sub(a, c), zip_ref(a, c, s, [](double x, double y) { return x - y; }));
  expect_close(mul(c, b), zip_ref(c, b, s, [](double x, double y) { return x * y; }));
  expect_close(div(a, c), zip_ref(a, c, s, [](double x, double y) { return x / y; }), 1e-6, 1e-6);
  expect_close(pow(a, b), zip_ref(a, b, s, [](double x, double y) { return std::pow(x, y); }), 1e-6,
               1e-6);
  expect_close(maximum(a, c), zip_ref(a, c, s, [](double x, double y) { return std::max(x, y); }));
  expect_close(minimum(b, a), zip_ref(a, b, s, [](double x, double y) { return std::min(x, y); }));
  // Outer-product broadcast: [3, 1] with [1, 4] -> [3, 4].
  Tensor r = random_tensor({1, 4}, 23, DType::Float64, device());
  Tensor o = mul(c.to(DType::Float64), r);
  EXPECT_EQ(o.shape(), s);
  expect_close(o, zip_ref(c.to(DType::Float64), r, s, [](double x, double y) { return x * y; }));
}

TEST_P(Elementwise, LargeTensorsSplitAcrossThreads) {
  Tensor a = random_tensor({257, 300}, 24, DType::Float32, device()).t();  // [300, 257]
  Tensor b = random_tensor({257}, 25, DType::Float32, device());
  Shape s{300, 257};
  expect_close(add(a, b), zip_ref(a, b, s, [](double x, double y) { return x + y; }));
  Tensor flat = random_tensor({100000}, 26, DType::Float64, device());
  expect_close(gelu(flat), map_ref(flat, gelu_ref), 1e-12, 1e-12);
}

TEST_P(Elementwise, BinaryOpsInEveryFloatingDtype) {
  for (DType dt : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor a = random_tensor({2, 3, 4}, 30, dt, device(), 0.5, 2);
    Tensor b = random_tensor({3, 1}, 31, dt, device(), 0.5, 2);
    Shape s{2, 3, 4};
    Tensor q = div(a, b);
    EXPECT_EQ(q.dtype(), dt);
    expect_close(q, zip_ref(a, b, s, [](double x, double y) { return x / y; }), elementwise_tol(dt),
                 elementwise_tol(dt));
    expect_close(add(a, b), zip_ref(a, b, s, [](double x, double y) { return x + y; }),
                 elementwise_tol(dt), elementwise_tol(dt));
    expect_close(pow(a, b), zip_ref(a, b, s, [](double x, double y) { return std::pow(x, y); }),
                 elementwise_tol(dt), elementwise_tol(dt));
  }
}

TEST_P(Elementwise, IntegerArithmeticAndPromotion) {
  Tensor a = Tensor::from_vector<int32_t>({7, -7, 2, 3}, {4}, device());
  Tensor b = Tensor::from_vector<int32_t>({2, 2, 10, -1}, {4}, device());
  Tensor s = add(a, b);
  EXPECT_EQ(s.dtype(), DType::Int32);
  EXPECT_EQ(s.to_vector<int32_t>(), (std::vector<int32_t>{9, -5, 12, 2}));
  EXPECT_EQ(mul(a, b).to_vector<int32_t>(), (std::vector<int32_t>{14, -14, 20, -3}));
  Tensor q = div(a, b);  // true division
  EXPECT_EQ(q.dtype(), DType::Float32);
  expect_close(q, {3.5, -3.5, 0.2, -3}, 1e-6, 1e-6);
  Tensor p = pow(a, b);
  EXPECT_EQ(p.dtype(), DType::Int32);
  EXPECT_EQ(p.to_vector<int32_t>(), (std::vector<int32_t>{49, 49, 1024, 0}));  // 3^-1 -> 0
  Tensor ones = Tensor::from_vector<int64_t>({1, -1, -1}, {3}, device());
  Tensor negs = Tensor::from_vector<int64_t>({-5, -3, -4}, {3}, device());
  EXPECT_EQ(pow(ones, negs).to_vector<int64_t>(), (std::vector<int64_t>{1, -1, 1}));

  // Mixed dtypes promote like PyTorch.
  Tensor u8 = Tensor::from_vector<uint8_t>({200, 3}, {2}, device());
  Tensor i8 = Tensor::from_vector<int8_t>({-100, 4}, {2}, device());
  Tensor m = add(u8, i8);
  EXPECT_EQ(m.dtype(), DType::Int16);
  EXPECT_EQ(m.to_vector<int16_t>(), (std::vector<int16_t>{100, 7}));
  Tensor h = Tensor::from_vector<float>({1.5f, 2.5f}, {2}, device()).to(DType::Float16);
  Tensor hi = add(h, Tensor::from_vector<int64_t>({1, 2}, {2}, device()));
  EXPECT_EQ(hi.dtype(), DType::Float16);
  expect_close(hi, {2.5, 4.5});
  EXPECT_EQ(add(h, h.to(DType::BFloat16)).dtype(), DType::Float32);
  Tensor mixed = mul(Tensor::from_vector<float>({1.5f}, {1}, device()),
                     Tensor::from_vector<double>({2.0}, {1}, device()));
  EXPECT_EQ(mixed.dtype(), DType::Float64);
  expect_close(mixed, {3.0});
}

// A 0-d operand beside one with dims counts only by its kind, as PyTorch's result_type: its
// dtype decides only when its kind (bool < integer < floating) is higher.
TEST_P(Elementwise, ZeroDimOperandsPromoteByKind) {
  Tensor f = Tensor::from_vector<float>({1.5f, -2.f}, {2}, device());
  Tensor i = Tensor::from_vector<int32_t>({3, -4}, {2}, device());
  Tensor d0 = Tensor::from_vector<double>({0.25}, {}, device());
  Tensor l0 = Tensor::from_vector<int64_t>({2}, {}, device());
  Tensor sum = add(f, d0);
  EXPECT_EQ(sum.dtype(), DType::Float32);
  expect_close(sum, {1.75, -1.75});
  EXPECT_EQ(mul(d0, f).dtype(), DType::Float32);
  Tensor il = mul(i, l0);
  EXPECT_EQ(il.dtype(), DType::Int32);
  EXPECT_EQ(il.to_vector<int32_t>(), (std::vector<int32_t>{6, -8}));
  Tensor id = add(i, d0);  // a higher kind: the 0-d operand's dtype
  EXPECT_EQ(id.dtype(), DType::Float64);
  expect_close(id, {3.25, -3.75});
  EXPECT_EQ(div(i, l0).dtype(), DType::Float32);  // true division of integers
  EXPECT_EQ(add(d0, Tensor::from_vector<float>({1.f}, {}, device())).dtype(),
            DType::Float64);                  // both 0-d: promote_types
  EXPECT_EQ(lt(f, d0).dtype(), DType::Bool);  // compared as float32
  EXPECT_EQ(gt(Tensor::from_vector<float>({0.1f}, {1}, device()),
               Tensor::from_vector<double>({0.1}, {}, device()))
                .to_vector<bool>(),
            (std::vector<bool>{false}));  // 0.1 rounded to float32 on both sides
  Tensor c = Tensor::from_vector<bool>({true, false}, {2}, device());
  EXPECT_EQ(where(c, f, d0).dtype(), DType::Float32);
  EXPECT_EQ(where(c, i, d0).dtype(), DType::Float64);
  Tensor g = f.clone();
  add_(g, d0);  // float32 in place with a 0-d float64: float32 throughout
  expect_close(g, {1.75, -1.75});
}

TEST_P(Elementwise, BoolArithmeticAndMaximumNaN) {
  Tensor t = Tensor::from_vector<bool>({true, true, false, false}, {4}, device());
  Tensor f = Tensor::from_vector<bool>({true, false, true, false}, {4}, device());
  EXPECT_EQ(add(t, f).dtype(), DType::Bool);
  EXPECT_EQ(add(t, f).to_vector<bool>(), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(mul(t, f).to_vector<bool>(), (std::vector<bool>{true, false, false, false}));
  expect_error<DTypeError>([&] { sub(t, f); },
                           {"sub", "a is [4] bool", "b is [4] bool", "logical_xor"});
  Tensor x = Tensor::from_vector<float>({1.f, NAN, 3.f, NAN}, {4}, device());
  Tensor y = Tensor::from_vector<float>({NAN, 2.f, 1.f, NAN}, {4}, device());
  expect_exact(maximum(x, y), {kNaN, kNaN, 3, kNaN});
  expect_exact(minimum(x, y), {kNaN, kNaN, 1, kNaN});
}

TEST_P(Elementwise, ScalarOperandsFollowThePythonNumberRule) {
  Tensor i = Tensor::from_vector<int32_t>({1, 2, 3}, {3}, device());
  Tensor a = add(i, 2);
  EXPECT_EQ(a.dtype(), DType::Int32);
  EXPECT_EQ(a.to_vector<int32_t>(), (std::vector<int32_t>{3, 4, 5}));
  Tensor b = add(i, 2.5);
  EXPECT_EQ(b.dtype(), DType::Float32);
  expect_close(b, {3.5, 4.5, 5.5});
  Tensor c = sub(10.0, i);
  EXPECT_EQ(c.dtype(), DType::Int32);
  EXPECT_EQ(c.to_vector<int32_t>(), (std::vector<int32_t>{9, 8, 7}));
  EXPECT_EQ(div(i, 2).dtype(), DType::Float32);
  expect_close(div(i, 2), {0.5, 1, 1.5});
  expect_close(div(1.0, i), {1, 0.5, 1.0 / 3}, 1e-6, 1e-6);
  EXPECT_EQ(mul(Tensor::from_vector<bool>({true, false}, {2}, device()), 3).dtype(), DType::Int64);
  Tensor h = Tensor::from_vector<float>({1.f, 2.f}, {2}, device()).to(DType::Float16);
  EXPECT_EQ(mul(h, 0.5).dtype(), DType::Float16);
  expect_close(mul(h, 0.5), {0.5, 1});
  expect_close(pow(i, 2), {1, 4, 9});
  EXPECT_EQ(pow(i, 0.5).dtype(), DType::Float32);
  expect_close(pow(2.0, Tensor::from_vector<double>({3, -1}, {2}, device())), {8, 0.5});
  expect_close(maximum(i, 2), {2, 2, 3});
  expect_close(minimum(i, 1.5), {1, 1.5, 1.5});
  expect_exact(add(i, kInf), {kInf, kInf, kInf});
}

TEST_P(Elementwise, Operators) {
  Tensor a = Tensor::from_vector<double>({1, 2, 3}, {3}, device());
  Tensor b = Tensor::from_vector<double>({4, 5, 6}, {3}, device());
  expect_close(-a, {-1, -2, -3});
  expect_close(a + b, {5, 7, 9});
  expect_close(b - a, {3, 3, 3});
  expect_close(a * b, {4, 10, 18});
  expect_close(b / a, {4, 2.5, 2});
  expect_close(a + 1, {2, 3, 4});
  expect_close(a - 1, {0, 1, 2});
  expect_close(a * 2, {2, 4, 6});
  expect_close(a / 2, {0.5, 1, 1.5});
  expect_close(1 + a, {2, 3, 4});
  expect_close(1 - a, {0, -1, -2});
  expect_close(2 * a, {2, 4, 6});
  expect_close(6 / a, {6, 3, 2});
  EXPECT_EQ((a == 2).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  EXPECT_EQ((a != 2).to_vector<bool>(), (std::vector<bool>{true, false, true}));
  EXPECT_EQ((a < 2).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ((a <= 2).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ((a > 2).to_vector<bool>(), (std::vector<bool>{false, false, true}));
  EXPECT_EQ((a >= 2).to_vector<bool>(), (std::vector<bool>{false, true, true}));
  EXPECT_EQ((a == b - 3).to_vector<bool>(), (std::vector<bool>{true, true, true}));
  EXPECT_EQ((a < b).to_vector<bool>(), (std::vector<bool>{true, true, true}));
  EXPECT_EQ((a >= b).to_vector<bool>(), (std::vector<bool>{false, false, false}));
  Tensor c = a.clone();
  c += b;
  c -= 1;
  c *= 2;
  c /= a;
  expect_close(c, {8, 6, 16.0 / 3});
}

// ---- comparisons and logic ----

TEST_P(Elementwise, ComparisonsBroadcastPromoteAndHandleNaN) {
  Tensor a = random_tensor({4, 3}, 40, DType::Float32, device(), -2, 2).t();  // [3, 4]
  Tensor b = random_tensor({4}, 41, DType::Float64, device(), -2, 2);
  Shape s{3, 4};
  struct Case {
    Tensor (*op)(const Tensor&, const Tensor&);
    std::function<double(double, double)> ref;
  };
  std::vector<Case> cases = {{eq, [](double x, double y) { return double(x == y); }},
                             {ne, [](double x, double y) { return double(x != y); }},
                             {lt, [](double x, double y) { return double(x < y); }},
                             {le, [](double x, double y) { return double(x <= y); }},
                             {gt, [](double x, double y) { return double(x > y); }},
                             {ge, [](double x, double y) { return double(x >= y); }}};
  for (const Case& c : cases) {
    Tensor r = c.op(a, b);
    EXPECT_EQ(r.dtype(), DType::Bool);
    expect_close(r, zip_ref(a, b, s, c.ref));
    expect_close(c.op(a, a), zip_ref(a, a, s, c.ref));  // equal values exercise eq/le/ge
  }
  Tensor x = Tensor::from_vector<float>({NAN, 1.f}, {2}, device());
  EXPECT_EQ(eq(x, x).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(ne(x, x).to_vector<bool>(), (std::vector<bool>{true, false}));
  Tensor i = Tensor::from_vector<int64_t>({1, 2, 3}, {3}, device());
  EXPECT_EQ(gt(i, 1.5).to_vector<bool>(), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(le(i, 2).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(eq(i, Tensor::from_vector<double>({2.0}, {1}, device())).to_vector<bool>(),
            (std::vector<bool>{false, true, false}));
}

TEST_P(Elementwise, LogicalOps) {
  Tensor a = Tensor::from_vector<float>({0.f, 0.f, 2.f, NAN}, {4}, device());
  Tensor b = Tensor::from_vector<int64_t>({0, 3, 0, 5}, {4}, device());
  EXPECT_EQ(logical_and(a, b).to_vector<bool>(), (std::vector<bool>{false, false, false, true}));
  EXPECT_EQ(logical_or(a, b).to_vector<bool>(), (std::vector<bool>{false, true, true, true}));
  EXPECT_EQ(logical_xor(a, b).to_vector<bool>(), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(logical_not(a).to_vector<bool>(), (std::vector<bool>{true, true, false, false}));
  Tensor m = Tensor::from_vector<bool>({true, false}, {2, 1}, device());
  Tensor n = Tensor::from_vector<bool>({true, false, true}, {1, 3}, device());
  Tensor r = logical_and(m, n);
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.to_vector<bool>(), (std::vector<bool>{true, false, true, false, false, false}));
  EXPECT_EQ(logical_not(m.t()).to_vector<bool>(), (std::vector<bool>{false, true}));
}

// ---- in place ----

TEST_P(Elementwise, InPlaceOpsBroadcastOtherAndWriteThroughViews) {
  Tensor base = random_tensor({4, 6}, 50, DType::Float32, device());
  Tensor before = base.clone();
  Tensor view = base.slice(1, 0, 6, 2);  // [4, 3], stepped
  Tensor row = random_tensor({3}, 51, DType::Float32, device());
  const Tensor& r = add_(view, row);
  EXPECT_TRUE(r.shares_storage(base));
  std::vector<double> b0 = before.to_vector<double>(), rv = row.to_vector<double>();
  std::vector<double> expected = b0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; j += 2) expected[size_t(i * 6 + j)] += rv[size_t(j / 2)];
  expect_close(base, expected, 1e-6, 1e-6);

  Tensor x = Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2}, device());
  mul_(x, 3.0);
  sub_(x, Tensor::from_vector<double>({1, 1}, {2}, device()));
  div_(x, 2.0);
  expect_close(x, {1, 2.5, 4, 5.5});
}

TEST_P(Elementwise, InPlaceCastsToSelfDtype) {
  Tensor h = Tensor::from_vector<float>({1.f, 2.f}, {2}, device()).to(DType::Float16);
  add_(h, Tensor::from_vector<double>({0.25, 0.5}, {2}, device()));
  EXPECT_EQ(h.dtype(), DType::Float16);
  expect_close(h, {1.25, 2.5});
  Tensor i = Tensor::from_vector<int64_t>({1, 2}, {2}, device());
  add_(i, Tensor::from_vector<int8_t>({5, 6}, {2}, device()));
  mul_(i, 2);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{12, 16}));
  Tensor f = Tensor::from_vector<float>({1.f, 2.f}, {2}, device());
  add_(f, Tensor::from_vector<bool>({true, false}, {2}, device()));
  expect_close(f, {2, 2});
}

TEST_P(Elementwise, InPlaceWithOverlappingOperandIsCorrect) {
  Tensor x = Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2}, device());
  add_(x, x.t());  // reads the transpose of what it writes
  expect_close(x, {2, 5, 5, 8});
  Tensor y = Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2}, device());
  mul_(y, y.select(0, 0));  // row 0 broadcast over both rows, including itself
  expect_close(y, {1, 4, 3, 8});
  Tensor z = Tensor::from_vector<double>({1, 2}, {2}, device());
  add_(z, z);
  expect_close(z, {2, 4});
}

TEST_P(Elementwise, InPlaceErrors) {
  Tensor i = Tensor::from_vector<int64_t>({1, 2}, {2}, device());
  Tensor f = Tensor::from_vector<float>({1.f, 2.f}, {2}, device());
  expect_error<DTypeError>([&] { add_(i, f); },
                           {"add_", "self is [2] int64", "other is [2] float32",
                            "float32, which cannot be stored in self's int64"});
  expect_error<DTypeError>([&] { div_(i, 2); }, {"div_", "float32"});
  expect_error<DTypeError>([&] { add_(i, 2.5); }, {"add_", "int64"});
  Tensor small = Tensor::from_vector<float>({1.f}, {1}, device());
  Tensor big = random_tensor({3, 2}, 1, DType::Float32, device());
  expect_error<ShapeError>([&] { add_(small, big); },
                           {"add_", "self is [1] float32", "other is [3, 2] float32",
                            "must have self's shape [1]"});
  expect_error<ValueError>([&] { add_(small.expand({3}), f.slice(0, 0, 1)); },
                           {"add_", "expanded"});
  Tensor bools = Tensor::from_vector<bool>({true}, {1}, device());
  expect_error<DTypeError>([&] { add_(bools, i.slice(0, 0, 1)); }, {"add_", "bool"});
}

// ---- where, clamp ----

TEST_P(Elementwise, WhereBroadcastsAllThreeAndPromotes) {
  Tensor cond = Tensor::from_vector<bool>({true, false, true}, {3, 1}, device());
  Tensor a = random_tensor({4, 2}, 60, DType::Float32, device()).t();  // [2, 4]
  Tensor b = Tensor::from_vector<int64_t>({-7}, {}, device());
  Tensor w = where(cond, a.select(0, 1), b);  // [3,1], [4], [] -> [3, 4]
  EXPECT_EQ(w.shape(), (Shape{3, 4}));
  EXPECT_EQ(w.dtype(), DType::Float32);
  std::vector<double> av = a.select(0, 1).to_vector<double>(), expected;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) expected.push_back(i != 1 ? av[size_t(j)] : -7.0);
  expect_close(w, expected);
  Tensor n = Tensor::from_vector<float>({1.f}, {1}, device());
  expect_error<DTypeError>([&] { where(n, n, n); },
                           {"where", "cond is [1] float32", "cond must be bool"});
  expect_error<ShapeError>([&] { where(cond, a, n); },
                           {"where", "cond is [3, 1] bool", "a is [2, 4] float32",
                            "cannot be broadcast"});
}

TEST_P(Elementwise, Clamp) {
  Tensor x = Tensor::from_vector<float>({-2.f, -0.5f, 0.5f, 2.f, NAN}, {5}, device());
  expect_close(clamp(x, -1.0, 1.0), {-1, -0.5, 0.5, 1, kNaN});
  expect_close(clamp(x, 0.0), {0, 0, 0.5, 2, kNaN});
  expect_close(clamp(x, std::nullopt, 0.0), {-2, -0.5, 0, 0, kNaN});
  expect_close(clamp(x, 1.0, -1.0), {-1, -1, -1, -1, kNaN});  // min > max: max wins
  Tensor i = Tensor::from_vector<int32_t>({-5, 0, 5}, {3}, device());
  Tensor ci = clamp(i, -1.0, 3.0);
  EXPECT_EQ(ci.dtype(), DType::Int32);
  EXPECT_EQ(ci.to_vector<int32_t>(), (std::vector<int32_t>{-1, 0, 3}));
  EXPECT_EQ(clamp(i, 0.0).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 5}));
  Tensor cf = clamp(i, 0.5);
  EXPECT_EQ(cf.dtype(), DType::Float32);
  expect_close(cf, {0.5, 0.5, 5});
  Tensor h = random_tensor({3, 4}, 70, DType::BFloat16, device()).t();
  expect_close(clamp(h, -0.25, 0.25),
               map_ref(h, [](double v) { return std::min(std::max(v, -0.25), 0.25); }));
  expect_error<ValueError>([&] { clamp(x, std::nullopt, std::nullopt); },
                           {"clamp", "x is [5] float32", "at least one"});
}

// ---- shapes: empty, 0-d, errors ----

TEST_P(Elementwise, EmptyAndZeroDimTensors) {
  Tensor e = Tensor::empty({0, 3}, DType::Float32, device());
  EXPECT_EQ(exp(e).shape(), (Shape{0, 3}));
  EXPECT_EQ(add(e, Tensor::empty({3}, DType::Float64, device())).shape(), (Shape{0, 3}));
  EXPECT_EQ(add(e, Tensor::empty({3}, DType::Float64, device())).dtype(), DType::Float64);
  EXPECT_EQ(lt(e, 1.0).shape(), (Shape{0, 3}));
  EXPECT_EQ(where(lt(e, 0.0), e, e).numel(), 0);
  add_(e, 1.0);
  Tensor s = Tensor::from_vector<double>({2.0}, {}, device());
  Tensor r = mul(s, s);
  EXPECT_EQ(r.dim(), 0);
  EXPECT_DOUBLE_EQ(r.item<double>(), 4.0);
  expect_close(add(s, Tensor::from_vector<double>({1, 2}, {2}, device())), {3, 4});
}

TEST_P(Elementwise, ShapeAndDeviceErrorsNameTheOperands) {
  Tensor a = random_tensor({32, 784}, 1, DType::Float32, device());
  Tensor b = random_tensor({748}, 2, DType::Float32, device());
  expect_error<ShapeError>([&] { add(a, b); },
                           {"add: a is [32, 784] float32 " + device().str(), "b is [748] float32",
                            "cannot be broadcast", "784 vs 748"});
  expect_error<ShapeError>([&] { lt(a, b); }, {"lt", "a is [32, 784]"});
  expect_error<ValueError>([&] { mul(a, Tensor()); }, {"mul", "b is an undefined tensor"});
  if (device().is_cuda()) {
    Tensor c = random_tensor({748}, 3, DType::Float32, Device("cpu"));
    expect_error<DeviceError>([&] { add(b, c); }, {"add", "a is [748] float32 cuda:0",
                                                   "b is [748] float32 cpu", "one device"});
  }
}

}  // namespace
}  // namespace ember
