// test_elementwise_new.cpp — erf, reciprocal, rounding, value tests, nan_to_num, floor_divide,
// remainder and the bitwise ops, against references computed here in double (or plain integers).
#include <cfloat>
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
const std::vector<DType> kFloating = {DType::Float32, DType::Float64, DType::Float16,
                                      DType::BFloat16};
const std::vector<DType> kIntegers = {DType::UInt8, DType::Int8, DType::Int16, DType::Int32,
                                      DType::Int64};

class ElementwiseNew : public test::DeviceTest {};
EMBER_INSTANTIATE_DEVICE_TEST(ElementwiseNew);

// Multiples of 1/4 in [-10, 10] (exact in every floating dtype), from an independent generator.
std::vector<double> quarters(int64_t n, uint32_t seed, bool nonzero = false) {
  std::vector<double> v = test::random_values(n, seed, -40, 41);
  for (double& x : v) {
    x = std::floor(x) / 4;
    if (nonzero && x == 0) x = 0.75;
  }
  return v;
}

// Contiguous, transposed and step-sliced [4, 5] tensors holding `values` (20 of them) row-major.
std::vector<Tensor> layouts(const std::vector<double>& values, DType dtype, Device device) {
  Tensor base = Tensor::from_vector(values, {4, 5}).to(device, dtype);
  Tensor transposed = Tensor::empty({5, 4}, dtype, device).t();
  transposed.copy_(base);
  Tensor wide = zeros({4, 10}, dtype, device);
  Tensor sliced = wide.slice(1, 1, 10, 2);
  sliced.copy_(base);
  return {base, transposed, sliced};
}

double round_half_even(double x) {
  double r = std::floor(x), diff = x - r;
  if (diff > 0.5) return r + 1;
  if (diff < 0.5) return r;
  return std::fmod(r, 2.0) == 0 ? r : r + 1;
}

// ---- unary ----

TEST_P(ElementwiseNew, RoundingOpsOnEveryFloatingDtypeAndLayout) {
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> op;
    std::function<double(double)> ref;
  };
  const std::vector<Case> cases = {
      {"floor", [](const Tensor& x) { return floor(x); }, [](double x) { return std::floor(x); }},
      {"ceil", [](const Tensor& x) { return ceil(x); }, [](double x) { return std::ceil(x); }},
      {"round", [](const Tensor& x) { return round(x); }, round_half_even},
      {"trunc", [](const Tensor& x) { return trunc(x); }, [](double x) { return std::trunc(x); }},
  };
  for (const Case& c : cases)
    for (DType dt : kFloating)
      for (const Tensor& x : layouts(quarters(20, 3), dt, device())) {
        SCOPED_TRACE(std::string(c.name) + " " + x.str());
        Tensor y = c.op(x);
        EXPECT_EQ(y.dtype(), dt);
        expect_close(y, map_ref(x, c.ref), 0, 0);
      }
}

TEST_P(ElementwiseNew, RoundHalfToEvenAndSpecialValues) {
  Tensor x = Tensor::from_vector<double>({0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 1e300, kNaN, kInf,
                                          -kInf, -0.0, -0.3},
                                         {13}, device());
  expect_exact(round(x), {0, 2, 2, -0.0, -2, -2, 4, 1e300, kNaN, kInf, -kInf, -0.0, -0.0});
  expect_exact(floor(x), {0, 1, 2, -1, -2, -3, 3, 1e300, kNaN, kInf, -kInf, -0.0, -1});
  expect_exact(ceil(x), {1, 2, 3, -0.0, -1, -2, 4, 1e300, kNaN, kInf, -kInf, -0.0, -0.0});
  expect_exact(trunc(x), {0, 1, 2, -0.0, -1, -2, 3, 1e300, kNaN, kInf, -kInf, -0.0, -0.0});
  for (DType dt : {DType::Float16, DType::BFloat16, DType::Float32}) {
    Tensor h = Tensor::from_vector<double>({0.5, 1.5, 2.5, -2.5, 7.5}, {5}, device()).to(dt);
    expect_exact(round(h), {0, 2, 2, -2, 8});
  }
  Tensor big = Tensor::from_vector<double>({4503599627370497.0, -4503599627370497.0}, {2},
                                           device());  // 2^52 + 1: no fraction left
  expect_exact(round(big), {4503599627370497.0, -4503599627370497.0});
}

