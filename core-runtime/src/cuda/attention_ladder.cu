// attention_ladder.cu — scaled dot-product attention on CUDA in three steps, from the formula to
// tensor cores (a teaching series in the style of llm.c's dev/cuda files, like gemm_tiled.cuh),
// beside its CPU reference (v0), and the kernels the op runs.
//
// Every version computes, per head b of BH (layout in ops/attention_kernels.h):
//     scores = q k^T * scale + bias        [L, S]   (bias: mask, causal rule)
//     out    = dropout(softmax(scores)) v  [L, Ev],  logsumexp[i] = log(sum_j exp(scores[i, j]))
// with a fully masked row giving 0 and logsumexp -inf.
//
//   v0  the CPU reference: the formula in double on the host, from copies (for validation).
//   v1  three kernels, as the formula reads: scores into global memory [BH, L, S], a row-wise
//       softmax over them in place, then the weighted sum of v. Simple, and O(L S) memory.
//   v2  one fused kernel (flash attention): a block owns 32 query rows, one thread each; tiles
//       of 32 keys and values are staged in shared memory, and each thread keeps its row's
//       running max, running sum and output accumulator (the online softmax), so the scores
//       never leave the chip and memory is O(L).
//   v3  v2 on tensor cores (float16/bfloat16 with E and Ev multiples of 16): a warp owns 16
//       query rows; q k^T and p v are 16x16x16 wmma products with float accumulation. The
//       online softmax runs on all 32 lanes of the warp (two a row, joined by shuffles), with the
//       running max and sum in registers, and p v accumulates straight into the accumulator's
//       fragments; tiles fully masked by the causal rule are skipped. The tensor cores do the
//       products fast enough that the elementwise softmax, and the shared-memory round trips
//       around it, set the pace: hence every lane on it, and no buffer the product passes through.
// The backward recomputes the probabilities from logsumexp (the forward keeps no [L, S] matrix),
// with delta_i = dO_i . O_i:  P = exp(S - lse), dV = (P Z)^T dO, dP = dO V^T Z,
// dS = P (dP - delta) scale, dK = dS^T Q, dQ = dS K  (Z: the dropout's factors). Two kernels:
//   b2  at v2's level (float32, float64, and the 16-bit types where v3 does not apply): a block
//       owns 32 keys (one thread each) and walks the query rows; dK and dV accumulate in shared
//       memory, dQ in a float (double) buffer by atomic adds.
//   b3  at v3's level, after FlashAttention-2: a block owns 64 keys (16 a warp), stages them and
//       their values once, and walks the query tiles of 64 rows (from the diagonal on under the
//       causal rule). Every product (S^T, dP^T, dV, dK, dQ) is a wmma product with float
//       accumulation; the elementwise step uses all 32 lanes; dK and dV accumulate in float in
//       shared memory, dQ by float atomic adds (one kernel: no second pass recomputing P).
//       Computing S and dP transposed (keys as rows) makes each warp's products run on its own
//       rows, so only the dQ product, which needs every warp's dS, waits for the block.
//
// Selecting a version: the op runs EMBER_ATTENTION_VERSION (0..3, read at every call so that a
// benchmark or a test can switch), or, unset, v3 where it applies and v2 elsewhere. v3 asked for
// where it does not apply (float32, float64, E or Ev not a multiple of 16, bfloat16 on a GPU
// below sm_80, whose tensor cores lack it) runs v2. The backward follows: b3 where v3 applies,
// unless 0, 1 or 2 is asked for; b2 otherwise. v2, v3 and b3 need their tiles to fit the GPU's
// shared memory (E and Ev up to several hundred; b3 falls back to b2 beyond its own); beyond
// that the forward runs v1, and the backward raises NotSupportedError naming the sizes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <type_traits>
#include <vector>

#include "convert.h"
#include "cuda/launch.cuh"
#include "dispatch.h"
#include "kernels.h"
#include "ops/attention_kernels.h"

namespace ember::cuda {
namespace {

constexpr const char* kForward = "scaled_dot_product_attention";
constexpr const char* kBackward = "scaled_dot_product_attention_backward";

// ================================================================================================
// Shared pieces.

// EMBER_ATTENTION_VERSION (0..3), read at every call; -1 when unset (the best that applies). `op`
// names the op a bad value is reported against.
int requested_version(const char* op) {
  const char* v = std::getenv("EMBER_ATTENTION_VERSION");
  if (!v || !*v) return -1;
  const std::string s(v);
  if (s.size() != 1 || s[0] < '0' || s[0] > '3')
    throw ValueError(op, "EMBER_ATTENTION_VERSION='" + s +
                             "'; expected 0, 1, 2 or 3 (or unset for the fastest)");
  return s[0] - '0';
}

// AttentionMask's pointers, passed to kernels by value.
struct MaskView {
  AttentionMaskKind kind = AttentionMaskKind::None;
  const bool* bools = nullptr;
  const void* adds = nullptr;  // of the inputs' type T
  const int64_t* offsets = nullptr;
  int64_t stride_l = 0, stride_s = 0;
};

MaskView mask_view(const AttentionMask& m) {
  MaskView v;
  v.kind = m.kind;
  if (m.kind == AttentionMaskKind::None) return v;
  if (m.kind == AttentionMaskKind::Bool) v.bools = m.values.data<bool>();
  else v.adds = m.values.data_ptr();
  v.offsets = m.offsets.data<int64_t>();
  v.stride_l = m.stride_l;
  v.stride_s = m.stride_s;
  return v;
}

__host__ __device__ __forceinline__ int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

template <class C> __device__ __forceinline__ C neg_inf() { return C(-INFINITY); }

// The bias of score (b, i, j): the causal rule, then the mask.
template <class T, class C>
__device__ __forceinline__ C bias_of(const MaskView& m, const AttentionParams& p, int64_t b,
                                     int64_t i, int64_t j) {
  if (p.causal && j > i) return neg_inf<C>();
  if (m.kind == AttentionMaskKind::None) return C(0);
  const int64_t at = m.offsets[b] + i * m.stride_l + j * m.stride_s;
  if (m.kind == AttentionMaskKind::Bool) return m.bools[at] ? C(0) : neg_inf<C>();
  return convert<C>(static_cast<const T*>(m.adds)[at]);
}

// The score scale: E == 0 makes every q . k an empty sum, 0, whatever the scale.
template <class C> __device__ __forceinline__ C score_scale(const AttentionParams& p) {
  return p.E == 0 ? C(0) : C(p.scale);
}

__device__ __forceinline__ float fast_exp(float x) { return __expf(x); }
__device__ __forceinline__ double fast_exp(double x) { return exp(x); }

// The dropout's factor for probability (b, i, j): 1 without dropout.
template <class C>
__device__ __forceinline__ C keep_factor(const AttentionParams& p, int64_t b, int64_t i,
                                         int64_t j) {
  if (p.dropout_p == 0) return C(1);
  return attention_keep(p, b, i, j) ? C(attention_keep_scale(p.dropout_p)) : C(0);
}

// Dynamic shared memory beyond 48 KiB must be asked for per kernel; false when the GPU has less
// than `bytes` per block.
template <class Kernel> bool allow_shared(Kernel kernel, size_t bytes, int device) {
  int optin = 0;
  EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
                   kForward);
  if (bytes > size_t(optin)) return false;
  EMBER_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        int(bytes)),
                   kForward);
  return true;
}

