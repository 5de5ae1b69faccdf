// attention.cpp — CPU kernels of scaled dot-product attention: flash attention's algorithm (Dao et
// al., 2022) with BLAS for the tile products.
//
// Forward, per head and tile of kTileQ query rows: walk the keys in panels of up to kPanel, and
// per row keep the running max m of its scores, the running sum l of exp(score - m) and the
// running output acc = sum exp(score - m) v. A new panel with a larger max rescales l and acc by
// exp(m_old - m_new) (the online softmax), so the [L, S] scores are never held: only one
// [kTileQ, kPanel] block of them. At the end out = acc / l and logsumexp = m + log(l).
//
// Backward, per head: D = rowsum(dO * O); then per tile of kTileK keys, over panels of up to
// kPanel queries, the probabilities recomputed from logsumexp (P = exp(score - lse)), and
//   dV_j += (P Z)^T dO_i,   dS = P (dO_i V_j^T Z - D_i),   dQ_i += scale dS K_j,
//   dK_j += scale dS^T Q_i        (Z: the dropout's keep factors, 1 without dropout)
// with dK_j, dV_j accumulated over the query panels and written once.
//
// Why panels: OpenBLAS packs both operands on every call, so a 64 x 64 x 64 product spends a
// large share of its time packing. One GEMM per (tile, panel) instead of per pair of 64-tiles
// packs the tile's small operand once for the whole panel, and under the causal rule computes
// no more of the masked diagonal than 64-tiles do (a panel stops where the tile's keys end, or
// starts where its queries begin). kPanel caps the panel so that the extra memory stays a few
// [kTileQ, kPanel] blocks per thread whatever the length.
//
// q, k, v, dO and O are read in place, each head at its own offset and its rows a row stride apart
// (AttentionOperand): BLAS takes the row stride as the leading dimension, so the transposed
// per-head views of a qkv projection and batch broadcasts need no copy.
//
// Float16 and bfloat16 tiles are converted to float32 blocks as they are read; every product and
// softmax runs in the compute type (float32, or float64 for float64 inputs). Work is spread over
// threads by (head, query tile) in the forward and by head in the backward (each head's dK, dV
// sum over all its query tiles). Extra memory: a few tiles per thread, and O(L) per head.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "convert.h"
#include "dispatch.h"
#include "kernels.h"
#include "ops/attention_kernels.h"

// From here on compiled for this file's instruction set (cpu/isa_begin.h).
#include "cpu/blas.h"
#include "cpu/isa_begin.h"
#include "cpu/parallel.h"
#include "cpu/reduce_loops.h"  // reduce_run
#include "cpu/vector_exp.h"

