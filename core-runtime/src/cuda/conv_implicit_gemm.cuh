// conv_implicit_gemm.cuh — conv2d forward, backward-input and backward-weight as *implicit*
// GEMMs: one tiled GEMM kernel whose operand tiles are gathered from the image on the fly, so
// the im2col matrix is never written to memory and padding is handled inside the kernel (an
// index outside the image reads as zero; no padded copy is made).
//
// Each pass is a GEMM per group g (blockIdx.y); the three differ only in how they index:
//
//   pass             C[m][n] =  sum_k   A[m][k]                 B[k][n]
//   forward          out        (c,i,j) weight[o][c,i,j]        x[img][c][oh*s-p+i*d][ow*s-p+j*d]
//                    m = o, n = (img, oh, ow)
//   backward-input   grad_x     (o,i,j) weight[o][c,i,j]        grad_out[img][o][oh][ow] where
//                    m = c, n = (img, ih, iw)                   oh*s = ih+p-i*d (else zero)
//   backward-weight  grad_w     (img,oh,ow) grad_out[img][o][oh][ow]  x[img][c][oh*s-p+i*d][..]
//                    m = o, n = (c, i, j)
//
// (channels within the group; s, p, d: stride, padding, dilation per spatial dim.)
//
// Addressing: every operand element is the sum of a part that depends only on its m or n (fixed
// for a thread over the whole K loop, so computed once) and a part that depends only on k
// (computed once per tile). A part is a Tap {memory offset, row, column}; adding the two taps of
// an element gives its address, and for image operands its (row, column), which is checked
// against the image (zero outside) where the conv is padded. All the integer divisions that split
// an index into (img, oh, ow) or (c, i, j) thus happen once per thread per tile, not once per
// element, and each is a multiply-high (FastDiv) rather than an integer division, which GPUs run as
// a software routine.
//
// Kernel: 256 threads compute a BM x BN tile of C (BM = 16, 32 or 64, the smallest that covers
// M, since conv GEMMs often have M = 16 or 32 channels; BN = 32, 64 or 128 by gemm_tiling and
// weight_tiling below), K walked BK at a time (32 in float32, 16 in float64: the same shared
// memory); the Tiling arranges the 8 warps over the tile, each thread computing a TM x TN block
// of it. Tiles are staged in registers and then in shared memory; the global loads of tile t + 1
// are issued before the math of tile t. A small conv's GEMM has few tiles (the digits CNN's 16 ->
// 32 backward-input at batch 32: 43 tiles 128 wide for 132 SMs), so one block's walk over K is the
// whole kernel's time: a deep BK makes that walk 4x shorter than BK = 8 did, and narrow tiles give
// it a quarter of the work per step on four times the SMs. Float16/bfloat16 compute in float32,
// float64 in float64. Backward-weight reduces over K = N * Ho * Wo (large) with few output tiles,
// so K is split over blockIdx.z into partial sums that a second kernel adds up (deterministic, no
// atomics).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "ember/dtype.h"

