// attention_ladder.cu — scaled dot-product attention on CUDA in four steps, from the formula to
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
//   v4  v3 without the shared-memory round trips (float16/bfloat16, E == Ev in {64, 128}, sm_80
//       and newer), after FlashAttention-2: wmma's fragments have no documented layout, so v3's
//       scores, probabilities and accumulator went through shared memory every tile, and shared
//       memory, not the tensor cores, bounded it. v4 runs mma.sync m16n8k16 in inline PTX
//       (mma_sm80.cuh), whose register layouts the PTX ISA documents: q stays in A fragments, the
//       scores in C fragments, where the online softmax reads them in place (a row's max and sum
//       joined across the 4 lanes that hold it), the probabilities become the A fragments of
//       p v by packing pairs of C fragments, and the output accumulates in C fragments. Shared
//       memory holds only the staged q, k and v (ldmatrix reads them; cp.async loads the next
//       tile of k and v while the current one is used). Masks of both kinds, the causal rule and
//       dropout as v3 (no case falls back for them).
// The backward recomputes the probabilities from logsumexp (the forward keeps no [L, S] matrix),
// with delta_i = dO_i . O_i:  P = exp(S - lse), dV = (P Z)^T dO, dP = dO V^T Z,
// dS = P (dP - delta) scale, dK = dS^T Q, dQ = dS K  (Z: the dropout's factors). Three kernels:
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
//   b4  b3 at v4's level: the same plan on mma.sync fragments, S^T, dP^T, P and dS in registers,
//       dK and dV accumulated in registers (C fragments) over the whole walk; only dS^T goes
//       through shared memory, for the dQ product every warp's rows take part in (dQ by float
//       atomic adds, as b3).
//
// Selecting a version: the op runs EMBER_ATTENTION_VERSION (0..4, read at every call so that a
// benchmark or a test can switch), or, unset, the highest that applies: v4, else v3, else v2. A
// version asked for where it does not apply runs the next one down: v4 needs float16/bfloat16,
// E == Ev in {64, 128}, an sm_80 GPU or newer and 16-byte aligned tensors, else v3; v3 needs
// float16/bfloat16 with E and Ev multiples of 16 (bfloat16 on sm_80 or newer, whose tensor cores
// have it), else v2. The backward follows: b4 where v4 applies, unless 0..3 is asked for; b3
// where v3 applies, unless 0, 1 or 2 is asked for; b2 otherwise. v2, v3, v4, b3 and b4 need their
// tiles to fit the GPU's shared memory (E and Ev up to several hundred; b3 falls back to b2
// beyond its own); beyond that the forward runs v1, and the backward raises NotSupportedError
// naming the sizes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "convert.h"
#include "cuda/launch.cuh"
#include "cuda/mma_sm80.cuh"
#include "cuda/reduce.cuh"  // DeviceWalk
#include "dispatch.h"
#include "kernels.h"
#include "ops/attention_kernels.h"

