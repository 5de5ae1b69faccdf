// gemm_tiled.cuh — a hand-written SGEMM in five steps, from naive to fast (a teaching series in
// the style of llm.c's dev/cuda files). cuBLAS is what matmul runs by default; this file is kept
// beside it to show *why* cuBLAS is fast, and every step is measured against it.
//
// Every version computes, for each matrix z of a batch (GemmArgs, cublas_handle.cuh):
//     C[z] = alpha * A[z] · B[z] + beta * C[z]        A: [M, K]   B: [K, N]   C: [M, N]
// on row-major *logical* matrices addressed through strides, so a transposed operand (a.t()) is
// read in place (v1-v3 take any strides; v4 and v5 need each of A and B to have a unit stride
// along one dim, as every transposed view of a contiguous matrix has). Every version handles any
// M, N, K >= 0: edge tiles load zeros outside the matrix and store only inside it.
//
//   v1  naive: one thread per output, operands straight from global memory.
//   v2  shared-memory tiles: a block stages 32x32 tiles of A and B in shared memory.
//   v3  2-D register blocking: each thread computes an 8x8 block of C from registers.
//   v4  v3 + 16-byte (float4) loads, A's tile stored transposed, conflict-free shared reads.
//   v5  v4 + warp tiling + double buffering: loads of the next tile overlap the math.
//
// The fraction of cuBLAS each reaches (fp32 4096^3, TF32 off, H200) is measured by
// benchmarks/, not recorded here; the published figures for the same ladder on an A6000 are
// v2 13%, v3 69%, v4 78%, warp tiling 94% (siboehm/SGEMM_CUDA).
//
// Selecting a version: gemm_tiled(version, args, stream) runs version 1..5. matmul(...,
// MatmulAlgo::Tiled) on float32 runs version EMBER_GEMM_TILED_VERSION (an environment variable,
// read at every call so a benchmark can switch between runs), or kTiledBest when it is unset.
// Other dtypes under MatmulAlgo::Tiled (and integer dtypes always) run v2, templated on the
// element type: gemm_tiled_generic().
//
// Index math: M, N, K are int; offsets into memory are int64 (a 50000 x 50000 matrix has more
// than 2^31 elements). Grid: blockIdx.x numbers the output tiles (row-major over the tile grid,
// up to 2^31 - 1 of them); blockIdx.z is the matrix of the batch (the host launches batches of
// more than 65535 matrices, gridDim.z's limit, in chunks).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

#include "cuda/cublas_handle.cuh"
#include "ember/error.h"

