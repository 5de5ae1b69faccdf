// elementwise.cuh — what the CUDA elementwise family's files share: the functor that runs a
// formula over its compute type, and the three heaviest entry points, each compiled in a file of
// its own (elementwise_unary.cu, elementwise_binary.cu, elementwise_backward.cu) so that a build
// compiles them side by side; elementwise.cu holds the rest and registers them all.
#pragma once

#include "cuda/loops.cuh"
#include "ops/elementwise_kernels.h"

namespace ember::cuda {

// Runs a formula written over the compute type C on stored values: each input converts to C
// (float for float16/bfloat16), the result converts to Out. A struct rather than a lambda:
// nvcc forbids __device__ lambdas inside dispatch_*'s generic lambdas.
template <class Out, class C, class F> struct OnCompute {
  F f;
  template <class... T> __device__ Out operator()(T... x) const { return Out(f(C(x)...)); }
};

// x, out: [*] of one dtype (bool for bitwise_not only).
void unary(UnaryOp op, const Tensor& x, Tensor& out, double p0, double p1);
// a, b: [*] of one dtype; out: [*] of that dtype, or bool where the functor returns bool (the
// comparisons and logical ops).
void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out);
// grad, x, out: [*] of one floating dtype.
void backward(BackwardOp op, const Tensor& grad, const Tensor& x, Tensor& out, double p0,
              double p1);

}  // namespace ember::cuda
