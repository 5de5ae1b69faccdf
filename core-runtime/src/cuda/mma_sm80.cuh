// mma_sm80.cuh — the warp-level tensor-core instructions of sm_80 that attention's v4 and b4
// (attention_ladder.cu) are built on, as inline PTX: mma.sync m16n8k16 on float16/bfloat16 with
// float accumulation, ldmatrix from shared memory, and cp.async from global into shared memory.
//
// Unlike wmma's fragments, whose element placement is unspecified, these instructions' register
// layouts are documented (PTX ISA, "Matrix fragments for mma.m16n8k16 with floating point
// type"), which is what lets a kernel work on its fragments element by element. In a warp, lane
// l has groupID g = l / 4 and threadID_in_group t = l % 4. Per thread:
//   A (16x16, row-major), four .b32 registers of two 16-bit values each (lower index in the low
//     half), the PTX rule "row = g for a_i with i < 2 or 4 <= i < 6, else g + 8; col = 2 t +
//     (i & 1) for i < 4, else 2 t + (i & 1) + 8", i.e.
//       a[0] = (g, 2t..2t+1)   a[1] = (g+8, 2t..2t+1)   a[2] = (g, 2t+8..2t+9)   a[3] = (g+8,
//       2t+8..)
//   B (16x8, "col": element (k, n)), two registers, "row (k) = 2 t + (i & 1) for i < 2, else
//     2 t + (i & 1) + 8; col (n) = g", i.e.
//       b[0] = (k 2t..2t+1, n g)   b[1] = (k 2t+8..2t+9, n g)
//   C, D (16x8, float), four floats, "row = g for c_i with i < 2, else g + 8; col = 2 t + (i & 1)":
//       c[0], c[1] = (g, 2t), (g, 2t+1)   c[2], c[3] = (g+8, 2t), (g+8, 2t+1)
// So two C fragments side by side (columns 0..7 and 8..15), packed pairwise to 16 bits, are
// exactly an A fragment: a[0] = pack(c0[0], c0[1]), a[1] = pack(c0[2], c0[3]), a[2] =
// pack(c1[0], c1[1]), a[3] = pack(c1[2], c1[3]) (FlashAttention-2's way of feeding P to P V
// without leaving registers).
//
// ldmatrix.m8n8.x4 loads four 8x8 matrices of 16-bit values: lanes 8 m ... 8 m + 7 give the
// addresses of matrix m's eight rows (16 contiguous, 16-byte aligned bytes each), and register m
// of lane l receives row l / 4, elements 2 (l % 4) and 2 (l % 4) + 1 of matrix m; with .trans it
// receives elements (2 (l % 4), l / 4) and (2 (l % 4) + 1, l / 4) instead (the matrix read as
// its transpose). Compare with the layouts above: a row-major 16x16 A tile is the four 8x8
// matrices (rows 0-7, cols 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15); a B tile whose (k, n)
// is stored at row n, column k (K of q K^T) is read plainly, and one stored at row k, column n
// (V of P V) with .trans.
//
// A device pass below sm_80 (no mma m16n8k16, no cp.async) compiles these to a trap; the host
// keeps v4 and b4 off such GPUs.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "ember/half.h"

namespace ember::cuda::sm80 {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#define EMBER_SM80_PTX 0
#else
#define EMBER_SM80_PTX 1
#endif

// The 32-bit shared-memory address of a generic pointer into shared memory.
__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Four 8x8 matrices of 16-bit values, from the row addresses lanes give (see above).
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t address) {
#if EMBER_SM80_PTX
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address)
               : "memory");
#else
  __trap();
#endif
}

// The same, each matrix transposed.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t address) {
#if EMBER_SM80_PTX
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address)
               : "memory");
#else
  __trap();
#endif
}

// d += a b: A 16x16 (row), B 16x8 (col), D 16x8 in float. T: Half or BFloat16.
template <class T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1) {
#if EMBER_SM80_PTX
  if constexpr (std::is_same_v<T, BFloat16>)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap();
#endif
}

