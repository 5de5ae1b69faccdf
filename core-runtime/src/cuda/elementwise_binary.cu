// elementwise_binary.cu — the CUDA binary kernels: every formula of math::visit_binary over
// every dtype, through the GPU elementwise engine (cuda/loops.cuh).
#include "cuda/elementwise.cuh"
#include "ops/elementwise_math.h"

namespace ember::cuda {

void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
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

}  // namespace ember::cuda
