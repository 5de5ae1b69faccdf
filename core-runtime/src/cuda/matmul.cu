// matmul.cu — the CUDA GEMM kernel behind matmul and linear (ops/matmul_kernels.h).
//
//   out[p] = op(a[p]) · op(b[p])  (+ out[p] when accumulating)      p in [0, batch)
//
// Which code runs:
//   float32, float64, float16, bfloat16, MatmulAlgo::Default -> cuBLAS (cublas_handle.cuh), one
//       strided-batched call (cuBLASLt's for float16/bfloat16, on tensor cores); transposes are
//       passed as cuBLAS flags, never copied. float32 stays true FP32 unless
//       set_allow_tf32(true) (ember/cuda.h).
//   float32, MatmulAlgo::Tiled -> the hand-written SGEMM (gemm_tiled.cuh), version
//       EMBER_GEMM_TILED_VERSION (1..5) or, unset, the fastest (kTiledBest).
//   float64, float16, bfloat16, MatmulAlgo::Tiled -> tiled v2 templated on the dtype.
//   integer dtypes (cuBLAS has no integer GEMM) -> tiled v2 with int64 accumulation, whatever the
//       algo.
// gemm_act (linear's bias, linear_act): float32, float16, bfloat16 -> one cuBLASLt call with a
//       BIAS or RELU/GELU (+ BIAS, + AUX for gelu's pre) epilogue (blas_gemm_act); anything else
//       -> false, and linear or linear_act runs gemm over the bias, then the activation's kernel.
#include <climits>
#include <cstdlib>
#include <string>

#include "cuda/cublas_handle.cuh"
#include "cuda/gemm_tiled.cuh"
#include "cuda/launch.cuh"
#include "kernels.h"
#include "ops/checks.h"
#include "ops/matmul_kernels.h"

namespace ember::cuda {
namespace {

// EMBER_GEMM_TILED_VERSION, read at every call so that a benchmark can compare versions in one
// process; unset or empty means kTiledBest.
int tiled_version() {
  const char* v = std::getenv("EMBER_GEMM_TILED_VERSION");
  if (!v || !*v) return kTiledBest;
  char* end = nullptr;
  long version = std::strtol(v, &end, 10);
  if (*end != '\0' || version < 1 || version > kTiledVersions)
    throw ValueError("matmul", std::string("EMBER_GEMM_TILED_VERSION='") + v +
                                   "'; expected a version 1.." + std::to_string(kTiledVersions) +
                                   ", or unset for the fastest");
  return int(version);
}

// The GemmArgs view of gemm_kernel's operands. a[p] is [m, k] (or [k, m] read transposed), b[p]
// is [k, n] (or [n, k] read transposed), out[p] is [m, n]; a transposed read swaps the strides.
template <class T>
GemmArgs<T> gemm_args(const Tensor& a, const Tensor& b, Tensor& out, const GemmFlags& f) {
  GemmArgs<T> g;
  g.batch = out.size(0);
  g.m = int(out.size(1));
  g.n = int(out.size(2));
  g.k = int(f.trans_a ? a.size(1) : a.size(2));
  g.a = {a.data<T>(), f.trans_a ? a.stride(2) : a.stride(1), f.trans_a ? a.stride(1) : a.stride(2),
         a.stride(0)};
  g.b = {b.data<T>(), f.trans_b ? b.stride(2) : b.stride(1), f.trans_b ? b.stride(1) : b.stride(2),
         b.stride(0)};
  g.c = {out.data<T>(), out.stride(1), out.stride(2), out.stride(0)};
  g.alpha = compute_t<T>(1);
  g.beta = compute_t<T>(f.accumulate ? 1 : 0);
  return g;
}

void gemm(const Tensor& a, const Tensor& b, Tensor& out, const GemmFlags& flags) {
  if (out.numel() == 0) return;
  const int64_t k = flags.trans_a ? a.size(1) : a.size(2);
  if (k == 0) {  // an empty sum: zeros, or out unchanged when accumulating
    if (!flags.accumulate) out.zero_();
    return;
  }
  if (out.size(1) > INT_MAX || out.size(2) > INT_MAX || k > INT_MAX)
    throw NotSupportedError("matmul", "matrix sizes above 2^31 - 1 are not supported on CUDA; " +
                                          operands({{"a", a}, {"b", b}}));
  DeviceGuard guard(out.device());
  dispatch_numeric(out.dtype(), "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const GemmArgs<T> g = gemm_args<T>(a, b, out, flags);
    if constexpr (std::is_integral_v<T>) {
      gemm_tiled_generic(g, stream(out.device()));
    } else {
      if (flags.algo == MatmulAlgo::Default) {
        blas_gemm(out.device(), g, "matmul");
        return;  // cuBLAS reports its own errors
      }
      if constexpr (std::is_same_v<T, float>) gemm_tiled(tiled_version(), g, stream(out.device()));
      else gemm_tiled_generic(g, stream(out.device()));
    }
    check_launch("matmul", {&a, &b, &out});
  });
}

bool gemm_act(const Tensor& a, const Tensor& b, const Tensor& bias, Tensor& out, Tensor& pre,
              const GemmFlags& flags, GemmActivation act) {
  // cuBLASLt's GELU is the tanh approximation: the exact (erf) gelu is linear_act's GEMM then the
  // library's gelu kernel. cuBLASLt's relu aux output is a bit mask, not the pre-activation
  // values. Both are refused by blas_gemm_act, as is linear without a bias (nothing to fuse).
  if (flags.algo != MatmulAlgo::Default || flags.accumulate || out.size(0) != 1) return false;
  const int64_t k = flags.trans_a ? a.size(1) : a.size(2);
  if (out.numel() == 0 || k == 0) return false;
  if (out.size(1) > INT_MAX || out.size(2) > INT_MAX || k > INT_MAX) return false;
  // The BIAS epilogue reads a packed vector.
  if (bias.defined() && bias.numel() > 1 && bias.stride(0) != 1) return false;
  DeviceGuard guard(out.device());
  bool done = false;
  dispatch_floating(out.dtype(), "linear_act", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, double>) {
      const GemmArgs<T> g = gemm_args<T>(a, b, out, flags);
      done = blas_gemm_act<T>(out.device(), g, bias.defined() ? bias.data<T>() : nullptr,
                              pre.defined() ? pre.data<T>() : nullptr, act,
                              act == GemmActivation::None ? "linear" : "linear_act");
    }
  });
  return done;  // cuBLASLt reports its own errors
}

}  // namespace

void register_matmul(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/matmul.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cuda