namespace ember::cuda {
namespace {

constexpr const char* kForward = "scaled_dot_product_attention";
constexpr const char* kBackward = "scaled_dot_product_attention_backward";

// ================================================================================================
// Shared pieces.

// EMBER_ATTENTION_VERSION (0..4), read at every call; -1 when unset (the best that applies). `op`
// names the op a bad value is reported against.
int requested_version(const char* op) {
  const char* v = std::getenv("EMBER_ATTENTION_VERSION");
  if (!v || !*v) return -1;
  const std::string s(v);
  if (s.size() != 1 || s[0] < '0' || s[0] > '4')
    throw ValueError(op, "EMBER_ATTENTION_VERSION='" + s +
                             "'; expected 0, 1, 2, 3 or 4 (or unset for the fastest)");
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

// Where an input's rows are (ops/attention_kernels.h's AttentionOperand): row r of head b starts
// heads.offset(b) + r * ld elements into its data; a packed operand's walk is one dim of BH heads
// rows * cols apart. Passed to kernels by value.
struct HeadRows {
  DeviceWalk heads;
  int64_t ld = 0;
  __device__ __forceinline__ int64_t at(int64_t b, int64_t r) const {
    return heads.offset(b) + r * ld;
  }
};

// o's rows as HeadRows; false when its batch dims, merged, are more than a DeviceWalk holds.
bool head_rows(const AttentionOperand& o, HeadRows& h) {
  const Tensor& t = o.values;
  h.ld = o.row_stride;
  return to_device(make_walk(t, 0, t.dim() - 2, false), h.heads);
}

// o as the packed [BH, rows, cols] tensor the kernels other than v4/b4 index: o.values itself when
// it is laid out so, else a contiguous copy (the transposed per-head views of a GPT).
Tensor packed(const AttentionOperand& o, int64_t heads) {
  if (o.packed()) return o.values;
  return o.values.contiguous().view({heads, o.values.size(-2), o.values.size(-1)});
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
// v4 — v3 with the scores, probabilities and output accumulator in registers, after
// FlashAttention-2 (float16/bfloat16, E == Ev in {64, 128}, sm_80 and newer).
//
// v3's wmma fragments have no documented element layout, so every tile its scores went to shared
// memory for the softmax, the probabilities came back from it for p v, and the accumulator made
// the round trip for its rescaling: shared memory, not the tensor cores, set v3's pace. v4 uses
// mma.sync m16n8k16 (mma_sm80.cuh), whose fragments are documented, and keeps everything a warp
// computes in registers:
//   - grid (BH, ceil(L / 16 G W)), block W warps (V4Tiling), warp w owns G groups of 16 query
//     rows, i0 + 16 G w ... + 16 G - 1; its q rows are loaded once, by ldmatrix, into A fragments
//     held for the whole walk. Every B fragment a warp reads from shared memory serves its G
//     groups: with G = 2 a product reads half the shared-memory bytes of G = 1, for twice the
//     registers;
//   - tiles of 64 keys and values are staged in shared memory by cp.async, double buffered (tile
//     n + 1 loads while tile n is used), rows padded by 16 bytes so that ldmatrix's eight rows
//     fall in different banks;
//   - S = q k^T: per 16 dims, one ldmatrix.x4 of k gives the B fragments of two 8-key tiles; a
//     group's S [16][64] is 8 C fragments (32 floats a thread);
//   - the online softmax on the fragments: lane (g, t) holds rows g and g + 8, columns 2 t, 2 t + 1
//     of every 8-key tile, so a row's max is the max over 16 values and the 4 lanes of its quad
//     (two __shfl_xor_sync); each thread sums its own share of l (the quad joins them once, at
//     the end); exponentials in base 2 with the scale folded in (one multiply, ex2.approx);
//   - P goes to the A fragments of P V by packing pairs of its C fragments (mma_sm80.cuh), and
//     V's B fragments come from ldmatrix.trans; a group's accumulator O [16][Ev] stays in C
//     fragments (Ev / 2 floats a thread) and is rescaled there;
//   - at the end O / l goes through the (now free) q buffer to 16-byte stores, and logsumexp
//     = m + log l as v3 writes it (0 and -inf for a fully masked row).
// Causal: the block stops at its last row's key, and a warp skips the tiles past its last row.
// The bias (causal rule, mask of either kind, keys past S, rows past L) is added element by element
// only in tiles that need it; dropout multiplies p after the sum (as v3). Inputs must be 16-byte
// aligned (cp.async); an input that is not, like any other case v4 does not take, runs v3.

// A block of v4 is W warps, warp w owning 16 G query rows (G groups of 16 rows); a block of b4 is
// W warps, warp w owning 16 keys. The tilings the op launches are V4Tiling and B4Tiling below.
constexpr int kV4Keys = 64;  // keys of a tile (forward)
constexpr int kV4Pad = 8;    // 16-bit elements of padding after every staged row

size_t v4_shared_bytes(int64_t D, int W, int G) {
  return 2 * size_t(16 * G * W + 4 * kV4Keys) * size_t(D + kV4Pad);  // q; k and v, two buffers each
}

// Stages rows [Rows][D] of 16-bit values (row r at src + r ld, 16-byte aligned) into dst [Rows]
// [D + kV4Pad] by cp.async with a block of Threads, zero-filling the rows from `valid` on. The
// caller commits the group.
template <int D, int Rows, int Threads>
__device__ __forceinline__ void stage_async(uint16_t* dst, const void* src, int64_t ld, int valid) {
  constexpr int chunks = D / 8;  // 16-byte chunks a row
  static_assert(Rows * chunks % Threads == 0, "whole passes of the block");
  const char* s = static_cast<const char*>(src);
#pragma unroll
  for (int pass = 0; pass < Rows * chunks / Threads; ++pass) {
    const int n = pass * Threads + int(threadIdx.x), r = n / chunks, c = n % chunks;
    const bool ok = r < valid;
    sm80::cp_async_16(sm80::shared_address(dst + r * (D + kV4Pad) + c * 8),
                      s + (ok ? (r * ld + c * 8) * 2 : 0), ok);
  }
}

// The A fragment of 16 columns (2 kk ... 2 kk + 1 of 8-wide C fragments c) packed to T: C's
// (g, 2t..), (g+8, 2t..) of the left tile and of the right one are A's a[0], a[1], a[2], a[3].
template <class T, int N>
__device__ __forceinline__ void c_to_a(uint32_t (&a)[4], const float (&c)[N][4], int kk) {
  a[0] = sm80::pack2<T>(c[2 * kk][0], c[2 * kk][1]);
  a[1] = sm80::pack2<T>(c[2 * kk][2], c[2 * kk][3]);
  a[2] = sm80::pack2<T>(c[2 * kk + 1][0], c[2 * kk + 1][1]);
  a[3] = sm80::pack2<T>(c[2 * kk + 1][2], c[2 * kk + 1][3]);
}

// c[g][n] += A_g B_n for M groups of 16 rows g and 8-wide n tiles 0 .. N - 1 (N even), K = 16 Kc:
// A fragments a[g][kk], B from the staged matrix m read as b_rows (trans = false: m's rows are n)
// or b_trans (m's rows are k), its n and k origin at (n0, k0). Each B fragment read from shared
// memory serves all M groups: the more rows a warp owns, the fewer shared-memory bytes a product.
template <class T, int M, int N, int Kc, bool trans>
__device__ __forceinline__ void mma_groups(float (&c)[M][N][4], const uint32_t (&a)[M][Kc][4],
                                           const uint16_t* m, int ld, int n0, int k0, int lane) {
  // This lane's address of the block at (n0, k0); the others are constant steps from it.
  const uint32_t origin =
      trans ? sm80::b_trans(m, ld, k0, n0, lane) : sm80::b_rows(m, ld, n0, k0, lane);
  const int k_step = 2 * 16 * (trans ? ld : 1), n_step = 2 * 16 * (trans ? 1 : ld);  // bytes
#pragma unroll
  for (int kk = 0; kk < Kc; ++kk)
#pragma unroll
    for (int np = 0; np < N / 2; ++np) {
      uint32_t b[4];
      const uint32_t address = origin + kk * k_step + np * n_step;
      if constexpr (trans) sm80::ldmatrix_x4_trans(b, address);
      else sm80::ldmatrix_x4(b, address);
#pragma unroll
      for (int mg = 0; mg < M; ++mg) {
        sm80::mma_16816<T>(c[mg][2 * np], a[mg][kk], b[0], b[1]);
        sm80::mma_16816<T>(c[mg][2 * np + 1], a[mg][kk], b[2], b[3]);
      }
    }
}

// The M groups of 16 rows from r0 on of a staged row-major matrix m as A fragments, 16 columns
// each: a[mg][kk] holds rows r0 + 16 mg ... + 15, columns 16 kk ... + 15.
template <int M, int Kc>
__device__ __forceinline__ void load_a_groups(uint32_t (&a)[M][Kc][4], const uint16_t* m, int ld,
                                              int r0, int lane) {
#pragma unroll
  for (int mg = 0; mg < M; ++mg)
#pragma unroll
    for (int kk = 0; kk < Kc; ++kk)
      sm80::ldmatrix_x4(a[mg][kk], sm80::a_rows(m, ld, r0 + 16 * mg, 16 * kk, lane));
}

// Scores in C fragments s (N 8-wide tiles of a group of 16 rows) to base-2 units, s * scale2, with
// the bias added where the tile needs one (`biased`); entries outside [L, S] become -inf. The test
// is a uniform branch out of the element loops: the tiles without a bias, most of them, run a
// loop with no test inside. at(nt, c) gives element c of tile nt's (i, j).
template <class T, int N, class At>
__device__ __forceinline__ void to_base2(float (&s)[N][4], float scale2, bool biased,
                                         const MaskView& mask, const AttentionParams& p, int64_t b,
                                         At at) {
  constexpr float kLog2e = 1.4426950408889634f;
#pragma unroll
  for (int nt = 0; nt < N; ++nt)
#pragma unroll
    for (int c = 0; c < 4; ++c) s[nt][c] *= scale2;
  if (!biased) return;
#pragma unroll
  for (int nt = 0; nt < N; ++nt)
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const auto [i, j] = at(nt, c);
      s[nt][c] =
          i < p.L && j < p.S ? s[nt][c] + bias_of<T, float>(mask, p, b, i, j) * kLog2e : -INFINITY;
    }
}

template <class T, int D, int W, int G>
__device__ __forceinline__ void v4_forward_body(const T* q, const T* k, const T* v, HeadRows qh,
                                                HeadRows kh, HeadRows vh, MaskView mask,
                                                AttentionParams p, T* out, float* lse) {
  constexpr int ld = D + kV4Pad;
  constexpr int kRows = 16 * G * W, kThreads = 32 * W;  // query rows and threads of the block
  constexpr int NT = kV4Keys / 8;                       // 8-key C fragments of a warp's scores
  constexpr int ND = D / 8;                             // 8-column C fragments of a warp's output
  constexpr float kLog2e = 1.4426950408889634f, kLn2 = 0.6931471805599453f;
  extern __shared__ __align__(128) unsigned char v4_smem[];
  uint16_t* qs = reinterpret_cast<uint16_t*>(v4_smem);  // [kRows][ld]
  uint16_t* ks = qs + kRows * ld;                       // [2][kV4Keys][ld]
  uint16_t* vs = ks + 2 * kV4Keys * ld;                 // [2][kV4Keys][ld]
  const int64_t b = blockIdx.x;
  // The last row tiles have the most keys under the causal rule: they are launched first.
  const int64_t i0 = int64_t(gridDim.y - 1 - blockIdx.y) * kRows;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;  // the fragments' groupID and threadID_in_group
  const int r0 = 16 * G * warp;          // this warp's first row in the block
  const int rows = int(imin(kRows, p.L - i0));
  const int64_t kend = p.causal ? imin(p.S, i0 + kRows) : p.S;
  const int tiles = int((kend + kV4Keys - 1) / kV4Keys);
  const auto stage_tile = [&](int n) {
    const int64_t j0 = int64_t(n) * kV4Keys;
    const int cols = int(imin(kV4Keys, p.S - j0));
    stage_async<D, kV4Keys, kThreads>(ks + (n & 1) * kV4Keys * ld, k + kh.at(b, j0), kh.ld, cols);
    stage_async<D, kV4Keys, kThreads>(vs + (n & 1) * kV4Keys * ld, v + vh.at(b, j0), vh.ld, cols);
  };
  stage_async<D, kRows, kThreads>(qs, q + qh.at(b, i0), qh.ld, rows);
  sm80::cp_async_commit();
  if (tiles > 0) stage_tile(0);
  sm80::cp_async_commit();
  sm80::cp_async_wait<1>();  // q has landed (tile 0 may still be on its way)
  __syncthreads();
  uint32_t qa[G][D / 16][4];  // this warp's q rows as A fragments, 16 rows a group
  load_a_groups(qa, qs, ld, r0, lane);
  float o[G][ND][4] = {};  // O: rows g and g + 8 of each group, of every 8-column tile
  float m[G][2], l[G][2];  // rows g, g + 8 of each group: running max (base-2 units) and this
#pragma unroll             // thread's share of the running sum
  for (int gr = 0; gr < G; ++gr) m[gr][0] = m[gr][1] = -INFINITY, l[gr][0] = l[gr][1] = 0.0f;
  const float scale2 = float(p.scale) * kLog2e;
  const bool dropout = p.dropout_p > 0;
  for (int n = 0; n < tiles; ++n) {
    const int64_t j0 = int64_t(n) * kV4Keys;
    if (n + 1 < tiles) stage_tile(n + 1);
    sm80::cp_async_commit();   // empty on the last tile: the count of pending groups stays 1
    sm80::cp_async_wait<1>();  // tile n has landed
    __syncthreads();
    const uint16_t* kt = ks + (n & 1) * kV4Keys * ld;
    const uint16_t* vt = vs + (n & 1) * kV4Keys * ld;
    // A warp whose rows are all past L, or all before the tile's first key under the causal
    // rule, would only see scores of -inf, which leave m, l and O as they are. (A group of the
    // warp's in that state computes them, to the same effect.)
    if (r0 < rows && !(p.causal && j0 > i0 + r0 + 16 * G - 1)) {
      float s[G][NT][4] = {};
      mma_groups<T, G, NT, D / 16, false>(s, qa, kt, ld, 0, 0, lane);
      // Biases only where some score needs one: a mask, keys past S, rows past L, or a tile
      // crossing the diagonal of one of the warp's rows.
      const bool biased = mask.kind != AttentionMaskKind::None || j0 + kV4Keys > p.S ||
                          r0 + 16 * G > rows || (p.causal && j0 + kV4Keys - 1 > i0 + r0);
      uint32_t pa[G][kV4Keys / 16][4];  // the probabilities as A fragments of P V
#pragma unroll
      for (int gr = 0; gr < G; ++gr) {
        const int64_t row0 = i0 + r0 + 16 * gr + g;  // this thread's first row of the group
        float(&sg)[NT][4] = s[gr];
        // The scores in base-2 units, biased where the tile needs it. The test of dropout, too,
        // is a uniform branch out of the element loops.
        to_base2<T>(sg, scale2, biased, mask, p, b, [&](int nt, int c) {
          return std::pair<int64_t, int64_t>(row0 + 8 * (c >> 1), j0 + nt * 8 + 2 * t + (c & 1));
        });
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int c = 0; c < 4; ++c) mx[c >> 1] = fmaxf(mx[c >> 1], sg[nt][c]);
        float alpha[2], base[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // the quad (lanes 4 g ... 4 g + 3) shares rows g, g + 8
          mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
          mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
          const float m_new = fmaxf(m[gr][h], mx[h]);
          // With every score so far -inf, exponentiate against 0: every p is 0 and alpha is
          // 2^-inf = 0, which leaves l and O at 0. Otherwise alpha = 2^(m - m_new), 0 on the
          // row's first live tile.
          base[h] = m_new == -INFINITY ? 0.0f : m_new;
          alpha[h] = sm80::exp2_approx(m[gr][h] - base[h]);
          m[gr][h] = m_new;
          l[gr][h] *= alpha[h];
        }
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            const float e = sm80::exp2_approx(sg[nt][c] - base[c >> 1]);
            l[gr][c >> 1] += e;
            sg[nt][c] = e;
          }
        if (dropout) {  // after the sum: l is softmax's, the dropped p only leave P V
#pragma unroll
          for (int nt = 0; nt < NT; ++nt)
#pragma unroll
            for (int c = 0; c < 4; ++c) {
              const int64_t i = row0 + 8 * (c >> 1), j = j0 + nt * 8 + 2 * t + (c & 1);
              if (sg[nt][c] != 0.0f) sg[nt][c] *= keep_factor<float>(p, b, i, j);
            }
        }
#pragma unroll
        for (int nt = 0; nt < ND; ++nt)
#pragma unroll
          for (int c = 0; c < 4; ++c) o[gr][nt][c] *= alpha[c >> 1];
#pragma unroll
        for (int kk = 0; kk < kV4Keys / 16; ++kk)  // P's C fragments to A fragments, in registers
          c_to_a<T>(pa[gr][kk], sg, kk);
      }
      // O += P V, V's B fragments by ldmatrix.trans (v's rows are the product's k), each serving
      // all G groups.
      mma_groups<T, G, ND, kV4Keys / 16, true>(o, pa, vt, ld, 0, 0, lane);
    }
    __syncthreads();  // buffer n & 1 is free for tile n + 2
  }
  if (r0 >= rows) return;  // no __syncthreads follows
#pragma unroll
  for (int gr = 0; gr < G; ++gr) {
    float inv[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      l[gr][h] += __shfl_xor_sync(0xffffffffu, l[gr][h], 1);
      l[gr][h] += __shfl_xor_sync(0xffffffffu, l[gr][h], 2);
      inv[h] = l[gr][h] > 0 ? 1.0f / l[gr][h] : 0.0f;
      const int64_t i = i0 + r0 + 16 * gr + g + 8 * h;
      if (t == 0 && i < p.L)
        lse[b * p.L + i] = l[gr][h] > 0 ? m[gr][h] * kLn2 + logf(l[gr][h]) : -INFINITY;
    }
    // O / l into this warp's own rows of the q buffer (read by nobody since the start; the last
    // cp.async group has landed), then 16-byte stores of whole rows.
#pragma unroll
    for (int nt = 0; nt < ND; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        *reinterpret_cast<uint32_t*>(qs + (r0 + 16 * gr + g + 8 * h) * ld + nt * 8 + 2 * t) =
            sm80::pack2<T>(o[gr][nt][2 * h] * inv[h], o[gr][nt][2 * h + 1] * inv[h]);
  }
  __syncwarp();
  constexpr int chunks = D / 8;
#pragma unroll
  for (int pass = 0; pass < 16 * G * chunks / 32; ++pass) {
    const int n = pass * 32 + lane, r = n / chunks, c = n % chunks;
    if (r0 + r < rows)
      *reinterpret_cast<uint4*>(out + (b * p.L + i0 + r0 + r) * D + c * 8) =
          *reinterpret_cast<const uint4*>(qs + (r0 + r) * ld + c * 8);
  }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
constexpr bool kHasMma = false;
#else
constexpr bool kHasMma = true;
#endif

// MinBlocks: the blocks an SM should hold at once (it caps a thread's registers).
template <class T, int D, int W, int G, int MinBlocks>
__global__ void __launch_bounds__(32 * W, MinBlocks)
    v4_forward(const T* q, const T* k, const T* v, HeadRows qh, HeadRows kh, HeadRows vh,
               MaskView mask, AttentionParams p, T* out, float* lse) {
  if constexpr (kHasMma) v4_forward_body<T, D, W, G>(q, k, v, qh, kh, vh, mask, p, out, lse);
  else __trap();
}

// The tiling the forward launches for head size D: W warps of G groups (16 G W query rows a
// block) and the blocks an SM should hold at once (MinBlocks, which caps a thread's registers).
// Measured on an H100 by benchmarks/tools/attention_tilings.cu
// (results/*attention-tilings-ninth-run-after.csv), once the bias and dropout tests had left the
// element loops: 4 warps of one group, with a whole SM's registers for one block (247 a thread),
// took 0.87 of the time of 8 warps held to 128 registers (which then spill), the mean over the
// three problems at D = 64. Two groups a warp (255 registers, a few spilled) were 4% faster at
// T = 4096 and 45% slower at T = 1024 with 32 heads. At D = 128 the same tiling; every other
// was slower or spilled.
template <int D> struct V4Tiling { static constexpr int kWarps = 4, kGroups = 1, kMinBlocks = 1; };

// A kernel of v4 or b4 on a tiling, with the shared memory, warps and rows (v4: queries, b4: keys)
// a block it launches with.
template <class Kernel> struct TiledLaunch {
  Kernel kernel;
  size_t bytes;
  int warps, block_rows;
  // Grid: a block per block_rows rows of each of the heads.
  dim3 grid(int64_t heads, int64_t rows) const {
    return {unsigned(heads), unsigned((rows + block_rows - 1) / block_rows)};
  }
};

// v4 on V4Tiling<D> for the problem's head size.
template <class T>
using V4Launch = TiledLaunch<void (*)(const T*, const T*, const T*, HeadRows, HeadRows, HeadRows,
                                      MaskView, AttentionParams, T*, float*)>;
// Tiling: V4Tiling<D>, or another with its members (benchmarks/tools/attention_tilings.cu).
template <class T, int D, class Tiling = V4Tiling<D>> V4Launch<T> v4_launch_on_tiling() {
  constexpr int W = Tiling::kWarps, G = Tiling::kGroups;
  return {v4_forward<T, D, W, G, Tiling::kMinBlocks>, v4_shared_bytes(D, W, G), W, 16 * G * W};
}
template <class T> V4Launch<T> v4_launch(int64_t E) {
  return E == 64 ? v4_launch_on_tiling<T, 64>() : v4_launch_on_tiling<T, 128>();
}

// Whether v4 and b4 take the problem: a 16-bit type, E == Ev in {64, 128}, an sm_80 or newer
// GPU, and every output they write 16-byte aligned (the 16-byte stores).
bool v4_applies(DType dtype, const AttentionParams& p, int device,
                std::initializer_list<const Tensor*> outputs) {
  if (!(dtype == DType::Float16 || dtype == DType::BFloat16) || p.E != p.Ev ||
      (p.E != 64 && p.E != 128))
    return false;
  for (const Tensor* x : outputs)
    if (reinterpret_cast<uintptr_t>(x->data_ptr()) % 16 != 0) return false;
  int major = 0;
  EMBER_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
                   kForward);
  return major >= 8;
}

// Whether v4 and b4 read input o in place, and where its rows are: each head's rows one after
// another (any head offsets: slices and broadcasts of whole heads), its start and every head's
// offset multiples of 16 bytes (8 elements), as cp.async's 16-byte copies need. Rows further apart
// (a GPT's transposed per-head views, rows 3C apart) are copied: on an H100, GPT-2 small's v4 and
// b4 took 2.1 ms more a step reading them in place than the 84 copies they saved (1.8 ms).
bool v4_reads(const AttentionOperand& o, HeadRows& h) {
  if (!head_rows(o, h) || reinterpret_cast<uintptr_t>(o.values.data_ptr()) % 16 != 0 ||
      h.ld != o.values.size(-1) || h.ld % 8 != 0)
    return false;
  for (int d = 0; d < h.heads.ndim; ++d)
    if (h.heads.stride[d] % 8 != 0) return false;
  return true;
}

// o as v4 and b4 read it, and where its rows are (h): in place where they can (v4_reads), else
// a fresh contiguous copy (a new allocation, which they always can read: aligned, rows of E
// elements one after another), so that whatever the layout the same kernel computes the same
// bits.
AttentionOperand v4_operand(const AttentionOperand& o, int64_t heads, HeadRows& h) {
  if (v4_reads(o, h)) return o;
  AttentionOperand copy;
  copy.values = packed(o, heads);
  // Already contiguous (packed returned a view of o's own memory): still misaligned, so copied.
  if (copy.values.data_ptr() == o.values.data_ptr()) copy.values = copy.values.clone();
  copy.row_stride = copy.values.size(-1);
  v4_reads(copy, h);
  return copy;
}

// False where v4 does not apply (the caller then runs v3).
template <class T>
bool v4_forward_launch(const AttentionOperand& q_in, const AttentionOperand& k_in,
                       const AttentionOperand& v_in, const AttentionMask& mask,
                       const AttentionParams& p, Tensor& out, Tensor& lse) {
  const int dev = out.device().index;
  if (!v4_applies(out.dtype(), p, dev, {&out})) return false;
  HeadRows qh, kh, vh;
  const AttentionOperand q = v4_operand(q_in, p.heads, qh), k = v4_operand(k_in, p.heads, kh),
                         v = v4_operand(v_in, p.heads, vh);
  const V4Launch<T> L = v4_launch<T>(p.E);
  if (!allow_shared(L.kernel, L.bytes, dev)) return false;
  L.kernel<<<L.grid(p.heads, p.L), 32 * L.warps, L.bytes, stream(out.device())>>>(
      q.values.data<T>(), k.values.data<T>(), v.values.data<T>(), qh, kh, vh, mask_view(mask), p,
      out.data<T>(), lse.data<float>());
  check_launch(kForward, {&q.values, &k.values, &v.values, &out});
  return true;
}

// ================================================================================================
// b2 — the backward, fused at v2's level.
//
// delta[b, i] = dO_i . O_i first (attention_delta). Then grid (BH, ceil(S / 32)); block 32
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

// delta[b, i] = dO_i . O_i, every backward's first step: a group of 8 neighbouring threads per row,
// each summing every 8th element, then the group's sum by shuffles (so neighbouring threads read
// neighbouring elements). dO where dh says, O packed [BH, L, Ev].
template <class T, class C>
__global__ void attention_delta(const T* dout, HeadRows dh, const T* out, AttentionParams p,
                                C* delta) {
  constexpr int kGroup = 8;
  const int lane = int(threadIdx.x) % kGroup;
  const unsigned group_mask = 0xffu << (threadIdx.x % 32 / kGroup * kGroup);
  const int64_t rows = p.heads * p.L, groups = int64_t(gridDim.x) * blockDim.x / kGroup;
  for (int64_t r = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kGroup; r < rows;
       r += groups) {
    const T* d = dout + dh.at(r / p.L, r % p.L);
    const T* o = out + r * p.Ev;
    C sum = 0;
    for (int64_t c = lane; c < p.Ev; c += kGroup) sum += convert<C>(d[c]) * convert<C>(o[c]);
#pragma unroll
    for (int width = kGroup / 2; width > 0; width /= 2)
      sum += __shfl_xor_sync(group_mask, sum, width);
    if (lane == 0) delta[r] = sum;
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

// ================================================================================================
// b4 — the backward at v4's level: b3's plan with the products on mma.sync fragments, P, dP and dS
// in registers, and dK, dV accumulated in registers for the block's whole walk.
//
// Grid (BH, ceil(S / 16 G W)); block W warps (B4Tiling), warp w owns G groups of 16 keys, j0 +
// 16 G w ... + 16 G - 1 (each B fragment of Q and dO a warp reads serving its G groups, as v4's
// of k and v do). The block stages its 16 G W keys and values once (cp.async), then walks the
// query tiles of R rows (B4Tiling: at E = 128, with dK and dV in registers, 128 floats a thread,
// a small tile keeps S^T and dP^T from pushing the kernel into spills), from the first that sees j0
// under the causal rule, q, dO, logsumexp and delta double buffered as v4 does k and v. Per tile
// each warp, on each group of its keys:
//   S^T = K_w Q^T, dP^T = V_w dO^T   [16][R] in C fragments (K_w, V_w: A fragments by ldmatrix,
//                                    Q, dO: B fragments, rows as n)
//   P^T = 2^(S^T scale log2 e + bias log2 e - lse log2 e), (P Z)^T, dS^T = P^T (dP^T Z - delta)
//   scale, element by element on the fragments (each lane knows its rows and columns);
//   dV_w += (P Z)^T dO, dK_w += dS^T Q, the A fragments packed from the C fragments in registers,
//   dO and Q as B fragments by ldmatrix.trans; dV_w, dK_w are C fragments held across tiles;
//   dS^T, packed to T, into a [16 G W][R] shared buffer.
// After a __syncthreads, dQ [R][E] of the tile = dS [R][16 G W] K [16 G W][E]: work items of 16 or
// 32 rows by 32 columns spread over the warps, dS's A fragments read from the dS^T buffer by
// ldmatrix.trans, K's B fragments by ldmatrix.trans; each item adds its block into the float dQ
// buffer by atomic adds, as b3 does. Atomics keep the backward one kernel: a separate dQ kernel
// (walking the key tiles per query tile) would recompute S and dP, two of the five products, to
// avoid contention that is small here (each dQ element gets one add per key block of 16 G W).

// The tiling the backward launches: W warps of G groups (16 G W keys a block), R query rows a
// tile, and the blocks an SM should hold at once (MinBlocks, which caps a thread's registers).
// Measured as V4Tiling's: at E = 64, one block of 64-row tiles (236 registers) took 0.95 of the
// time of three blocks of 32-row tiles (168 registers); two groups a warp on 32-row tiles were
// 10% faster at T = 4096, 5% at T = 1024 with 96 heads and 28% slower with 32 heads, 0.98 of it
// in the mean. At E = 128, 32-row tiles (254 registers): no tiling that holds dK and dV of more
// keys a warp fits the registers.
template <int D> struct B4Tiling {
  static constexpr int kWarps = 4, kGroups = 1, kRows = D == 64 ? 64 : 32, kMinBlocks = 1;
};

size_t b4_shared_bytes(int64_t D, int W, int G, int R) {
  const size_t keys = size_t(16 * G * W), ld = size_t(D + kV4Pad);
  return 2 * (2 * keys * ld + 4 * size_t(R) * ld + keys * size_t(R + kV4Pad)) + 4 * (4 * size_t(R));
}

// dst[0], dst[1] += x, y by atomic adds (one 8-byte add on sm_90; dst is 8-byte aligned). A
// template, so that a device pass below sm_80, whose b4 traps instead of calling it (kHasMma),
// does not warn of an unused function.
template <class F> __device__ __forceinline__ void atomic_add2(F* dst, F x, F y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float2*>(dst), make_float2(float(x), float(y)));
#else
  atomicAdd(dst, x);
  atomicAdd(dst + 1, y);
#endif
}

template <class T, int D, int W, int G, int R>
__device__ __forceinline__ void b4_backward_body(const T* dout, const T* q, const T* k, const T* v,
                                                 HeadRows doh, HeadRows qh, HeadRows kh,
                                                 HeadRows vh, MaskView mask, const float* lse,
                                                 const float* delta, AttentionParams p, float* dq,
                                                 T* dk, T* dv) {
  constexpr int kKeys = 16 * G * W, kThreads = 32 * W;  // keys and threads of the block
  constexpr int ld = D + kV4Pad, ldt = R + kV4Pad;
  constexpr int NR = R / 8;  // 8-query C fragments of S^T and dP^T
  constexpr int ND = D / 8;  // 8-column C fragments of dK and dV
  constexpr float kLog2e = 1.4426950408889634f;
  extern __shared__ __align__(128) unsigned char b4_smem[];
  uint16_t* ks = reinterpret_cast<uint16_t*>(b4_smem);        // [kKeys][ld]
  uint16_t* vs = ks + kKeys * ld;                             // [kKeys][ld]
  uint16_t* qs = vs + kKeys * ld;                             // [2][R][ld]
  uint16_t* dos = qs + 2 * R * ld;                            // [2][R][ld]
  uint16_t* dst = dos + 2 * R * ld;                           // [kKeys][ldt]: dS^T
  float* lses = reinterpret_cast<float*>(dst + kKeys * ldt);  // [2][R]
  float* deltas = lses + 2 * R;                               // [2][R]
  const int64_t b = blockIdx.x, j0 = int64_t(blockIdx.y) * kKeys;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;  // the fragments' groupID and threadID_in_group
  const int kw = 16 * G * warp;          // this warp's first key in the block
  const int keys = int(imin(kKeys, p.S - j0));
  // Under the causal rule, query i sees key j0 only from i = j0 on.
  const int64_t first = p.causal ? (j0 / R) * R : 0;
  const int tiles = first < p.L ? int((p.L - first + R - 1) / R) : 0;
  const auto stage_tile = [&](int n) {
    const int64_t i0 = first + int64_t(n) * R;
    const int rows = int(imin(R, p.L - i0));
    stage_async<D, R, kThreads>(qs + (n & 1) * R * ld, q + qh.at(b, i0), qh.ld, rows);
    stage_async<D, R, kThreads>(dos + (n & 1) * R * ld, dout + doh.at(b, i0), doh.ld, rows);
    // Asynchronously too (a plain load would hold its warp, and at the next barrier the block,
    // for a global memory latency every tile). Rows past L get 0, which no score reads: theirs
    // are -inf (the bias step masks every row past L).
    for (int r = threadIdx.x; r < R; r += kThreads) {
      const int64_t at = b * p.L + (r < rows ? i0 + r : 0);
      sm80::cp_async_4(sm80::shared_address(lses + (n & 1) * R + r), lse + at, r < rows);
      sm80::cp_async_4(sm80::shared_address(deltas + (n & 1) * R + r), delta + at, r < rows);
    }
  };
  stage_async<D, kKeys, kThreads>(ks, k + kh.at(b, j0), kh.ld, keys);
  stage_async<D, kKeys, kThreads>(vs, v + vh.at(b, j0), vh.ld, keys);
  if (tiles > 0) stage_tile(0);
  sm80::cp_async_commit();
  float dka[G][ND][4] = {}, dva[G][ND][4] = {};  // dK_w, dV_w: rows (keys) g, g + 8 of each group
  const float scale = float(p.scale), scale2 = scale * kLog2e;
  const bool dropout = p.dropout_p > 0;
  for (int n = 0; n < tiles; ++n) {
    const int64_t i0 = first + int64_t(n) * R;
    if (n + 1 < tiles) stage_tile(n + 1);
    sm80::cp_async_commit();   // empty on the last tile: the count of pending groups stays 1
    sm80::cp_async_wait<1>();  // tile n (and on the first, k and v) has landed
    __syncthreads();
    const uint16_t* qt = qs + (n & 1) * R * ld;
    const uint16_t* dot = dos + (n & 1) * R * ld;
    const float* lt = lses + (n & 1) * R;
    const float* deltat = deltas + (n & 1) * R;
    // A warp whose keys are all past S, or all after the tile's last row under the causal rule,
    // has probabilities and dS of 0 only: it adds nothing, and gives the dQ product zeros. (A
    // group of the warp's in that state computes them, to the same effect.)
    if (kw < keys && !(p.causal && i0 + R - 1 < j0 + kw)) {
      float st[G][NR][4] = {}, dpt[G][NR][4] = {};
      {
        uint32_t a[G][D / 16][4];  // K_w, then V_w; each B fragment of Q, dO serves all G groups
        load_a_groups(a, ks, ld, kw, lane);
        mma_groups<T, G, NR, D / 16, false>(st, a, qt, ld, 0, 0, lane);
        load_a_groups(a, vs, ld, kw, lane);
        mma_groups<T, G, NR, D / 16, false>(dpt, a, dot, ld, 0, 0, lane);
      }
      const bool biased = mask.kind != AttentionMaskKind::None || kw + 16 * G > keys ||
                          i0 + R > p.L || (p.causal && i0 < j0 + kw + 16 * G - 1);
      // Per query column of this thread, 8 nt + 2 t + u: logsumexp in base-2 units (0 for a row
      // with no live score, whose scores are all -inf: every p is then 2^-inf = 0) and delta.
      float lse2[NR][2], dlt[NR][2];
#pragma unroll
      for (int nt = 0; nt < NR; ++nt)
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          const float l = lt[nt * 8 + 2 * t + u];
          lse2[nt][u] = l == -INFINITY ? 0.0f : l * kLog2e;
          dlt[nt][u] = deltat[nt * 8 + 2 * t + u];
        }
      uint32_t pa[G][R / 16][4], da[G][R / 16][4];  // (P Z)^T and dS^T as A fragments
#pragma unroll
      for (int gr = 0; gr < G; ++gr) {
        // C fragment element c of tile nt: key row kw + 16 gr + g (+ 8 for c >= 2), query
        // column 8 nt + 2 t (+ 1 for odd c).
        const int64_t key0 = j0 + kw + 16 * gr + g;  // this thread's first key of the group
        float(&sg)[NR][4] = st[gr];
        float(&dg)[NR][4] = dpt[gr];
        to_base2<T>(sg, scale2, biased, mask, p, b, [&](int nt, int c) {
          return std::pair<int64_t, int64_t>(i0 + nt * 8 + 2 * t + (c & 1), key0 + 8 * (c >> 1));
        });
        // The test of dropout is a uniform branch out of the element loops, as v4's.
        if (dropout) {
#pragma unroll
          for (int nt = 0; nt < NR; ++nt)
#pragma unroll
            for (int c = 0; c < 4; ++c) {
              const int64_t i = i0 + nt * 8 + 2 * t + (c & 1), j = key0 + 8 * (c >> 1);
              const float prob = sm80::exp2_approx(sg[nt][c] - lse2[nt][c & 1]);
              const float z = prob == 0.0f ? 1.0f : keep_factor<float>(p, b, i, j);
              sg[nt][c] = prob * z;
              dg[nt][c] = prob * (dg[nt][c] * z - dlt[nt][c & 1]) * scale;
            }
        } else {
#pragma unroll
          for (int nt = 0; nt < NR; ++nt)
#pragma unroll
            for (int c = 0; c < 4; ++c) {
              const float prob = sm80::exp2_approx(sg[nt][c] - lse2[nt][c & 1]);
              sg[nt][c] = prob;
              dg[nt][c] = prob * (dg[nt][c] - dlt[nt][c & 1]) * scale;
            }
        }
#pragma unroll
        for (int kk = 0; kk < R / 16; ++kk) {
          c_to_a<T>(pa[gr][kk], sg, kk);
          c_to_a<T>(da[gr][kk], dg, kk);
        }
      }
      mma_groups<T, G, ND, R / 16, true>(dva, pa, dot, ld, 0, 0, lane);
      mma_groups<T, G, ND, R / 16, true>(dka, da, qt, ld, 0, 0, lane);
      // dS^T into the block's buffer: da[gr][kk] holds rows g, g + 8 of group gr and columns
      // 16 kk + 2 t, + 1 (a[0], a[1]) and 16 kk + 8 + 2 t, + 1 (a[2], a[3]) of the warp's
      // [16 G][R].
#pragma unroll
      for (int gr = 0; gr < G; ++gr)
#pragma unroll
        for (int kk = 0; kk < R / 16; ++kk)
#pragma unroll
          for (int x = 0; x < 4; ++x)
            *reinterpret_cast<uint32_t*>(dst + (kw + 16 * gr + g + 8 * (x & 1)) * ldt + 16 * kk +
                                         8 * (x >> 1) + 2 * t) = da[gr][kk][x];
    } else {
      for (int x = lane; x < 16 * G * (R / 2); x += 32)
        reinterpret_cast<uint32_t*>(dst + (kw + x / (R / 2)) * ldt)[x % (R / 2)] = 0;
    }
    __syncthreads();  // every warp's dS^T is in
    // dQ rows i0 ... of the tile += dS [R][16 G W] K [16 G W][E], by items of 16 IR rows and 32
    // columns: each B fragment of K read from shared memory serves IR products and each A
    // fragment of dS four (IR = 2 where every warp still gets an item).
    constexpr int IR = (R / 16) * (D / 32) >= 2 * W ? 2 : 1;
    for (int item = warp; item < (R / (16 * IR)) * (D / 32); item += W) {
      const int rb = IR * (item / (D / 32)), cb = item % (D / 32);  // 16-row block, 32-column one
      if (i0 + 16 * rb >= p.L) continue;
      uint32_t a[IR][kKeys / 16][4];
#pragma unroll
      for (int ir = 0; ir < IR; ++ir)
#pragma unroll
        for (int kk = 0; kk < kKeys / 16; ++kk)
          sm80::ldmatrix_x4_trans(a[ir][kk],
                                  sm80::a_trans(dst, ldt, 16 * (rb + ir), 16 * kk, lane));
      float acc[IR][4][4] = {};
      mma_groups<T, IR, 4, kKeys / 16, true>(acc, a, ks, ld, 32 * cb, 0, lane);
#pragma unroll
      for (int ir = 0; ir < IR; ++ir)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int64_t i = i0 + 16 * (rb + ir) + g + 8 * h;
          if (i >= p.L) continue;
          float* at = dq + (b * p.L + i) * D + 32 * cb + 2 * t;
#pragma unroll
          for (int nt = 0; nt < 4; ++nt)
            atomic_add2(at + 8 * nt, acc[ir][nt][2 * h], acc[ir][nt][2 * h + 1]);
        }
    }
    __syncthreads();  // the dS^T buffer and buffer n & 1 are free
  }
  sm80::cp_async_wait<0>();  // with no query tile, k and v may still be on their way
  // dK_w and dV_w: rows g and g + 8 of each group of the warp's keys, columns 8 nt + 2 t, + 1.
#pragma unroll
  for (int gr = 0; gr < G; ++gr)
#pragma unroll
    for (int nt = 0; nt < ND; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int key = kw + 16 * gr + g + 8 * h;
        if (key >= keys) continue;
        const int64_t at = (b * p.S + j0 + key) * D + nt * 8 + 2 * t;
        const float(&dkc)[4] = dka[gr][nt], (&dvc)[4] = dva[gr][nt];
        *reinterpret_cast<uint32_t*>(dk + at) = sm80::pack2<T>(dkc[2 * h], dkc[2 * h + 1]);
        *reinterpret_cast<uint32_t*>(dv + at) = sm80::pack2<T>(dvc[2 * h], dvc[2 * h + 1]);
      }
}

template <class T, int D, int W, int G, int R, int MinBlocks>
__global__ void __launch_bounds__(32 * W, MinBlocks)
    b4_backward(const T* dout, const T* q, const T* k, const T* v, HeadRows doh, HeadRows qh,
                HeadRows kh, HeadRows vh, MaskView mask, const float* lse, const float* delta,
                AttentionParams p, float* dq, T* dk, T* dv) {
  if constexpr (kHasMma)
    b4_backward_body<T, D, W, G, R>(dout, q, k, v, doh, qh, kh, vh, mask, lse, delta, p, dq, dk,
                                    dv);
  else __trap();
}

// b4's inputs as it reads them (v4_operand), and where their rows are.
struct B4Inputs {
  AttentionOperand dout, q, k, v;
  HeadRows dout_rows, q_rows, k_rows, v_rows;
};

// b4 on B4Tiling<D> for the problem's head size.
template <class T>
using B4Launch = TiledLaunch<void (*)(const T*, const T*, const T*, const T*, HeadRows, HeadRows,
                                      HeadRows, HeadRows, MaskView, const float*, const float*,
                                      AttentionParams, float*, T*, T*)>;
// Tiling: B4Tiling<D>, or another with its members (benchmarks/tools/attention_tilings.cu).
template <class T, int D, class Tiling = B4Tiling<D>> B4Launch<T> b4_launch_on_tiling() {
  constexpr int W = Tiling::kWarps, G = Tiling::kGroups, R = Tiling::kRows;
  return {b4_backward<T, D, W, G, R, Tiling::kMinBlocks>, b4_shared_bytes(D, W, G, R), W,
          16 * G * W};
}
template <class T> B4Launch<T> b4_launch(int64_t E) {
  return E == 64 ? b4_launch_on_tiling<T, 64>() : b4_launch_on_tiling<T, 128>();
}

// Whether b4 takes the problem (v4_applies, and its shared memory fits); allows the memory.
template <class T>
bool b4_ready(const AttentionParams& p, int device, std::initializer_list<const Tensor*> outputs) {
  if (!v4_applies(dtype_of_v<T>, p, device, outputs)) return false;
  const B4Launch<T> L = b4_launch<T>(p.E);
  return allow_shared(L.kernel, L.bytes, device);
}

// The caller has checked b4_ready.
template <class T>
void b4_backward_launch(const B4Inputs& in, const AttentionMask& mask, const Tensor& lse,
                        const Tensor& delta, const AttentionParams& p, Tensor& dq, Tensor& grad_k,
                        Tensor& grad_v) {
  const B4Launch<T> L = b4_launch<T>(p.E);
  L.kernel<<<L.grid(p.heads, p.S), 32 * L.warps, L.bytes, stream(grad_k.device())>>>(
      in.dout.values.data<T>(), in.q.values.data<T>(), in.k.values.data<T>(), in.v.values.data<T>(),
      in.dout_rows, in.q_rows, in.k_rows, in.v_rows, mask_view(mask), lse.data<float>(),
      delta.data<float>(), p, dq.data<float>(), grad_k.data<T>(), grad_v.data<T>());
  check_launch(kBackward, {&in.dout.values, &in.q.values, &in.k.values, &in.v.values});
}

// The backward: b4 where v4 applies (unless EMBER_ATTENTION_VERSION asks for 0..3), else b3 where
// v3 applies and its tiles fit (unless 0..2 is asked for), b2 elsewhere. b4 reads dO, q, k and v
// in place where it can (v4_operand); the others read packed copies.
template <class T>
void backward_typed(const AttentionOperand& grad_out_in, const AttentionOperand& q_in,
                    const AttentionOperand& k_in, const AttentionOperand& v_in,
                    const AttentionMask& mask, const AttentionOperand& out_in, const Tensor& lse,
                    const AttentionParams& p, Tensor& grad_q, Tensor& grad_k, Tensor& grad_v) {
  using C = compute_t<T>;
  const int dev = grad_k.device().index;
  const int asked = requested_version(kBackward);
  bool use_b4 = false, tensor_cores = false;
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    use_b4 = (asked < 0 || asked == 4) && b4_ready<T>(p, dev, {&grad_k, &grad_v});
    tensor_cores = use_b4 || ((asked < 0 || asked >= 3) && v3_applies(dtype_of_v<T>, p, dev) &&
                              allow_shared(b3_backward<T>, b3_shared_bytes(p), dev));
  }
  const size_t bytes = b2_shared_bytes(p, sizeof(C));
  if (!tensor_cores && !allow_shared(b2_backward<T, C>, bytes, dev))
    throw NotSupportedError(kBackward, "E = " + std::to_string(p.E) +
                                           " and Ev = " + std::to_string(p.Ev) +
                                           " need more shared memory than this GPU has per "
                                           "block; use smaller heads or the CPU");
  const Tensor out = packed(out_in, p.heads);
  B4Inputs b4;               // b4's inputs, in place where it can read them
  Tensor grad_out, q, k, v;  // packed, for the other kernels
  if (use_b4) {
    b4.dout = v4_operand(grad_out_in, p.heads, b4.dout_rows);
    b4.q = v4_operand(q_in, p.heads, b4.q_rows);
    b4.k = v4_operand(k_in, p.heads, b4.k_rows);
    b4.v = v4_operand(v_in, p.heads, b4.v_rows);
  } else {
    grad_out = packed(grad_out_in, p.heads);
    q = packed(q_in, p.heads);
    k = packed(k_in, p.heads);
    v = packed(v_in, p.heads);
    b4.dout.values = grad_out;
    b4.dout.row_stride = p.Ev;
    head_rows(b4.dout, b4.dout_rows);  // where attention_delta reads dO
  }
  cudaStream_t s = stream(grad_k.device());
  Tensor delta = Tensor::empty({p.heads, p.L}, dtype_of_v<C>, grad_k.device(), kBackward);
  Tensor dq = Tensor::empty(grad_q.shape(), dtype_of_v<C>, grad_k.device(), kBackward);
  dq.zero_();
  if (p.L > 0) {
    attention_delta<T, C><<<grid_size(p.heads * p.L * 8, kV1Threads, dev), kV1Threads, 0, s>>>(
        b4.dout.values.data<T>(), b4.dout_rows, out.data<T>(), p, delta.data<C>());
    check_launch(kBackward, {&b4.dout.values, &out});
  }
  if (p.S > 0 && tensor_cores) {
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      if (use_b4) b4_backward_launch<T>(b4, mask, lse, delta, p, dq, grad_k, grad_v);
      else b3_backward_launch<T>(grad_out, q, k, v, mask, lse, delta, p, dq, grad_k, grad_v);
    }
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

// The front function hands CUDA its inputs in place or packed (ops/attention_kernels.h): v4 reads
// them where they are when it can (v4_operand), the other versions packed copies.
void attention(const AttentionOperand& q_in, const AttentionOperand& k_in,
               const AttentionOperand& v_in, const AttentionMask& mask, const AttentionParams& p,
               Tensor& out, Tensor& lse) {
  DeviceGuard guard(out.device());
  const int asked = requested_version(kForward);
  dispatch_floating(out.dtype(), kForward, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      if ((asked < 0 || asked == 4) && v4_forward_launch<T>(q_in, k_in, v_in, mask, p, out, lse))
        return;
    }
    const Tensor q = packed(q_in, p.heads), k = packed(k_in, p.heads), v = packed(v_in, p.heads);
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
  DeviceGuard guard(grad_k.device());
  dispatch_floating(grad_k.dtype(), kBackward, [&](auto tag) {
    backward_typed<typename decltype(tag)::type>(grad_out, q, k, v, mask, out, lse, p, grad_q,
                                                 grad_k, grad_v);
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