// ================================================================================================
// v0 — the CPU reference: the formula in double, on host copies.

void v0_forward(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionMask& mask,
                const AttentionParams& p, Tensor& out, Tensor& lse) {
  const std::vector<double> qh = q.to_vector<double>(), kh = k.to_vector<double>();
  const std::vector<double> vh = v.to_vector<double>();
  // The mask broadcast to [batch..., L, S], row-major: head b's bias at (b L + i) S + j.
  const std::vector<double> mh = mask.kind == AttentionMaskKind::None
                                     ? std::vector<double>()
                                     : mask.values.to_vector<double>();
  std::vector<double> oh(size_t(p.heads * p.L * p.Ev), 0.0), lh(size_t(p.heads * p.L));
  std::vector<double> s(size_t(p.S));
  for (int64_t b = 0; b < p.heads; ++b)
    for (int64_t i = 0; i < p.L; ++i) {
      double m = -INFINITY;
      for (int64_t j = 0; j < p.S; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < p.E; ++e)
          dot += qh[size_t((b * p.L + i) * p.E + e)] * kh[size_t((b * p.S + j) * p.E + e)];
        double bias = p.causal && j > i ? -INFINITY : 0.0;
        if (!mh.empty()) {
          const double x = mh[size_t((b * p.L + i) * p.S + j)];
          bias += mask.kind == AttentionMaskKind::Bool ? (x != 0 ? 0.0 : -INFINITY) : x;
        }
        s[size_t(j)] = (p.E == 0 ? 0.0 : dot * p.scale) + bias;
        m = std::max(m, s[size_t(j)]);
      }
      double sum = 0;
      for (double& x : s) sum += (x = m == -INFINITY ? 0.0 : std::exp(x - m));
      lh[size_t(b * p.L + i)] = sum > 0 ? m + std::log(sum) : -INFINITY;
      for (int64_t j = 0; j < p.S; ++j) {
        const double keep = p.dropout_p == 0             ? 1.0
                            : attention_keep(p, b, i, j) ? attention_keep_scale(p.dropout_p)
                                                         : 0.0;
        const double w = sum > 0 ? s[size_t(j)] / sum * keep : 0.0;
        for (int64_t c = 0; c < p.Ev; ++c)
          oh[size_t((b * p.L + i) * p.Ev + c)] += w * vh[size_t((b * p.S + j) * p.Ev + c)];
      }
    }
  out.copy_(Tensor::from_vector(oh, out.shape()));
  lse.copy_(Tensor::from_vector(lh, lse.shape()));
}

// ================================================================================================
// v1 — three kernels: scores, softmax, weighted sum. Thread per element, grid-stride loops.

constexpr int kV1Threads = 256;

// scores[b, i, j] = q_i . k_j * scale + bias
template <class T, class C>
__global__ void v1_scores(const T* q, const T* k, MaskView mask, AttentionParams p, C* scores) {
  const int64_t total = p.heads * p.L * p.S;
  for (int64_t n = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; n < total;
       n += int64_t(gridDim.x) * blockDim.x) {
    const int64_t j = n % p.S, i = (n / p.S) % p.L, b = n / (p.S * p.L);
    C dot = 0;
    for (int64_t e = 0; e < p.E; ++e)
      dot += convert<C>(q[(b * p.L + i) * p.E + e]) * convert<C>(k[(b * p.S + j) * p.E + e]);
    scores[n] = dot * score_scale<C>(p) + bias_of<T, C>(mask, p, b, i, j);
  }
}

// Row r of scores becomes its probabilities times the dropout's factors; lse[r] its
// log-sum-exp. One thread per row.
template <class C> __global__ void v1_softmax(C* scores, C* lse, AttentionParams p) {
  const int64_t rows = p.heads * p.L;
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows;
       r += int64_t(gridDim.x) * blockDim.x) {
    C* s = scores + r * p.S;
    C m = neg_inf<C>();
    for (int64_t j = 0; j < p.S; ++j) m = s[j] > m ? s[j] : m;
    C sum = 0;
    if (m != neg_inf<C>())
      for (int64_t j = 0; j < p.S; ++j) sum += fast_exp(s[j] - m);
    lse[r] = sum > 0 ? m + log(sum) : neg_inf<C>();
    for (int64_t j = 0; j < p.S; ++j)
      s[j] = sum > 0 ? fast_exp(s[j] - m) / sum * keep_factor<C>(p, r / p.L, r % p.L, j) : C(0);
  }
}

// out[b, i, c] = sum_j probs[b, i, j] v[b, j, c]
template <class T, class C>
__global__ void v1_weighted_sum(const C* probs, const T* v, AttentionParams p, T* out) {
  const int64_t total = p.heads * p.L * p.Ev;
  for (int64_t n = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; n < total;
       n += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = n % p.Ev, i = (n / p.Ev) % p.L, b = n / (p.Ev * p.L);
    C sum = 0;
    for (int64_t j = 0; j < p.S; ++j)
      sum += probs[(b * p.L + i) * p.S + j] * convert<C>(v[(b * p.S + j) * p.Ev + c]);
    out[n] = convert<T>(sum);
  }
}

template <class T>
void v1_forward(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionMask& mask,
                const AttentionParams& p, Tensor& out, Tensor& lse) {
  using C = compute_t<T>;
  const int dev = q.device().index;
  Tensor scores = Tensor::empty({p.heads, p.L, p.S}, dtype_of_v<C>, q.device(), kForward);
  const MaskView mv = mask_view(mask);
  cudaStream_t s = stream(q.device());
  v1_scores<T, C>
      <<<grid_size(scores.numel(), kV1Threads, dev), kV1Threads, 0, s>>>(q.data<T>(), k.data<T>(),
                                                                         mv, p, scores.data<C>());
  check_launch(kForward, {&q, &k});
  v1_softmax<C><<<grid_size(p.heads * p.L, kV1Threads, dev), kV1Threads, 0, s>>>(scores.data<C>(),
                                                                                 lse.data<C>(), p);
  check_launch(kForward, {&q, &lse});
  v1_weighted_sum<T, C>
      <<<grid_size(out.numel(), kV1Threads, dev), kV1Threads, 0, s>>>(scores.data<C>(), v.data<T>(),
                                                                      p, out.data<T>());
  check_launch(kForward, {&v, &out});
}

// ================================================================================================
// v2 — one fused kernel, the online softmax in shared memory.
//
// Grid (BH, ceil(L / 32)); block 32 threads, thread r owns query row i0 + r. Shared memory, in
// the compute type C: the block's q rows [32][E + 1] and output accumulators [32][Ev + 1] (rows
// padded by one so that the 32 threads, each reading its own row, hit 32 different banks), and
// the current tile of 32 keys [32][E] and values [32][Ev] (every thread reads the same key at a
// time: a broadcast). Per tile, thread r computes its 32 scores into registers and updates
//   m' = max(m, max_j s_j),  l' = l e^(m - m') + sum_j e^(s_j - m'),
//   acc' = acc e^(m - m') + sum_j e^(s_j - m') z_j v_j
// and at the end writes out = acc / l, logsumexp = m + log l.

