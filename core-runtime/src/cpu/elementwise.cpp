// elementwise.cpp — CPU kernels of the elementwise family. Each kernel picks the element type,
// takes the op's formula from ops/elementwise_math.h and runs it through the CPU elementwise
// engine (cpu_map), which handles strides, broadcasting, threads and vectorisable inner loops.
// T is the stored type, C = compute_t<T> the type the formula runs in (float for half types).
//
// The formulas that call exp, log, tanh, erf or sigmoid in float are swapped for the same formula
// over the vectorisable versions of cpu/vector_math.h (vectorised() below): a loop over std::tanh
// calls libm once per element, a loop over tanh_vectorisable runs 4 to 16 lanes per instruction.
// CUDA keeps elementwise_math.h's formulas with its own device functions.
#include "kernels.h"
#include "ops/elementwise_kernels.h"
#include "ops/elementwise_math.h"

// From here on compiled for this file's instruction set; cpu/isa_begin.h says why the CPU
// backend's own headers come after it.
#include "cpu/isa_begin.h"
// The CPU backend's headers.
#include "cpu/loops.h"
#include "cpu/vector_math.h"

namespace ember::cpu::EMBER_CPU_ISA {

// ---- the float formulas over vectorisable functions ------------------------------------------
// Each is the functor of elementwise_math.h it replaces, written out with the same arithmetic
// unless its comment says otherwise.
// Every other functor, and every one over double, is used as it is. The lambdas are always
// inlined, as the functions they call are: GCC leaves one this long out of line otherwise, and a
// loop that calls a function runs one element at a time.
template <class F> F vectorised(F f) { return f; }

inline auto vectorised(math::Exp<float>) {
  return [](float x) __attribute__((always_inline)) { return exp_vectorisable(x); };
}
inline auto vectorised(math::Log<float>) {
  return [](float x) __attribute__((always_inline)) { return log_vectorisable(x); };
}
inline auto vectorised(math::Tanh<float>) {
  return [](float x) __attribute__((always_inline)) { return tanh_vectorisable(x); };
}
inline auto vectorised(math::Sigmoid<float>) {
  return [](float x) __attribute__((always_inline)) { return sigmoid_vectorisable(x); };
}
inline auto vectorised(math::Erf<float>) {
  return [](float x) __attribute__((always_inline)) { return erf_vectorisable(x); };
}
inline auto vectorised(math::Silu<float>) {
  return [](float x) __attribute__((always_inline)) { return x * sigmoid_vectorisable(x); };
}
inline auto vectorised(math::Gelu<float>) {
  return [](float x) __attribute__((always_inline)) {
    return 0.5f * x * (1.0f + erf_vectorisable(x * float(math::kSqrt1_2)));
  };
}
// 0.5 x (1 + tanh(u)) written as x / (1 + e^-2u), the same function: one exp and one division
// instead of tanh's, and no cancellation in 1 + tanh(u) where u << 0 (x < -3), so that the result
// keeps its relative accuracy there. x = -inf gives NaN as before (-inf / inf).
inline auto vectorised(math::GeluTanh<float>) {
  return [](float x) __attribute__((always_inline)) {
    const float u = float(math::kSqrt2OverPi) * (x + float(math::kGeluCubic) * x * x * x);
    return x / (1.0f + exp_vectorisable(-2.0f * u));
  };
}

inline auto vectorised(math::EluBackward<float> f) {
  return [alpha = f.alpha](float g, float x) __attribute__((always_inline)) {
    return x > 0.0f ? g : g * alpha * exp_vectorisable(x);
  };
}
inline auto vectorised(math::GeluBackward<float>) {
  return [](float g, float x) __attribute__((always_inline)) {
    const float cdf = 0.5f * (1.0f + erf_vectorisable(x * float(math::kSqrt1_2)));
    const float pdf = float(math::kInvSqrt2Pi) * exp_vectorisable(-0.5f * x * x);
    return g * (cdf + x * pdf);
  };
}
inline auto vectorised(math::GeluTanhBackward<float>) {
  return [](float g, float x) __attribute__((always_inline)) {
    const float x2 = x * x;
    const float t =
        tanh_vectorisable(float(math::kSqrt2OverPi) * (x + float(math::kGeluCubic) * x2 * x));
    const float du = float(math::kSqrt2OverPi) * (1.0f + float(3 * math::kGeluCubic) * x2);
    return g * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
  };
}
inline auto vectorised(math::SiluBackward<float>) {
  return [](float g, float x) __attribute__((always_inline)) {
    const float s = sigmoid_vectorisable(x);
    return g * s * (1.0f + x * (1.0f - s));
  };
}
inline auto vectorised(math::SoftplusBackward<float> f) {
  return [ beta = f.beta, threshold = f.threshold ](float g, float x)
      __attribute__((always_inline)) {
    return x * beta > threshold ? g : g * sigmoid_vectorisable(x * beta);
  };
}

// ---- the kernels ------------------------------------------------------------------------------

// The work of one element (parallel.h): the ops that evaluate exp, log, tanh, erf, sin or cos
// per element cost several adds, so smaller tensors of them are worth a second thread.
static int64_t unary_cost(UnaryOp op) {
  switch (op) {
#define EMBER_UNARY_OP(name, Formula, dtypes, work, api, doc) \
  case UnaryOp::Formula:                                      \
    return cost::k##work;
#include "ember/ops/unary.def"
#undef EMBER_UNARY_OP
    case UnaryOp::Elu:
    case UnaryOp::Gelu:
    case UnaryOp::GeluTanh:
    case UnaryOp::Softplus:
      return cost::kTranscendental;
    default:
      return cost::kCheap;
  }
}
static int64_t backward_cost(BackwardOp op) {
  return op == BackwardOp::Relu || op == BackwardOp::LeakyRelu ? cost::kCheap
                                                               : cost::kTranscendental;
}

// x, out: [*] of one dtype (bool for bitwise_not only).
static void unary(UnaryOp op, const Tensor& x, Tensor& out, double p0, double p1) {
  dispatch_all(out.dtype(), unary_op_name(op), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    math::visit_unary<C>(op, p0, p1, [&](auto formula) {
      cpu_map<T, T>(
          out,
          {x}, [f = vectorised(formula)](T v) __attribute__((always_inline)) { return T(f(C(v))); },
          unary_cost(op));
    });
  });
}

