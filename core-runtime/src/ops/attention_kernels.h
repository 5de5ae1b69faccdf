// attention_kernels.h — what every backend's attention kernels share: the parameters, the mask
// view and the dropout draw; the slots are in kernels/attention.def (internal header).
//
// Layout the front function (ops/attention.cpp) hands to kernels: the batch dims flattened into
// one dim of BH "heads":
//   q, grad_q: [BH, L, E]   k, grad_k: [BH, S, E]   v, grad_v: [BH, S, Ev]
//   out, grad_out: [BH, L, Ev]   logsumexp: [BH, L] in the compute dtype (float32 for float16 and
//   bfloat16 inputs, float64 for float64)
// The results (out, logsumexp, grad_q, grad_k, grad_v) and the backward's logsumexp are
// contiguous. The inputs q, k, v, grad_out and the backward's out come as AttentionOperand:
//   - when the last dim has stride 1 and rows do not overlap (a row stride of at least the row's
//     length; BLAS's leading dimension), in place. On CPU with each head's offset in `offsets`:
//     the transposed per-head views of one qkv projection (a GPT) and batch broadcasts (stride 0)
//     then cost no copy. On CUDA as the [batch..., rows, cols] view itself (offsets undefined):
//     v4/b4 walk its batch dims where each head's rows are contiguous (broadcasts and slices of
//     whole heads), and copy the rest, as the other versions copy everything, to contiguous;
//   - otherwise (an unusual layout) a contiguous copy: packed.
// The mask, a broadcast view that cannot in general be flattened that way, is an AttentionMask.
#pragma once
#include <cstdint>

#include "ember/half.h"
#include "ember/tensor.h"
#include "philox.h"

namespace ember {

enum class AttentionMaskKind { None, Bool, Additive };

// Element (b, i, j) of the mask is at values.data() + offsets[b] + i * stride_l + j * stride_s
// (in elements): offsets is a contiguous int64 [BH] tensor on the kernels' device, built by the
// front function from the mask's broadcast strides. values: bool, or q's dtype when additive.
struct AttentionMask {
  AttentionMaskKind kind = AttentionMaskKind::None;
  Tensor values;
  Tensor offsets;
  int64_t stride_l = 0;
  int64_t stride_s = 0;
};

// Row r, column c of head b is at values.data() + offsets[b] + r * row_stride + c (in elements);
// offsets is a contiguous int64 [BH] tensor on the kernels' device. Undefined offsets: values is
// [batch..., rows, cols] with head b at flat (row-major) index b of the batch dims, and rows
// row_stride apart; packed when that is contiguous [BH, rows, cols] (row_stride = cols).
struct AttentionOperand {
  Tensor values;
  Tensor offsets;
  int64_t row_stride = 0;
  bool packed() const { return !offsets.defined() && values.dim() == 3 && values.is_contiguous(); }
};

struct AttentionParams {
  int64_t heads = 0;  // BH
  int64_t L = 0, S = 0, E = 0, Ev = 0;
  double scale = 1;     // applied to q . k; E == 0 gives scores of 0, whatever the scale
  bool causal = false;  // key j takes part in query i's row only when j <= i
  double dropout_p = 0;
  uint64_t seed = 0, offset = 0;  // the dropout's Philox stream
};

// The CPU kernel's tiles (cpu/attention.cpp): query rows and keys per tile. Here so that tests
// can aim at the tile boundaries.
constexpr int64_t kAttentionCpuTileQ = 64;
constexpr int64_t kAttentionCpuTileK = 64;
// The most keys one query tile's GEMMs take at once in the forward, and the most queries one key
// tile's take in the backward: larger panels amortise BLAS's packing of the tile's operand.
constexpr int64_t kAttentionCpuPanel = 512;

// Whether the dropout keeps probability (b, i, j): a 32-bit draw u of element
// n = (b * L + i) * S + j of the stream (word n % 4 of block n / 4), kept when u / 2^32 >= p.
EMBER_HOST_DEVICE inline bool attention_keep(const AttentionParams& p, int64_t b, int64_t i,
                                             int64_t j) {
  const uint64_t n = (uint64_t(b) * uint64_t(p.L) + uint64_t(i)) * uint64_t(p.S) + uint64_t(j);
  const Philox4 r = PhiloxStream{p.seed, p.offset}.block(n / 4);
  return double(r.v[n % 4]) * 0x1p-32 >= p.dropout_p;
}

// The factor a kept probability is multiplied by: 1 / (1 - p), or 0 when p = 1 drops them all.
EMBER_HOST_DEVICE inline double attention_keep_scale(double p) { return p < 1 ? 1 / (1 - p) : 0; }

}  // namespace ember