constexpr int kV2Rows = 32;
constexpr int kV2Keys = 32;

size_t v2_shared_bytes(const AttentionParams& p, size_t elem) {
  return elem * size_t(kV2Rows * (p.E + 1) + kV2Rows * (p.Ev + 1) + kV2Keys * p.E + kV2Keys * p.Ev);
}

template <class T, class C>
__global__ void __launch_bounds__(kV2Rows)
    v2_forward(const T* q, const T* k, const T* v, MaskView mask, AttentionParams p, T* out,
               C* lse) {
  extern __shared__ __align__(16) unsigned char v2_smem[];
  const int64_t E = p.E, Ev = p.Ev;
  C* qs = reinterpret_cast<C*>(v2_smem);  // [kV2Rows][E + 1]
  C* acc = qs + kV2Rows * (E + 1);        // [kV2Rows][Ev + 1]
  C* ks = acc + kV2Rows * (Ev + 1);       // [kV2Keys][E]
  C* vs = ks + kV2Keys * E;               // [kV2Keys][Ev]
  const int64_t b = blockIdx.x, i0 = int64_t(blockIdx.y) * kV2Rows;
  const int r = threadIdx.x;
  const int64_t i = i0 + r;
  const bool live = i < p.L;
  for (int64_t n = r; n < kV2Rows * E; n += kV2Rows) {
    const int64_t row = n / E, e = n % E;
    qs[row * (E + 1) + e] = i0 + row < p.L ? convert<C>(q[(b * p.L + i0 + row) * E + e]) : C(0);
  }
  for (int64_t c = 0; c < Ev; ++c) acc[r * (Ev + 1) + c] = 0;
  C m = neg_inf<C>(), l = 0;
  const C scale = score_scale<C>(p);
  const int64_t kend = p.causal ? imin(p.S, i0 + kV2Rows) : p.S;
  for (int64_t j0 = 0; j0 < kend; j0 += kV2Keys) {
    const int cols = int(imin(kV2Keys, kend - j0));
    __syncthreads();  // the previous tile is no longer read
    for (int64_t n = r; n < cols * E; n += kV2Rows) ks[n] = convert<C>(k[(b * p.S + j0) * E + n]);
    for (int64_t n = r; n < cols * Ev; n += kV2Rows) vs[n] = convert<C>(v[(b * p.S + j0) * Ev + n]);
    __syncthreads();
    if (!live) continue;
    C s[kV2Keys];
    C tile_max = neg_inf<C>();
#pragma unroll
    for (int c = 0; c < kV2Keys; ++c) {
      if (c >= cols) break;
      C dot = 0;
      for (int64_t e = 0; e < E; ++e) dot += qs[r * (E + 1) + e] * ks[c * E + e];
      s[c] = dot * scale + bias_of<T, C>(mask, p, b, i, j0 + c);
      tile_max = s[c] > tile_max ? s[c] : tile_max;
    }
    const C m_new = m > tile_max ? m : tile_max;
    if (m_new == neg_inf<C>()) continue;  // every key so far masked
    const C alpha = fast_exp(m - m_new);  // 0 on the row's first unmasked tile
    C sum = 0;
#pragma unroll
    for (int c = 0; c < kV2Keys; ++c) {
      if (c >= cols) break;
      s[c] = fast_exp(s[c] - m_new);
      sum += s[c];
      s[c] *= keep_factor<C>(p, b, i, j0 + c);
    }
    l = l * alpha + sum;
    m = m_new;
    for (int64_t e = 0; e < Ev; ++e) {
      C a = acc[r * (Ev + 1) + e] * alpha;
#pragma unroll
      for (int c = 0; c < kV2Keys; ++c) {
        if (c >= cols) break;
        a += s[c] * vs[c * Ev + e];
      }
      acc[r * (Ev + 1) + e] = a;
    }
  }
  if (!live) return;
  const C inv = l > 0 ? C(1) / l : C(0);
  for (int64_t e = 0; e < Ev; ++e)
    out[(b * p.L + i) * Ev + e] = convert<T>(acc[r * (Ev + 1) + e] * inv);
  lse[b * p.L + i] = l > 0 ? m + log(l) : neg_inf<C>();
}

// False when the tiles do not fit the GPU's shared memory.
template <class T>
bool v2_forward_launch(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionMask& mask,
                       const AttentionParams& p, Tensor& out, Tensor& lse) {
  using C = compute_t<T>;
  const size_t bytes = v2_shared_bytes(p, sizeof(C));
  if (!allow_shared(v2_forward<T, C>, bytes, q.device().index)) return false;
  const dim3 grid(unsigned(p.heads), unsigned((p.L + kV2Rows - 1) / kV2Rows));
  v2_forward<T, C><<<grid, kV2Rows, bytes, stream(q.device())>>>(q.data<T>(), k.data<T>(),
                                                                 v.data<T>(), mask_view(mask), p,
                                                                 out.data<T>(), lse.data<C>());
  check_launch(kForward, {&q, &k, &v, &out});
  return true;
}

// ================================================================================================
// v3 — v2 on tensor cores (wmma, 16x16x16 tiles, float accumulation).
//
// Grid (BH, ceil(L / 64)); block 4 warps, warp w owns query rows i0 + 16 w ... + 15. Shared
// memory: q rows [64][E], the tile of 64 keys [64][E] and values [64][Ev] in the 16-bit type W
// (staged 16 bytes a thread); per warp its scores [16][64] (float), probabilities [16][64] (W) and
// output accumulator [16][Ev] (float); per row the tile's rescaling factor. Each row's running
// max m and sum l stay in registers. Per tile, each warp:
//   1. scores = q k^T by wmma (k's rows read as a column-major k^T);
//   2. the online softmax with all 32 lanes, two a row (even and odd columns): scale, bias, the
//      tile's max (one shuffle joins the pair), exp, sum (one shuffle), dropout, p written in W;
//   3. the warp rescales its accumulator rows by e^(m - m') (lanes on consecutive elements);
//   4. acc += p v by wmma, the fragment loaded from and stored back to acc (no separate product
//      to add in).
// A warp skips a tile whose keys all lie after its rows under the causal rule (and the block
// stops at its last row's key), and a warp whose rows are all past L skips every tile: those
// scores are all -inf and would leave m, l and acc unchanged. Keys past S are zero-filled and
// masked to -inf. Only two __syncthreads a tile remain: around the staging of k and v, which
// all four warps read.

constexpr int kV3Warps = 4;
constexpr int kV3Rows = 16 * kV3Warps;
constexpr int kV3Keys = 64;
// Row strides of the scores (float) and probabilities (16-bit) in shared memory: padded past
// kV3Keys so that the 16 rows a warp's lanes walk at once start in different banks.
constexpr int kV3ScoreLd = kV3Keys + 4;
constexpr int kV3ProbLd = kV3Keys + 8;

