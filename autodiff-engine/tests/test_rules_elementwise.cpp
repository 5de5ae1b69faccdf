// The elementwise family's gradient rules against float64 finite differences, first and second
// order, on contiguous, transposed, sliced, broadcast and 0-d inputs; and the known traps.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "ember/autodiff/autodiff.h"
#include "gradcheck.h"

namespace ad = ember::autodiff;
using ad::Variable;
using ember::DType;
using ember::Shape;
using ember::Tensor;

namespace {

constexpr double kPi = 3.14159265358979323846;

using MakeInput = std::function<Tensor(const Shape&, uint64_t)>;

MakeInput uniform_in(double low, double high) {
  return
      [=](const Shape& shape, uint64_t seed) { return gradcheck::random(shape, seed, low, high); };
}
// |x| in [0.2, 1] with either sign: away from the kinks of abs, relu, ... at 0.
Tensor away_from_zero(const Shape& shape, uint64_t seed) {
  Tensor magnitude = gradcheck::random(shape, seed, 0.2, 1.0);
  return ember::mul(magnitude, ember::sign(gradcheck::random(shape, seed + 1000)));
}

// The layouts every rule is checked on, each made by `make`: odd sizes, a transposed view, a
// strided slice, size-1 dims and a 0-d tensor.
struct Layout {
  const char* name;
  std::function<Tensor(const MakeInput&, uint64_t)> build;
};
const std::vector<Layout>& layouts() {
  static const std::vector<Layout> all = {
      {"[3, 5]",
       [](const MakeInput& m, uint64_t s) {
         return m({3, 5}, s);
       }},
      {"[5, 3].t()",
       [](const MakeInput& m, uint64_t s) {
         return m({5, 3}, s).t();
       }},
      {"[3, 9][:, ::2]",
       [](const MakeInput& m, uint64_t s) {
         return m({3, 9}, s).slice(1, 0, 9, 2);
       }},
      {"[1, 3, 1]",
       [](const MakeInput& m, uint64_t s) {
         return m({1, 3, 1}, s);
       }},
      {"0-d", [](const MakeInput& m, uint64_t s) { return m({}, s); }},
  };
  return all;
}

void check_both_orders(const gradcheck::Fn& f, const std::vector<Tensor>& inputs,
                       const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_NO_FATAL_FAILURE(gradcheck::check_grad(f, inputs));
  ASSERT_NO_FATAL_FAILURE(gradcheck::check_grad_grad(f, inputs));
}

struct UnaryCase {
  const char* name;
  std::function<Variable(const Variable&)> f;
  MakeInput input;
};

// Where the plain unary ops of core-runtime's unary.def are checked: [-1, 1] unless named here.
// The piecewise constant ones (sign, rounding) are not: finite differences see their jumps.
const MakeInput& unary_op_input(const std::string& name) {
  static const MakeInput any = uniform_in(-1.0, 1.0), positive = uniform_in(0.5, 2.0);
  static const std::map<std::string, MakeInput> inputs = {
      {"abs", away_from_zero},
      {"log", positive},
      {"log1p", uniform_in(-0.5, 1.0)},
      {"sqrt", positive},
      {"rsqrt", positive},
      {"sigmoid", uniform_in(-3.0, 3.0)},
      {"relu", away_from_zero},
      {"silu", uniform_in(-3.0, 3.0)},
      {"reciprocal", positive},
      {"erf", uniform_in(-2.0, 2.0)},
  };
  auto it = inputs.find(name);
  return it == inputs.end() ? any : it->second;
}
bool piecewise_constant(const std::string& name) {
  return name == "sign" || name == "floor" || name == "ceil" || name == "round" || name == "trunc";
}

const std::vector<UnaryCase>& unary_cases() {
  static const MakeInput any = uniform_in(-1.0, 1.0), positive = uniform_in(0.5, 2.0);
  static const std::vector<UnaryCase> all = [] {
    std::vector<UnaryCase> cases;
#define EMBER_UNARY_OP(name, Formula, dtypes, cost, api, doc) \
  if (!piecewise_constant(#name))                             \
    cases.push_back({#name, [](const Variable& x) { return ad::name(x); }, unary_op_input(#name)});
#include "ember/ops/unary.def"
#undef EMBER_UNARY_OP
    std::vector<UnaryCase> more = {
        {"leaky_relu", [](const Variable& x) { return ad::leaky_relu(x, 0.1); }, away_from_zero},
        {"elu", [](const Variable& x) { return ad::elu(x, 1.5); }, away_from_zero},
        {"gelu", [](const Variable& x) { return ad::gelu(x); }, uniform_in(-3.0, 3.0)},
        {"gelu tanh", [](const Variable& x) { return ad::gelu(x, "tanh"); }, uniform_in(-3.0, 3.0)},
        {"softplus", [](const Variable& x) { return ad::softplus(x); }, uniform_in(-3.0, 3.0)},
        // beta x > 1 is the linear region: both regions appear, the switch (x = 0.5) is avoided.
        {"softplus beta 2 threshold 1", [](const Variable& x) { return ad::softplus(x, 2.0, 1.0); },
         [](const Shape& s, uint64_t seed) {
           return ember::add(ember::mul(away_from_zero(s, seed), 0.4), 0.5);
         }},
        {"x + s", [](const Variable& x) { return x + 0.7; }, any},
        {"x s", [](const Variable& x) { return x * -1.3; }, any},
        {"s - x", [](const Variable& x) { return 2.0 - x; }, any},
        {"x / s", [](const Variable& x) { return x / 0.6; }, any},
        {"s / x", [](const Variable& x) { return 1.5 / x; }, away_from_zero},
        {"x^2.5", [](const Variable& x) { return ad::pow(x, 2.5); }, positive},
        {"x^3", [](const Variable& x) { return ad::pow(x, 3.0); }, any},
        {"x^-1", [](const Variable& x) { return ad::pow(x, -1.0); }, away_from_zero},
        {"1.7^x", [](const Variable& x) { return ad::pow(1.7, x); }, any},
        {"0.4^x", [](const Variable& x) { return ad::pow(0.4, x); }, any},
        {"maximum(x, 0.1)", [](const Variable& x) { return ad::maximum(x, 0.1); }, away_from_zero},
        {"minimum(x, -0.1)", [](const Variable& x) { return ad::minimum(x, -0.1); },
         away_from_zero},
        {"clamp(x, -0.5, 0.5)", [](const Variable& x) { return ad::clamp(x, -0.5, 0.5); },
         uniform_in(-0.45, 0.45)},
        {"clamp(x, 0.0)", [](const Variable& x) { return ad::clamp(x, 0.0); }, away_from_zero},
        {"clamp(x, {}, 0.3)", [](const Variable& x) { return ad::clamp(x, {}, 0.3); }, any},
        {"to(x, f64)", [](const Variable& x) { return ad::to(x, DType::Float64); }, any},
        {"to(x, cpu)", [](const Variable& x) { return ad::to(x, ember::Device("cpu")); }, any},
    };
    cases.insert(cases.end(), more.begin(), more.end());
    return cases;
  }();
  return all;
}

}  // namespace

TEST(ElementwiseUnary, FirstAndSecondOrderOnEveryLayout) {
  uint64_t seed = 1;
  for (const UnaryCase& c : unary_cases()) {
    for (const Layout& layout : layouts()) {
      // The case's op applied to the input, times the input: f'' of the op alone is often 0.
      gradcheck::Fn f = [&](const std::vector<Variable>& in) { return c.f(in[0]) * in[0]; };
      check_both_orders(f, {layout.build(c.input, seed++)},
                        std::string(c.name) + " on " + layout.name);
    }
  }
}

namespace {

struct BinaryCase {
  const char* name;
  std::function<Variable(const Variable&, const Variable&)> f;
  MakeInput a, b;
};

// A fixed bool tensor of the broadcast shape of a and b (for where).
Variable pattern(const Variable& a, const Variable& b) {
  Shape shape = ember::broadcast_shapes(a.shape(), b.shape(), "test");
  return Variable(ember::gt(gradcheck::random(shape, 77), 0.0));
}

const std::vector<BinaryCase>& binary_cases() {
  static const MakeInput any = uniform_in(-1.0, 1.0), positive = uniform_in(0.5, 2.0);
  static const std::vector<BinaryCase> all = {
      {"add", [](const Variable& a, const Variable& b) { return a + b; }, any, any},
      {"sub", [](const Variable& a, const Variable& b) { return a - b; }, any, any},
      {"mul", [](const Variable& a, const Variable& b) { return a * b; }, any, any},
      {"div", [](const Variable& a, const Variable& b) { return a / b; }, any, away_from_zero},
      {"pow", [](const Variable& a, const Variable& b) { return ad::pow(a, b); }, positive,
       uniform_in(-1.5, 1.5)},
      // a in [-1, -0.2] u [0.2, 1], b in [1.5, 2.5]: never equal, so no tie lies within eps.
      {"maximum", [](const Variable& a, const Variable& b) { return ad::maximum(a, b); },
       away_from_zero, uniform_in(-2.5, 2.5)},
      {"minimum", [](const Variable& a, const Variable& b) { return ad::minimum(a, b); }, any,
       uniform_in(-2.0, 2.0)},
      {"where", [](const Variable& a, const Variable& b) { return ad::where(pattern(a, b), a, b); },
       any, any},
      // a away from 0 and 1.5 <= |b| <= 2.5: a / b lies in (-0.67, 0.67) without 0, so
      // floor(a / b) is -1 or 0 and no jump of the remainder lies within eps.
      {"remainder", [](const Variable& a, const Variable& b) { return ad::remainder(a, b); },
       away_from_zero, uniform_in(1.5, 2.5)},
      {"remainder by a negative divisor",
       [](const Variable& a, const Variable& b) { return ad::remainder(a, b); }, away_from_zero,
       uniform_in(-2.5, -1.5)},
      {"relu_backward",
       [](const Variable& g, const Variable& x) { return ad::relu_backward(g, x); }, any,
       away_from_zero},
      {"leaky_relu_backward",
       [](const Variable& g, const Variable& x) { return ad::leaky_relu_backward(g, x, 0.2); }, any,
       away_from_zero},
      {"elu_backward",
       [](const Variable& g, const Variable& x) { return ad::elu_backward(g, x, 0.7); }, any,
       away_from_zero},
      {"gelu_backward",
       [](const Variable& g, const Variable& x) { return ad::gelu_backward(g, x); }, any,
       uniform_in(-3.0, 3.0)},
      {"gelu_backward tanh",
       [](const Variable& g, const Variable& x) { return ad::gelu_backward(g, x, "tanh"); }, any,
       uniform_in(-3.0, 3.0)},
      {"silu_backward",
       [](const Variable& g, const Variable& x) { return ad::silu_backward(g, x); }, any,
       uniform_in(-3.0, 3.0)},
      {"softplus_backward",
       [](const Variable& g, const Variable& x) { return ad::softplus_backward(g, x, 2.0, 1.0); },
       any,
       [](const Shape& s, uint64_t seed) {
         return ember::add(ember::mul(away_from_zero(s, seed), 0.4), 0.5);
       }},
      {"sigmoid_backward",
       [](const Variable& g, const Variable& y) { return ad::sigmoid_backward(g, y); }, any, any},
      {"tanh_backward",
       [](const Variable& g, const Variable& y) { return ad::tanh_backward(g, y); }, any, any},
  };
  return all;
}

// Pairs of layouts for a and b: equal shapes, broadcasting both ways, 0-d with a matrix, and
// non-contiguous views.
struct PairLayout {
  const char* name;
  Shape a, b;
  bool transpose_a = false, slice_b = false;
};
const std::vector<PairLayout> kPairs = {
    {"[3, 4] and [3, 4]", {3, 4}, {3, 4}},
    {"[3, 1] and [4]", {3, 1}, {4}},
    {"[2, 1, 3] and [4, 1]", {2, 1, 3}, {4, 1}},
    {"0-d and [2, 3]", {}, {2, 3}},
    {"[5] and 0-d", {5}, {}},
    {"[4, 3].t() and [3, 4] sliced from [3, 8]", {4, 3}, {3, 8}, true, true},
};

Tensor build(const MakeInput& make, const Shape& shape, uint64_t seed, bool transpose, bool slice) {
  Tensor t = make(shape, seed);
  if (transpose) t = t.t();
  if (slice) t = t.slice(1, 0, shape[1], 2);
  return t;
}

}  // namespace

TEST(ElementwiseBinary, FirstAndSecondOrderWithBroadcastingAndViews) {
  uint64_t seed = 500;
  for (const BinaryCase& c : binary_cases()) {
    for (const PairLayout& p : kPairs) {
      Tensor a = build(c.a, p.a, seed++, p.transpose_a, false);
      Tensor b = build(c.b, p.b, seed++, false, p.slice_b);
      // Times a and b again, so that rules whose second derivative is 0 still meet one.
      gradcheck::Fn f = [&](const std::vector<Variable>& in) {
        return c.f(in[0], in[1]) * in[0] * in[1];
      };
      check_both_orders(f, {a, b}, std::string(c.name) + " on " + p.name);
    }
  }
}

TEST(ElementwiseBinary, ActivationBackwardOpsMatchTheirForwardOpsDerivative) {
  // d/dx of each activation, through eager backward, against the closed-form f'.
  Tensor x = Tensor::from_vector<double>({-2.5, -0.7, -0.1, 0.2, 0.9, 3.0}, {6});
  auto xs = x.to_vector<double>();
  const double k = std::sqrt(2 / kPi), c = 0.044715;
  struct Case {
    const char* name;
    std::function<Variable(const Variable&)> f;
    std::function<double(double)> df;
  };
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  std::vector<Case> cases = {
      {"relu", [](const Variable& v) { return ad::relu(v); },
       [](double v) { return v > 0 ? 1. : 0.; }},
      {"leaky_relu", [](const Variable& v) { return ad::leaky_relu(v, 0.2); },
       [](double v) { return v > 0 ? 1. : 0.2; }},
      {"elu", [](const Variable& v) { return ad::elu(v, 0.7); },
       [](double v) { return v > 0 ? 1. : 0.7 * std::exp(v); }},
      {"gelu", [](const Variable& v) { return ad::gelu(v); },
       [](double v) {
         return 0.5 * (1 + std::erf(v / std::sqrt(2.0))) +
                v * std::exp(-v * v / 2) / std::sqrt(2 * kPi);
       }},
      {"gelu tanh", [](const Variable& v) { return ad::gelu(v, "tanh"); },
       [&](double v) {
         const double t = std::tanh(k * (v + c * v * v * v));
         return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * k * (1 + 3 * c * v * v);
       }},
      {"silu", [](const Variable& v) { return ad::silu(v); },
       [&](double v) { return sig(v) * (1 + v * (1 - sig(v))); }},
      {"softplus", [](const Variable& v) { return ad::softplus(v, 2.0, 1.0); },
       [&](double v) { return 2 * v > 1 ? 1. : sig(2 * v); }},
      {"sigmoid", [](const Variable& v) { return ad::sigmoid(v); },
       [&](double v) { return sig(v) * (1 - sig(v)); }},
      {"tanh", [](const Variable& v) { return ad::tanh(v); },
       [](double v) { return 1 - std::tanh(v) * std::tanh(v); }},
  };
  for (const Case& cs : cases) {
    Variable v(x, true);
    auto g =
        ad::grad({cs.f(v)}, {v}, {Variable(ember::ones_like(x))})[0].data().to_vector<double>();
    for (size_t i = 0; i < xs.size(); ++i)
      EXPECT_NEAR(g[i], cs.df(xs[i]), 1e-12) << cs.name << " at " << xs[i];
  }
}

TEST(ElementwiseForward, UnaryValuesAgainstClosedForms) {
  Tensor x = Tensor::from_vector<double>({-2.5, -0.7, -0.1, 0.3, 0.9, 30.0}, {2, 3});
  auto xs = x.to_vector<double>();
  auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  struct Case {
    const char* name;
    std::function<Variable(const Variable&)> f;
    std::function<double(double)> want;
  };
  const double k = std::sqrt(2 / kPi), c = 0.044715;
  std::vector<Case> cases = {
      {"neg", [](const Variable& v) { return -v; }, [](double v) { return -v; }},
      {"abs", [](const Variable& v) { return ad::abs(v); }, [](double v) { return std::abs(v); }},
      {"sign", [](const Variable& v) { return ad::sign(v); },
       [](double v) { return double((v > 0) - (v < 0)); }},
      {"sin", [](const Variable& v) { return ad::sin(v); }, [](double v) { return std::sin(v); }},
      {"sigmoid", [](const Variable& v) { return ad::sigmoid(v); }, sig},
      {"relu", [](const Variable& v) { return ad::relu(v); },
       [](double v) { return v > 0 ? v : 0; }},
      {"silu", [](const Variable& v) { return ad::silu(v); }, [&](double v) { return v * sig(v); }},
      {"leaky_relu", [](const Variable& v) { return ad::leaky_relu(v, 0.1); },
       [](double v) { return v > 0 ? v : 0.1 * v; }},
      {"elu", [](const Variable& v) { return ad::elu(v, 2.0); },
       [](double v) { return v > 0 ? v : 2 * (std::exp(v) - 1); }},
      {"gelu", [](const Variable& v) { return ad::gelu(v); },
       [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }},
      {"gelu tanh", [](const Variable& v) { return ad::gelu(v, "tanh"); },
       [&](double v) { return 0.5 * v * (1 + std::tanh(k * (v + c * v * v * v))); }},
      {"softplus", [](const Variable& v) { return ad::softplus(v); },
       [](double v) { return v > 20 ? v : std::log1p(std::exp(v)); }},
      {"s - x", [](const Variable& v) { return 3.0 - v; }, [](double v) { return 3 - v; }},
      {"s / x", [](const Variable& v) { return 3.0 / v; }, [](double v) { return 3 / v; }},
      {"2^x", [](const Variable& v) { return ad::pow(2.0, v); },
       [](double v) { return std::pow(2, v); }},
      {"x^3", [](const Variable& v) { return ad::pow(v, 3.0); },
       [](double v) { return v * v * v; }},
      {"clamp", [](const Variable& v) { return ad::clamp(v, -0.5, 0.5); },
       [](double v) { return std::min(std::max(v, -0.5), 0.5); }},
      {"maximum", [](const Variable& v) { return ad::maximum(v, 0.3); },
       [](double v) { return std::max(v, 0.3); }},
  };
  for (const Case& cs : cases) {
    auto got = cs.f(Variable(x)).data().to_vector<double>();
    for (size_t i = 0; i < xs.size(); ++i)
      EXPECT_NEAR(got[i], cs.want(xs[i]), 1e-12 * (1 + std::abs(cs.want(xs[i]))))
          << cs.name << " at " << xs[i];
  }
}

TEST(ElementwiseForward, BinaryValuesBroadcastAgainstBruteForce) {
  // a [3, 1] with b [4] -> [3, 4]: out[i][j] = f(a[i], b[j]).
  const std::vector<double> av = {0.5, 2.0, 1.5}, bv = {-1.0, 0.5, 2.0, 1.5};
  Variable a(Tensor::from_vector<double>(av, {3, 1})), b(Tensor::from_vector<double>(bv, {4}));
  Variable cond(ember::gt(Tensor::from_vector<double>({1, 0, 0, 1}, {4}), 0.0));
  using Op = std::function<Variable(const Variable&, const Variable&)>;
  std::vector<std::tuple<const char*, Op, std::function<double(double, double, size_t)>>> cases = {
      {"add", [](auto& x, auto& y) { return x + y; },
       [](double x, double y, size_t) { return x + y; }},
      {"sub", [](auto& x, auto& y) { return x - y; },
       [](double x, double y, size_t) { return x - y; }},
      {"mul", [](auto& x, auto& y) { return x * y; },
       [](double x, double y, size_t) { return x * y; }},
      {"div", [](auto& x, auto& y) { return x / y; },
       [](double x, double y, size_t) { return x / y; }},
      {"pow", [](auto& x, auto& y) { return ad::pow(x, y); },
       [](double x, double y, size_t) { return std::pow(x, y); }},
      {"maximum", [](auto& x, auto& y) { return ad::maximum(x, y); },
       [](double x, double y, size_t) { return std::max(x, y); }},
      {"minimum", [](auto& x, auto& y) { return ad::minimum(x, y); },
       [](double x, double y, size_t) { return std::min(x, y); }},
      {"floor_divide", [](auto& x, auto& y) { return ad::floor_divide(x, y); },
       [](double x, double y, size_t) { return std::floor(x / y); }},
      {"remainder", [](auto& x, auto& y) { return ad::remainder(x, y); },
       [](double x, double y, size_t) { return x - y * std::floor(x / y); }},
      {"where", [&](auto& x, auto& y) { return ad::where(cond, x, y); },
       [](double x, double y, size_t j) { return j == 0 || j == 3 ? x : y; }},
      {"masked_fill", [&](auto& x, auto& y) { return ad::masked_fill(x + y, cond, -7.0); },
       [](double x, double y, size_t j) { return j == 0 || j == 3 ? -7.0 : x + y; }},
  };
  for (const auto& [name, op, want] : cases) {
    Variable y = op(a, b);
    ASSERT_EQ(y.shape(), (Shape{3, 4})) << name;
    auto got = y.data().to_vector<double>();
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = 0; j < 4; ++j)
        EXPECT_DOUBLE_EQ(got[i * 4 + j], want(av[i], bv[j], j)) << name << " at " << i << ", " << j;
  }
}

// ---- the known traps ----

TEST(ElementwiseTraps, WhereWithInfiniteUntakenBranchGivesNoNaN) {
  const double inf = std::numeric_limits<double>::infinity();
  Variable x(Tensor::from_vector<double>({-1.5, -0.5, 0.5, 2.0}, {4}), true);
  Variable minus_inf(ember::full({4}, -inf, DType::Float64));
  Variable ones(ember::ones({4}, DType::Float64));
  // where(x > 0, x, -inf): 1 where taken, 0 elsewhere.
  auto g1 = ad::grad({ad::where(ad::gt(x, 0.0), x, minus_inf)}, {x}, {ones})[0];
  // where(x > 0, log(x), 0): log(x) is NaN at negative x, yet its gradient there is exactly 0.
  Variable zeros(ember::zeros({4}, DType::Float64));
  auto g2 = ad::grad({ad::where(ad::gt(x, 0.0), ad::log(x), zeros)}, {x}, {ones}, false, true)[0];
  // and again through the second derivative (-1/x^2 where taken).
  auto gg2 = ad::grad({ad::sum(g2)}, {x})[0];
  std::vector<double> want1 = {0, 0, 1, 1}, want2 = {0, 0, 2, 0.5}, want_gg2 = {0, 0, -4, -0.25};
  auto v1 = g1.data().to_vector<double>(), v2 = g2.data().to_vector<double>(),
       vgg = gg2.data().to_vector<double>();
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_FALSE(std::isnan(v1[i]) || std::isnan(v2[i]) || std::isnan(vgg[i])) << i;
    EXPECT_EQ(v1[i], want1[i]) << i;
    EXPECT_DOUBLE_EQ(v2[i], want2[i]) << i;
    EXPECT_DOUBLE_EQ(vgg[i], want_gg2[i]) << i;
  }
  // The other branch: where(x > 0, +inf, x) passes the gradient to x only where x <= 0.
  Variable plus_inf(ember::full({4}, inf, DType::Float64));
  auto g3 = ad::grad({ad::where(ad::gt(x, 0.0), plus_inf, x)}, {x}, {ones})[0];
  auto v3 = g3.data().to_vector<double>();
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(v3[i], i < 2 ? 1.0 : 0.0) << i;
}

TEST(ElementwiseTraps, ClampAndMaskedFillStopExactlyWithInfiniteGradients) {
  const double inf = std::numeric_limits<double>::infinity();
  Variable x(Tensor::from_vector<double>({-2.0, 0.0, 0.5, 1.0, 3.0}, {5}), true);
  Variable dy(ember::full({5}, inf, DType::Float64));
  // An infinite incoming gradient stays out of the clamped elements: 0, not 0 * inf.
  auto g = ad::grad({ad::clamp(x, 0.0, 1.0)}, {x}, {dy})[0].data().to_vector<double>();
  std::vector<double> want = {0, 0, inf, 0, 0};  // 0 at the bounds, as PyTorch (and relu)
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(g[i], want[i]) << i;
  Variable mask(ember::gt(Tensor::from_vector<double>({1, 0, 1, 0, 0}, {5}), 0.0));
  auto gm = ad::grad({ad::masked_fill(x, mask, 7.0)}, {x}, {dy})[0].data().to_vector<double>();
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(gm[i], i == 0 || i == 2 ? 0.0 : inf) << i;
}

TEST(ElementwiseTraps, PowGuardsZeroBaseAndZeroExponent) {
  // d/db a^b at a = 0, b >= 0 is 0 (PyTorch's guard), not 0 * log(0) = NaN; d/da at b = 0 is 0.
  Variable a(Tensor::from_vector<double>({0.0, 0.0, 2.0, 0.0}, {4}), true);
  Variable b(Tensor::from_vector<double>({0.0, 2.0, 3.0, 0.5}, {4}), true);
  Variable ones(ember::ones({4}, DType::Float64));
  auto g = ad::grad({ad::pow(a, b)}, {a, b}, {ones});
  auto ga = g[0].data().to_vector<double>(), gb = g[1].data().to_vector<double>();
  std::vector<double> want_a = {0, 0, 12}, want_b = {0, 0, 8 * std::log(2.0), 0};
  for (size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(ga[i], want_a[i]) << i;
  EXPECT_TRUE(std::isinf(ga[3]));  // 0.5 * 0^-0.5, as PyTorch
  for (size_t i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(gb[i], want_b[i]) << i;
  // x^0 has gradient 0 even at x = 0; 0^x has gradient 0 where x >= 0.
  Variable x(Tensor::from_vector<double>({0.0, 1.0}, {2}), true);
  Variable two(ember::ones({2}, DType::Float64));
  for (double v : ad::grad({ad::pow(x, 0.0)}, {x}, {two})[0].data().to_vector<double>())
    EXPECT_EQ(v, 0.0);
  for (double v : ad::grad({ad::pow(0.0, x)}, {x}, {two})[0].data().to_vector<double>())
    EXPECT_EQ(v, 0.0);
}

TEST(ElementwiseTraps, XMinusXIsExactlyZeroAndXTimesXIsTwoX) {
  Tensor t = gradcheck::random({3, 4}, 3).t();
  Variable x(t, true);
  auto zero = ad::grad({ad::sum(x - x)}, {x})[0].data().to_vector<double>();
  for (double v : zero) EXPECT_EQ(v, 0.0);
  auto two_x = ad::grad({ad::sum(x * x)}, {x})[0].data().to_vector<double>();
  auto xs = t.to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(two_x[i], 2 * xs[i]);
}

TEST(ElementwiseTraps, OneValueUsedByThreeOpsGetsTheSumOfTheirGradients) {
  Tensor t = gradcheck::random({2, 3}, 4);
  Variable x(t, true);
  auto f = [](const std::vector<Variable>& in) {
    const Variable& v = in[0];
    return ad::exp(v) + ad::sin(v) + v * 2.0;
  };
  auto g = ad::grad({ad::sum(f({x}))}, {x})[0].data().to_vector<double>();
  auto xs = t.to_vector<double>();
  for (size_t i = 0; i < xs.size(); ++i)
    EXPECT_NEAR(g[i], std::exp(xs[i]) + std::cos(xs[i]) + 2, 1e-12);
  check_both_orders(f, {t}, "exp(x) + sin(x) + 2x");
}

TEST(ElementwiseTraps, FloorDivideHasNoGradientAndRemainderHasPythonsSign) {
  Variable a(Tensor::from_vector<double>({7.5, -7.5, 7.5, 3.0}, {4}), true);
  Variable b(Tensor::from_vector<double>({2.0, 2.0, -2.0, -4.0}, {4}), true);
  EXPECT_FALSE(ad::floor_divide(a, b).requires_grad());  // no rule: the result has no history
  Variable r = ad::remainder(a, b);
  EXPECT_EQ(r.data().to_vector<double>(), (std::vector<double>{1.5, 0.5, -0.5, -1.0}));
  auto g = ad::grad({r}, {a, b}, {Variable(ember::ones_like(a.data()))});
  EXPECT_EQ(g[0].data().to_vector<double>(), (std::vector<double>{1, 1, 1, 1}));
  // -floor(a / b): floor(3.75) = 3, floor(-3.75) = -4, floor(-3.75) = -4, floor(-0.75) = -1
  EXPECT_EQ(g[1].data().to_vector<double>(), (std::vector<double>{-3, 4, 4, 1}));
}

TEST(ElementwiseTraps, MaximumAndMinimumSplitTiesEqually) {
  Variable a(Tensor::from_vector<double>({1, 2, 3, -1}, {4}), true);
  Variable b(Tensor::from_vector<double>({1, 0, 3, 5}, {4}), true);
  Variable ones(ember::ones({4}, DType::Float64));
  auto gmax = ad::grad({ad::maximum(a, b)}, {a, b}, {ones});
  auto gmin = ad::grad({ad::minimum(a, b)}, {a, b}, {ones});
  EXPECT_EQ(gmax[0].data().to_vector<double>(), (std::vector<double>{0.5, 1, 0.5, 0}));
  EXPECT_EQ(gmax[1].data().to_vector<double>(), (std::vector<double>{0.5, 0, 0.5, 1}));
  EXPECT_EQ(gmin[0].data().to_vector<double>(), (std::vector<double>{0.5, 0, 0.5, 1}));
  EXPECT_EQ(gmin[1].data().to_vector<double>(), (std::vector<double>{0.5, 1, 0.5, 0}));
  // With a scalar, and with a broadcast operand whose ties add up: c [1] ties with two of d's.
  auto gs = ad::grad({ad::maximum(a, 1.0)}, {a}, {ones})[0].data().to_vector<double>();
  EXPECT_EQ(gs, (std::vector<double>{0.5, 1, 1, 0}));
  Variable c(Tensor::from_vector<double>({3}, {1}), true);
  Variable d(Tensor::from_vector<double>({3, 1, 3}, {3}), true);
  Variable ones3(ember::ones({3}, DType::Float64));
  auto gc = ad::grad({ad::minimum(d, c)}, {c}, {ones3})[0].data().to_vector<double>();
  EXPECT_EQ(gc, (std::vector<double>{0.5 + 0 + 0.5}));
}

TEST(ElementwiseComparisons, GiveBoolAgainstBruteForceAndStopGradients) {
  // a [4] against b [3, 1]: the result is bool [3, 4].
  const std::vector<double> av = {1, 2, 3, 4}, bv = {2, 3, 0};
  Variable a(Tensor::from_vector<double>(av, {4}), true),
      b(Tensor::from_vector<double>(bv, {3, 1}), true);
  using Cmp = std::function<Variable(const Variable&, const Variable&)>;
  using Want = std::function<bool(double, double)>;
  std::vector<std::tuple<const char*, Cmp, Want>> cases = {
      {"eq", [](auto& x, auto& y) { return ad::eq(x, y); },
       [](double x, double y) { return x == y; }},
      {"ne", [](auto& x, auto& y) { return ad::ne(x, y); },
       [](double x, double y) { return x != y; }},
      {"lt", [](auto& x, auto& y) { return ad::lt(x, y); },
       [](double x, double y) { return x < y; }},
      {"le", [](auto& x, auto& y) { return ad::le(x, y); },
       [](double x, double y) { return x <= y; }},
      {"gt", [](auto& x, auto& y) { return ad::gt(x, y); },
       [](double x, double y) { return x > y; }},
      {"ge", [](auto& x, auto& y) { return ad::ge(x, y); },
       [](double x, double y) { return x >= y; }},
      {"logical_and", [](auto& x, auto& y) { return ad::logical_and(x - 2.0, y); },
       [](double x, double y) { return x != 2 && y != 0; }},
      {"logical_or", [](auto& x, auto& y) { return ad::logical_or(x - 2.0, y); },
       [](double x, double y) { return x != 2 || y != 0; }},
      {"logical_xor", [](auto& x, auto& y) { return ad::logical_xor(x - 2.0, y); },
       [](double x, double y) { return (x != 2) != (y != 0); }},
      {"logical_not", [](auto& x, auto& y) { return ad::logical_not(x - y); },
       [](double x, double y) { return x == y; }},
      {"eq_scalar", [](auto& x, auto& y) { return ad::eq(x + y, 5.0); },
       [](double x, double y) { return x + y == 5; }},
      {"ne_scalar", [](auto& x, auto& y) { return ad::ne(x + y, 5.0); },
       [](double x, double y) { return x + y != 5; }},
      {"lt_scalar", [](auto& x, auto& y) { return ad::lt(x + y, 5.0); },
       [](double x, double y) { return x + y < 5; }},
      {"le_scalar", [](auto& x, auto& y) { return ad::le(x + y, 5.0); },
       [](double x, double y) { return x + y <= 5; }},
      {"gt_scalar", [](auto& x, auto& y) { return ad::gt(x + y, 5.0); },
       [](double x, double y) { return x + y > 5; }},
      {"ge_scalar", [](auto& x, auto& y) { return ad::ge(x + y, 5.0); },
       [](double x, double y) { return x + y >= 5; }},
  };
  for (const auto& [name, cmp, want] : cases) {
    Variable y = cmp(a, b);
    EXPECT_EQ(y.dtype(), DType::Bool) << name;
    EXPECT_FALSE(y.requires_grad()) << name;
    ASSERT_EQ(y.shape(), (Shape{3, 4})) << name;
    auto got = y.data().to_vector<bool>();
    for (size_t i = 0; i < 3; ++i)
      for (size_t j = 0; j < 4; ++j)
        EXPECT_EQ(got[i * 4 + j], want(av[j], bv[i])) << name << " at " << i << ", " << j;
  }
  // d/da sum(to(a > 2, f64) * a) is the mask alone: nothing flows through the comparison.
  Variable mask = ad::to(ad::gt(a, 2.0), DType::Float64);
  auto g = ad::grad({ad::sum(mask * a)}, {a})[0].data().to_vector<double>();
  EXPECT_EQ(g, (std::vector<double>{0, 0, 1, 1}));
  // sign has no gradient either.
  EXPECT_FALSE(ad::sign(a).requires_grad());
}

TEST(ElementwiseSelection, MaskedFillBroadcastsItsMask) {
  for (Shape mask_shape : {Shape{4}, Shape{3, 1}, Shape{}, Shape{3, 4}}) {
    Variable mask(ember::gt(gradcheck::random(mask_shape, 8), 0.0));
    gradcheck::Fn f = [&](const std::vector<Variable>& in) {
      return ad::masked_fill(in[0] * in[0], mask, -2.0);
    };
    check_both_orders(f, {gradcheck::random({4, 3}, 9).t()},
                      "mask " + ember::shape_str(mask_shape));
  }
}

TEST(ElementwiseSelection, WhereWithBroadcastCondition) {
  Variable cond(ember::gt(gradcheck::random({2, 1, 3}, 10), 0.0));
  gradcheck::Fn f = [&](const std::vector<Variable>& in) {
    return ad::where(cond, ad::sin(in[0]), in[1] * in[1]);
  };
  check_both_orders(f, {gradcheck::random({4, 1}, 11), gradcheck::random({}, 12)}, "where");
}

// ---- conversions, detach, mixed dtypes ----

TEST(ElementwiseConversions, MixedDtypeGradientsHaveTheirInputsDtypes) {
  Tensor ta = Tensor::from_vector<float>({1.5f, -2.0f, 0.5f}, {3});
  Tensor tb = Tensor::from_vector<double>({0.5, 2.0, -1.0, 3.0, 0.25, 1.0}, {2, 3});
  Variable a(ta, true), b(tb, true);
  // y = a b + a / b + max(a, b) - a: f64 [2, 3], a's gradient summed over dim 0, in f32.
  Variable y = a * b + a / b + ad::maximum(a, b) - a;
  EXPECT_EQ(y.dtype(), DType::Float64);
  auto g = ad::grad({ad::sum(y)}, {a, b});
  ASSERT_EQ(g[0].dtype(), DType::Float32);
  ASSERT_EQ(g[1].dtype(), DType::Float64);
  ASSERT_EQ(g[0].shape(), (Shape{3}));
  auto av = ta.to_vector<double>(), bv = tb.to_vector<double>();
  std::vector<float> ga = g[0].data().to_vector<float>();
  std::vector<double> gb = g[1].data().to_vector<double>();
  for (size_t j = 0; j < 3; ++j) {
    double want = 0;
    for (size_t i = 0; i < 2; ++i) {
      const double bij = bv[i * 3 + j];
      want += bij + 1 / bij + (av[j] > bij ? 1 : 0) - 1;
      const double want_b = av[j] - av[j] / (bij * bij) + (bij > av[j] ? 1 : 0);
      EXPECT_NEAR(gb[i * 3 + j], want_b, 1e-6) << i << ", " << j;
    }
    EXPECT_NEAR(ga[j], want, 1e-5) << j;
  }
}

// A 0-d float64 operand beside float32 with dims counts only by its kind: the result is float32,
// and the 0-d operand's gradient comes back as float64 of shape [].
TEST(ElementwiseConversions, ZeroDimOperandPromotesByKindAndGetsItsOwnGradient) {
  Tensor ta = Tensor::from_vector<float>({1.5f, -2.0f, 0.5f}, {3});
  Variable a(ta, true), s(Tensor::from_vector<double>({0.75}, {}), true);
  Variable y = a * s + a / s - s;
  EXPECT_EQ(y.dtype(), DType::Float32);
  auto g = ad::grad({ad::sum(y)}, {a, s});
  ASSERT_EQ(g[0].dtype(), DType::Float32);
  ASSERT_EQ(g[1].dtype(), DType::Float64);
  ASSERT_EQ(g[1].shape(), (Shape{}));
  auto av = ta.to_vector<double>();
  double want_s = -3;  // d/ds sum(a s + a / s - s) = sum(a) - sum(a) / s^2 - 3
  for (double v : av) want_s += v - v / (0.75 * 0.75);
  EXPECT_NEAR(g[1].data().item<double>(), want_s, 1e-5);
  for (size_t j = 0; j < 3; ++j)
    EXPECT_NEAR(g[0].data().to_vector<double>()[j], 0.75 + 1 / 0.75, 1e-6) << j;
}

TEST(ElementwiseConversions, ToDtypeConvertsTheGradientBack) {
  Tensor t = Tensor::from_vector<float>({0.5f, -1.5f, 2.0f}, {3});
  Variable x(t, true);
  // y = sum(to(x, f64)^3): dx = 3 x^2 in f32, and d/dx of sum(dx) = 6 x.
  Variable y = ad::sum(ad::pow(ad::to(x, DType::Float64), 3.0));
  Variable dx = ad::grad({y}, {x}, {}, false, true)[0];
  ASSERT_EQ(dx.dtype(), DType::Float32);
  Variable ddx = ad::grad({ad::sum(dx)}, {x})[0];
  ASSERT_EQ(ddx.dtype(), DType::Float32);
  auto xs = t.to_vector<float>(), g = dx.data().to_vector<float>(),
       gg = ddx.data().to_vector<float>();
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_FLOAT_EQ(g[i], 3 * xs[i] * xs[i]);
    EXPECT_FLOAT_EQ(gg[i], 6 * xs[i]);
  }
  // float -> int has no gradient; the same dtype is a fresh copy, not an alias.
  EXPECT_FALSE(ad::to(x, DType::Int64).requires_grad());
  EXPECT_FALSE(ad::to(x, DType::Float32).data().shares_storage(t));
  EXPECT_FALSE(ad::to(x, ember::Device("cpu")).data().shares_storage(t));
}

TEST(ElementwiseConversions, ToDeviceGradientMovesBack) {
  // Types only (no GPU needed): the backward graph of a move to cuda:0 moves dy back to the CPU.
  ad::Graph g;
  ad::Val x = g.parameter({{2, 3}, DType::Float32, ember::Device()}, "x");
  ad::Val y = ad::sum(ad::exp(ad::to(x, ember::Device("cuda:0"))));
  EXPECT_EQ(y.device(), ember::Device("cuda:0"));
  ad::Val dx = ad::grad({y}, {x})[0];
  EXPECT_EQ(dx.type(), x.type());
  const ad::Node& last = g.node(g.value(dx.id).node);
  EXPECT_EQ(last.op->name, "to_device");
  EXPECT_EQ(last.attrs.s("device"), "cpu");
}

TEST(ElementwiseConversions, DetachStopsTheGradientAndSharesData) {
  Tensor t = gradcheck::random({2, 2}, 13);
  Variable x(t, true);
  Variable d = ad::detach(x);
  EXPECT_TRUE(d.data().shares_storage(t));
  EXPECT_FALSE(d.requires_grad());
  // d/dx sum(detach(x) * x) = detach(x) = x.
  auto g = ad::grad({ad::sum(d * x)}, {x})[0].data().to_vector<double>();
  EXPECT_EQ(g, t.to_vector<double>());
}

TEST(ElementwiseCreation, LikeOpsHaveNoGradient) {
  Variable x(gradcheck::random({2, 3}, 14), true);
  Variable z = ad::zeros_like(x), o = ad::ones_like(x), f = ad::full_like(x, 2.5);
  for (const Variable* v : {&z, &o, &f}) {
    EXPECT_FALSE(v->requires_grad());
    EXPECT_EQ(v->shape(), x.shape());
    EXPECT_EQ(v->dtype(), DType::Float64);
  }
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(z.data().to_vector<double>()[i], 0.0);
    EXPECT_EQ(o.data().to_vector<double>()[i], 1.0);
    EXPECT_EQ(f.data().to_vector<double>()[i], 2.5);
  }
}