namespace ember::cuda::conv {

// n / d for a divisor d >= 1 fixed at launch and n in [0, 2^31): a multiply-high, an add and a
// shift instead of a ~20-instruction integer division (the round-up method of Granlund and
// Montgomery, as in CUTLASS's FastDivmod). The host computes magic and shift once per launch.
struct FastDiv {
  uint32_t magic = 1, shift = 0;
  FastDiv() = default;
  explicit FastDiv(int d) {
    while ((uint64_t(1) << shift) < uint64_t(d)) ++shift;
    magic =
        uint32_t((uint64_t(1) << 32) * ((uint64_t(1) << shift) - uint64_t(d)) / uint64_t(d) + 1);
  }
  __device__ __forceinline__ int operator()(int n) const {
    return int((__umulhi(uint32_t(n), magic) + uint32_t(n)) >> shift);
  }
};

// Sizes and hyper-parameters of one convolution x: [N, C, H, W] * weight: [O, C/G, kh, kw] ->
// out: [N, O, Ho, Wo]; every size fits in int (checked by the caller), offsets are int64.
struct ConvShape {
  int N, C, H, W, O, kh, kw, Ho, Wo, G;
  int sh, sw, ph, pw, dh, dw;
  int Cg, Og;  // channels per group
  int khw;     // kh * kw
  int R;       // Cg * kh * kw: taps per output, the forward GEMM's K
  int P;       // Ho * Wo: output positions per image
  int HW;      // H * W
  // Division by the sizes the passes split indices with: k / khw, t / kw, n / P, p / Wo, ...
  FastDiv by_khw, by_kw, by_P, by_Wo, by_HW, by_W;
};

// Fills in what follows from s's sizes and hyper-parameters: the per-group channels, R, P, HW
// and the divisions by the sizes the passes split indices with.
inline void derive_sizes(ConvShape& s) {
  s.Cg = s.C / s.G, s.Og = s.O / s.G;
  s.khw = s.kh * s.kw, s.R = s.Cg * s.khw, s.P = s.Ho * s.Wo, s.HW = s.H * s.W;
  s.by_khw = FastDiv(s.khw), s.by_kw = FastDiv(s.kw);
  s.by_P = FastDiv(std::max(s.P, 1)), s.by_Wo = FastDiv(std::max(s.Wo, 1));
  s.by_HW = FastDiv(std::max(s.HW, 1)), s.by_W = FastDiv(std::max(s.W, 1));
}

// Half of an element's address: a memory offset and, for image operands, a (row, column).
struct Tap {
  int64_t off;
  int h, w;
  bool ok;  // false: the element is outside the GEMM (reads as zero)
};

// A operand elements: data[m-tap.off + k-tap.off].
template <class T> struct DenseGather {
  const T* data;
  template <class Acc> __device__ __forceinline__ Acc at(const Tap& a, const Tap& b) const {
    return a.ok && b.ok ? Acc(data[a.off + b.off]) : Acc(0);
  }
};

// Image elements at unit stride: plane row h = a.h + b.h, column w = a.w + b.w, zero outside
// [rows) x [cols). The row and column are folded into each tap's offset when the tap is made
// (tap), so an element's address is a.off + b.off, with no multiply per element. kPadded: taps
// may leave the plane (a padded conv), so each element is tested against its edges; an unpadded
// conv's taps of a valid output position all lie inside the image, and skip the four
// instructions of that test (a fifth of the forward's time at the digits CNN's shapes).
template <class T, bool kPadded> struct PlaneGather {
  const T* data;
  int rows, cols;
  __device__ Tap tap(int64_t off, int h, int w) const {
    return {off + int64_t(h) * cols + w, h, w, true};
  }
  template <class Acc> __device__ __forceinline__ Acc at(const Tap& a, const Tap& b) const {
    bool inside = a.ok && b.ok;
    if (kPadded) {
      const int h = a.h + b.h, w = a.w + b.w;
      inside = inside && unsigned(h) < unsigned(rows) && unsigned(w) < unsigned(cols);
    }
    return inside ? Acc(data[a.off + b.off]) : Acc(0);
  }
};

// Backward-input's gather from grad_out when the conv is strided (sh or sw > 1): (h, w) is first
// divided by the stride and is zero unless it divides exactly (that output position never read
// this input), so the row and column cannot be folded into the taps' offsets.
template <class T> struct StridedPlaneGather {
  const T* data;
  int rows, cols, sh, sw;
  __device__ Tap tap(int64_t off, int h, int w) const { return {off, h, w, true}; }
  template <class Acc> __device__ __forceinline__ Acc at(const Tap& a, const Tap& b) const {
    int h = a.h + b.h, w = a.w + b.w;
    if (!(a.ok && b.ok) || h < 0 || w < 0 || h % sh != 0 || w % sw != 0) return Acc(0);
    h /= sh, w /= sw;
    if (h >= rows || w >= cols) return Acc(0);
    return Acc(data[a.off + b.off + int64_t(h) * cols + w]);
  }
};

// ---- the three passes -------------------------------------------------------------------------
// Each provides a_m / a_k (the two taps of A), b_k / b_n (of B), c_n (the n part of C's address,
// hoisted out of the epilogue's row loop) and store. Bounds (m < M, n < N, k < K) are the
// kernel's business; these only compute offsets.

// out[img][g*Og + m][p] = sum_k weight[g*Og + m][k] * x-tap(k, n) + bias[g*Og + m]
// Gather: PlaneGather<T, kPadded> over x.
template <class T, class Gather> struct Forward {
  using Acc = compute_t<T>;
  ConvShape s;
  DenseGather<T> a;  // weight [O, R]
  Gather b;          // x
  const T* bias;     // [O] or nullptr
  T* out;

  __device__ Tap a_m(int g, int m) const { return {int64_t(g * s.Og + m) * s.R, 0, 0, true}; }
  __device__ Tap a_k(int, int k) const { return {k, 0, 0, true}; }
  __device__ Tap b_k(int, int k) const {  // k = (c, i, j)
    const int c = s.by_khw(k), t = k - c * s.khw, i = s.by_kw(t), j = t - i * s.kw;
    return b.tap(int64_t(c) * s.HW, i * s.dh, j * s.dw);
  }
  __device__ Tap b_n(int g, int n) const {  // n = (img, oh, ow)
    const int img = s.by_P(n), p = n - img * s.P, oh = s.by_Wo(p), ow = p - oh * s.Wo;
    return b.tap((int64_t(img) * s.C + g * s.Cg) * s.HW, oh * s.sh - s.ph, ow * s.sw - s.pw);
  }
  __device__ int64_t c_n(int n) const {
    const int img = s.by_P(n);
    return int64_t(img) * s.O * s.P + (n - img * s.P);
  }
  __device__ void store(int g, int m, int64_t cn, Acc v, int) const {
    const int o = g * s.Og + m;
    if (bias) v += Acc(bias[o]);
    out[cn + int64_t(o) * s.P] = T(v);
  }
};

// grad_x[img][g*Cg + m][ih][iw] = sum_{o,i,j} weight[g*Og + o][m][i][j] * grad_out-tap
// Gather: PlaneGather<T, true> at unit stride (a tap reaches outside grad_out at its borders
// whatever the padding), else StridedPlaneGather<T>.
template <class T, class Gather> struct BackwardInput {
  using Acc = compute_t<T>;
  ConvShape s;
  DenseGather<T> a;  // weight, read as [Cg, Og * kh * kw] per group
  Gather b;          // grad_out
  T* grad_x;

  __device__ Tap a_m(int, int m) const { return {int64_t(m) * s.khw, 0, 0, true}; }
  __device__ Tap a_k(int g, int k) const {  // k = (o, t = i * kw + j)
    const int o = s.by_khw(k), t = k - o * s.khw;
    return {int64_t(g * s.Og + o) * s.R + t, 0, 0, true};
  }
  __device__ Tap b_k(int, int k) const {
    const int o = s.by_khw(k), t = k - o * s.khw, i = s.by_kw(t), j = t - i * s.kw;
    return b.tap(int64_t(o) * s.P, -i * s.dh, -j * s.dw);
  }
  __device__ Tap b_n(int g, int n) const {  // n = (img, ih, iw)
    const int img = s.by_HW(n), q = n - img * s.HW, ih = s.by_W(q), iw = q - ih * s.W;
    return b.tap((int64_t(img) * s.O + g * s.Og) * s.P, ih + s.ph, iw + s.pw);
  }
  __device__ int64_t c_n(int n) const {
    const int img = s.by_HW(n);
    return int64_t(img) * s.C * s.HW + (n - img * s.HW);
  }
  __device__ void store(int g, int m, int64_t cn, Acc v, int) const {
    grad_x[cn + int64_t(g * s.Cg + m) * s.HW] = T(v);
  }
};

// partial[split][g*Og + m][n] = sum over this split's k of grad_out-tap * x-tap
// Gather: PlaneGather<T, kPadded> over x.
template <class T, class Gather> struct BackwardWeight {
  using Acc = compute_t<T>;
  ConvShape s;
  DenseGather<T> a;  // grad_out, read as [Og, N * Ho * Wo] per group
  Gather b;          // x
  Acc* partial;      // [splits, O, R]

  __device__ Tap a_m(int g, int m) const { return {int64_t(g * s.Og + m) * s.P, 0, 0, true}; }
  __device__ Tap a_k(int, int k) const {  // k = (img, p)
    const int img = s.by_P(k);
    return {int64_t(img) * s.O * s.P + (k - img * s.P), 0, 0, true};
  }
  __device__ Tap b_k(int, int k) const {  // k = (img, oh, ow)
    const int img = s.by_P(k), p = k - img * s.P, oh = s.by_Wo(p), ow = p - oh * s.Wo;
    return b.tap(int64_t(img) * s.C * s.HW, oh * s.sh - s.ph, ow * s.sw - s.pw);
  }
  __device__ Tap b_n(int g, int n) const {  // n = (c, i, j)
    const int c = s.by_khw(n), t = n - c * s.khw, i = s.by_kw(t), j = t - i * s.kw;
    return b.tap(int64_t(g * s.Cg + c) * s.HW, i * s.dh, j * s.dw);
  }
  __device__ int64_t c_n(int n) const { return n; }
  __device__ void store(int g, int m, int64_t cn, Acc v, int split) const {
    partial[(int64_t(split) * s.O + g * s.Og + m) * s.R + cn] = v;
  }
};

// ---- the kernel ---------------------------------------------------------------------------------
// kBN: the widest tile, on which conv_pool.cu judges whether a GEMM fills the implicit kernel's
// tiles enough (its rule 6).
constexpr int kThreads = 256, kWarps = kThreads / 32, kBN = 128;

// BK, the depth of a K tile, for accumulators of type Acc.
template <class Acc> constexpr int tile_depth() { return sizeof(Acc) == 4 ? 32 : 16; }

// One BM x BN tile of C for group blockIdx.y over k in [blockIdx.z * k_chunk, + k_chunk).
//   M, N, K: the per-group GEMM sizes.
// Math mapping: each thread computes TM rows of the tile; the 8 warps form WM = BM / TM rows of
// WN = 8 / WM, warp (wm, wn) computes rows wm*TM.. and its lane l columns (wn*32 + l)*TN..
// (TN = BN / (32 WN)). Per k a warp reads TM values of A that all its lanes share (a broadcast)
// and 32 TN consecutive values of B, for TM TN multiply-adds a lane: a larger thread tile does
// more math per shared-memory read.
// Load mapping (per tile): thread tid loads A elements (m = tid / BK + (256 / BK) v, k = tid % BK)
// and B elements (k = tid / 32 + 8 u, n = tid % 32 + 32 v): one k-tap of A and BK / 8 of B per
// thread per tile, and a warp's 32 B loads are 32 consecutive n (consecutive output pixels:
// coalesced).
template <class Pass, int BM, int BN, int TM>
__global__ void __launch_bounds__(kThreads) conv_gemm(Pass pass, int M, int N, int K, int k_chunk) {
  using Acc = typename Pass::Acc;
  constexpr int BK = tile_depth<Acc>(), WM = BM / TM, WN = kWarps / WM, TN = BN / (32 * WN);
  static_assert(WM * TM == BM && WN * WM == kWarps && TN * 32 * WN == BN,
                "tile and warps disagree");
  constexpr int kALoads = BM * BK >= kThreads ? BM * BK / kThreads : 1;  // A elements per thread
  constexpr int kBRows = BK / 8, kBCols = BN / 32;  // B: k-taps and n-taps per thread
  // as[kk][m] and bs[kk][n]. Rows are 16-byte aligned, so a thread's TM (TN) consecutive values
  // come in vector loads; as's rows are padded so that its transposing stores (a warp writes
  // 8 values of k for 4 of m) fall in distinct banks.
  __shared__ __align__(16) Acc as[BK][BM + 4];
  __shared__ __align__(16) Acc bs[BK][BN];

  const int tid = int(threadIdx.x), g = int(blockIdx.y);
  const int tiles_n = (N + BN - 1) / BN;
  const int m0 = int(blockIdx.x) / tiles_n * BM, n0 = int(blockIdx.x) % tiles_n * BN;
  const int k_begin = int(blockIdx.z) * k_chunk, k_end = min(K, k_begin + k_chunk);

  // The m- and n-taps of this thread's loads, fixed for the whole K loop.
  const int a_kk = tid % BK, b_kk = tid / 32;
  Tap am[kALoads], bn[kBCols];
#pragma unroll
  for (int v = 0; v < kALoads; ++v) {
    const int ml = tid / BK + v * (kThreads / BK);
    am[v] = pass.a_m(g, m0 + ml);
    am[v].ok = ml < BM && m0 + ml < M;
  }
#pragma unroll
  for (int v = 0; v < kBCols; ++v) {
    const int nl = tid % 32 + 32 * v;
    bn[v] = pass.b_n(g, n0 + nl);
    bn[v].ok = n0 + nl < N;
  }

  Acc ra[kALoads], rb[kBRows][kBCols];  // the next tile, staged in registers
  auto load = [&](int k0) {
    Tap ak = pass.a_k(g, k0 + a_kk);
    ak.ok = k0 + a_kk < k_end;
#pragma unroll
    for (int v = 0; v < kALoads; ++v) ra[v] = pass.a.template at<Acc>(am[v], ak);
#pragma unroll
    for (int u = 0; u < kBRows; ++u) {
      const int k = k0 + b_kk + 8 * u;
      Tap bk = pass.b_k(g, k);
      bk.ok = k < k_end;
#pragma unroll
      for (int v = 0; v < kBCols; ++v) rb[u][v] = pass.b.template at<Acc>(bk, bn[v]);
    }
  };

  const int row0 = tid / 32 / WN * TM, col0 = (tid / 32 % WN * 32 + tid % 32) * TN;
  Acc acc[TM][TN] = {};
  if (k_begin < k_end) load(k_begin);
  for (int k0 = k_begin; k0 < k_end; k0 += BK) {
    __syncthreads();  // everyone is done reading the previous tile
#pragma unroll
    for (int v = 0; v < kALoads; ++v) {
      const int ml = tid / BK + v * (kThreads / BK);
      if (ml < BM) as[a_kk][ml] = ra[v];
    }
#pragma unroll
    for (int u = 0; u < kBRows; ++u)
#pragma unroll
      for (int v = 0; v < kBCols; ++v) bs[b_kk + 8 * u][tid % 32 + 32 * v] = rb[u][v];
    __syncthreads();
    if (k0 + BK < k_end) load(k0 + BK);  // in flight during the math below
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      Acc a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) a[i] = as[kk][row0 + i];  // a broadcast within the warp
#pragma unroll
      for (int j = 0; j < TN; ++j) b[j] = bs[kk][col0 + j];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
  }

#pragma unroll
  for (int j = 0; j < TN; ++j) {
    const int n = n0 + col0 + j;
    if (n >= N) continue;
    const int64_t cn = pass.c_n(n);
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int m = m0 + row0 + i;
      if (m < M) pass.store(g, m, cn, acc[i][j], int(blockIdx.z));
    }
  }
}

