// elementwise.cu — CUDA kernels of the elementwise family: the same formulas as the CPU
// (ops/elementwise_math.h), run through the GPU elementwise engine (cuda/loops.cuh), which
// handles strides, broadcasting, vectorised loads and the launch.
#include "cuda/loops.cuh"
#include "kernels.h"
#include "ops/elementwise_kernels.h"
#include "ops/elementwise_math.h"

namespace ember::cuda {

// Runs a formula written over the compute type C on stored values: each input converts to C
// (float for float16/bfloat16), the result converts to Out. A struct rather than a lambda:
// nvcc forbids __device__ lambdas inside dispatch_*'s generic lambdas.
template <class Out, class C, class F> struct OnCompute {
  F f;
  template <class... T> __device__ Out operator()(T... x) const { return Out(f(C(x)...)); }
};

struct Select {
  template <class T> __device__ T operator()(bool c, T a, T b) const { return c ? a : b; }
};

// x, out: [*] of one dtype (bool for bitwise_not only).
static void unary(UnaryOp op, const Tensor& x, Tensor& out, double p0, double p1) {
  const char* name = unary_op_name(op);
  dispatch_all(out.dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    math::visit_unary<C>(op, p0, p1, [&](auto f) {
      gpu_map<T, T>(name, out, {x}, OnCompute<T, C, decltype(f)>{f});
    });
  });
}

// a, b: [*] of one dtype; out: [*] of that dtype, or bool where the functor returns bool (the
// comparisons and logical ops).
static void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  const char* name = binary_op_name(op);
  dispatch_all(a.dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    math::visit_binary<C>(op, [&](auto f) {
      using F = decltype(f);
      if constexpr (std::is_same_v<decltype(f(C(), C())), bool>) {
        gpu_map<bool, T, T>(name, out, {a, b}, OnCompute<bool, C, F>{f});
      } else {
        gpu_map<T, T, T>(name, out, {a, b}, OnCompute<T, C, F>{f});
      }
    });
  });
}

// grad, x, out: [*] of one floating dtype.
static void backward(BackwardOp op, const Tensor& grad, const Tensor& x, Tensor& out, double p0,
                     double p1) {
  const char* name = backward_op_name(op);
  dispatch_floating(out.dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    math::visit_backward<C>(op, p0, p1, [&](auto f) {
      gpu_map<T, T, T>(name, out, {grad, x}, OnCompute<T, C, decltype(f)>{f});
    });
  });
}

// cond: [*] bool; a, b, out: [*] of one dtype.
static void where(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out) {
  dispatch_all(out.dtype(), "where", [&](auto tag) {
    using T = typename decltype(tag)::type;
    gpu_map<T, bool, T, T>("where", out, {cond, a, b}, Select{});
  });
}

// x: [*] of any dtype; out: [*] bool.
static void predicate(PredicateOp op, const Tensor& x, Tensor& out) {
  const char* name = predicate_op_name(op);
  dispatch_all(x.dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    math::visit_predicate<C>(op, [&](auto f) {
      gpu_map<bool, T>(name, out, {x}, OnCompute<bool, C, decltype(f)>{f});
    });
  });
}

// x, out: [*] of one dtype.
static void nan_to_num(const Tensor& x, Tensor& out, double nan, double posinf, double neginf) {
  dispatch_all(out.dtype(), "nan_to_num", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    math::NanToNum<C> f{C(nan), C(posinf), C(neginf)};
    gpu_map<T, T>("nan_to_num", out, {x}, OnCompute<T, C, decltype(f)>{f});
  });
}

void register_elementwise(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/elementwise.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cuda
