// matmul_kernels.h — kernel table of the matmul family (internal header).
#pragma once
#include "dispatch.h"
#include "ember/ops/matmul.h"
#include "ember/tensor.h"

namespace ember {

// How gemm_kernel reads its operands and writes its output.
struct GemmFlags {
  bool trans_a = false;     // use a[p]^T in place of a[p]
  bool trans_b = false;     // use b[p]^T in place of b[p]
  bool accumulate = false;  // out += product (BLAS beta = 1) instead of out = product (beta = 0)
  MatmulAlgo algo = MatmulAlgo::Default;
};

// Batched GEMM: out[p] = op(a[p]) @ op(b[p]) (+ out[p] when accumulate), p in [0, batch).
//   a:   [batch, m, k], or [batch, k, m] with trans_a (op(a[p]) = a[p]^T is [m, k])
//   b:   [batch, k, n], or [batch, n, k] with trans_b (op(b[p]) = b[p]^T is [k, n])
//   out: [batch, m, n], contiguous.
// a, b and out share one dtype (any numeric dtype but bool) and one device. Any of m, n, k and
// batch may be 0 (k == 0 gives zeros, or leaves out unchanged when accumulating).
// Layout promise, arranged by the front function so that BLAS/cuBLAS can read views directly:
//   - a's and b's last dim has stride 1;
//   - their middle stride (the BLAS "leading dimension") is >= max(1, size of the last dim);
//   - their batch stride is any value >= 0 (0 when an operand is broadcast over the batch).
EMBER_KERNEL(gemm_kernel,
             void(const Tensor& a, const Tensor& b, Tensor& out, const GemmFlags& flags));

}  // namespace ember