// a, b: [*] of one dtype; out: [*] of that dtype, or bool where the functor returns bool (the
// comparisons and logical ops; on bool operands every op's result is bool, which is out's dtype
// then too).
static void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  dispatch_all(a.dtype(), binary_op_name(op), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    math::visit_binary<C>(op, [&](auto f) {
      if constexpr (std::is_same_v<decltype(f(C(), C())), bool>) {
        cpu_map<bool, T, T>(out, {a, b}, [f](T u, T v) { return f(C(u), C(v)); });
      } else {
        cpu_map<T, T, T>(out, {a, b}, [f](T u, T v) { return T(f(C(u), C(v))); });
      }
    });
  });
}

// grad, x, out: [*] of one floating dtype.
static void backward(BackwardOp op, const Tensor& grad, const Tensor& x, Tensor& out, double p0,
                     double p1) {
  dispatch_floating(out.dtype(), backward_op_name(op), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    math::visit_backward<C>(op, p0, p1, [&](auto formula) {
      cpu_map<T, T, T>(
          out, {grad, x},
          [f = vectorised(formula)](T g, T v)
              __attribute__((always_inline)) { return T(f(C(g), C(v))); },
          backward_cost(op));
    });
  });
}

// cond: [*] bool; a, b, out: [*] of one dtype.
static void where(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out) {
  dispatch_all(out.dtype(), "where", [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu_map<T, bool, T, T>(out, {cond, a, b}, [](bool c, T u, T v) { return c ? u : v; });
  });
}

// x: [*] of any dtype; out: [*] bool.
static void predicate(PredicateOp op, const Tensor& x, Tensor& out) {
  dispatch_all(x.dtype(), predicate_op_name(op), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    math::visit_predicate<C>(op, [&](auto f) {
      cpu_map<bool, T>(out, {x}, [f](T v) { return f(C(v)); });
    });
  });
}

// x, out: [*] of one dtype.
static void nan_to_num(const Tensor& x, Tensor& out, double nan, double posinf, double neginf) {
  dispatch_all(out.dtype(), "nan_to_num", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    math::NanToNum<C> f{C(nan), C(posinf), C(neginf)};
    cpu_map<T, T>(out, {x}, [f](T v) { return T(f(C(v))); });
  });
}

void register_elementwise(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/elementwise.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cpu::EMBER_CPU_ISA

#include "cpu/isa_end.h"