template <class T> struct Wmma;  // the CUDA 16-bit type of Ember's T
template <> struct Wmma<Half> {
  using type = __half;
  static __device__ __forceinline__ __half from_float(float x) { return __float2half(x); }
};
template <> struct Wmma<BFloat16> {
  using type = __nv_bfloat16;
  // A template, so that a device pass below sm_80, whose kernels trap instead of calling it
  // (kHasWmma), does not warn of an unused function.
  template <class F> static __device__ __forceinline__ __nv_bfloat16 from_float(F x) {
    return __float2bfloat16(float(x));
  }
};

// The wmma products of v3 and b3, on 16x16x16 fragments with float accumulation. Both load each
// fragment of the operand the products share once: the compile-time counts keep those fragments
// in registers.
using Acc16 = nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float>;

// c[n] = A B_n^T for n < N: A [16][K] row-major at a (leading dimension lda), B_n the rows
// 16 n ... 16 n + 15 of the row-major [16 N][K] at b, read column-major (as its transpose).
template <int N, class W>
__device__ __forceinline__ void mma_times_rows_t(Acc16 (&c)[N], const W* a, int lda, const W* b,
                                                 int ldb, int K) {
  namespace wmma = nvcuda::wmma;
#pragma unroll
  for (int n = 0; n < N; ++n) wmma::fill_fragment(c[n], 0.0f);
  for (int e = 0; e < K; e += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, W, wmma::row_major> fa;
    wmma::load_matrix_sync(fa, a + e, lda);
#pragma unroll
    for (int n = 0; n < N; ++n) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, W, wmma::col_major> fb;
      wmma::load_matrix_sync(fb, b + n * 16 * ldb + e, ldb);
      wmma::mma_sync(c[n], fa, fb, c[n]);
    }
  }
}

// out [16][Nc] (float, leading dimension ldo) = (accumulate ? out : 0) + A B, where A [16][16 M]
// at a is row-major (Layout wmma::row_major: fragment m at a + 16 m) or column-major
// (wmma::col_major: fragment m at a + 16 m lda), and B [16 M][Nc] row-major at b.
template <int M, class Layout, class W>
__device__ __forceinline__ void mma_panel(float* out, int ldo, bool accumulate, const W* a, int lda,
                                          const W* b, int ldb, int Nc) {
  namespace wmma = nvcuda::wmma;
  constexpr bool row = std::is_same_v<Layout, wmma::row_major>;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, W, Layout> fa[M];
#pragma unroll
  for (int m = 0; m < M; ++m) wmma::load_matrix_sync(fa[m], a + (row ? 16 * m : 16 * m * lda), lda);
  for (int n = 0; n < Nc; n += 16) {
    Acc16 c;
    if (accumulate) wmma::load_matrix_sync(c, out + n, ldo, wmma::mem_row_major);
    else wmma::fill_fragment(c, 0.0f);
#pragma unroll
    for (int m = 0; m < M; ++m) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, W, wmma::row_major> fb;
      wmma::load_matrix_sync(fb, b + 16 * m * ldb + n, ldb);
      wmma::mma_sync(c, fa[m], fb, c);
    }
    wmma::store_matrix_sync(out + n, c, ldo, wmma::mem_row_major);
  }
}

// wmma on bfloat16 needs sm_80: a device pass for an older GPU (the release set's sm_75) compiles
// the bfloat16 kernels of v3 and b3 to a trap, and v3_applies keeps them off such a GPU.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
template <class T> constexpr bool kHasWmma = !std::is_same_v<T, BFloat16>;
#else
template <class T> constexpr bool kHasWmma = true;
#endif

bool v3_applies(DType dtype, const AttentionParams& p, int device) {
  if (!(dtype == DType::Float16 || dtype == DType::BFloat16) || p.E % 16 != 0 || p.Ev % 16 != 0 ||
      p.E == 0 || p.Ev == 0)
    return false;
  if (dtype == DType::Float16) return true;
  int major = 0;
  EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
                   kForward);
  return major >= 8;
}

// Stages rows [rows][cols] of 16-bit values (row r at src + r * cols) in shared memory as W,
// zero-filling the rows from `valid` on (those past L or S). Moves 16 bytes a thread when src is
// 16-byte aligned: cols is a multiple of 16, so every row then is.
template <class T, class W>
__device__ __forceinline__ void stage_rows(W* dst, const T* src, int rows, int valid, int cols) {
  static_assert(sizeof(T) == 2 && sizeof(W) == 2, "16-bit types only");
  if (reinterpret_cast<uintptr_t>(src) % 16 == 0) {
    const int chunks = cols / 8;  // 16-byte chunks a row
    const uint4* s = reinterpret_cast<const uint4*>(src);
    uint4* d = reinterpret_cast<uint4*>(dst);
    for (int n = threadIdx.x; n < rows * chunks; n += blockDim.x)
      d[n] = n / chunks < valid ? s[n] : make_uint4(0, 0, 0, 0);
  } else {
    for (int n = threadIdx.x; n < rows * cols; n += blockDim.x) {
      const T x = n / cols < valid ? src[n] : T(0.0f);
      dst[n] = *reinterpret_cast<const W*>(&x);
    }
  }
}

size_t v3_shared_bytes(const AttentionParams& p) {
  const size_t w = 2;  // bytes of the 16-bit type
  return w * size_t(kV3Rows * p.E + kV3Keys * p.E + kV3Keys * p.Ev) +
         4 * size_t(kV3Rows * kV3ScoreLd) + w * size_t(kV3Rows * kV3ProbLd) +
         4 * size_t(kV3Rows * p.Ev) + 4 * size_t(kV3Rows);
}