// grad_w[i] = sum over splits of partial[split][i], i < count.
template <class T, class Acc>
__global__ void sum_splits(const Acc* partial, int splits, int64_t count, T* grad_w) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    Acc sum = 0;
    for (int s = 0; s < splits; ++s) sum += partial[s * count + i];
    grad_w[i] = T(sum);
  }
}

// The BM that launch_conv_gemm uses for a GEMM with M rows: the smallest of 16, 32, 64 covering M.
inline int tile_rows(int m) { return m <= 16 ? 16 : m <= 32 ? 32 : 64; }

// Backward-weight's split of its long K (N * Ho * Wo) over blocks: enough splits that its `tiles`
// output tiles give each of the device's `sms` SMs four blocks, each split at least 8 K tiles deep
// (256 values in float32); chunk, the K values of a split, is a multiple of the tile depth.
struct KSplit {
  int splits, chunk;
};
template <class Acc> KSplit weight_k_split(int k, int64_t tiles, int sms) {
  constexpr int bk = tile_depth<Acc>();
  const int64_t wanted = 4 * int64_t(sms), max_splits = std::max<int64_t>(1, k / (8 * bk));
  const int64_t splits =
      std::clamp<int64_t>(wanted / tiles, 1, std::min<int64_t>(max_splits, 65535));
  const int chunk = int(((k + splits - 1) / splits + bk - 1) / bk * bk);
  return {(k + chunk - 1) / chunk, chunk};
}

