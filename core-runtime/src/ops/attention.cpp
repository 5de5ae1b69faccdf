// attention.cpp — the front functions of scaled dot-product attention: check q, k, v and the
// mask, broadcast the batch dims, flatten them into BH heads (attention_kernels.h says the
// layout), and run the device's fused kernels.
#include "ember/ops/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops/attention_kernels.h"
#include "ops/checks.h"
#include "ops/random_stream.h"

namespace ember {

namespace {

constexpr const char* kForward = "scaled_dot_product_attention";
constexpr const char* kBackward = "scaled_dot_product_attention_backward";

// The problem's sizes once q, k, v are checked: batch (the broadcast batch dims) and L, S, E, Ev.
struct AttentionShape {
  Shape batch;
  int64_t L = 0, S = 0, E = 0, Ev = 0;
  int64_t heads() const { return shape_numel(batch); }
  Shape with(int64_t rows, int64_t cols) const {
    Shape s = batch;
    s.push_back(rows);
    s.push_back(cols);
    return s;
  }
};

Shape batch_dims(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

AttentionShape check_qkv(const char* op, const Tensor& q, const Tensor& k, const Tensor& v) {
  const std::initializer_list<Named> qkv = {{"q", q}, {"k", k}, {"v", v}};
  check_same_device(op, qkv);
  check_floating(op, qkv);
  check_same_dtype(op, qkv);
  for (const Named& t : qkv)
    if (t.tensor.dim() < 2)
      throw ShapeError(op, operands(qkv) + "; " + t.name +
                               " must have at least 2 dims: q [*, L, E], k [*, S, E], "
                               "v [*, S, Ev]; add a dim with unsqueeze(0)");
  AttentionShape s;
  s.L = q.size(-2);
  s.E = q.size(-1);
  s.S = k.size(-2);
  s.Ev = v.size(-1);
  if (k.size(-1) != s.E)
    throw ShapeError(op, operands(qkv) +
                             "; q and k must have one embedding size E (their last "
                             "dim): q [*, L, E], k [*, S, E]");
  if (v.size(-2) != s.S)
    throw ShapeError(op, operands(qkv) +
                             "; k and v must have one number of keys S (their "
                             "second-to-last dim): k [*, S, E], v [*, S, Ev]");
  s.batch = broadcast_shapes(broadcast_shapes(batch_dims(q), batch_dims(k), op), batch_dims(v), op);
  return s;
}

// Each head's offset into t, broadcast to [batch..., rows, cols]: its batch coordinates (row-major
// over s.batch) dotted with t's strides; a contiguous int64 [BH] tensor on t's device.
Tensor head_offsets(const Tensor& t, const AttentionShape& s) {
  const int64_t nb = int64_t(s.batch.size());
  std::vector<int64_t> offsets(size_t(s.heads()));
  for (int64_t b = 0; b < s.heads(); ++b) {
    int64_t rest = b, offset = 0;
    for (int64_t d = nb - 1; d >= 0; --d) {
      offset += (rest % s.batch[size_t(d)]) * t.stride(d);
      rest /= s.batch[size_t(d)];
    }
    offsets[size_t(b)] = offset;
  }
  return Tensor::from_vector(offsets, {s.heads()}, t.device());
}

// The scores' bias: attn_mask checked against q and the problem's shape, viewed as the kernels
// read it (AttentionMask). is_causal with a mask is an error, as in PyTorch.
AttentionMask check_mask(const char* op, const Tensor& q, const Tensor& mask, bool is_causal,
                         const AttentionShape& s) {
  AttentionMask m;
  if (!mask.defined()) return m;
  const std::initializer_list<Named> args = {{"q", q}, {"attn_mask", mask}};
  if (is_causal)
    throw ValueError(op, operands(args) +
                             "; pass either attn_mask or is_causal=true, not both: for a causal "
                             "mask combined with another, pass their combination as attn_mask");
  check_same_device(op, args);
  if (mask.dtype() != DType::Bool && mask.dtype() != q.dtype())
    throw DTypeError(op, operands(args) +
                             "; attn_mask must be bool (true: the key takes part) or of q's dtype "
                             "(added to the scores); cast it with .to(" +
                             dtype_cpp(q.dtype()) + ")");
  const Shape full = s.with(s.L, s.S);
  bool fits = mask.dim() <= int64_t(full.size());
  for (int64_t i = 1; fits && i <= mask.dim(); ++i) {
    const int64_t want = full[full.size() - size_t(i)];
    fits = mask.size(-i) == want || mask.size(-i) == 1;
  }
  if (!fits)
    throw ShapeError(op, operands(args) + "; attn_mask must broadcast to the scores' shape " +
                             shape_str(full) + " ([*, L, S]), e.g. [L, S] for every head");
  m.kind = mask.dtype() == DType::Bool ? AttentionMaskKind::Bool : AttentionMaskKind::Additive;
  m.values = mask.expand(full);
  const int64_t nb = int64_t(s.batch.size());
  m.stride_l = m.values.stride(nb);
  m.stride_s = m.values.stride(nb + 1);
  m.offsets = head_offsets(m.values, s);
  return m;
}

AttentionParams params(const char* op, const AttentionShape& s, const AttentionDropout& dropout,
                       bool is_causal, std::optional<double> scale) {
  if (!(dropout.p >= 0 && dropout.p <= 1))
    throw ValueError(op, "dropout_p is " + value_str(dropout.p) +
                             "; it is the probability of dropping an attention weight and must "
                             "be in [0, 1], e.g. 0.1");
  if (scale && !std::isfinite(*scale))
    throw ValueError(op, "scale is " + value_str(*scale) +
                             "; it must be finite (leave it out for 1 / sqrt(E))");
  AttentionParams p;
  p.heads = s.heads();
  p.L = s.L;
  p.S = s.S;
  p.E = s.E;
  p.Ev = s.Ev;
  p.scale = scale ? *scale : 1 / std::sqrt(double(s.E));
  p.causal = is_causal;
  p.dropout_p = dropout.p;
  p.seed = dropout.seed;
  p.offset = dropout.offset;
  return p;
}

// t [*', rows, cols] broadcast to [batch..., rows, cols], as the kernels read it. The heads are
// handed over in place when the last dim is unit-stride and rows are apart by at least their
// length, by a stride that fits BLAS's 32-bit leading dimension: on CPU with each head's offset
// (no copy of the transposed q, k, v views a GPT makes every layer, nor of a batch broadcast), on
// CUDA as the view, which its kernels read in place or copy (ops/attention_kernels.h). Anything
// else gets a contiguous copy.
AttentionOperand heads_operand(const Tensor& t, const AttentionShape& s) {
  const int64_t rows = t.size(-2), cols = t.size(-1);
  const Tensor full = t.expand(s.with(rows, cols));
  const int64_t nb = int64_t(s.batch.size());
  const int64_t row_stride = full.stride(nb), col_stride = full.stride(nb + 1);
  const int64_t min_ld = std::max<int64_t>(cols, 1);
  const bool unit_cols = cols <= 1 || col_stride == 1;
  const bool rows_apart = rows <= 1 || (row_stride >= min_ld && row_stride <= INT32_MAX);
  AttentionOperand o;
  if (unit_cols && rows_apart && (t.device().is_cpu() || t.device().is_cuda())) {
    o.values = full;
    if (t.device().is_cpu()) o.offsets = head_offsets(full, s);
    o.row_stride = rows <= 1 ? min_ld : row_stride;  // one row: any stride BLAS accepts
    return o;
  }
  o.values = full.contiguous().view({s.heads(), rows, cols});
  o.row_stride = cols;
  return o;
}

DType logsumexp_dtype(DType t) { return t == DType::Float64 ? DType::Float64 : DType::Float32; }

}  // namespace

AttentionDropout attention_dropout(double p, Generator* gen) {
  if (!(p >= 0 && p <= 1))
    throw ValueError(kForward, "dropout_p is " + value_str(p) +
                                   "; it is the probability of dropping an attention weight "
                                   "and must be in [0, 1], e.g. 0.1");
  AttentionDropout d;
  d.p = p;
  if (p == 0) return d;
  // One stream per call, as every random op draws (ember/ops/random.h).
  const PhiloxStream stream = draw_stream(gen);
  d.seed = stream.seed;
  d.offset = stream.offset;
  return d;
}

AttentionResult scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                             const Tensor& attn_mask,
                                             const AttentionDropout& dropout, bool is_causal,
                                             std::optional<double> scale) {
  const AttentionShape s = check_qkv(kForward, q, k, v);
  const AttentionMask mask = check_mask(kForward, q, attn_mask, is_causal, s);
  const AttentionParams p = params(kForward, s, dropout, is_causal, scale);
  AttentionResult r;
  r.output = Tensor::empty(s.with(s.L, s.Ev), q.dtype(), q.device(), kForward);
  Shape lse_shape = s.batch;
  lse_shape.push_back(s.L);
  r.logsumexp = Tensor::empty(lse_shape, logsumexp_dtype(q.dtype()), q.device(), kForward);
  if (s.heads() == 0 || s.L == 0) return r;
  Tensor out = r.output.view({s.heads(), s.L, s.Ev});
  Tensor lse = r.logsumexp.view({s.heads(), s.L});
  attention_kernel(q.device())(heads_operand(q, s), heads_operand(k, s), heads_operand(v, s), mask,
                               p, out, lse);
  return r;
}

AttentionGrads scaled_dot_product_attention_backward(const Tensor& grad_out, const Tensor& q,
                                                     const Tensor& k, const Tensor& v,
                                                     const Tensor& attn_mask, const Tensor& output,
                                                     const Tensor& logsumexp,
                                                     const AttentionDropout& dropout,
                                                     bool is_causal, std::optional<double> scale) {
  const AttentionShape s = check_qkv(kBackward, q, k, v);
  const AttentionMask mask = check_mask(kBackward, q, attn_mask, is_causal, s);
  const AttentionParams p = params(kBackward, s, dropout, is_causal, scale);
  const std::initializer_list<Named> saved = {{"q", q},
                                              {"grad_out", grad_out},
                                              {"output", output},
                                              {"logsumexp", logsumexp}};
  check_same_device(kBackward, saved);
  Shape lse_shape = s.batch;
  lse_shape.push_back(s.L);
  if (grad_out.shape() != s.with(s.L, s.Ev) || output.shape() != grad_out.shape() ||
      grad_out.dtype() != q.dtype() || output.dtype() != q.dtype() ||
      logsumexp.shape() != lse_shape || logsumexp.dtype() != logsumexp_dtype(q.dtype()))
    throw ShapeError(kBackward, operands(saved) + "; expected grad_out and output of shape " +
                                    shape_str(s.with(s.L, s.Ev)) + " and q's dtype, and " +
                                    "logsumexp " + shape_str(lse_shape) +
                                    ", as the forward returns them");
  AttentionGrads g;
  g.grad_q = Tensor::empty(s.with(s.L, s.E), q.dtype(), q.device(), kBackward);
  g.grad_k = Tensor::empty(s.with(s.S, s.E), q.dtype(), q.device(), kBackward);
  g.grad_v = Tensor::empty(s.with(s.S, s.Ev), q.dtype(), q.device(), kBackward);
  if (s.heads() == 0) return g;
  Tensor dq = g.grad_q.view({s.heads(), s.L, s.E});
  Tensor dk = g.grad_k.view({s.heads(), s.S, s.E});
  Tensor dv = g.grad_v.view({s.heads(), s.S, s.Ev});
  attention_backward_kernel(
      q.device())(heads_operand(grad_out, s), heads_operand(q, s), heads_operand(k, s),
                  heads_operand(v, s), mask, heads_operand(output, s),
                  logsumexp.contiguous().view({s.heads(), s.L}), p, dq, dk, dv);
  return g;
}

Tensor attention_dropout_scale(const Shape& batch, int64_t L, int64_t S,
                               const AttentionDropout& dropout, DType dtype, Device device) {
  AttentionShape s;
  s.batch = batch;
  s.L = L;
  s.S = S;
  if (!is_floating(dtype))
    throw DTypeError("attention_dropout_scale",
                     std::string("dtype is ") + dtype_name(dtype) + "; expected a floating dtype");
  const AttentionParams p = params("attention_dropout_scale", s, dropout, false, 1.0);
  Tensor out = Tensor::empty(s.with(L, S), dtype, device, "attention_dropout_scale");
  if (out.numel() == 0) return out;
  Tensor flat = out.view({s.heads(), L, S});
  attention_dropout_scale_kernel(device)(p, flat);
  return out;
}

}  // namespace ember
