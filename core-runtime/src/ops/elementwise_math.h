// elementwise_math.h — the per-element formula of every elementwise op, written once and used by
// both the CPU kernels (cpu/elementwise.cpp) and the CUDA kernels (cuda/elementwise*.cu).
//
// Each formula is a small functor over the compute type C (float for float16/bfloat16, the type
// itself otherwise; see compute_t). The visit_* functions map an op enum to its functor and hand
// it to the caller, which wraps it in its device's elementwise loop, so that no backend lists the
// ops. visit_unary's and visit_binary's lists of the plain ops come from ember/ops/unary.def and
// binary.def (a functor here is named as those files' Formula column); the other families' lists
// are written out below.
#pragma once
#include <cmath>
#include <limits>
#include <type_traits>

#include "ember/error.h"
#include "ember/half.h"             // EMBER_HOST_DEVICE
#include "ember/ops/elementwise.h"  // UnaryDTypes
#include "ops/elementwise_kernels.h"

namespace ember::math {

constexpr double kSqrt1_2 = 0.70710678118654752440;      // 1/sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1/sqrt(2*pi)
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
constexpr double kGeluCubic = 0.044715;                  // tanh-approximation coefficient

template <class C> EMBER_HOST_DEVICE inline bool isnan_(C x) { return x != x; }
// x < 0, without a "comparison is always false" warning for unsigned types.
template <class C> EMBER_HOST_DEVICE inline bool negative(C x) {
  if constexpr (std::is_unsigned_v<C>) {
    return false;
  } else {
    return x < C(0);
  }
}
template <class C> EMBER_HOST_DEVICE inline C sigmoid_(C x) { return C(1) / (C(1) + std::exp(-x)); }
// Neither infinite nor NaN: x - x is 0 for finite x and NaN otherwise (no std::isfinite, which
// is ambiguous in device code with some host compilers). Integers are always finite.
template <class C> EMBER_HOST_DEVICE inline bool isfinite_(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    return x - x == C(0);
  } else {
    return true;
  }
}
// -x modulo 2^bits: the lowest value of a signed type negates to itself instead of overflowing.
template <class C> EMBER_HOST_DEVICE inline C wrapping_neg(C x) {
  using U = std::make_unsigned_t<C>;
  return C(U(U(0) - U(x)));
}

// ---------------------------------------------------------------- unary: out = f(x)
// Valid on every numeric type.
template <class C> struct Neg {
  EMBER_HOST_DEVICE C operator()(C x) const { return C(-x); }
};
template <class C> struct Abs {
  EMBER_HOST_DEVICE C operator()(C x) const { return negative(x) ? C(-x) : x; }
};
template <class C> struct Sign {  // NaN stays NaN (NumPy's rule)
  EMBER_HOST_DEVICE C operator()(C x) const {
    return isnan_(x) ? x : C(int(C(0) < x) - int(negative(x)));
  }
};
template <class C> struct Relu {  // written as x < 0 so that NaN passes through
  EMBER_HOST_DEVICE C operator()(C x) const { return negative(x) ? C(0) : x; }
};

