// elementwise_unary.cu — the CUDA unary kernels: every formula of math::visit_unary over every
// dtype, through the GPU elementwise engine (cuda/loops.cuh).
#include "cuda/elementwise.cuh"
#include "ops/elementwise_math.h"

namespace ember::cuda {

void unary(UnaryOp op, const Tensor& x, Tensor& out, double p0, double p1) {
  const char* name = unary_op_name(op);
  dispatch_all(out.dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    math::visit_unary<C>(op, p0, p1, [&](auto f) {
      gpu_map<T, T>(name, out, {x}, OnCompute<T, C, decltype(f)>{f});
    });
  });
}

}  // namespace ember::cuda