TEST_P(ElementwiseNew, RoundingKeepsIntegersAndRejectsBool) {
  for (DType dt : kIntegers) {
    Tensor x = Tensor::from_vector<double>({0, 1, 7, 100, 3}, {5}, device()).to(dt);
    for (const Tensor& y : {floor(x), ceil(x), round(x), trunc(x)}) {
      EXPECT_EQ(y.dtype(), dt);
      expect_exact(y, {0, 1, 7, 100, 3});
    }
  }
  Tensor b = Tensor::from_vector<bool>({true, false}, {2}, device());
  expect_error<DTypeError>([&] { floor(b); }, {"floor", "x is [2] bool", "numeric"});
  expect_error<DTypeError>([&] { round(b); }, {"round", "x is [2] bool"});
}

TEST_P(ElementwiseNew, ErfAndReciprocal) {
  for (DType dt : kFloating)
    for (const Tensor& x : layouts(test::random_values(20, 8, 0.2, 3), dt, device())) {
      SCOPED_TRACE(x.str());
      expect_close(erf(x), map_ref(x, [](double v) { return std::erf(v); }), elementwise_tol(dt),
                   elementwise_tol(dt));
      expect_close(erf(neg(x)), map_ref(x, [](double v) { return -std::erf(v); }),
                   elementwise_tol(dt), elementwise_tol(dt));
      expect_close(reciprocal(x), map_ref(x, [](double v) { return 1 / v; }), elementwise_tol(dt),
                   elementwise_tol(dt));
    }
  Tensor i = Tensor::from_vector<int32_t>({0, 2, -4}, {3}, device());
  EXPECT_EQ(reciprocal(i).dtype(), DType::Float32);
  expect_exact(reciprocal(i), {kInf, 0.5, -0.25});
  expect_close(erf(i), {0, std::erf(2.0), std::erf(-4.0)}, 1e-6, 1e-6);
  expect_exact(erf(Tensor::from_vector<double>({kInf, -kInf, kNaN}, {3}, device())), {1, -1, kNaN});
}

TEST_P(ElementwiseNew, ValueTestsOnEveryDtype) {
  for (DType dt : kFloating) {
    Tensor x = Tensor::from_vector<double>({1, kNaN, kInf, -kInf, 0, -2.5}, {2, 3}, device())
                   .to(dt)
                   .t();  // transposed: [3, 2]
    EXPECT_EQ(isnan(x).dtype(), DType::Bool);
    // x.t() row-major: 1, -inf, nan, 0, inf, -2.5
    expect_exact(isnan(x), {0, 0, 1, 0, 0, 0});
    expect_exact(isinf(x), {0, 1, 0, 0, 1, 0});
    expect_exact(isfinite(x), {1, 0, 0, 1, 0, 1});
  }
  std::vector<DType> exact = kIntegers;
  exact.push_back(DType::Bool);
  for (DType dt : exact) {
    Tensor x = Tensor::from_vector<double>({0, 1, 5}, {3}, device()).to(dt);
    expect_exact(isnan(x), {0, 0, 0});
    expect_exact(isinf(x), {0, 0, 0});
    expect_exact(isfinite(x), {1, 1, 1});
  }
  expect_error<ValueError>([&] { isnan(Tensor()); }, {"isnan", "undefined"});
}

TEST_P(ElementwiseNew, NanToNum) {
  const std::vector<double> v = {1.5, kNaN, kInf, -kInf, -0.0};
  Tensor x64 = Tensor::from_vector<double>(v, {5}, device());
  expect_exact(nan_to_num(x64), {1.5, 0, DBL_MAX, -DBL_MAX, -0.0});
  expect_exact(nan_to_num(x64, 7, 8, -9), {1.5, 7, 8, -9, -0.0});
  expect_exact(nan_to_num(x64.to(DType::Float32), -1), {1.5, -1, FLT_MAX, -FLT_MAX, -0.0});
  expect_exact(nan_to_num(x64.to(DType::Float16), 0, std::nullopt, -3), {1.5, 0, 65504, -3, -0.0});
  const double bf16_max = 0x1.fep127;
  Tensor b = nan_to_num(x64.to(DType::BFloat16));
  EXPECT_EQ(b.dtype(), DType::BFloat16);
  expect_exact(b, {1.5, 0, bf16_max, -bf16_max, -0.0});
  // A strided input, and integers copied unchanged.
  Tensor wide = Tensor::from_vector<double>({kNaN, 9, kInf, 9, 2, 9}, {6}, device());
  expect_exact(nan_to_num(wide.slice(0, 0, 6, 2), 5), {5, DBL_MAX, 2});
  for (DType dt : kIntegers) {
    Tensor i = Tensor::from_vector<double>({3, 0, 100}, {3}, device()).to(dt);
    Tensor y = nan_to_num(i, 1, 2, 3);
    EXPECT_EQ(y.dtype(), dt);
    expect_exact(y, {3, 0, 100});
  }
  expect_error<ValueError>([&] { nan_to_num(x64.to(DType::Float16), 0, 1e5); },
                           {"nan_to_num", "100000", "float16"});
}