// Floating only.
template <class C> struct Exp {
  EMBER_HOST_DEVICE C operator()(C x) const { return std::exp(x); }
};
template <class C> struct Expm1 {  // e^x - 1 without the cancellation of exp(x) - 1 near 0
  EMBER_HOST_DEVICE C operator()(C x) const { return std::expm1(x); }
};
template <class C> struct Log {
  EMBER_HOST_DEVICE C operator()(C x) const { return std::log(x); }
};
template <class C> struct Log1p {
  EMBER_HOST_DEVICE C operator()(C x) const { return std::log1p(x); }
};
template <class C> struct Sqrt {
  EMBER_HOST_DEVICE C operator()(C x) const { return std::sqrt(x); }
};
template <class C> struct Rsqrt {
  EMBER_HOST_DEVICE C operator()(C x) const { return C(1) / std::sqrt(x); }
};
template <class C> struct Sin {
  EMBER_HOST_DEVICE C operator()(C x) const { return std::sin(x); }
};
template <class C> struct Cos {
  EMBER_HOST_DEVICE C operator()(C x) const { return std::cos(x); }
};
template <class C> struct Tanh {
  EMBER_HOST_DEVICE C operator()(C x) const { return std::tanh(x); }
};
template <class C> struct Sigmoid {
  EMBER_HOST_DEVICE C operator()(C x) const { return sigmoid_(x); }
};
template <class C> struct LeakyRelu {
  C slope;
  EMBER_HOST_DEVICE C operator()(C x) const { return x > C(0) ? x : x * slope; }
};
template <class C> struct Elu {  // alpha * (e^x - 1) for x <= 0; expm1 keeps small x accurate
  C alpha;
  EMBER_HOST_DEVICE C operator()(C x) const { return x > C(0) ? x : alpha * std::expm1(x); }
};
template <class C> struct Gelu {  // x * Phi(x), Phi the standard normal CDF
  EMBER_HOST_DEVICE C operator()(C x) const {
    return C(0.5) * x * (C(1) + std::erf(x * C(kSqrt1_2)));
  }
};
template <class C> struct GeluTanh {  // Phi(x) ~ (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) / 2
  EMBER_HOST_DEVICE C operator()(C x) const {
    C inner = C(kSqrt2OverPi) * (x + C(kGeluCubic) * x * x * x);
    return C(0.5) * x * (C(1) + std::tanh(inner));
  }
};
template <class C> struct Silu {
  EMBER_HOST_DEVICE C operator()(C x) const { return x * sigmoid_(x); }
};
template <class C> struct Softplus {  // log(1 + e^(beta x)) / beta, linear above the threshold
  C beta, threshold;
  EMBER_HOST_DEVICE C operator()(C x) const {
    return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
  }
};
template <class C> struct Erf {
  EMBER_HOST_DEVICE C operator()(C x) const { return std::erf(x); }
};
template <class C> struct Reciprocal {
  EMBER_HOST_DEVICE C operator()(C x) const { return C(1) / x; }
};
// Rounding: the identity on integers.
template <class C> struct Floor {
  EMBER_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) return std::floor(x);
    return x;
  }
};
template <class C> struct Ceil {
  EMBER_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) return std::ceil(x);
    return x;
  }
};
template <class C> struct Round {  // half to even (2.5 -> 2, 3.5 -> 4): the default rounding mode
  EMBER_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) return std::nearbyint(x);
    return x;
  }
};
template <class C> struct Trunc {
  EMBER_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) return std::trunc(x);
    return x;
  }
};
template <class C> struct BitwiseNot {  // integers only; bool's is logical not
  EMBER_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_same_v<C, bool>) {
      return !x;
    } else {
      return C(~x);
    }
  }
};
template <class C> struct Clamp {  // min(max(x, lo), hi): hi wins if lo > hi; NaN passes through
  C lo, hi;
  EMBER_HOST_DEVICE C operator()(C x) const {
    C y = x < lo ? lo : x;
    return y > hi ? hi : y;
  }
};

// A clamp bound as C: +-infinity (a missing bound) saturates to an integer type's range.
template <class C> inline C saturate(double v) {
  if constexpr (std::is_floating_point_v<C>) {
    return C(v);
  } else {
    constexpr C lowest = std::numeric_limits<C>::lowest(), highest = std::numeric_limits<C>::max();
    return v <= double(lowest) ? lowest : (v >= double(highest) ? highest : C(v));
  }
}

// Whether a unary.def op of dtypes rule D has a kernel for compute type C (bool aside).
template <UnaryDTypes D, class C> constexpr bool runs_on() {
  return D == UnaryDTypes::Numeric || std::is_floating_point_v<C>;
}

// visit_unary for a numeric compute type C: the unary.def ops of C's dtypes, then the ops with
// parameters (Clamp on any numeric type, BitwiseNot on integers, the others on floating types).
template <class C, class F> void visit_numeric_unary(UnaryOp op, double p0, double p1, F&& fn) {
  switch (op) {
#define EMBER_UNARY_OP(name, Formula, dtypes, cost, api, doc)                 \
  case UnaryOp::Formula:                                                      \
    if constexpr (runs_on<UnaryDTypes::dtypes, C>()) return fn(Formula<C>{}); \
    break;
#include "ember/ops/unary.def"
#undef EMBER_UNARY_OP
    case UnaryOp::Clamp:
      return fn(Clamp<C>{saturate<C>(p0), saturate<C>(p1)});
    case UnaryOp::BitwiseNot:
      if constexpr (std::is_integral_v<C>) return fn(BitwiseNot<C>{});
      break;
    default:
      break;
  }
  if constexpr (std::is_floating_point_v<C>) {
    switch (op) {
      case UnaryOp::LeakyRelu:
        return fn(LeakyRelu<C>{C(p0)});
      case UnaryOp::Elu:
        return fn(Elu<C>{C(p0)});
      case UnaryOp::Gelu:
        return fn(Gelu<C>{});
      case UnaryOp::GeluTanh:
        return fn(GeluTanh<C>{});
      case UnaryOp::Softplus:
        return fn(Softplus<C>{C(p0), C(p1)});
      default:
        break;
    }
  }
  throw NotSupportedError(unary_op_name(op), "no kernel for this op on this dtype");
}

