// blas.h — row-major GEMM on top of the Fortran BLAS symbols sgemm_/dgemm_ (internal header).
// Every BLAS (OpenBLAS, MKL, the reference one) exports these, so no cblas.h is needed; the
// build links the system's BLAS, or the OpenBLAS of scipy-openblas32 (EMBER_SCIPY_OPENBLAS in
// CMakeLists.txt), whose every symbol carries the prefix EMBER_BLAS_PREFIX (scipy_).
#pragma once
#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "cpu/isa.h"
#include "cpu/parallel.h"
#include "ember/error.h"

// EMBER_BLAS(sgemm_) is the BLAS's name for sgemm_.
#define EMBER_BLAS_JOIN(prefix, name) prefix##name
#define EMBER_BLAS_EXPAND(prefix, name) EMBER_BLAS_JOIN(prefix, name)
#ifdef EMBER_BLAS_PREFIX
#define EMBER_BLAS(name) EMBER_BLAS_EXPAND(EMBER_BLAS_PREFIX, name)
#else
#define EMBER_BLAS(name) name
#endif

extern "C" {
// Column-major C = alpha * op(A) @ op(B) + beta * C. Fortran passes everything by pointer; the
// two trailing lengths are the hidden lengths of the character arguments (gfortran's ABI).
void EMBER_BLAS(sgemm_)(const char* trans_a, const char* trans_b, const int* m, const int* n,
                        const int* k, const float* alpha, const float* a, const int* lda,
                        const float* b, const int* ldb, const float* beta, float* c, const int* ldc,
                        size_t trans_a_len, size_t trans_b_len);
void EMBER_BLAS(dgemm_)(const char* trans_a, const char* trans_b, const int* m, const int* n,
                        const int* k, const double* alpha, const double* a, const int* lda,
                        const double* b, const int* ldb, const double* beta, double* c,
                        const int* ldc, size_t trans_a_len, size_t trans_b_len);

// OpenBLAS's thread control, declared weak: null when the BLAS linked is another one.
void EMBER_BLAS(openblas_set_num_threads)(int threads) __attribute__((weak));
}

namespace ember::cpu::EMBER_CPU_ISA {

// BLAS takes 32-bit sizes.
inline int blas_int(int64_t v) {
  if (v > INT_MAX)
    throw NotSupportedError("matmul", "a size or stride of " + std::to_string(v) +
                                          " exceeds the 32-bit BLAS interface; split the "
                                          "operation into smaller pieces");
  return int(v);
}

// Row-major C[m, n] = op(A) @ op(B) + beta * C on the calling thread, where op(A) = A (stored
// [m, k]) or A^T (stored [k, m]) and likewise for B ([k, n] or [n, k]); lda, ldb, ldc are the row
// strides as stored. A row-major matrix is its transpose in column-major, and
// C^T = op(B)^T @ op(A)^T, so BLAS gets the operands swapped and each transpose flag kept.
template <class T>
void gemm_one_thread(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a,
                     int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum: BLAS would reject the leading dims of the empty operands
    if (beta == T(0))
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    return;
  }
  const char ta = trans_b ? 'T' : 'N', tb = trans_a ? 'T' : 'N';
  const int M = blas_int(n), N = blas_int(m), K = blas_int(k);
  const int LDA = blas_int(ldb), LDB = blas_int(lda), LDC = blas_int(ldc);
  const T one = 1;
  if constexpr (std::is_same_v<T, float>)
    EMBER_BLAS(sgemm_)(&ta, &tb, &M, &N, &K, &one, b, &LDA, a, &LDB, &beta, c, &LDC, 1, 1);
  else EMBER_BLAS(dgemm_)(&ta, &tb, &M, &N, &K, &one, b, &LDA, a, &LDB, &beta, c, &LDC, 1, 1);
}

// One thread pool for everything. OpenBLAS (pthreads build) threads a large GEMM with a pool of
// its own whose threads spin while they wait; two pools on the same cores take turns stealing
// them from each other (a small CNN's training step ran 4x slower on 2 cores), and OpenBLAS's
// spinning would take a busy machine's cores as OpenMP's did (thread_pool.cpp). So OpenBLAS is
// kept single-threaded, and a GEMM called outside a parallel loop is split here over Ember's pool
// instead, to ember::get_num_threads() threads: C's rows (or, when it has few, its columns) in
// equal bands, one single-threaded GEMM each. With another BLAS the first part does nothing.
// A band's GEMM may round some elements differently from the whole one on CPUs where the BLAS
// computes the tiles at a band's edge with another kernel (a 700-row product split at row 350
// differed in the last bits of rows 336-349 on a 16-core Xeon), so a GEMM's bits, unlike those of
// Ember's own kernels, can depend on the thread count, as with PyTorch's BLAS.
inline void keep_blas_single_threaded() {
  static const bool done = [] {
    if (EMBER_BLAS(openblas_set_num_threads)) EMBER_BLAS(openblas_set_num_threads)(1);
    return true;
  }();
  (void)done;
}

// Below this many multiply-adds a GEMM runs on one thread: 2^20 is two grains of a parallel loop
// at cost::gemm's rate (parallel.h). (It was 2^18, which split the 64-128-10 MLP's GEMMs, of a
// few microseconds each, into halves that cost more to hand over than to do.)
constexpr int64_t kThreadedGemm = int64_t(1) << 20;

template <class T>
void gemm_row_major(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a,
                    int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  keep_blas_single_threaded();
  int64_t threads = 1;
  if (!in_parallel_region() && m * n * k >= kThreadedGemm) threads = num_threads();
  const bool by_rows = m >= n;
  threads = std::min(threads, by_rows ? m : n);
  if (threads <= 1) {
    gemm_one_thread(trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  blas_int(std::max({lda, ldb, ldc}));  // throws here, not inside the parallel loop
  const int64_t total = by_rows ? m : n;
  auto band = [&](int64_t t) {
    const int64_t begin = total * t / threads, end = total * (t + 1) / threads;
    if (by_rows)  // rows [begin, end) of C and of op(A)
      gemm_one_thread(trans_a, trans_b, end - begin, n, k, trans_a ? a + begin : a + begin * lda,
                      lda, b, ldb, beta, c + begin * ldc, ldc);
    else  // columns [begin, end) of C and of op(B)
      gemm_one_thread(trans_a, trans_b, m, end - begin, k, a, lda,
                      trans_b ? b + begin * ldb : b + begin, ldb, beta, c + begin, ldc);
  };
  // One band per thread (a band's GEMM packs its operands once).
  parallel_for(threads, cost::gemm(m, n, k) / threads, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) band(t);
  });
}

}  // namespace ember::cpu::EMBER_CPU_ISA
