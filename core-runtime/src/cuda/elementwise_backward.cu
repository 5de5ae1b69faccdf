// elementwise_backward.cu — the CUDA kernels of the unary ops' gradients: every formula of
// math::visit_backward over the floating dtypes, through the GPU elementwise engine.
#include "cuda/elementwise.cuh"
#include "ops/elementwise_math.h"

namespace ember::cuda {

void backward(BackwardOp op, const Tensor& grad, const Tensor& x, Tensor& out, double p0,
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

}  // namespace ember::cuda