namespace ember::cpu::EMBER_CPU_ISA {
namespace {

constexpr int64_t kTileQ = kAttentionCpuTileQ;
constexpr int64_t kTileK = kAttentionCpuTileK;
constexpr int64_t kPanel = kAttentionCpuPanel;

// An operand's heads (ops/attention_kernels.h): head h's row r at head(h) + r * ld.
template <class T> struct HeadRows {
  const T* base;
  const int64_t* offsets;  // null: packed heads, head_size apart
  int64_t head_size, ld;

  explicit HeadRows(const AttentionOperand& o)
      : base(o.values.data<T>()),
        offsets(o.packed() ? nullptr : o.offsets.data<int64_t>()),
        head_size(o.packed() ? o.values.size(1) * o.values.size(2) : 0),
        ld(o.row_stride) {}
  const T* head(int64_t h) const { return base + (offsets ? offsets[h] : h * head_size); }
};

// A block of rows as a GEMM reads it: the first row and the row stride.
template <class C> struct Rows {
  const C* data;
  int64_t ld;
};

// Rows [r0, r0 + n) of head h of x (cols wide), in the compute type C: x's own memory when T is
// C, else a converted copy in buf (packed, row stride cols).
template <class T, class C>
Rows<C> rows_as(const HeadRows<T>& x, int64_t h, int64_t r0, int64_t n, int64_t cols,
                std::vector<C>& buf) {
  const T* src = x.head(h) + r0 * x.ld;
  if constexpr (std::is_same_v<T, C>) {
    return {src, x.ld};
  } else {
    buf.resize(size_t(n * cols));
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < cols; ++c) buf[size_t(r * cols + c)] = convert<C>(src[r * x.ld + c]);
    return {buf.data(), cols};
  }
}

// The scores' bias of one head, read tile by tile.
template <class T, class C> struct MaskReader {
  AttentionMaskKind kind = AttentionMaskKind::None;
  const bool* bools = nullptr;
  const T* adds = nullptr;
  const int64_t* offsets = nullptr;
  int64_t stride_l = 0, stride_s = 0;

  explicit MaskReader(const AttentionMask& m) : kind(m.kind) {
    if (kind == AttentionMaskKind::None) return;
    if (kind == AttentionMaskKind::Bool) bools = m.values.data<bool>();
    else adds = m.values.data<T>();
    offsets = m.offsets.data<int64_t>();
    stride_l = m.stride_l;
    stride_s = m.stride_s;
  }

  // s[c] += bias(h, i, j0 + c) for c in [0, n).
  void add(int64_t h, int64_t i, int64_t j0, int64_t n, C* s) const {
    if (kind == AttentionMaskKind::None) return;
    const int64_t base = offsets[h] + i * stride_l + j0 * stride_s;
    if (kind == AttentionMaskKind::Bool) {
      for (int64_t c = 0; c < n; ++c)
        if (!bools[base + c * stride_s]) s[c] = -std::numeric_limits<C>::infinity();
    } else {
      for (int64_t c = 0; c < n; ++c) s[c] += convert<C>(adds[base + c * stride_s]);
    }
  }
};

// One row of a score tile, made final: scaled, biased by the mask and the causal rule.
// s: the row's n scores (keys j0 ...) for query i of head h.
template <class T, class C>
void finish_scores(const AttentionParams& p, const MaskReader<T, C>& mask, int64_t h, int64_t i,
                   int64_t j0, int64_t n, C* s) {
  const C scale = p.E == 0 ? C(0) : C(p.scale);  // E == 0: q . k is an empty sum, 0
  for (int64_t c = 0; c < n; ++c) s[c] *= scale;
  mask.add(h, i, j0, n, s);
  if (p.causal)
    for (int64_t c = std::max<int64_t>(i + 1 - j0, 0); c < n; ++c)
      s[c] = -std::numeric_limits<C>::infinity();
}

// s[c] *= the dropout's keep factor of (h, i, j0 + c).
template <class C>
void apply_dropout(const AttentionParams& p, int64_t h, int64_t i, int64_t j0, int64_t n, C* s) {
  const C keep_scale = C(attention_keep_scale(p.dropout_p));
  for (int64_t c = 0; c < n; ++c) s[c] *= attention_keep(p, h, i, j0 + c) ? keep_scale : C(0);
}

// The max and the sum of s[0, n) through the reduction engine's lanes (cpu/reduce_loops.h): one
// running max or sum is a chain of dependent operations that the compiler may not reorder (and
// so not vectorise) without -ffast-math; the scalar max chain was a quarter of the forward's time.
template <class C> struct MaxOf {
  using acc_t = C;
  C init() const { return -std::numeric_limits<C>::infinity(); }
  C step(C a, C x, int64_t) const { return x > a ? x : a; }
  C combine(C a, C b) const { return b > a ? b : a; }
};
template <class C> struct SumOf {
  using acc_t = C;
  C init() const { return C(0); }
  C step(C a, C x, int64_t) const { return a + x; }
  C combine(C a, C b) const { return a + b; }
};
template <class C> C row_max(const C* s, int64_t n) {
  return reduce_run<true>(s, 1, n, 0, MaxOf<C>{});
}
template <class C> C row_sum(const C* s, int64_t n) {
  return reduce_run<true>(s, 1, n, 0, SumOf<C>{});
}

// The keys query tile [i0, i0 + rows) can see: all S, or under the causal rule keys j < i0 + rows.
int64_t key_end(const AttentionParams& p, int64_t i0, int64_t rows) {
  return p.causal ? std::min(p.S, i0 + rows) : p.S;
}

// ---- forward ----

template <class T> struct ForwardTask {
  using C = compute_t<T>;
  const AttentionParams& p;
  HeadRows<T> q, k, v;
  T* out;
  C* lse;
  MaskReader<T, C> mask;

  // Query rows [i0, i0 + rows) of head h.
  // s: the score block, kept by the caller across its tiles: at up to kTileQ x kPanel (256 KB of
  // float) a fresh allocation per tile came from mmap, and its page faults and zeroing showed.
  void run(int64_t h, int64_t i0, int64_t rows, std::vector<C>& s) const {
    const int64_t E = p.E, Ev = p.Ev;
    const int64_t kend = key_end(p, i0, rows);
    const int64_t width = std::min(kPanel, kend);  // the score block's row stride
    std::vector<C> qbuf, kbuf, vbuf;
    if (s.size() < size_t(rows * width)) s.resize(size_t(rows * width));  // GEMM writes it whole
    std::vector<C> acc(size_t(rows * Ev), C(0));
    std::vector<C> m(size_t(rows), -std::numeric_limits<C>::infinity()), l(size_t(rows), C(0));
    const Rows<C> Q = rows_as(q, h, i0, rows, E, qbuf);
    for (int64_t j0 = 0; j0 < kend; j0 += kPanel) {
      const int64_t cols = std::min(kPanel, kend - j0);
      const Rows<C> K = rows_as(k, h, j0, cols, E, kbuf);
      const Rows<C> V = rows_as(v, h, j0, cols, Ev, vbuf);
      // s[r, c] = q_r . k_c  [rows, cols], row stride width
      gemm_one_thread<C>(false, true, rows, cols, E, Q.data, Q.ld, K.data, K.ld, C(0), s.data(),
                         width);
      for (int64_t r = 0; r < rows; ++r) {
        C* sr = s.data() + r * width;
        const int64_t i = i0 + r;
        finish_scores(p, mask, h, i, j0, cols, sr);
        // Under the causal rule keys past i are -inf (exp 0): the max, exp and sum stop at i.
        const int64_t live = p.causal ? std::min(cols, std::max<int64_t>(i + 1 - j0, 0)) : cols;
        const C m_new = std::max(m[size_t(r)], row_max(sr, live));
        if (m_new == -std::numeric_limits<C>::infinity()) {  // every key so far masked
          std::fill(sr, sr + cols, C(0));
          continue;
        }
        const C alpha = exp_c(m[size_t(r)] - m_new);  // 0 on the row's first unmasked panel
        for (int64_t c = 0; c < live; ++c) sr[c] = exp_c(sr[c] - m_new);
        std::fill(sr + live, sr + cols, C(0));
        l[size_t(r)] = l[size_t(r)] * alpha + row_sum(sr, live);
        m[size_t(r)] = m_new;
        C* ar = acc.data() + r * Ev;
        for (int64_t c = 0; c < Ev; ++c) ar[c] *= alpha;
        if (p.dropout_p > 0) apply_dropout(p, h, i, j0, cols, sr);
      }
      // acc += P V  [rows, Ev]
      gemm_one_thread<C>(false, false, rows, Ev, cols, s.data(), width, V.data, V.ld, C(1),
                         acc.data(), Ev);
    }
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t i = i0 + r;
      T* o = out + (h * p.L + i) * Ev;
      const C lr = l[size_t(r)];
      const C inv = lr > 0 ? C(1) / lr : C(0);  // a fully masked row (or S == 0) gives 0
      for (int64_t c = 0; c < Ev; ++c) o[c] = convert<T>(acc[size_t(r * Ev + c)] * inv);
      lse[h * p.L + i] = lr > 0 ? m[size_t(r)] + std::log(lr) : -std::numeric_limits<C>::infinity();
    }
  }
};