template <class T>
__device__ __forceinline__ void v3_forward_body(const T* q, const T* k, const T* v, MaskView mask,
                                                AttentionParams p, T* out, float* lse) {
  namespace wmma = nvcuda::wmma;
  using W = typename Wmma<T>::type;
  extern __shared__ __align__(32) unsigned char v3_smem[];
  const int E = int(p.E), Ev = int(p.Ev);
  W* qs = reinterpret_cast<W*>(v3_smem);                            // [kV3Rows][E]
  W* ks = qs + kV3Rows * E;                                         // [kV3Keys][E]
  W* vs = ks + kV3Keys * E;                                         // [kV3Keys][Ev]
  float* sc = reinterpret_cast<float*>(vs + kV3Keys * Ev);          // [kV3Rows][kV3ScoreLd]
  W* ps = reinterpret_cast<W*>(sc + kV3Rows * kV3ScoreLd);          // [kV3Rows][kV3ProbLd]
  float* acc = reinterpret_cast<float*>(ps + kV3Rows * kV3ProbLd);  // [kV3Rows][Ev]
  float* row_f = acc + kV3Rows * Ev;  // [kV3Rows]: the tile's rescaling factor, at the end 1 / l
  const int64_t b = blockIdx.x, i0 = int64_t(blockIdx.y) * kV3Rows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int r0 = warp * 16;  // this warp's first row in the block
  // In the softmax, lanes 2 rr and 2 rr + 1 share row r0 + rr, taking its even and odd columns.
  const int rr = lane / 2, half = lane % 2;
  const int64_t i = i0 + r0 + rr;
  const int rows = int(imin(kV3Rows, p.L - i0));
  stage_rows(qs, q + (b * p.L + i0) * E, kV3Rows, rows, E);
  // Each warp zeroes its own accumulator rows: with no tile (S = 0) only __syncwarp follows.
  for (int n = lane; n < 16 * Ev; n += 32) acc[r0 * Ev + n] = 0;
  float m = -INFINITY, l = 0;  // row i's running max and sum, held by both lanes of the pair
  const float scale = score_scale<float>(p);
  const int64_t kend = p.causal ? imin(p.S, i0 + kV3Rows) : p.S;
  for (int64_t j0 = 0; j0 < kend; j0 += kV3Keys) {
    const int cols = int(imin(kV3Keys, kend - j0));
    __syncthreads();  // the previous tile is no longer read (and q is staged)
    stage_rows(ks, k + (b * p.S + j0) * E, kV3Keys, cols, E);
    stage_rows(vs, v + (b * p.S + j0) * Ev, kV3Keys, cols, Ev);
    __syncthreads();
    // A warp whose rows are all past L, or all before the tile's first key under the causal
    // rule, has nothing to add: every score is -inf, and the tile would leave m, l and acc as
    // they are. (A warp-uniform test: the warp's __syncwarp calls below stay matched.)
    if (r0 >= rows || (p.causal && j0 > i0 + r0 + 15)) continue;
    // scores [16][kV3Keys] of this warp's rows = q k^T
    {
      Acc16 c[kV3Keys / 16];
      mma_times_rows_t(c, qs + r0 * E, E, ks, E, E);
#pragma unroll
      for (int n = 0; n < kV3Keys / 16; ++n)
        wmma::store_matrix_sync(sc + r0 * kV3ScoreLd + n * 16, c[n], kV3ScoreLd,
                                wmma::mem_row_major);
    }
    __syncwarp();
    // The online softmax of row i, two lanes a row: max and sum combine by one shuffle each.
    // Each lane rewrites its own scores biased, then reads them back: no other lane touches them.
    {
      float* srow = sc + (r0 + rr) * kV3ScoreLd;
      float tile_max = -INFINITY;
      for (int c = half; c < kV3Keys; c += 2) {
        const float x = c < cols && i < p.L
                            ? srow[c] * scale + bias_of<T, float>(mask, p, b, i, j0 + c)
                            : -INFINITY;
        srow[c] = x;
        tile_max = fmaxf(tile_max, x);
      }
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
      const float m_new = fmaxf(m, tile_max);
      const float alpha = m_new == -INFINITY ? 1.0f : __expf(m - m_new);
      float sum = 0;
      W* prow = ps + (r0 + rr) * kV3ProbLd;
      for (int c = half; c < kV3Keys; c += 2) {
        const float e = m_new == -INFINITY ? 0.0f : __expf(srow[c] - m_new);
        sum += e;
        const float z = e == 0.0f ? 0.0f : keep_factor<float>(p, b, i, j0 + c);
        prow[c] = Wmma<T>::from_float(e * z);
      }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      l = l * alpha + sum;
      m = m_new;
      if (half == 0) row_f[r0 + rr] = alpha;
    }
    __syncwarp();
    // Once the rows' maxima settle, a tile leaves every factor 1: then the warp skips the pass.
    if (!__all_sync(0xffffffffu, row_f[r0 + rr] == 1.0f))
      for (int n = lane; n < 16 * Ev; n += 32) acc[r0 * Ev + n] *= row_f[r0 + n / Ev];
    __syncwarp();
    // acc [16][Ev] += p v, the accumulator loaded into and stored from the fragment.
    mma_panel<kV3Keys / 16, wmma::row_major>(acc + r0 * Ev, Ev, true, ps + r0 * kV3ProbLd,
                                             kV3ProbLd, vs, Ev, Ev);
  }
  if (r0 >= rows) return;  // no __syncthreads follows
  __syncwarp();
  if (half == 0) {
    row_f[r0 + rr] = l > 0 ? 1.0f / l : 0.0f;
    if (i < p.L) lse[b * p.L + i] = l > 0 ? m + logf(l) : -INFINITY;
  }
  __syncwarp();
  for (int n = lane; n < 16 * Ev; n += 32) {
    const int r = r0 + n / Ev;
    if (r < rows) out[(b * p.L + i0 + r) * Ev + n % Ev] = T(acc[r0 * Ev + n] * row_f[r]);
  }
}

template <class T>
__global__ void __launch_bounds__(kV3Warps * 32)
    v3_forward(const T* q, const T* k, const T* v, MaskView mask, AttentionParams p, T* out,
               float* lse) {
  if constexpr (kHasWmma<T>) v3_forward_body<T>(q, k, v, mask, p, out, lse);
  else __trap();
}

template <class T>
bool v3_forward_launch(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionMask& mask,
                       const AttentionParams& p, Tensor& out, Tensor& lse) {
  const size_t bytes = v3_shared_bytes(p);
  if (!allow_shared(v3_forward<T>, bytes, q.device().index)) return false;
  const dim3 grid(unsigned(p.heads), unsigned((p.L + kV3Rows - 1) / kV3Rows));
  v3_forward<T><<<grid, kV3Warps * 32, bytes, stream(q.device())>>>(q.data<T>(), k.data<T>(),
                                                                    v.data<T>(), mask_view(mask), p,
                                                                    out.data<T>(),
                                                                    lse.data<float>());
  check_launch(kForward, {&q, &k, &v, &out});
  return true;
}

// ================================================================================================
// b2 — the backward, fused at v2's level.
//
// delta[b, i] = dO_i . O_i first (one thread per row). Then grid (BH, ceil(S / 32)); block 32
// threads, thread t owns key j0 + t: its k and v rows, and its dK, dV accumulators, in shared
// memory (rows padded by one). Per tile of 32 query rows (q, dO, logsumexp, delta staged in
// shared memory), thread t computes for each row i:
//   p = exp(s - lse_i),  dV_j += p z dO_i,  dp = z dO_i . v_j,  ds = p (dp - delta_i) scale,
//   dK_j += ds q_i
// and leaves ds in a [32][33] tile, from which the block then adds dS K into dQ (a float or
// double buffer, by atomic adds: other blocks add to the same rows).

constexpr int kB2Keys = 32;
constexpr int kB2Rows = 32;

size_t b2_shared_bytes(const AttentionParams& p, size_t elem) {
  return elem * size_t(2 * kB2Keys * (p.E + 1) + 2 * kB2Keys * (p.Ev + 1) + kB2Rows * p.E +
                       kB2Rows * p.Ev + 2 * kB2Rows + kB2Rows * (kB2Keys + 1));
}

template <class T, class C>
__global__ void attention_delta(const T* dout, const T* out, AttentionParams p, C* delta) {
  const int64_t rows = p.heads * p.L;
  for (int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; r < rows;
       r += int64_t(gridDim.x) * blockDim.x) {
    C d = 0;
    for (int64_t c = 0; c < p.Ev; ++c)
      d += convert<C>(dout[r * p.Ev + c]) * convert<C>(out[r * p.Ev + c]);
    delta[r] = d;
  }
}

