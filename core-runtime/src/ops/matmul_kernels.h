// matmul_kernels.h — the flags of gemm_kernel, whose slot is in kernels/matmul.def (internal
// header).
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

// The activation gemm_act_kernel applies in the GEMM's epilogue: linear_act's, or None for
// linear's bias alone.
enum class GemmActivation { None, Relu, Gelu, GeluTanh };

}  // namespace ember
