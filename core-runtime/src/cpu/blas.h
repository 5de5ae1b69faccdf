// blas.h — row-major GEMM on top of the Fortran BLAS symbols sgemm_/dgemm_ (internal header).
// Every BLAS (OpenBLAS, MKL, the reference one) exports these, so no cblas.h is needed; the
// build links BLAS::BLAS.
#pragma once
#include <climits>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "ember/error.h"

extern "C" {
// Column-major C = alpha * op(A) @ op(B) + beta * C. Fortran passes everything by pointer; the
// two trailing lengths are the hidden lengths of the character arguments (gfortran's ABI).
void sgemm_(const char* trans_a, const char* trans_b, const int* m, const int* n, const int* k,
            const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
            const float* beta, float* c, const int* ldc, size_t trans_a_len, size_t trans_b_len);
void dgemm_(const char* trans_a, const char* trans_b, const int* m, const int* n, const int* k,
            const double* alpha, const double* a, const int* lda, const double* b, const int* ldb,
            const double* beta, double* c, const int* ldc, size_t trans_a_len, size_t trans_b_len);
}

namespace ember::cpu {

// BLAS takes 32-bit sizes.
inline int blas_int(int64_t v) {
  if (v > INT_MAX)
    throw NotSupportedError("matmul", "a size or stride of " + std::to_string(v) +
                                          " exceeds the 32-bit BLAS interface; split the "
                                          "operation into smaller pieces");
  return int(v);
}

// Row-major C[m, n] = op(A) @ op(B) + beta * C, where op(A) = A (stored [m, k]) or A^T (stored
// [k, m]) and likewise for B ([k, n] or [n, k]); lda, ldb, ldc are the row strides as stored.
// A row-major matrix is its transpose in column-major, and C^T = op(B)^T @ op(A)^T, so BLAS gets
// the operands swapped and each transpose flag kept.
template <class T>
void gemm_row_major(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a,
                    int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  const char ta = trans_b ? 'T' : 'N', tb = trans_a ? 'T' : 'N';
  const int M = blas_int(n), N = blas_int(m), K = blas_int(k);
  const int LDA = blas_int(ldb), LDB = blas_int(lda), LDC = blas_int(ldc);
  const T one = 1;
  if constexpr (std::is_same_v<T, float>)
    sgemm_(&ta, &tb, &M, &N, &K, &one, b, &LDA, a, &LDB, &beta, c, &LDC, 1, 1);
  else dgemm_(&ta, &tb, &M, &N, &K, &one, b, &LDA, a, &LDB, &beta, c, &LDC, 1, 1);
}

}  // namespace ember::cpu