template <class T, class C>
__global__ void __launch_bounds__(kB2Keys)
    b2_backward(const T* dout, const T* q, const T* k, const T* v, MaskView mask, const C* lse,
                const C* delta, AttentionParams p, C* dq, T* dk, T* dv) {
  extern __shared__ __align__(16) unsigned char b2_smem[];
  const int64_t E = p.E, Ev = p.Ev;
  C* ks = reinterpret_cast<C*>(b2_smem);  // [kB2Keys][E + 1]
  C* vs = ks + kB2Keys * (E + 1);         // [kB2Keys][Ev + 1]
  C* dks = vs + kB2Keys * (Ev + 1);       // [kB2Keys][E + 1]
  C* dvs = dks + kB2Keys * (E + 1);       // [kB2Keys][Ev + 1]
  C* qs = dvs + kB2Keys * (Ev + 1);       // [kB2Rows][E]
  C* dos = qs + kB2Rows * E;              // [kB2Rows][Ev]
  C* lses = dos + kB2Rows * Ev;           // [kB2Rows]
  C* deltas = lses + kB2Rows;             // [kB2Rows]
  C* ds = deltas + kB2Rows;               // [kB2Rows][kB2Keys + 1]
  const int64_t b = blockIdx.x, j0 = int64_t(blockIdx.y) * kB2Keys;
  const int t = threadIdx.x;
  const int64_t j = j0 + t;
  const bool live = j < p.S;
  for (int64_t e = 0; e < E; ++e) {
    ks[t * (E + 1) + e] = live ? convert<C>(k[(b * p.S + j) * E + e]) : C(0);
    dks[t * (E + 1) + e] = 0;
  }
  for (int64_t e = 0; e < Ev; ++e) {
    vs[t * (Ev + 1) + e] = live ? convert<C>(v[(b * p.S + j) * Ev + e]) : C(0);
    dvs[t * (Ev + 1) + e] = 0;
  }
  const C scale = score_scale<C>(p);
  // Under the causal rule, query i sees key j0 only from i = j0 on.
  const int64_t first = p.causal ? (j0 / kB2Rows) * kB2Rows : 0;
  for (int64_t i0 = first; i0 < p.L; i0 += kB2Rows) {
    const int rows = int(imin(kB2Rows, p.L - i0));
    __syncthreads();  // the previous tile is no longer read
    for (int64_t n = t; n < rows * E; n += kB2Keys) qs[n] = convert<C>(q[(b * p.L + i0) * E + n]);
    for (int64_t n = t; n < rows * Ev; n += kB2Keys)
      dos[n] = convert<C>(dout[(b * p.L + i0) * Ev + n]);
    if (t < rows) {
      lses[t] = lse[b * p.L + i0 + t];
      deltas[t] = delta[b * p.L + i0 + t];
    }
    __syncthreads();
    for (int r = 0; r < rows; ++r) {
      C dsv = 0;
      const int64_t i = i0 + r;
      if (live && lses[r] != neg_inf<C>()) {
        C dot = 0;
        for (int64_t e = 0; e < E; ++e) dot += qs[r * E + e] * ks[t * (E + 1) + e];
        const C s = dot * scale + bias_of<T, C>(mask, p, b, i, j);
        const C prob = s == neg_inf<C>() ? C(0) : fast_exp(s - lses[r]);
        const C z = keep_factor<C>(p, b, i, j);
        C dp = 0;
        for (int64_t e = 0; e < Ev; ++e) {
          dvs[t * (Ev + 1) + e] += prob * z * dos[r * Ev + e];
          dp += dos[r * Ev + e] * vs[t * (Ev + 1) + e];
        }
        dsv = prob * (dp * z - deltas[r]) * scale;
        for (int64_t e = 0; e < E; ++e) dks[t * (E + 1) + e] += dsv * qs[r * E + e];
      }
      ds[r * (kB2Keys + 1) + t] = dsv;
    }
    __syncthreads();
    // dQ rows i0 .. += dS [rows][32] K [32][E]
    for (int64_t n = t; n < rows * E; n += kB2Keys) {
      const int64_t r = n / E, e = n % E;
      C sum = 0;
      for (int c = 0; c < kB2Keys; ++c) sum += ds[r * (kB2Keys + 1) + c] * ks[c * (E + 1) + e];
      atomicAdd(dq + (b * p.L + i0 + r) * E + e, sum);
    }
  }
  if (!live) return;
  for (int64_t e = 0; e < E; ++e) dk[(b * p.S + j) * E + e] = convert<T>(dks[t * (E + 1) + e]);
  for (int64_t e = 0; e < Ev; ++e) dv[(b * p.S + j) * Ev + e] = convert<T>(dvs[t * (Ev + 1) + e]);
}

// ================================================================================================
// Backward on tensor cores (float16/bfloat16, E and Ev multiples of 16: where v3 applies), after
// FlashAttention-2's backward.
//
// Grid (BH, ceil(S / 64)); block 4 warps, warp w owns keys j0 + 16 w ... + 15. The block stages
// its 64 keys [64][E] and values [64][Ev] once, then walks the query tiles of 64 rows (from the
// first that sees j0 under the causal rule: the earlier ones are fully masked), staging q [64][E],
// dO [64][Ev], logsumexp and delta. Per tile each warp computes, on its 16 keys (the transposes
// make every product a plain row-major wmma product over the warp's own rows):
//   S^T  = K_w Q^T                         [16][64]   wmma, float
//   dP^T = V_w dO^T                        [16][64]   wmma, float
//   P^T  = exp(S^T scale + bias - lse),  (P Z)^T, dS^T = P^T (dP^T Z - delta) scale
//          elementwise, all 32 lanes, written in the 16-bit type W
//   dV_w += (P Z)^T dO,  dK_w += dS^T Q    accumulators in shared memory (float), own rows only
// then, once every warp's dS^T is in (a __syncthreads), warp w computes dQ of query rows
// 16 w ... + 15 of the tile, dS [16][64] K [64][E] (dS read as a column-major view of dS^T), and
// adds it into the float dQ buffer by atomic adds: the blocks of the other keys add to the same
// rows. Atomics keep this one kernel (no second pass over the query tiles recomputing P); the
// float buffer keeps their rounding small. P Z and dS enter their products rounded to W, as the
// forward's p does (FlashAttention-2 does the same). Keys past S and rows past L are zero-filled,
// and their probabilities are 0 (rows past L get logsumexp -inf, as a fully masked row has).

constexpr int kB3Warps = 4;
constexpr int kB3Keys = 16 * kB3Warps;  // a block's keys, 16 per warp
constexpr int kB3Rows = 16 * kB3Warps;  // query rows per tile: 16 per warp in the dQ product

// Floats of the S^T tile, which the tile's dQ product reuses once S^T is consumed.
__host__ __device__ __forceinline__ int64_t b3_st_floats(const AttentionParams& p) {
  return kB3Rows * p.E > kB3Keys * kB3Rows ? kB3Rows * p.E : kB3Keys * kB3Rows;
}

size_t b3_shared_bytes(const AttentionParams& p) {
  const size_t w = 2, E = size_t(p.E), Ev = size_t(p.Ev);
  return w * (kB3Keys * (E + Ev) + kB3Rows * (E + Ev)) +      // ks, vs, qs, dos
         4 * (size_t(b3_st_floats(p)) + kB3Keys * kB3Rows) +  // st (dqs), dpt
         w * (2 * kB3Keys * kB3Rows) +                        // pzt, dst
         4 * (kB3Keys * (E + Ev)) +                           // dks, dvs
         4 * (2 * kB3Rows);                                   // lses, deltas
}

