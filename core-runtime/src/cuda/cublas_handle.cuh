// cublas_handle.cuh — cuBLAS for the CUDA backend (internal header): a handle per thread and
// device, and blas_gemm(), the one function through which every GEMM of the backend (matmul,
// linear, the im2col convolutions) reaches cuBLAS (cuBLASLt for float16 and bfloat16).
//
// GemmArgs describes a batched GEMM on *row-major logical* matrices whose memory layout is given
// by strides, so a transposed operand (a.t()) is described, never copied. The hand-tiled kernels
// (gemm_tiled.cuh) take the same description.
//
// Precision: float32 GEMMs run in true FP32 (CUBLAS_DEFAULT_MATH, no TF32), so results match the
// CPU to float32 rounding. set_allow_tf32(true) (ember/cuda.h; EMBER_ALLOW_TF32=1 in the
// environment starts it on) switches cuBLAS to TF32 tensor cores for float32: about 8x faster on
// an H100/H200, with a 10-bit mantissa in the products. float16/bfloat16 always use tensor cores
// with float32 accumulation, through cuBLASLt (the algorithm its heuristic ranks first for the
// layouts; cublasGemmEx where it offers none).
#pragma once
#include <cublas_v2.h>

#include <cstdint>

#include "ember/device.h"
#include "ember/dtype.h"
#include "ops/matmul_kernels.h"

namespace ember::cuda {

// One operand of a batched GEMM: element (r, c) of matrix z lives at
//   data[z * batch_stride + r * row_stride + c * col_stride]      (strides in elements, >= 0)
template <class T> struct MatrixRef {
  T* data = nullptr;
  int64_t row_stride = 0, col_stride = 1, batch_stride = 0;
  __host__ __device__ T* ptr(int64_t z, int64_t r, int64_t c) const {
    return data + z * batch_stride + r * row_stride + c * col_stride;
  }
};

// For z in [0, batch):  C[z] = alpha * A[z] · B[z] + beta * C[z]
//   A: [m, k]   B: [k, n]   C: [m, n]
// beta == 0 writes C without reading it (C may hold garbage, even NaN), as BLAS does.
template <class T> struct GemmArgs {
  int64_t batch = 1;
  int m = 0, n = 0, k = 0;
  MatrixRef<const T> a, b;
  MatrixRef<T> c;
  compute_t<T> alpha = 1, beta = 0;
};

// The calling thread's cuBLAS handle of `device`, created on the thread's first GEMM there (a
// thread's handles go back to a pool when it exits, and are never destroyed: they live as long
// as the CUDA context). Each call binds it to the thread's current stream and to a workspace owned
// by that (device, stream) pair, so that cuBLAS never allocates behind the caching allocator's
// back or inside a CUDA-graph capture (once a stream has run a GEMM), and GEMMs on two streams
// never share scratch memory.
cublasHandle_t cublas_handle(Device device);

// Whether cuBLAS can read `m` (a [rows, cols] operand) in place: one of its two strides must be 1
// and the other a valid leading dimension (>= the size along the unit-stride dim). Callers copy
// an operand that fails this into a contiguous buffer first.
template <class T> bool blas_readable(const MatrixRef<T>& m, int64_t rows, int64_t cols);

// Runs g on `device`'s stream with cuBLAS. T is float, double, Half or BFloat16; A and B must be
// blas_readable, and C row-major (col_stride 1, row_stride >= n). `op` names the Ember op in
// errors.
template <class T> void blas_gemm(Device device, const GemmArgs<T>& g, const char* op);

// linear's and linear_act's GEMM (batch 1, g.beta 0) with cuBLASLt's epilogue:
// C = act(A·B + bias), act none, relu or gelu_tanh (cuBLASLt's gelu is the tanh formula), bias [n]
// (null: none; with act none there must be one), and for gelu_tanh, when pre is not null,
// A·B + bias written to pre (GELU_AUX; laid out as C, with C's row stride, which cuBLASLt wants a
// multiple of 8). T is float, Half or BFloat16. Returns false, having queued nothing, when the
// operands do not fit (a layout of blas_gemm's rules, pre's row stride, an activation cuBLASLt
// lacks) or cuBLASLt's heuristic offers no algorithm for them: the caller then runs the GEMM and
// the activation apart.
template <class T>
bool blas_gemm_act(Device device, const GemmArgs<T>& g, const T* bias, T* pre, GemmActivation act,
                   const char* op);

}  // namespace ember::cuda