// ---- floor_divide and remainder ----

// Python's a // b and a % b in closed form: floor of the exact quotient (the values here are
// small, so the double quotient floors exactly), and a - b * (a // b).
double py_floordiv(double a, double b) { return std::floor(a / b); }
double py_mod(double a, double b) { return a - b * std::floor(a / b); }

TEST_P(ElementwiseNew, FloorDivideAndRemainderOnFloatingDtypes) {
  for (DType dt : kFloating) {
    std::vector<Tensor> as = layouts(quarters(20, 21), dt, device());
    std::vector<Tensor> bs = layouts(quarters(20, 22, true), dt, device());
    for (size_t k = 0; k < as.size(); ++k) {
      const Tensor& a = as[k];
      const Tensor& b = bs[(k + 1) % bs.size()];
      SCOPED_TRACE(a.str() + " and " + b.str());
      std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>(), q, r;
      for (size_t i = 0; i < va.size(); ++i) {
        q.push_back(py_floordiv(va[i], vb[i]));
        double m = py_mod(va[i], vb[i]);
        r.push_back(m == 0 ? std::copysign(0.0, vb[i]) : m);
      }
      Tensor fq = floor_divide(a, b), fr = remainder(a, b);
      EXPECT_EQ(fq.dtype(), dt);
      expect_close(fq, q, 0, 0);
      expect_close(fr, r, 0, 0);
      std::vector<double> got_r = fr.to_vector<double>();
      for (size_t i = 0; i < r.size(); ++i)
        if (got_r[i] == 0) {
          EXPECT_EQ(std::signbit(got_r[i]), std::signbit(vb[i])) << i;
        }
    }
  }
}

TEST_P(ElementwiseNew, FloorDivideAndRemainderSpecialValues) {
  Tensor a =
      Tensor::from_vector<double>({5, -5, 0, 5, -5, kInf, 7, -7, 7, -7, -4, 4}, {12}, device());
  Tensor b =
      Tensor::from_vector<double>({0, 0, 0, kInf, kInf, 2, 2, 2, -2, -2, 2, -2}, {12}, device());
  expect_exact(floor_divide(a, b), {kInf, -kInf, kNaN, 0, -1, kNaN, 3, -4, -4, 3, -2, -2});
  expect_exact(remainder(a, b), {kNaN, kNaN, kNaN, 5, kInf, kNaN, 1, 1, -1, -1, 0, -0.0});
}

TEST_P(ElementwiseNew, FloorDivideAndRemainderOnIntegers) {
  // Every pair of a in [-12, 12] and b in [-5, 5], zero divisors included (the result is 0).
  std::vector<double> va, vb;
  for (int a = -12; a <= 12; ++a)
    for (int b = -5; b <= 5; ++b) va.push_back(a), vb.push_back(b);
  const int64_t n = int64_t(va.size());
  for (DType dt : {DType::Int8, DType::Int16, DType::Int32, DType::Int64}) {
    Tensor a = Tensor::from_vector(va, {n}).to(device(), dt);
    Tensor b = Tensor::from_vector(vb, {n}).to(device(), dt);
    SCOPED_TRACE(dtype_name(dt));
    std::vector<double> q, r;
    for (int64_t i = 0; i < n; ++i) {
      q.push_back(vb[size_t(i)] == 0 ? 0 : py_floordiv(va[size_t(i)], vb[size_t(i)]));
      r.push_back(vb[size_t(i)] == 0 ? 0 : py_mod(va[size_t(i)], vb[size_t(i)]));
    }
    Tensor fq = floor_divide(a, b);
    EXPECT_EQ(fq.dtype(), dt);
    expect_close(fq, q, 0, 0);
    expect_close(remainder(a, b), r, 0, 0);
  }
  // Unsigned: plain division.
  Tensor u = Tensor::from_vector<uint8_t>({250, 7, 9, 0}, {4}, device());
  Tensor v = Tensor::from_vector<uint8_t>({7, 250, 0, 3}, {4}, device());
  EXPECT_EQ(floor_divide(u, v).to_vector<uint8_t>(), (std::vector<uint8_t>{35, 0, 0, 0}));
  EXPECT_EQ(remainder(u, v).to_vector<uint8_t>(), (std::vector<uint8_t>{5, 7, 0, 0}));
  // The lowest value divided by -1 wraps (as NumPy) instead of trapping.
  const int64_t lo64 = std::numeric_limits<int64_t>::lowest();
  Tensor l = Tensor::from_vector<int64_t>({lo64, lo64, 7}, {3}, device());
  Tensor m = Tensor::from_vector<int64_t>({-1, 1, -1}, {3}, device());
  EXPECT_EQ(floor_divide(l, m).to_vector<int64_t>(), (std::vector<int64_t>{lo64, lo64, -7}));
  EXPECT_EQ(remainder(l, m).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0}));
  const int32_t lo32 = std::numeric_limits<int32_t>::lowest();
  Tensor l32 = Tensor::from_vector<int32_t>({lo32, lo32}, {2}, device());
  Tensor m32 = Tensor::from_vector<int32_t>({-1, 3}, {2}, device());
  EXPECT_EQ(floor_divide(l32, m32).to_vector<int32_t>(),
            (std::vector<int32_t>{lo32, -715827883}));  // floor(-2147483648 / 3)
  EXPECT_EQ(remainder(l32, m32).to_vector<int32_t>(), (std::vector<int32_t>{0, 1}));
}