// A tiling of the implicit GEMM: BN = cols columns, its 8 warps in warp_rows rows along m (8: one
// column of warps, each thread BM / 8 rows; 4: two columns, each thread twice the rows and half
// the columns).
struct Tiling {
  int cols, warp_rows;
};

// The tilings launch_conv_gemm takes, by name: "32", "64", "128" (8 warp rows) and "128/4" (4).
// benchmarks/tools/conv_tilings.cu times these and others (2 or 1 warp rows, 256 columns): on an
// H100 at the digits CNN's shapes, batch 256, 128/4 took 4-13 % less time than 128 in the forward
// and backward-input passes (16 -> 32: 0.080 against 0.083 ms, 0.112 against 0.122), and no other
// tiling beat both (results/2026-12-06_nvidia-h100_conv-tilings-eleventh-run.csv; an H200 gave
// 3-9 % in the tenth run).
constexpr Tiling kTilings[] = {{32, 8}, {64, 8}, {128, 8}, {128, 4}};

// A tiling's name in EMBER_CONV_TILING: its columns, then "/" and its warp rows where fewer than 8.
inline std::string tiling_name(Tiling t) {
  const std::string cols = std::to_string(t.cols);
  return t.warp_rows == kWarps ? cols : cols + "/" + std::to_string(t.warp_rows);
}