template <class T>
void attention_typed(const AttentionOperand& q, const AttentionOperand& k,
                     const AttentionOperand& v, const AttentionMask& mask, const AttentionParams& p,
                     Tensor& out, Tensor& logsumexp) {
  using C = compute_t<T>;
  keep_blas_single_threaded();  // the tiles' GEMMs run inside Ember's threads (cpu/blas.h)
  const ForwardTask<T> task{p,
                            HeadRows<T>(q),
                            HeadRows<T>(k),
                            HeadRows<T>(v),
                            out.data<T>(),
                            logsumexp.data<C>(),
                            MaskReader<T, C>(mask)};
  const int64_t tiles = (p.L + kTileQ - 1) / kTileQ;
  const int64_t cost =
      cost::gemm(kTileQ, p.S, p.E + p.Ev) + kTileQ * p.S * cost::kTranscendental + 1;
  parallel_for(p.heads * tiles, cost, [&](int64_t begin, int64_t end) {
    std::vector<C> scores;
    for (int64_t t = begin; t < end; ++t) {
      const int64_t h = t / tiles, i0 = (t % tiles) * kTileQ;
      task.run(h, i0, std::min(kTileQ, p.L - i0), scores);
    }
  });
}

void attention(const AttentionOperand& q, const AttentionOperand& k, const AttentionOperand& v,
               const AttentionMask& mask, const AttentionParams& p, Tensor& out,
               Tensor& logsumexp) {
  dispatch_floating(q.values.dtype(), "scaled_dot_product_attention", [&](auto tag) {
    attention_typed<typename decltype(tag)::type>(q, k, v, mask, p, out, logsumexp);
  });
}