// Calls fn(functor) with the functor of `op` for compute type C; p0/p1 are the op's scalar
// parameters (see UnaryOp).
template <class C, class F> void visit_unary(UnaryOp op, double p0, double p1, F&& fn) {
  if constexpr (std::is_same_v<C, bool>) {  // bool has bitwise_not only
    if (op == UnaryOp::BitwiseNot) return fn(BitwiseNot<C>{});
    throw NotSupportedError(unary_op_name(op), "no kernel for this op on bool");
  } else {
    visit_numeric_unary<C>(op, p0, p1, fn);
  }
}

// ---------------------------------------------------------------- binary: out = f(a, b)
template <class C> struct Add {
  EMBER_HOST_DEVICE C operator()(C a, C b) const { return C(a + b); }  // bool: a || b
};
template <class C> struct Sub {
  EMBER_HOST_DEVICE C operator()(C a, C b) const { return C(a - b); }
};
template <class C> struct Mul {
  EMBER_HOST_DEVICE C operator()(C a, C b) const { return C(a * b); }  // bool: a && b
};
template <class C> struct Div {  // floating only: the front function promotes integers
  EMBER_HOST_DEVICE C operator()(C a, C b) const { return a / b; }
};
template <class C> struct Pow {
  EMBER_HOST_DEVICE C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      return std::pow(a, b);
    } else {
      // Integer power by repeated squaring. A negative exponent gives 1/a^|b| truncated toward
      // zero: 1 for a == 1, +-1 for a == -1, else 0.
      if constexpr (std::is_signed_v<C>) {
        if (b < C(0)) return a == C(1) ? C(1) : (a == C(-1) ? C((b & C(1)) ? -1 : 1) : C(0));
      }
      C result = 1;
      for (; b != C(0); b = C(b >> 1), a = C(a * a))
        if (b & C(1)) result = C(result * a);
      return result;
    }
  }
};
// Python's floor division and remainder (NumPy's npy_divmod for floating types): the quotient
// rounds toward -infinity and the remainder takes the divisor's sign, a == b * (a // b) + a % b.
template <class C> EMBER_HOST_DEVICE inline C floor_divide_floating(C a, C b) {
  if (b == C(0)) return a / b;  // +-inf or NaN, as NumPy
  C mod = std::fmod(a, b);
  C div = (a - mod) / b;  // exact up to rounding: a - mod is a multiple of b
  if (mod != C(0) && negative(b) != negative(mod)) div -= C(1);
  if (div == C(0)) return std::copysign(C(0), a / b);
  C floordiv = std::floor(div);
  return div - floordiv > C(0.5) ? floordiv + C(1) : floordiv;  // undo rounding in the division
}
template <class C> struct FloorDivide {
  EMBER_HOST_DEVICE C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      return floor_divide_floating(a, b);
    } else {
      if (b == C(0)) return C(0);  // NumPy's result: a kernel cannot raise
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return wrapping_neg(a);  // lowest / -1 would overflow
        C q = C(a / b);                          // truncated toward zero
        return a % b != C(0) && negative(a) != negative(b) ? C(q - C(1)) : q;
      } else {
        return C(a / b);
      }
    }
  }
};
// C's fmod (torch.fmod): the remainder of a / b truncated toward 0, with the dividend's sign.
template <class C> struct Fmod {
  EMBER_HOST_DEVICE C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      return std::fmod(a, b);  // NaN for b == 0
    } else {
      if (b == C(0)) return C(0);  // NumPy's result: a kernel cannot raise
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return C(0);  // lowest % -1 would overflow
      }
      return C(a % b);  // C++'s % truncates toward 0: the dividend's sign
    }
  }
};
// Python's %: fmod's remainder moved onto the divisor's sign.
template <class C> struct Remainder {
  EMBER_HOST_DEVICE C operator()(C a, C b) const {
    const C mod = Fmod<C>{}(a, b);
    if constexpr (std::is_floating_point_v<C>) {
      if (mod == C(0)) return std::copysign(C(0), b);
    }
    return mod != C(0) && negative(mod) != negative(b) ? C(mod + b) : mod;
  }
};
template <class C> struct Atan2 {  // floating only: the front function promotes integers
  EMBER_HOST_DEVICE C operator()(C a, C b) const { return std::atan2(a, b); }
};
template <class C> struct Hypot {  // floating only: the front function promotes integers
  EMBER_HOST_DEVICE C operator()(C a, C b) const { return std::hypot(a, b); }
};
// Integers and bool only.
template <class C> struct BitwiseAnd {
  EMBER_HOST_DEVICE C operator()(C a, C b) const { return C(a & b); }
};
template <class C> struct BitwiseOr {
  EMBER_HOST_DEVICE C operator()(C a, C b) const { return C(a | b); }
};
template <class C> struct BitwiseXor {
  EMBER_HOST_DEVICE C operator()(C a, C b) const { return C(a ^ b); }
};
template <class C> struct Maximum {  // NaN in either operand gives NaN
  EMBER_HOST_DEVICE C operator()(C a, C b) const {
    return isnan_(a) ? a : (isnan_(b) ? b : (a > b ? a : b));
  }
};
template <class C> struct Minimum {
  EMBER_HOST_DEVICE C operator()(C a, C b) const {
    return isnan_(a) ? a : (isnan_(b) ? b : (a < b ? a : b));
  }
};