TEST_P(ElementwiseNew, FloorDivideAndRemainderScalarsBroadcastAndPromotion) {
  Tensor x = Tensor::from_vector<int64_t>({-7, -1, 0, 5, 8}, {5}, device());
  EXPECT_EQ(floor_divide(x, 2.0).dtype(), DType::Int64);
  expect_exact(floor_divide(x, 2.0), {-4, -1, 0, 2, 4});
  expect_exact(remainder(x, -3.0), {-1, -1, 0, -1, -1});
  expect_exact(floor_divide(x, 0.0), {0, 0, 0, 0, 0});  // integer division by zero: 0
  expect_exact(floor_divide(9.0, x), {-2, -9, 0, 1, 1});
  expect_exact(remainder(9.0, x), {-5, 0, 0, 4, 1});
  Tensor f = floor_divide(x, 2.5);  // a fractional scalar gives float32
  EXPECT_EQ(f.dtype(), DType::Float32);
  expect_exact(f, {-3, -1, 0, 2, 3});
  expect_exact(remainder(x, 2.5), {0.5, 1.5, 0, 0, 0.5});
  // int32 [3, 1] with float32 [4] broadcast -> float32 [3, 4].
  Tensor a = Tensor::from_vector<int32_t>({-3, 4, 9}, {3, 1}, device());
  Tensor b = Tensor::from_vector<float>({2, -2, 0.5, 4}, {4}, device());
  Tensor q = floor_divide(a, b);
  EXPECT_EQ(q.dtype(), DType::Float32);
  EXPECT_EQ(q.shape(), (Shape{3, 4}));
  expect_exact(q, {-2, 1, -6, -1, 2, -2, 8, 1, 4, -5, 18, 2});
  Tensor bb = Tensor::from_vector<bool>({true}, {1}, device());
  expect_error<DTypeError>([&] { floor_divide(bb, bb); }, {"floor_divide", "bool"});
  expect_error<DTypeError>([&] { remainder(bb, bb); }, {"remainder", "bool"});
}

TEST_P(ElementwiseNew, LargeAndEdgeSizes) {
  // Large enough to cross the CPU threading and the GPU vector paths; odd so a tail remains.
  const int64_t n = 100003;
  Tensor a = random_tensor({n}, 31, DType::Float32, device(), -50, 50);
  Tensor b = random_tensor({n}, 32, DType::Float32, device(), 1, 9);
  std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
  std::vector<double> want(va.size());
  for (size_t i = 0; i < va.size(); ++i)
    want[i] = std::fmod(std::fmod(va[i], vb[i]) + vb[i], vb[i]);
  expect_close(remainder(a, b), want, 2e-5, 0);
  for (size_t i = 0; i < va.size(); ++i) want[i] = std::nearbyint(va[i]);
  expect_close(round(a), want, 0, 0);
  // Transposed and large.
  Tensor t = random_tensor({317, 211}, 33, DType::Float64, device(), -5, 5).t();
  expect_close(floor(t), map_ref(t, [](double v) { return std::floor(v); }), 0, 0);
  // 0-d, empty and size-1.
  Tensor s = Tensor::from_vector<double>({-2.5}, {}, device());
  EXPECT_EQ(round(s).shape(), Shape{});
  EXPECT_EQ(round(s).item<double>(), -2.0);
  EXPECT_EQ(floor_divide(s, 2.0).item<double>(), -2.0);
  Tensor e = Tensor::empty({0, 3}, DType::Int32, device());
  EXPECT_EQ(remainder(e, e).shape(), (Shape{0, 3}));
  EXPECT_EQ(isnan(e).shape(), (Shape{0, 3}));
  EXPECT_EQ(bitwise_not(e).numel(), 0);
  Tensor one = Tensor::from_vector<int16_t>({-9}, {1, 1}, device());
  EXPECT_EQ(floor_divide(one, one.expand({1, 4})).to_vector<int16_t>(),
            (std::vector<int16_t>{1, 1, 1, 1}));
}