// Two floats rounded to T, `lo` in the low 16 bits (the lower-indexed element of a fragment's
// register).
template <class T> __device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  uint32_t r;
  if constexpr (std::is_same_v<T, BFloat16>) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    r = *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __half2 h = __floats2half2_rn(lo, hi);
    r = *reinterpret_cast<const uint32_t*>(&h);
  }
  return r;
}

// 16 bytes from global `src` to shared `dst` (both 16-byte aligned), asynchronously; with
// `valid` false nothing is read and the 16 bytes are zero-filled (cp.async's src-size 0).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
#if EMBER_SM80_PTX
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
#else
  __trap();
#endif
}

// The same for 4 bytes (both 4-byte aligned).
__device__ __forceinline__ void cp_async_4(uint32_t dst, const void* src, bool valid) {
#if EMBER_SM80_PTX
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 4 : 0)
               : "memory");
#else
  __trap();
#endif
}

// Closes the group of cp.async issued since the last commit (an empty group is fine).
__device__ __forceinline__ void cp_async_commit() {
#if EMBER_SM80_PTX
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most N of this thread's committed groups are pending (the newest ones).
template <int N> __device__ __forceinline__ void cp_async_wait() {
#if EMBER_SM80_PTX
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// The ldmatrix addresses (layouts above) of a 16x16 block at (row0, col0) of a staged matrix with
// row stride ld (elements), for the ways v4 and b4 read one:
//   a_rows:  as an A fragment (row-major A): matrices (rows 0-7, cols 0-7), (8-15, 0-7),
//            (0-7, 8-15), (8-15, 8-15) give a[0..3];
//   b_rows:  as the B fragments of two 8-wide n tiles, the matrix's rows being n and its columns
//            k (B = the matrix's transpose): (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7),
//            (n 8-15, k 8-15) give b[0], b[1] of tile 0 and b[0], b[1] of tile 1;
//   b_trans: with ldmatrix.trans, the same for a matrix whose rows are k and columns n (B itself):
//            (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15), (k 8-15, n 8-15).
// Lane l addresses row l % 8 of matrix l / 8.
__device__ __forceinline__ uint32_t a_rows(const uint16_t* m, int ld, int row0, int col0,
                                           int lane) {
  const int mi = lane / 8;
  return shared_address(m + (row0 + (mi & 1) * 8 + lane % 8) * ld + col0 + (mi >> 1) * 8);
}
__device__ __forceinline__ uint32_t b_rows(const uint16_t* m, int ld, int row0, int col0,
                                           int lane) {
  const int mi = lane / 8;
  return shared_address(m + (row0 + (mi >> 1) * 8 + lane % 8) * ld + col0 + (mi & 1) * 8);
}
__device__ __forceinline__ uint32_t b_trans(const uint16_t* m, int ld, int row0, int col0,
                                            int lane) {
  const int mi = lane / 8;
  return shared_address(m + (row0 + (mi & 1) * 8 + lane % 8) * ld + col0 + (mi >> 1) * 8);
}

// The ldmatrix.trans address that gives A's fragment for the 16x16 block at (row0, col0) of A,
// from a staged matrix m holding A's transpose (A's (r, c) at m's row c, column r): A's 8x8
// blocks (rows 0-7, cols 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15) are m's blocks at (row
// col0, col row0) + (0, 0), (0, 8), (8, 0), (8, 8), each read transposed.
__device__ __forceinline__ uint32_t a_trans(const uint16_t* m, int ld, int row0, int col0,
                                            int lane) {
  const int mi = lane / 8;
  return shared_address(m + (col0 + (mi >> 1) * 8 + lane % 8) * ld + row0 + (mi & 1) * 8);
}

// 2^x by the special function unit (ex2.approx: relative error about 2^-22; 2^-inf = +0).
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace ember::cuda::sm80