// The tiling of a forward or backward-input GEMM of M x N, `groups` of them, on a GPU of `sms`
// SMs: 128 columns where 128-wide tiles give every SM four blocks, else 64 where they give every
// SM one, else 32. A small GEMM's blocks are few and each walks all of K, so narrower tiles spread
// that walk over more SMs. 128 columns go to 4 warp rows (each thread twice the rows and half the
// columns of 8): a warp reads its rows' values from shared memory as broadcasts, so it moves fewer
// bytes a multiply-add. Backward-weight splits its K until every SM has blocks whatever the width,
// and takes weight_tiling(N). Measured on an H100 by benchmarks/tools/conv_tilings.cu (results/
// 2026-12-06_nvidia-h100_conv-tilings-ninth-run-before.csv): at the digits CNN's shapes, batch 32
// and 256, every pass at these widths was the fastest or within 4 % of it; at batch 32 the forward
// and backward-input took 10-20 % less time on 64-wide tiles than on 128-wide ones.
inline Tiling gemm_tiling(int m, int n, int groups, int sms) {
  const int64_t tiles =
      int64_t((m + tile_rows(m) - 1) / tile_rows(m)) * ((int64_t(n) + 127) / 128) * groups;
  if (tiles >= 4 * int64_t(sms)) return {128, kWarps / 2};
  return {tiles >= sms ? 64 : 32, kWarps};
}