// ---- bitwise ----

// Integer values in the dtype's range (uint8: 0..255, int8: -128..127, wider: +-1000).
std::vector<double> ints_for(DType dt, int64_t n, uint32_t seed) {
  double lo = dt == DType::UInt8 ? 0 : (dt == DType::Int8 ? -128 : -1000);
  double hi = dt == DType::UInt8 ? 256 : (dt == DType::Int8 ? 128 : 1000);
  std::vector<double> v = test::random_values(n, seed, lo, hi);
  for (double& x : v) x = std::floor(x);
  return v;
}

// An int64 result brought into dt's range the way the dtype wraps it.
double wrap_to(DType dt, int64_t v) {
  switch (dt) {
    case DType::UInt8:
      return double(uint8_t(v));
    case DType::Int8:
      return double(int8_t(v));
    default:
      return double(v);
  }
}

TEST_P(ElementwiseNew, BitwiseOpsOnEveryIntegerDtypeAndLayout) {
  for (DType dt : kIntegers) {
    std::vector<Tensor> as = layouts(ints_for(dt, 20, 41), dt, device());
    std::vector<Tensor> bs = layouts(ints_for(dt, 20, 42), dt, device());
    for (size_t k = 0; k < as.size(); ++k) {
      const Tensor& a = as[k];
      const Tensor& b = bs[2 - k];
      SCOPED_TRACE(a.str() + " and " + b.str());
      std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>();
      std::vector<double> want_and, want_or, want_xor, want_not;
      for (size_t i = 0; i < va.size(); ++i) {
        const int64_t x = int64_t(va[i]), y = int64_t(vb[i]);
        want_and.push_back(wrap_to(dt, x & y));
        want_or.push_back(wrap_to(dt, x | y));
        want_xor.push_back(wrap_to(dt, x ^ y));
        want_not.push_back(wrap_to(dt, ~x));
      }
      EXPECT_EQ(bitwise_and(a, b).dtype(), dt);
      expect_exact(bitwise_and(a, b), want_and);
      expect_exact(bitwise_or(a, b), want_or);
      expect_exact(bitwise_xor(a, b), want_xor);
      expect_exact(bitwise_not(a), want_not);
    }
  }
}

TEST_P(ElementwiseNew, BitwiseOnBoolPromotionAndErrors) {
  Tensor p = Tensor::from_vector<bool>({true, true, false, false}, {4}, device());
  Tensor q = Tensor::from_vector<bool>({true, false, true, false}, {4}, device());
  EXPECT_EQ(bitwise_and(p, q).dtype(), DType::Bool);
  expect_exact(bitwise_and(p, q), {1, 0, 0, 0});
  expect_exact(bitwise_or(p, q), {1, 1, 1, 0});
  expect_exact(bitwise_xor(p, q), {0, 1, 1, 0});
  expect_exact(bitwise_not(p), {0, 0, 1, 1});
  Tensor i8 = Tensor::from_vector<int8_t>({-1, 6}, {2}, device());
  Tensor i32 = Tensor::from_vector<int32_t>({0x100, 3}, {2}, device());
  Tensor r = bitwise_or(i8, i32);  // int8 widens to int32 first: -1 is all ones
  EXPECT_EQ(r.dtype(), DType::Int32);
  expect_exact(r, {-1, 7});
  Tensor m = bitwise_and(p.slice(0, 0, 2), i32);  // bool with int32 -> int32
  EXPECT_EQ(m.dtype(), DType::Int32);
  expect_exact(m, {0, 1});
  Tensor f = Tensor::from_vector<float>({1, 2}, {2}, device());
  expect_error<DTypeError>([&] { bitwise_and(i32, f); },
                           {"bitwise_and", "a is [2] int32", "b is [2] float32", "integer"});
  expect_error<DTypeError>([&] { bitwise_xor(f, f); }, {"bitwise_xor", "float32"});
  expect_error<DTypeError>([&] { bitwise_not(f); }, {"bitwise_not", "x is [2] float32"});
  expect_error<ShapeError>(
      [&] {
        bitwise_or(i32, Tensor::from_vector<int32_t>({1, 2, 3}, {3}, device()));
      },
      {"bitwise_or", "[2]", "[3]"});
}

}  // namespace
}  // namespace ember