namespace ember::cuda {

constexpr int kTiledVersions = 5;
constexpr int kTiledBest = 5;  // what MatmulAlgo::Tiled runs on float32 by default

namespace tiled {

// Top-left corner (m0, n0) of this block's output tile of size bm x bn.
struct TileOrigin {
  int m0, n0;
};
__device__ __forceinline__ TileOrigin tile_origin(int n, int bm, int bn) {
  const unsigned tiles_n = unsigned((n + bn - 1) / bn);
  return {int(blockIdx.x / tiles_n) * bm, int(blockIdx.x % tiles_n) * bn};
}

// Element (r, c) of matrix z, or zero outside [rows, cols).
template <class Acc, class T>
__device__ __forceinline__ Acc load_or_zero(const MatrixRef<const T>& v, int64_t z, int r, int c,
                                            int rows, int cols) {
  return (r < rows && c < cols) ? Acc(*v.ptr(z, r, c)) : Acc(0);
}

// C[z][m][n] = alpha * acc + beta * C[z][m][n] (C not read when beta == 0). Caller checks bounds.
template <class T, class Acc>
__device__ __forceinline__ void store_c(const GemmArgs<T>& g, int64_t z, int m, int n, Acc acc) {
  T* p = g.c.ptr(z, m, n);
  Acc v = Acc(g.alpha) * acc;
  if (g.beta != 0) v += Acc(g.beta) * Acc(*p);
  *p = T(v);
}

// ================================================================================================
// v1 — naive: one thread per output element.
//
// Block 32 x 8 threads; thread (x, y) computes C[m0 + y][n0 + x] as a dot product over K, reading
// A and B straight from global memory. threadIdx.x runs along n, so the 32 threads of a warp read
// 32 consecutive B[k][n] (one coalesced transaction when B is row-major), read the same A[m][k]
// (one broadcast) and write 32 consecutive C elements.
// Limit: two loads per FMA; each element of A and B is fetched from L1/L2 once per use (K times
// over), so the kernel waits on the memory system and reaches a few percent of the FMA rate.
// ================================================================================================
constexpr int kV1Rows = 8, kV1Cols = 32;

__global__ void __launch_bounds__(kV1Rows* kV1Cols) gemm_v1_naive(GemmArgs<float> g) {
  const TileOrigin t = tile_origin(g.n, kV1Rows, kV1Cols);
  const int m = t.m0 + int(threadIdx.y), n = t.n0 + int(threadIdx.x);
  if (m >= g.m || n >= g.n) return;
  const int64_t z = blockIdx.z;       // the matrix of the batch
  const float* a = g.a.ptr(z, m, 0);  // row m of A
  const float* b = g.b.ptr(z, 0, n);  // column n of B
  float acc = 0.f;
  for (int k = 0; k < g.k; ++k) acc += a[k * g.a.col_stride] * b[k * g.b.row_stride];
  store_c(g, z, m, n, acc);
}

// ================================================================================================
// v2 — shared-memory tiles.
//
// Block 32 x 32 threads computes a 32 x 32 tile of C, one output per thread. K is walked 32 at a
// time: the block copies a 32 x 32 tile of A and one of B into shared memory (each thread one
// element of each, coalesced), waits, and every thread then reads its row of As and column of Bs
// from shared memory. Each global element is now fetched once per tile instead of once per use:
// 32x less global traffic than v1.
// Shared reads: a warp is one row y, so As[y][kk] is a broadcast and Bs[kk][x] 32 consecutive
// words (32 banks): no bank conflicts.
// Limit: still two shared-memory loads per FMA, and shared memory is only a few times faster than
// L1; the FMA units idle most of the time.
//
// Templated on the element type: it also serves the dtypes the faster float-only versions do not
// (integers accumulate in int64, float16/bfloat16 in float, float64 in double).
// ================================================================================================
constexpr int kV2Tile = 32;

template <class T> using acc_t = std::conditional_t<std::is_integral_v<T>, int64_t, compute_t<T>>;

template <class T> __global__ void __launch_bounds__(kV2Tile* kV2Tile) gemm_v2_smem(GemmArgs<T> g) {
  using Acc = acc_t<T>;
  __shared__ Acc as[kV2Tile][kV2Tile];  // as[y][kk] = A[m0 + y][k0 + kk]
  __shared__ Acc bs[kV2Tile][kV2Tile];  // bs[kk][x] = B[k0 + kk][n0 + x]
  const TileOrigin t = tile_origin(g.n, kV2Tile, kV2Tile);
  const int x = int(threadIdx.x), y = int(threadIdx.y);
  const int m = t.m0 + y, n = t.n0 + x;
  const int64_t z = blockIdx.z;  // the matrix of the batch
  Acc acc = 0;
  for (int k0 = 0; k0 < g.k; k0 += kV2Tile) {
    as[y][x] = load_or_zero<Acc>(g.a, z, m, k0 + x, g.m, g.k);
    bs[y][x] = load_or_zero<Acc>(g.b, z, k0 + y, n, g.k, g.n);
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < kV2Tile; ++kk) acc += as[y][kk] * bs[kk][x];
    __syncthreads();  // before the next tile overwrites as/bs
  }
  if (m < g.m && n < g.n) store_c(g, z, m, n, acc);
}

// ================================================================================================
// v3 — 2-D register blocking.
//
// Block 256 threads computes a 128 x 128 tile of C; thread (tr, tc) of a 16 x 16 grid computes
// the 8 x 8 block at rows tr*8.., cols tc*8... K is walked 8 at a time (BK): the block stages a
// 128 x 8 tile of A and an 8 x 128 tile of B in shared memory (4 elements of each per thread),
// then for every kk each thread loads 8 values of A's column kk and 8 of B's row kk into
// registers and does their outer product: 64 FMAs for 16 shared loads, where v2 did 1 FMA per 2.
// Each loaded A value is reused 8 times from a register, and each global element is fetched once
// per 128-wide tile.
// Limits: the shared reads have bank conflicts (a thread's 8 values of As[r][kk] are 8 words
// apart, and the warp's B reads step by 8 words), the global loads are 4-byte scalars, and the
// block waits for every tile load before computing.
// ================================================================================================
namespace v3 {
constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
}  // namespace v3

__global__ void __launch_bounds__(v3::kThreads) gemm_v3_blocktile(GemmArgs<float> g) {
  using namespace v3;
  __shared__ float as[BM][BK];  // as[r][kk] = A[m0 + r][k0 + kk]
  __shared__ float bs[BK][BN];  // bs[kk][c] = B[k0 + kk][n0 + c]
  const TileOrigin t = tile_origin(g.n, BM, BN);
  const int tid = int(threadIdx.x);
  const int tr = tid / (BN / TN), tc = tid % (BN / TN);
  const int64_t z = blockIdx.z;  // the matrix of the batch
  float acc[TM][TN] = {};
  for (int k0 = 0; k0 < g.k; k0 += BK) {
    // Consecutive threads take consecutive elements of a row: coalesced for row-major A and B.
#pragma unroll
    for (int l = 0; l < BM * BK / kThreads; ++l) {
      const int e = tid + l * kThreads, r = e / BK, c = e % BK;
      as[r][c] = load_or_zero<float>(g.a, z, t.m0 + r, k0 + c, g.m, g.k);
    }
#pragma unroll
    for (int l = 0; l < BK * BN / kThreads; ++l) {
      const int e = tid + l * kThreads, r = e / BN, c = e % BN;
      bs[r][c] = load_or_zero<float>(g.b, z, k0 + r, t.n0 + c, g.k, g.n);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float ra[TM], rb[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) ra[i] = as[tr * TM + i][kk];
#pragma unroll
      for (int j = 0; j < TN; ++j) rb[j] = bs[kk][tc * TN + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += ra[i] * rb[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = t.m0 + tr * TM + i;
#pragma unroll
    for (int j = 0; j < TN; ++j) {
      const int n = t.n0 + tc * TN + j;
      if (m < g.m && n < g.n) store_c(g, z, m, n, acc[i][j]);
    }
  }
}

// ================================================================================================
// Pieces shared by v4 and v5.
// ================================================================================================

// Whether an operand may be read (or C written) with aligned 16-byte accesses along its unit-
// stride dim: computed on the host once per call, passed to the kernel.
struct Float4Ok {
  bool a = false, b = false, c = false;
};

// TileLoader moves one BK x BMN tile of an operand from global memory into registers (load), and
// from registers into shared memory laid out k-major, tile[kk][i] (store). Splitting the two lets
// v5 issue the global loads of the next tile before computing on the current one.
//
// The operand is addressed as (i, k), i being m for A and n for B, i in [0, i_end), k in
// [0, k_end), and has a unit stride along one of the two:
//   kKContig (A row-major, or B read transposed): element (i, k) = data[i * s_i + k]. A thread
//            moves 4 consecutive k of one i, and writes them into 4 rows of the tile (a transpose,
//            4 scalar shared stores);
//   else     (B row-major, or A read transposed): element (i, k) = data[i + k * s_k]. A thread
//            moves 4 consecutive i of one k, written as one float4 into a row of the tile.
// A group is one 16-byte load when `vec` (the other strides are multiples of 4 and the base is
// 16-byte aligned, checked on the host) and all 4 elements are inside the matrix; otherwise 4
// guarded scalar loads, zeros outside.
template <int BK, int BMN, int kThreads, bool kKContig> struct TileLoader {
  static constexpr int kGroupsPerLine = kKContig ? BK / 4 : BMN / 4;  // groups per i / per k
  static constexpr int kVecs = BK * BMN / (4 * kThreads);             // groups per thread
  static_assert(BK * BMN % (4 * kThreads) == 0, "tile must split evenly into float4 groups");

  int64_t s_k;  // used when !kKContig
  int i_end, k_end;
  bool vec;
  // Group v of this thread starts at element (i[v], k0 + dk[v]) of the tile at k0; p[v] points
  // at it for k0 = 0 (row 0 when i[v] is outside the matrix, so that no wild pointer is formed).
  int i[kVecs], dk[kVecs];
  const float* p[kVecs];
  float4 r[kVecs];

  // The block's tile covers i in [i0, i0 + BMN); data is this operand's matrix z; the stride
  // along the unit-stride dim is ignored.
  __device__ __forceinline__ TileLoader(const float* data, int64_t s_i, int64_t s_k_, int i0,
                                        int i_end_, int k_end_, bool vec_)
      : s_k(s_k_), i_end(i_end_), k_end(k_end_), vec(vec_) {
#pragma unroll
    for (int v = 0; v < kVecs; ++v) {
      const int slot = int(threadIdx.x) + v * kThreads;
      const int line = slot / kGroupsPerLine, group = (slot % kGroupsPerLine) * 4;
      i[v] = i0 + (kKContig ? line : group);
      dk[v] = kKContig ? group : line;
      const int64_t i_safe = i[v] < i_end ? i[v] : 0;
      p[v] = kKContig ? data + i_safe * s_i + dk[v] : data + i_safe + dk[v] * s_k;
    }
  }

  // Global -> registers: the groups of the tile at k0, zeros outside the matrix.
  __device__ __forceinline__ void load(int k0) {
#pragma unroll
    for (int v = 0; v < kVecs; ++v) {
      const int k = k0 + dk[v];
      const float* q = kKContig ? p[v] + k0 : p[v] + k0 * s_k;
      // Group elements run along k (kKContig) or along i; `in` covers the other index.
      const bool in = kKContig ? i[v] < i_end : k < k_end;
      const int first = kKContig ? k : i[v], end = kKContig ? k_end : i_end;
      if (vec && in && first + 3 < end) {
        r[v] = *reinterpret_cast<const float4*>(q);
      } else {
        r[v].x = in && first < end ? q[0] : 0.f;
        r[v].y = in && first + 1 < end ? q[1] : 0.f;
        r[v].z = in && first + 2 < end ? q[2] : 0.f;
        r[v].w = in && first + 3 < end ? q[3] : 0.f;
      }
    }
  }

  // Registers -> shared tile[kk][i - i0].
  template <int kPitch> __device__ __forceinline__ void store(float (*tile)[kPitch]) const {
#pragma unroll
    for (int v = 0; v < kVecs; ++v) {
      const int slot = int(threadIdx.x) + v * kThreads;
      const int line = slot / kGroupsPerLine, group = (slot % kGroupsPerLine) * 4;
      if (kKContig) {
        tile[group + 0][line] = r[v].x;
        tile[group + 1][line] = r[v].y;
        tile[group + 2][line] = r[v].z;
        tile[group + 3][line] = r[v].w;
      } else {
        *reinterpret_cast<float4*>(&tile[line][group]) = r[v];
      }
    }
  }
};

// The loaders of A (i = m) and B (i = n) for matrix z of the batch.
template <int BK, int BM, int kThreads, bool kKContig>
__device__ __forceinline__ TileLoader<BK, BM, kThreads, kKContig> loader_a(const GemmArgs<float>& g,
                                                                           int64_t z, int m0,
                                                                           bool vec) {
  return {g.a.ptr(z, 0, 0), g.a.row_stride, g.a.col_stride, m0, g.m, g.k, vec};
}
template <int BK, int BN, int kThreads, bool kKContig>
__device__ __forceinline__ TileLoader<BK, BN, kThreads, kKContig> loader_b(const GemmArgs<float>& g,
                                                                           int64_t z, int n0,
                                                                           bool vec) {
  return {g.b.ptr(z, 0, 0), g.b.col_stride, g.b.row_stride, n0, g.n, g.k, vec};
}

// 4 consecutive floats of a shared tile into registers, one 16-byte shared load.
__device__ __forceinline__ void lds4(float* dst, const float* src) {
  const float4 v = *reinterpret_cast<const float4*>(src);
  dst[0] = v.x;
  dst[1] = v.y;
  dst[2] = v.z;
  dst[3] = v.w;
}

// C[z][m][n..n+3] from acc[0..3]: one 16-byte store when allowed and inside, else element-wise.
__device__ __forceinline__ void store_c4(const GemmArgs<float>& g, int64_t z, int m, int n,
                                         const float* acc, bool vec) {
  if (m >= g.m) return;
  if (vec && n + 3 < g.n) {
    float4* p = reinterpret_cast<float4*>(g.c.ptr(z, m, n));
    float4 v = make_float4(g.alpha * acc[0], g.alpha * acc[1], g.alpha * acc[2], g.alpha * acc[3]);
    if (g.beta != 0.f) {
      const float4 old = *p;
      v.x += g.beta * old.x;
      v.y += g.beta * old.y;
      v.z += g.beta * old.z;
      v.w += g.beta * old.w;
    }
    *p = v;
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (n + j < g.n) store_c(g, z, m, n + j, acc[j]);
}

// ================================================================================================
// v4 — vectorised loads, transposed A tile, conflict-free shared reads.
//
// Same block shape as v3 (128 x 128 tile, BK = 8, 256 threads, 8 x 8 outputs per thread). Three
// changes, all about moving bytes with fewer instructions:
// 1. Global loads are 16 bytes (float4): each thread moves one group of 4 for A and one for B per
//    tile (TileLoader), a quarter of v3's load instructions.
// 2. A's tile is stored transposed, as[kk][m] (k-major like bs), so a thread's A values for one
//    kk are consecutive and come in with 16-byte shared loads too: per kk, 4 LDS.128 feed 64
//    FMAs. Rows are padded by 4 floats so the transposing stores of a warp hit distinct banks.
// 3. A thread's 8 x 8 block is split into four 4 x 4 sub-blocks, 64 apart (rows tr*4 and
//    64 + tr*4, columns tc*4 and 64 + tc*4). Then the 16-byte reads of 8 neighbouring threads
//    cover 32 consecutive words: no bank conflicts (v3's layout, 8 words per thread, had them),
//    and C is written with coalesced float4 stores.
// Limit: the block still stops at every tile: load, wait, compute, wait. Global-load latency is
// exposed once per tile, and a 16 x 16 thread grid makes each warp read 16 distinct B groups per
// kk (2 shared wavefronts) where 8 would do.
// ================================================================================================
namespace v4 {
constexpr int BM = 128, BN = 128, BK = 8, kThreads = 256, kPad = 4;
}  // namespace v4

template <bool kAKContig, bool kBKContig>
__global__ void __launch_bounds__(v4::kThreads) gemm_v4_vectorized(GemmArgs<float> g, Float4Ok ok) {
  using namespace v4;
  __shared__ __align__(16) float as[BK][BM + kPad];  // as[kk][r] = A[m0 + r][k0 + kk]
  __shared__ __align__(16) float bs[BK][BN + kPad];  // bs[kk][c] = B[k0 + kk][n0 + c]
  const TileOrigin t = tile_origin(g.n, BM, BN);
  const int tr = int(threadIdx.x) / 16, tc = int(threadIdx.x) % 16;
  const int r0 = tr * 4, c0 = tc * 4;  // sub-blocks at rows r0, r0 + 64 and cols c0, c0 + 64
  const int64_t z = blockIdx.z;        // the matrix of the batch
  auto la = loader_a<BK, BM, kThreads, kAKContig>(g, z, t.m0, ok.a);
  auto lb = loader_b<BK, BN, kThreads, kBKContig>(g, z, t.n0, ok.b);
  float acc[8][8] = {};  // acc[i][j]: row (i < 4 ? r0 + i : r0 + 60 + i), same for columns
  for (int k0 = 0; k0 < g.k; k0 += BK) {
    la.load(k0);
    lb.load(k0);
    la.store(as);
    lb.store(bs);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      float ra[8], rb[8];
      lds4(ra, &as[kk][r0]);
      lds4(ra + 4, &as[kk][r0 + 64]);
      lds4(rb, &bs[kk][c0]);
      lds4(rb + 4, &bs[kk][c0 + 64]);
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] += ra[i] * rb[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int m = t.m0 + r0 + (i < 4 ? i : 60 + i);
    store_c4(g, z, m, t.n0 + c0, &acc[i][0], ok.c);
    store_c4(g, z, m, t.n0 + c0 + 64, &acc[i][4], ok.c);
  }
}

// ================================================================================================
// v5 — warp tiling + double buffering.
//
// Same 128 x 128 x 8 tiles, 256 threads, 8 x 8 outputs per thread, float4 loads; two changes:
// 1. Warp tiling. The 8 warps tile the block as 4 (m) x 2 (n), each owning a 32 x 64 piece of C;
//    inside it the 32 lanes form a 4 x 8 grid, each lane owning four 4 x 4 sub-blocks (rows
//    lr*4 and 16 + lr*4, columns lc*4 and 32 + lc*4 of its warp's piece). Per kk a warp then
//    reads 4 distinct A groups and 8 distinct B groups from shared memory, one wavefront per
//    16-byte load (v4's 16 x 16 thread grid: 16 B groups, two wavefronts), so shared-memory
//    bandwidth stops being a co-bottleneck, and the outputs a warp owns form a compact block.
// 2. Double buffering. Shared memory holds two tiles of A and of B. While the block computes on
//    tile t, each thread has already issued the global loads of tile t + 1 into registers; after
//    the math it writes them into the other buffer, and a single __syncthreads per tile
//    separates the two phases. Global-load latency now hides behind 8 x 64 FMAs per thread. The
//    register fragments are double-buffered the same way: the shared loads of kk + 1 are issued
//    before the FMAs of kk.
// __launch_bounds__(256, 2) caps registers at 128 per thread (the kernel needs 126-128, no
// spills) so that two blocks (16 warps) fit on each SM, with 16.5 KB of shared memory each.
// Limits (what cuBLAS does beyond this): no async copies (cp.async / TMA) straight into shared
// memory, no deeper pipeline, no tile-size choice per problem shape, no L2-aware block order.
// ================================================================================================
namespace v5 {
constexpr int BM = 128, BN = 128, BK = 8, kThreads = 256, kPad = 4;
constexpr int WM = 32, WN = 64;  // warp tile; warps are 4 (m) x 2 (n)
}  // namespace v5

// A lane's 8 A values (rows r0.., r0 + 16..) and 8 B values (cols c0.., c0 + 32..) of one kk.
__device__ __forceinline__ void load_fragments(float* ra, float* rb, const float* as_kk,
                                               const float* bs_kk, int r0, int c0) {
  lds4(ra, as_kk + r0);
  lds4(ra + 4, as_kk + r0 + 16);
  lds4(rb, bs_kk + c0);
  lds4(rb + 4, bs_kk + c0 + 32);
}

template <bool kAKContig, bool kBKContig>
__global__ void __launch_bounds__(v5::kThreads, 2)
    gemm_v5_warptile(GemmArgs<float> g, Float4Ok ok) {
  using namespace v5;
  __shared__ __align__(16) float as[2][BK][BM + kPad];  // two buffers, each as v4's
  __shared__ __align__(16) float bs[2][BK][BN + kPad];
  const TileOrigin t = tile_origin(g.n, BM, BN);
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int r0 = (warp / (BN / WN)) * WM + (lane / 8) * 4;  // rows r0.., r0 + 16..
  const int c0 = (warp % (BN / WN)) * WN + (lane % 8) * 4;  // cols c0.., c0 + 32..
  const int tiles = (g.k + BK - 1) / BK;
  const int64_t z = blockIdx.z;  // the matrix of the batch
  auto la = loader_a<BK, BM, kThreads, kAKContig>(g, z, t.m0, ok.a);
  auto lb = loader_b<BK, BN, kThreads, kBKContig>(g, z, t.n0, ok.b);
  float acc[8][8] = {};  // acc[i][j]: row (i < 4 ? r0 + i : r0 + 12 + i), cols likewise (+28)
  if (tiles > 0) {
    la.load(0);
    lb.load(0);
    la.store(as[0]);
    lb.store(bs[0]);
  }
  __syncthreads();
  for (int tile = 0; tile < tiles; ++tile) {
    const int cur = tile & 1;
    const bool more = tile + 1 < tiles;
    if (more) {  // issue the next tile's global loads now; they land while we compute
      la.load((tile + 1) * BK);
      lb.load((tile + 1) * BK);
    }
    // Fragments double-buffered: the shared loads for kk + 1 go out before the FMAs of kk.
    float ra[2][8], rb[2][8];
    load_fragments(ra[0], rb[0], as[cur][0], bs[cur][0], r0, c0);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      if (kk + 1 < BK)
        load_fragments(ra[(kk + 1) % 2], rb[(kk + 1) % 2], as[cur][kk + 1], bs[cur][kk + 1], r0,
                       c0);
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] += ra[kk % 2][i] * rb[kk % 2][j];
    }
    // The other buffer was last read during the previous tile, before the barrier that ended
    // it, so it is free to overwrite; the barrier below publishes it for the next tile.
    if (more) {
      la.store(as[cur ^ 1]);
      lb.store(bs[cur ^ 1]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int m = t.m0 + r0 + (i < 4 ? i : 12 + i);
    store_c4(g, z, m, t.n0 + c0, &acc[i][0], ok.c);
    store_c4(g, z, m, t.n0 + c0 + 32, &acc[i][4], ok.c);
  }
}

// ================================================================================================
// Host side.
// ================================================================================================

// An operand can be read with 16-byte loads along its unit-stride dim when that stride is 1, the
// other strides keep every group of 4 aligned, and the base address is 16-byte aligned.
inline bool float4_ok(const void* data, int64_t unit_stride, int64_t other_stride,
                      int64_t batch_stride, int64_t batch) {
  return unit_stride == 1 && other_stride % 4 == 0 && (batch == 1 || batch_stride % 4 == 0) &&
         reinterpret_cast<uintptr_t>(data) % 16 == 0;
}

// Number of output tiles, checked against the grid limit.
template <class T> unsigned tile_count(const GemmArgs<T>& g, int bm, int bn) {
  const int64_t n = int64_t((g.m + bm - 1) / bm) * ((g.n + bn - 1) / bn);
  if (n > INT_MAX)
    throw NotSupportedError("matmul", "tiled GEMM of " + std::to_string(g.m) + " x " +
                                          std::to_string(g.n) + " needs more than 2^31 tiles");
  return unsigned(n);
}

// Calls launch(chunk) for successive chunks of at most 65535 matrices of g's batch (gridDim.z's
// limit), each chunk's pointers advanced to its first matrix.
template <class T, class F> void for_each_batch_chunk(const GemmArgs<T>& g, F&& launch) {
  constexpr int64_t kMaxGridZ = 65535;
  for (int64_t z0 = 0; z0 < g.batch; z0 += kMaxGridZ) {
    GemmArgs<T> chunk = g;
    chunk.batch = std::min(kMaxGridZ, g.batch - z0);
    chunk.a.data += z0 * g.a.batch_stride;
    chunk.b.data += z0 * g.b.batch_stride;
    chunk.c.data += z0 * g.c.batch_stride;
    launch(chunk);
  }
}

// Calls f(std::bool_constant<a_kcontig>, std::bool_constant<b_kcontig>): the layout picks which
// instantiation of a v4/v5 kernel runs.
template <class F> void with_layouts(bool a_kcontig, bool b_kcontig, F&& f) {
  if (a_kcontig && b_kcontig) f(std::true_type{}, std::true_type{});
  if (a_kcontig && !b_kcontig) f(std::true_type{}, std::false_type{});
  if (!a_kcontig && b_kcontig) f(std::false_type{}, std::true_type{});
  if (!a_kcontig && !b_kcontig) f(std::false_type{}, std::false_type{});
}

}  // namespace tiled

// Runs tiled GEMM version 1..kTiledVersions on float32 operands (layouts as in the header
// comment; ValueError otherwise): one kernel launch
// on `stream` per 65535 matrices of the batch (none when the output is empty); the caller checks.
inline void gemm_tiled(int version, const GemmArgs<float>& g, cudaStream_t stream) {
  using namespace tiled;
  if (version < 1 || version > kTiledVersions)
    throw ValueError("matmul", "tiled GEMM version " + std::to_string(version) +
                                   " does not exist; expected 1.." +
                                   std::to_string(kTiledVersions));
  if (g.batch == 0 || g.m == 0 || g.n == 0) return;
  // v4, v5 read each operand along a unit-stride dim: A along k when row-major (unit column
  // stride), else along m; B along n when row-major, else along k. A dim of size 1 counts as
  // unit-stride whatever its stride.
  const bool a_kcontig = g.a.col_stride == 1 || g.k == 1;
  const bool b_kcontig = !(g.b.col_stride == 1 || g.n == 1);
  const bool a_unit = a_kcontig || g.a.row_stride == 1 || g.m == 1;
  const bool b_unit = !b_kcontig || g.b.row_stride == 1 || g.k == 1;
  if (version >= 4 && !(a_unit && b_unit))
    throw ValueError("matmul",
                     "tiled GEMM v4/v5 need each operand to have a unit stride along "
                     "one of its two dims (any transposed view has); make it "
                     "contiguous first");
  for_each_batch_chunk(g, [&](const GemmArgs<float>& c) {
    const unsigned zb = unsigned(c.batch);
    switch (version) {
      case 1:
        gemm_v1_naive<<<dim3(tile_count(c, kV1Rows, kV1Cols), 1, zb), dim3(kV1Cols, kV1Rows), 0,
                        stream>>>(c);
        return;
      case 2:
        gemm_v2_smem<float>
            <<<dim3(tile_count(c, kV2Tile, kV2Tile), 1, zb), dim3(kV2Tile, kV2Tile), 0, stream>>>(
                c);
        return;
      case 3:
        gemm_v3_blocktile<<<dim3(tile_count(c, v3::BM, v3::BN), 1, zb), v3::kThreads, 0, stream>>>(
            c);
        return;
      default:
        break;
    }
    Float4Ok ok;
    ok.a = a_kcontig
               ? float4_ok(c.a.data, c.a.col_stride, c.a.row_stride, c.a.batch_stride, c.batch)
               : float4_ok(c.a.data, c.a.row_stride, c.a.col_stride, c.a.batch_stride, c.batch);
    ok.b = b_kcontig
               ? float4_ok(c.b.data, c.b.row_stride, c.b.col_stride, c.b.batch_stride, c.batch)
               : float4_ok(c.b.data, c.b.col_stride, c.b.row_stride, c.b.batch_stride, c.batch);
    ok.c = float4_ok(c.c.data, c.c.col_stride, c.c.row_stride, c.c.batch_stride, c.batch);
    with_layouts(a_kcontig, b_kcontig, [&](auto ak, auto bk) {
      constexpr bool kA = decltype(ak)::value, kB = decltype(bk)::value;
      if (version == 4)
        gemm_v4_vectorized<kA, kB>
            <<<dim3(tile_count(c, v4::BM, v4::BN), 1, zb), v4::kThreads, 0, stream>>>(c, ok);
      else
        gemm_v5_warptile<kA, kB>
            <<<dim3(tile_count(c, v5::BM, v5::BN), 1, zb), v5::kThreads, 0, stream>>>(c, ok);
    });
  });
}

// v2 for any element type (integers, float16, bfloat16, float64): one launch per 65535 matrices;
// the caller checks.
template <class T> void gemm_tiled_generic(const GemmArgs<T>& g, cudaStream_t stream) {
  using namespace tiled;
  if (g.batch == 0 || g.m == 0 || g.n == 0) return;
  const int64_t tiles = int64_t((g.m + kV2Tile - 1) / kV2Tile) * ((g.n + kV2Tile - 1) / kV2Tile);
  if (tiles > INT_MAX)
    throw NotSupportedError("matmul", "tiled GEMM output needs more than 2^31 tiles");
  for_each_batch_chunk(g, [&](const GemmArgs<T>& c) {
    gemm_v2_smem<T>
        <<<dim3(unsigned(tiles), 1, unsigned(c.batch)), dim3(kV2Tile, kV2Tile), 0, stream>>>(c);
  });
}

}  // namespace ember::cuda