// Backward-weight's tiling for N = Cg kh kw columns: 32 where they fit in 32, else 64 (at
// N = 144, 0.131 ms against 0.156 on 128-wide tiles, which compute 256 columns, and 0.157 on
// 32-wide ones, which read each A tile five times).
inline Tiling weight_tiling(int n) { return {n <= 32 ? 32 : 64, kWarps}; }

// Calls f(BM, BN, TM), each a std::integral_constant, with conv_gemm's template arguments for a
// GEMM of M rows at tiling t (one of kTilings): BM = tile_rows(M), TM = BM / t.warp_rows.
template <class F> void with_tile_shape(int M, Tiling t, F f) {
  auto with_bm = [&](auto bm) {
    constexpr int BM = decltype(bm)::value;
    auto on = [&](auto bn, auto warp_rows) {
      f(bm, bn, std::integral_constant<int, BM / decltype(warp_rows)::value>{});
    };
    using AllRows = std::integral_constant<int, kWarps>;
    if (t.cols == 32) on(std::integral_constant<int, 32>{}, AllRows{});
    else if (t.cols == 64) on(std::integral_constant<int, 64>{}, AllRows{});
    else if (t.warp_rows == kWarps) on(std::integral_constant<int, 128>{}, AllRows{});
    else on(std::integral_constant<int, 128>{}, std::integral_constant<int, 4>{});
  };
  switch (tile_rows(M)) {
    case 16:
      return with_bm(std::integral_constant<int, 16>{});
    case 32:
      return with_bm(std::integral_constant<int, 32>{});
    default:
      return with_bm(std::integral_constant<int, 64>{});
  }
}

// The launches need nvcc; tests/on_host/test_conv_gemm_on_host.cpp compiles the rest of this
// header with the host compiler and runs the kernel on the CPU, at with_tile_shape's arguments.
#ifdef __CUDACC__
// conv_gemm for `pass` on BM x BN tiles, TM rows a thread. Grid: tiles x groups x splits; k_chunk
// a multiple of tile_depth<Pass::Acc>(). The caller checks the launch.
template <class Pass, int BM, int BN, int TM>
void launch_conv_gemm_on(const Pass& pass, int M, int N, int K, int groups, int splits, int k_chunk,
                         cudaStream_t stream) {
  const int64_t tiles = int64_t((M + BM - 1) / BM) * ((N + BN - 1) / BN);
  conv_gemm<Pass, BM, BN, TM>
      <<<dim3(unsigned(tiles), unsigned(groups), unsigned(splits)), kThreads, 0, stream>>>(pass, M,
                                                                                           N, K,
                                                                                           k_chunk);
}

// Launches conv_gemm for `pass` with BM = tile_rows(M) and tiling t (one of kTilings).
template <class Pass>
void launch_conv_gemm(const Pass& pass, int M, int N, int K, int groups, int splits, int k_chunk,
                      Tiling t, cudaStream_t stream) {
  with_tile_shape(M, t, [&](auto bm, auto bn, auto tm) {
    launch_conv_gemm_on<Pass, decltype(bm)::value, decltype(bn)::value, decltype(tm)::value>(
        pass, M, N, K, groups, splits, k_chunk, stream);
  });
}

#endif  // __CUDACC__

}  // namespace ember::cuda::conv