// ---------------------------------------------------------------- comparisons: bool = f(a, b)
template <class C> struct Eq {
  EMBER_HOST_DEVICE bool operator()(C a, C b) const { return a == b; }
};
template <class C> struct Ne {
  EMBER_HOST_DEVICE bool operator()(C a, C b) const { return a != b; }
};
template <class C> struct Lt {
  EMBER_HOST_DEVICE bool operator()(C a, C b) const { return a < b; }
};
template <class C> struct Le {
  EMBER_HOST_DEVICE bool operator()(C a, C b) const { return a <= b; }
};
template <class C> struct Gt {
  EMBER_HOST_DEVICE bool operator()(C a, C b) const { return a > b; }
};
template <class C> struct Ge {
  EMBER_HOST_DEVICE bool operator()(C a, C b) const { return a >= b; }
};
// Logical ops read any nonzero value (NaN included) as true.
template <class C> struct LogicalAnd {
  EMBER_HOST_DEVICE bool operator()(C a, C b) const { return a != C(0) && b != C(0); }
};
template <class C> struct LogicalOr {
  EMBER_HOST_DEVICE bool operator()(C a, C b) const { return a != C(0) || b != C(0); }
};
template <class C> struct LogicalXor {
  EMBER_HOST_DEVICE bool operator()(C a, C b) const { return (a != C(0)) != (b != C(0)); }
};

// Whether a binary.def op of dtypes rule D has a kernel for compute type C: Numeric refuses two
// bools, Floating (true division) runs on floating types only (the front function promotes
// integers), Integral on integers and bool; Promoted and Bool on every type.
template <BinaryDTypes D, class C> constexpr bool binary_runs_on() {
  switch (D) {
    case BinaryDTypes::Numeric:
      return !std::is_same_v<C, bool>;
    case BinaryDTypes::Floating:
      return std::is_floating_point_v<C>;
    case BinaryDTypes::Integral:
      return std::is_integral_v<C>;
    default:
      return true;
  }
}

// Calls fn(functor) with the functor of `op` for compute type C: a line per binary.def op. The
// functor returns C, or bool for the comparisons and logical ops.
template <class C, class F> void visit_binary(BinaryOp op, F&& fn) {
  switch (op) {
#define EMBER_BINARY_OP(name, Formula, dtypes, scalar, api, doc)                      \
  case BinaryOp::Formula:                                                             \
    if constexpr (binary_runs_on<BinaryDTypes::dtypes, C>()) return fn(Formula<C>{}); \
    break;
#include "ember/ops/binary.def"
#undef EMBER_BINARY_OP
  }
  throw NotSupportedError(binary_op_name(op), "no kernel for this op on this dtype");
}