// dst rows r0 ... r0 + 15 (of E floats each, the rows from `rows` on left out) += src [16][E], by
// the warp's lanes with atomic adds: other blocks add to the same rows. sm_90 adds 4 floats an
// instruction where dst is 16-byte aligned (E is a multiple of 16, so then every 4 floats are).
__device__ __forceinline__ void add_rows(float* dst, const float* src, int r0, int rows, int E,
                                         int lane) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const bool vector = reinterpret_cast<uintptr_t>(dst) % 16 == 0;
#else
  const bool vector = false;
#endif
  const int step = vector ? 4 : 1;
  for (int n = step * lane; n < 16 * E; n += step * 32) {
    const int r = r0 + n / E;
    if (r >= rows) break;  // n only grows: every later row is past L too
    float* at = dst + r * E + n % E;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (vector) {
      atomicAdd(reinterpret_cast<float4*>(at), *reinterpret_cast<const float4*>(src + n));
      continue;
    }
#endif
    atomicAdd(at, src[n]);
  }
}

template <class T>
__device__ __forceinline__ void b3_backward_body(const T* dout, const T* q, const T* k, const T* v,
                                                 MaskView mask, const float* lse,
                                                 const float* delta, AttentionParams p, float* dq,
                                                 T* dk, T* dv) {
  namespace wmma = nvcuda::wmma;
  using W = typename Wmma<T>::type;
  extern __shared__ __align__(32) unsigned char b3_smem[];
  const int E = int(p.E), Ev = int(p.Ev);
  constexpr int R = kB3Rows;
  W* ks = reinterpret_cast<W*>(b3_smem);                     // [kB3Keys][E]
  W* vs = ks + kB3Keys * E;                                  // [kB3Keys][Ev]
  W* qs = vs + kB3Keys * Ev;                                 // [R][E]
  W* dos = qs + R * E;                                       // [R][Ev]
  float* st = reinterpret_cast<float*>(dos + R * Ev);        // [kB3Keys][R]; dqs [R][E]
  float* dqs = st;                                           //
  float* dpt = st + b3_st_floats(p);                         // [kB3Keys][R]
  W* pzt = reinterpret_cast<W*>(dpt + kB3Keys * R);          // [kB3Keys][R]
  W* dst = pzt + kB3Keys * R;                                // [kB3Keys][R]
  float* dks = reinterpret_cast<float*>(dst + kB3Keys * R);  // [kB3Keys][E]
  float* dvs = dks + kB3Keys * E;                            // [kB3Keys][Ev]
  float* lses = dvs + kB3Keys * Ev;                          // [R]
  float* deltas = lses + R;                                  // [R]
  const int64_t b = blockIdx.x, j0 = int64_t(blockIdx.y) * kB3Keys;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, threads = kB3Warps * 32;
  const int r0 = warp * 16;  // this warp's first key of the block, and first row of a tile
  const int keys = int(imin(kB3Keys, p.S - j0));
  stage_rows(ks, k + (b * p.S + j0) * E, kB3Keys, keys, E);
  stage_rows(vs, v + (b * p.S + j0) * Ev, kB3Keys, keys, Ev);
  for (int n = threadIdx.x; n < kB3Keys * E; n += threads) dks[n] = 0;
  for (int n = threadIdx.x; n < kB3Keys * Ev; n += threads) dvs[n] = 0;
  const float scale = score_scale<float>(p);
  // Under the causal rule, query i sees key j0 only from i = j0 on.
  const int64_t first = p.causal ? (j0 / R) * R : 0;
  for (int64_t i0 = first; i0 < p.L; i0 += R) {
    const int rows = int(imin(R, p.L - i0));
    __syncthreads();  // the previous tile is no longer read (and the keys are staged)
    stage_rows(qs, q + (b * p.L + i0) * E, R, rows, E);
    stage_rows(dos, dout + (b * p.L + i0) * Ev, R, rows, Ev);
    for (int n = threadIdx.x; n < R; n += threads) {
      lses[n] = n < rows ? lse[b * p.L + i0 + n] : -INFINITY;
      deltas[n] = n < rows ? delta[b * p.L + i0 + n] : 0.0f;
    }
    __syncthreads();
    // S^T = K_w Q^T and dP^T = V_w dO^T, [16][R] each, into this warp's rows of st and dpt.
    {
      Acc16 c[R / 16];
      mma_times_rows_t(c, ks + r0 * E, E, qs, E, E);
#pragma unroll
      for (int n = 0; n < R / 16; ++n)
        wmma::store_matrix_sync(st + r0 * R + n * 16, c[n], R, wmma::mem_row_major);
      mma_times_rows_t(c, vs + r0 * Ev, Ev, dos, Ev, Ev);
#pragma unroll
      for (int n = 0; n < R / 16; ++n)
        wmma::store_matrix_sync(dpt + r0 * R + n * 16, c[n], R, wmma::mem_row_major);
    }
    __syncwarp();
    // The probabilities and dS, as b2_backward computes them; lane-consecutive queries.
    for (int n = lane; n < 16 * R; n += 32) {
      const int kr = r0 + n / R, qc = n % R;
      const int64_t i = i0 + qc, j = j0 + kr;
      const float l = lses[qc];
      float pz = 0.0f, ds = 0.0f;
      if (kr < keys && l != -INFINITY) {
        const float s = st[kr * R + qc] * scale + bias_of<T, float>(mask, p, b, i, j);
        if (s != -INFINITY) {
          const float prob = __expf(s - l);
          const float z = keep_factor<float>(p, b, i, j);
          pz = prob * z;
          ds = prob * (dpt[kr * R + qc] * z - deltas[qc]) * scale;
        }
      }
      pzt[kr * R + qc] = Wmma<T>::from_float(pz);
      dst[kr * R + qc] = Wmma<T>::from_float(ds);
    }
    __syncwarp();
    // dV_w += (P Z)^T dO, dK_w += dS^T Q: this warp's rows of the accumulators.
    mma_panel<R / 16, wmma::row_major>(dvs + r0 * Ev, Ev, true, pzt + r0 * R, R, dos, Ev, Ev);
    mma_panel<R / 16, wmma::row_major>(dks + r0 * E, E, true, dst + r0 * R, R, qs, E, E);
    __syncthreads();  // every warp's dS^T is in; st is free for dqs
    // dQ rows r0 .. r0 + 15 of the tile = dS [16][kB3Keys] K [kB3Keys][E]; dS (row i, column j)
    // is dS^T's (j, i): a column-major view of dst.
    mma_panel<kB3Keys / 16, wmma::col_major>(dqs + r0 * E, E, false, dst + r0, R, ks, E, E);
    __syncwarp();
    add_rows(dq + (b * p.L + i0) * E, dqs + r0 * E, r0, rows, E, lane);
  }
  __syncthreads();  // a block with no query tile still needs its zeroed accumulators visible
  for (int n = threadIdx.x; n < keys * E; n += threads) dk[(b * p.S + j0) * E + n] = T(dks[n]);
  for (int n = threadIdx.x; n < keys * Ev; n += threads) dv[(b * p.S + j0) * Ev + n] = T(dvs[n]);
}