// ---- backward ----

template <class T> struct BackwardTask {
  using C = compute_t<T>;
  const AttentionParams& p;
  HeadRows<T> dout, q, k, v, out;
  const C* lse;
  T *dq, *dk, *dv;
  MaskReader<T, C> mask;

  void run(int64_t h) const {
    const int64_t L = p.L, S = p.S, E = p.E, Ev = p.Ev;
    const T* doh = dout.head(h);
    const T* oh = out.head(h);
    const C* lseh = lse + h * L;
    // D[i] = dO_i . O_i
    std::vector<C> D(static_cast<size_t>(L)), dq_acc(static_cast<size_t>(L * E), C(0));
    for (int64_t i = 0; i < L; ++i) {
      C d = 0;
      for (int64_t c = 0; c < Ev; ++c)
        d += convert<C>(doh[i * dout.ld + c]) * convert<C>(oh[i * out.ld + c]);
      D[size_t(i)] = d;
    }
    std::vector<C> qbuf, dobuf, kbuf, vbuf;
    const int64_t panel = std::min(kPanel, L);
    std::vector<C> P(size_t(panel * kTileK)), dS(size_t(panel * kTileK));
    std::vector<C> PZ(p.dropout_p > 0 ? size_t(panel * kTileK) : 0);
    std::vector<C> dk_acc(size_t(kTileK * E)), dv_acc(size_t(kTileK * Ev));
    const C scale = C(p.scale);
    for (int64_t j0 = 0; j0 < S; j0 += kTileK) {
      const int64_t cols = std::min(kTileK, S - j0);
      const Rows<C> K = rows_as(k, h, j0, cols, E, kbuf);
      const Rows<C> V = rows_as(v, h, j0, cols, Ev, vbuf);
      std::fill(dk_acc.begin(), dk_acc.end(), C(0));
      std::fill(dv_acc.begin(), dv_acc.end(), C(0));
      // Under the causal rule, query i sees key j0 only from i = j0 on.
      const int64_t first = p.causal ? std::min(j0, L) : 0;
      for (int64_t i0 = first; i0 < L; i0 += kPanel) {
        const int64_t rows = std::min(kPanel, L - i0);
        const Rows<C> Q = rows_as(q, h, i0, rows, E, qbuf);
        const Rows<C> dO = rows_as(dout, h, i0, rows, Ev, dobuf);
        gemm_one_thread<C>(false, true, rows, cols, E, Q.data, Q.ld, K.data, K.ld, C(0), P.data(),
                           kTileK);
        for (int64_t r = 0; r < rows; ++r) {
          C* pr = P.data() + r * kTileK;
          const int64_t i = i0 + r;
          finish_scores(p, mask, h, i, j0, cols, pr);
          const C lr = lseh[i];
          if (lr == -std::numeric_limits<C>::infinity()) std::fill(pr, pr + cols, C(0));
          else
            for (int64_t c = 0; c < cols; ++c) pr[c] = exp_c(pr[c] - lr);
          if (p.dropout_p > 0) {
            C* zr = PZ.data() + r * kTileK;
            std::copy(pr, pr + cols, zr);
            apply_dropout(p, h, i, j0, cols, zr);
          }
        }
        // dV_j += (P Z)^T dO_i  [cols, Ev]  (P itself without dropout)
        gemm_one_thread<C>(true, false, cols, Ev, rows, p.dropout_p > 0 ? PZ.data() : P.data(),
                           kTileK, dO.data, dO.ld, C(1), dv_acc.data(), Ev);
        // dS = dO_i V_j^T  [rows, cols], then P (dS Z - D) scale
        gemm_one_thread<C>(false, true, rows, cols, Ev, dO.data, dO.ld, V.data, V.ld, C(0),
                           dS.data(), kTileK);
        for (int64_t r = 0; r < rows; ++r) {
          C* sr = dS.data() + r * kTileK;
          const C* pr = P.data() + r * kTileK;
          const int64_t i = i0 + r;
          if (p.dropout_p > 0) apply_dropout(p, h, i, j0, cols, sr);
          const C d = D[size_t(i)];
          for (int64_t c = 0; c < cols; ++c) sr[c] = pr[c] * (sr[c] - d) * scale;
        }
        // dQ_i += dS K_j  [rows, E];  dK_j += dS^T Q_i  [cols, E]
        gemm_one_thread<C>(false, false, rows, E, cols, dS.data(), kTileK, K.data, K.ld, C(1),
                           dq_acc.data() + i0 * E, E);
        gemm_one_thread<C>(true, false, cols, E, rows, dS.data(), kTileK, Q.data, Q.ld, C(1),
                           dk_acc.data(), E);
      }
      T* dkh = dk + (h * S + j0) * E;
      T* dvh = dv + (h * S + j0) * Ev;
      for (int64_t e = 0; e < cols * E; ++e) dkh[e] = convert<T>(dk_acc[size_t(e)]);
      for (int64_t e = 0; e < cols * Ev; ++e) dvh[e] = convert<T>(dv_acc[size_t(e)]);
    }
    T* dqh = dq + h * L * E;
    for (int64_t e = 0; e < L * E; ++e) dqh[e] = convert<T>(dq_acc[size_t(e)]);
  }
};