// ---------------------------------------------------------------- backward: dx = f(grad, x)
// Each is grad * d(forward)/dx in one pass. `x` is the forward input, except for sigmoid and
// tanh, whose derivative is cheaper from the forward output y.
template <class C> struct ReluBackward {
  EMBER_HOST_DEVICE C operator()(C g, C x) const { return x > C(0) ? g : C(0); }
};
template <class C> struct LeakyReluBackward {
  C slope;
  EMBER_HOST_DEVICE C operator()(C g, C x) const { return x > C(0) ? g : g * slope; }
};
template <class C> struct EluBackward {  // d/dx alpha (e^x - 1) = alpha e^x
  C alpha;
  EMBER_HOST_DEVICE C operator()(C g, C x) const { return x > C(0) ? g : g * alpha * std::exp(x); }
};
template <class C> struct GeluBackward {  // d/dx x Phi(x) = Phi(x) + x phi(x)
  EMBER_HOST_DEVICE C operator()(C g, C x) const {
    C cdf = C(0.5) * (C(1) + std::erf(x * C(kSqrt1_2)));
    C pdf = C(kInvSqrt2Pi) * std::exp(C(-0.5) * x * x);
    return g * (cdf + x * pdf);
  }
};
template <class C> struct GeluTanhBackward {  // t = tanh(u), u = k (x + c x^3)
  EMBER_HOST_DEVICE C operator()(C g, C x) const {
    C x2 = x * x;
    C t = std::tanh(C(kSqrt2OverPi) * (x + C(kGeluCubic) * x2 * x));
    C du = C(kSqrt2OverPi) * (C(1) + C(3 * kGeluCubic) * x2);
    return g * (C(0.5) * (C(1) + t) + C(0.5) * x * (C(1) - t * t) * du);
  }
};
template <class C> struct SiluBackward {  // d/dx x s(x) = s (1 + x (1 - s))
  EMBER_HOST_DEVICE C operator()(C g, C x) const {
    C s = sigmoid_(x);
    return g * s * (C(1) + x * (C(1) - s));
  }
};
template <class C> struct SoftplusBackward {  // sigmoid(beta x), or 1 in the linear region
  C beta, threshold;
  EMBER_HOST_DEVICE C operator()(C g, C x) const {
    return x * beta > threshold ? g : g * sigmoid_(x * beta);
  }
};
template <class C> struct SigmoidBackward {  // from y = sigmoid(x): y (1 - y)
  EMBER_HOST_DEVICE C operator()(C g, C y) const { return g * y * (C(1) - y); }
};
template <class C> struct TanhBackward {  // from y = tanh(x): 1 - y^2
  EMBER_HOST_DEVICE C operator()(C g, C y) const { return g * (C(1) - y * y); }
};

template <class C, class F> void visit_backward(BackwardOp op, double p0, double p1, F&& fn) {
  switch (op) {
    case BackwardOp::Relu:
      return fn(ReluBackward<C>{});
    case BackwardOp::LeakyRelu:
      return fn(LeakyReluBackward<C>{C(p0)});
    case BackwardOp::Elu:
      return fn(EluBackward<C>{C(p0)});
    case BackwardOp::Gelu:
      return fn(GeluBackward<C>{});
    case BackwardOp::GeluTanh:
      return fn(GeluTanhBackward<C>{});
    case BackwardOp::Silu:
      return fn(SiluBackward<C>{});
    case BackwardOp::Softplus:
      return fn(SoftplusBackward<C>{C(p0), C(p1)});
    case BackwardOp::Sigmoid:
      return fn(SigmoidBackward<C>{});
    case BackwardOp::Tanh:
      return fn(TanhBackward<C>{});
  }
}

// ---------------------------------------------------------------- value tests: bool = f(x)
template <class C> struct IsNan {
  EMBER_HOST_DEVICE bool operator()(C x) const { return isnan_(x); }
};
template <class C> struct IsInf {
  EMBER_HOST_DEVICE bool operator()(C x) const { return !isfinite_(x) && !isnan_(x); }
};
template <class C> struct IsFinite {
  EMBER_HOST_DEVICE bool operator()(C x) const { return isfinite_(x); }
};

template <class C, class F> void visit_predicate(PredicateOp op, F&& fn) {
  switch (op) {
    case PredicateOp::IsNan:
      return fn(IsNan<C>{});
    case PredicateOp::IsInf:
      return fn(IsInf<C>{});
    case PredicateOp::IsFinite:
      return fn(IsFinite<C>{});
  }
}

// NaN, +inf and -inf replaced; everything else (every integer) unchanged.
template <class C> struct NanToNum {
  C nan, posinf, neginf;
  EMBER_HOST_DEVICE C operator()(C x) const {
    if (isfinite_(x)) return x;
    if (isnan_(x)) return nan;
    return negative(x) ? neginf : posinf;
  }
};

}  // namespace ember::math