// At least 4 blocks an SM caps the registers at 128 a thread: left to itself, ptxas picked fewer
// and spilled.
template <class T>
__global__ void __launch_bounds__(kB3Warps * 32, 4)
    b3_backward(const T* dout, const T* q, const T* k, const T* v, MaskView mask, const float* lse,
                const float* delta, AttentionParams p, float* dq, T* dk, T* dv) {
  if constexpr (kHasWmma<T>) b3_backward_body<T>(dout, q, k, v, mask, lse, delta, p, dq, dk, dv);
  else __trap();
}

// The caller has allowed b3_shared_bytes(p) of shared memory (allow_shared).
template <class T>
void b3_backward_launch(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                        const AttentionMask& mask, const Tensor& lse, const Tensor& delta,
                        const AttentionParams& p, Tensor& dq, Tensor& grad_k, Tensor& grad_v) {
  const size_t bytes = b3_shared_bytes(p);
  const dim3 grid(unsigned(p.heads), unsigned((p.S + kB3Keys - 1) / kB3Keys));
  b3_backward<T><<<grid, kB3Warps * 32, bytes, stream(q.device())>>>(
      grad_out.data<T>(), q.data<T>(), k.data<T>(), v.data<T>(), mask_view(mask), lse.data<float>(),
      delta.data<float>(), p, dq.data<float>(), grad_k.data<T>(), grad_v.data<T>());
  check_launch(kBackward, {&grad_out, &q, &k, &v});
}

// The backward: v3's kernel where it applies (unless EMBER_ATTENTION_VERSION asks for 0..2) and
// its tiles fit, b2's elsewhere.
template <class T>
void backward_typed(const Tensor& grad_out, const Tensor& q, const Tensor& k, const Tensor& v,
                    const AttentionMask& mask, const Tensor& out, const Tensor& lse,
                    const AttentionParams& p, Tensor& grad_q, Tensor& grad_k, Tensor& grad_v) {
  using C = compute_t<T>;
  const int dev = q.device().index;
  const int asked = requested_version(kBackward);
  bool tensor_cores = false;
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
    tensor_cores = (asked < 0 || asked == 3) && v3_applies(dtype_of_v<T>, p, dev) &&
                   allow_shared(b3_backward<T>, b3_shared_bytes(p), dev);
  const size_t bytes = b2_shared_bytes(p, sizeof(C));
  if (!tensor_cores && !allow_shared(b2_backward<T, C>, bytes, dev))
    throw NotSupportedError(kBackward, "E = " + std::to_string(p.E) +
                                           " and Ev = " + std::to_string(p.Ev) +
                                           " need more shared memory than this GPU has per "
                                           "block; use smaller heads or the CPU");
  cudaStream_t s = stream(q.device());
  Tensor delta = Tensor::empty({p.heads, p.L}, dtype_of_v<C>, q.device(), kBackward);
  Tensor dq = Tensor::empty(grad_q.shape(), dtype_of_v<C>, q.device(), kBackward);
  dq.zero_();
  if (p.L > 0) {
    attention_delta<T, C>
        <<<grid_size(p.heads * p.L, kV1Threads, dev), kV1Threads, 0, s>>>(grad_out.data<T>(),
                                                                          out.data<T>(), p,
                                                                          delta.data<C>());
    check_launch(kBackward, {&grad_out, &out});
  }
  if (p.S > 0 && tensor_cores) {
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      b3_backward_launch<T>(grad_out, q, k, v, mask, lse, delta, p, dq, grad_k, grad_v);
  } else if (p.S > 0) {
    const dim3 grid(unsigned(p.heads), unsigned((p.S + kB2Keys - 1) / kB2Keys));
    b2_backward<T, C><<<grid, kB2Keys, bytes, s>>>(grad_out.data<T>(), q.data<T>(), k.data<T>(),
                                                   v.data<T>(), mask_view(mask), lse.data<C>(),
                                                   delta.data<C>(), p, dq.data<C>(),
                                                   grad_k.data<T>(), grad_v.data<T>());
    check_launch(kBackward, {&grad_out, &q, &k, &v});
  }
  grad_q.copy_(dq);
}

// ================================================================================================
// The op's kernels.

// The front function hands CUDA packed operands (ops/attention_kernels.h): their values are the
// contiguous [BH, rows, cols] tensors the kernels index.
void attention(const AttentionOperand& q_heads, const AttentionOperand& k_heads,
               const AttentionOperand& v_heads, const AttentionMask& mask, const AttentionParams& p,
               Tensor& out, Tensor& lse) {
  const Tensor &q = q_heads.values, &k = k_heads.values, &v = v_heads.values;
  DeviceGuard guard(q.device());
  const int asked = requested_version(kForward);
  dispatch_floating(q.dtype(), kForward, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (asked == 0) return v0_forward(q, k, v, mask, p, out, lse);
    if (asked == 1) return v1_forward<T>(q, k, v, mask, p, out, lse);
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      if (asked != 2 && v3_applies(q.dtype(), p, q.device().index) &&
          v3_forward_launch<T>(q, k, v, mask, p, out, lse))
        return;
    }
    if (!v2_forward_launch<T>(q, k, v, mask, p, out, lse))
      v1_forward<T>(q, k, v, mask, p, out, lse);
  });
}

void attention_backward(const AttentionOperand& grad_out, const AttentionOperand& q,
                        const AttentionOperand& k, const AttentionOperand& v,
                        const AttentionMask& mask, const AttentionOperand& out, const Tensor& lse,
                        const AttentionParams& p, Tensor& grad_q, Tensor& grad_k, Tensor& grad_v) {
  DeviceGuard guard(q.values.device());
  dispatch_floating(q.values.dtype(), kBackward, [&](auto tag) {
    backward_typed<typename decltype(tag)::type>(grad_out.values, q.values, k.values, v.values,
                                                 mask, out.values, lse, p, grad_q, grad_k, grad_v);
  });
}

template <class T> __global__ void dropout_scale_kernel(AttentionParams p, T* out) {
  const int64_t total = p.heads * p.L * p.S;
  const T keep = convert<T>(attention_keep_scale(p.dropout_p)), zero = convert<T>(0.0);
  for (int64_t n = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; n < total;
       n += int64_t(gridDim.x) * blockDim.x)
    out[n] = attention_keep(p, n / (p.L * p.S), (n / p.S) % p.L, n % p.S) ? keep : zero;
}

void attention_dropout_scale(const AttentionParams& p, Tensor& out) {
  DeviceGuard guard(out.device());
  dispatch_floating(out.dtype(), "attention_dropout_scale", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const int dev = out.device().index;
    dropout_scale_kernel<T>
        <<<grid_size(out.numel(), kV1Threads, dev), kV1Threads, 0, stream(out.device())>>>(
            p, out.data<T>());
    check_launch("attention_dropout_scale", {&out});
  });
}

}  // namespace

void register_attention(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/attention.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cuda