template <class T>
void attention_backward_typed(const AttentionOperand& grad_out, const AttentionOperand& q,
                              const AttentionOperand& k, const AttentionOperand& v,
                              const AttentionMask& mask, const AttentionOperand& out,
                              const Tensor& logsumexp, const AttentionParams& p, Tensor& grad_q,
                              Tensor& grad_k, Tensor& grad_v) {
  using C = compute_t<T>;
  keep_blas_single_threaded();
  const BackwardTask<T> task{p,
                             HeadRows<T>(grad_out),
                             HeadRows<T>(q),
                             HeadRows<T>(k),
                             HeadRows<T>(v),
                             HeadRows<T>(out),
                             logsumexp.data<C>(),
                             grad_q.data<T>(),
                             grad_k.data<T>(),
                             grad_v.data<T>(),
                             MaskReader<T, C>(mask)};
  const int64_t cost =
      2 * cost::gemm(p.L, p.S, 2 * p.E + 2 * p.Ev) + p.L * p.S * cost::kTranscendental + 1;
  parallel_for(p.heads, cost, [&](int64_t begin, int64_t end) {
    for (int64_t h = begin; h < end; ++h) task.run(h);
  });
}

void attention_backward(const AttentionOperand& grad_out, const AttentionOperand& q,
                        const AttentionOperand& k, const AttentionOperand& v,
                        const AttentionMask& mask, const AttentionOperand& out,
                        const Tensor& logsumexp, const AttentionParams& p, Tensor& grad_q,
                        Tensor& grad_k, Tensor& grad_v) {
  dispatch_floating(q.values.dtype(), "scaled_dot_product_attention_backward", [&](auto tag) {
    attention_backward_typed<typename decltype(tag)::type>(grad_out, q, k, v, mask, out, logsumexp,
                                                           p, grad_q, grad_k, grad_v);
  });
}

void attention_dropout_scale(const AttentionParams& p, Tensor& out) {
  dispatch_floating(out.dtype(), "attention_dropout_scale", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    const T keep = convert<T>(attention_keep_scale(p.dropout_p));
    const int64_t rows = p.heads * p.L;
    parallel_for(rows, p.S * cost::kTranscendental, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        for (int64_t j = 0; j < p.S; ++j)
          o[r * p.S + j] = attention_keep(p, r / p.L, r % p.L, j) ? keep : convert<T>(0.0);
    });
  });
}

}  // namespace

void register_attention(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/attention.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cpu::EMBER_CPU_ISA
#include "cpu/isa_end.h"
