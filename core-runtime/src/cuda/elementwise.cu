// elementwise.cu — CUDA kernels of the elementwise family: the same formulas as the CPU
// (ops/elementwise_math.h), run through the GPU elementwise engine (cuda/loops.cuh), which
// handles strides, broadcasting, vectorised loads and the launch. Here: where, the predicates,
// nan_to_num and the family's registration; unary, binary and backward have files of their own
// (cuda/elementwise.cuh says why).
#include "cuda/elementwise.cuh"
#include "kernels.h"
#include "ops/elementwise_math.h"

namespace ember::cuda {

struct Select {
  template <class T> __device__ T operator()(bool c, T a, T b) const { return c ? a : b; }
};

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
