// attention.cpp — scaled dot-product attention: the fused forward and backward ops (their shape
// rules, their core-runtime calls, their gradient rules), beside the same computation written
// with primitive ops.
//
// The fused ops never hold the [L, S] scores. The primitive formulas do: they serve the cases a
// fused kernel does not cover, which are rare and small — a gradient reaching logsumexp or an
// additive mask, and every derivative of the backward op (second order and above), which
// grad_of_formula (formula_grad.h) takes by differentiating the backward formula below.
#include "ember/autodiff/ops/attention.h"

#include <cmath>
#include <limits>

#include "ember/autodiff/ops.h"
#include "families.h"
#include "formula_grad.h"
#include "infer.h"

namespace ember::autodiff {

namespace {

constexpr const char* kForward = "scaled_dot_product_attention";
constexpr const char* kBackward = "scaled_dot_product_attention_backward";

AttentionDropout dropout_of(const Attrs& a) {
  AttentionDropout d;
  d.p = a.f("dropout_p");
  d.seed = uint64_t(a.i("dropout_seed"));
  d.offset = uint64_t(a.i("dropout_offset"));
  return d;
}

DType logsumexp_dtype(DType t) { return t == DType::Float64 ? DType::Float64 : DType::Float32; }

Shape batch_of(const Shape& s) { return Shape(s.begin(), s.end() - 2); }
Shape with(Shape batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

// q, k, v (and the mask) checked as core-runtime checks them; returns the broadcast batch shape.
Shape check_attention(const char* op, const TensorType& q, const TensorType& k, const TensorType& v,
                      const TensorType* mask, bool is_causal) {
  const std::string qkv =
      infer::describe("q", q) + ", " + infer::describe("k", k) + ", " + infer::describe("v", v);
  if (!is_floating(q.dtype))
    throw DTypeError(op, qkv +
                             "; q must be a floating dtype (float16, bfloat16, float32, "
                             "float64); cast with .to(DType::Float32)");
  if (k.dtype != q.dtype || v.dtype != q.dtype)
    throw DTypeError(op, qkv +
                             "; all operands must have one dtype, cast them with .to(dtype) "
                             "first");
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2)
    throw ShapeError(op, qkv +
                             "; q, k, v must have at least 2 dims: q [*, L, E], k [*, S, E], "
                             "v [*, S, Ev]; add a dim with unsqueeze(0)");
  if (k.shape.back() != q.shape.back())
    throw ShapeError(op, qkv +
                             "; q and k must have one embedding size E (their last dim): "
                             "q [*, L, E], k [*, S, E]");
  if (v.shape[v.shape.size() - 2] != k.shape[k.shape.size() - 2])
    throw ShapeError(op, qkv +
                             "; k and v must have one number of keys S (their second-to-last "
                             "dim): k [*, S, E], v [*, S, Ev]");
  Shape batch = broadcast_shapes(broadcast_shapes(batch_of(q.shape), batch_of(k.shape), op),
                                 batch_of(v.shape), op);
  if (!mask) return batch;
  const std::string with_mask = qkv + ", " + infer::describe("attn_mask", *mask);
  if (is_causal)
    throw ValueError(op, with_mask +
                             "; pass either attn_mask or is_causal=true, not both: for a causal "
                             "mask combined with another, pass their combination as attn_mask");
  if (mask->dtype != DType::Bool && mask->dtype != q.dtype)
    throw DTypeError(op, with_mask +
                             "; attn_mask must be bool (true: the key takes part) or of q's "
                             "dtype (added to the scores)");
  const Shape scores = with(batch, q.shape[q.shape.size() - 2], k.shape[k.shape.size() - 2]);
  infer::broadcasts_to(op, "attn_mask", *mask, scores);
  return batch;
}

// (q, k, v, attn_mask?) -> out [*, L, Ev], logsumexp [*, L].
Types attention_infer(const Types& in, const Attrs& a) {
  const bool has_mask = a.b("has_mask");
  infer::arity(kForward, in, has_mask ? 4 : 3);
  infer::same_device(kForward, in);
  const TensorType &q = in[0], &k = in[1], &v = in[2];
  const Shape batch =
      check_attention(kForward, q, k, v, has_mask ? &in[3] : nullptr, a.b("is_causal"));
  const int64_t L = q.shape[q.shape.size() - 2];
  Shape lse = batch;
  lse.push_back(L);
  return {TensorType{with(batch, L, v.shape.back()), q.dtype, q.device},
          TensorType{lse, logsumexp_dtype(q.dtype), q.device}};
}

Tensors attention_run(const Tensors& in, const Attrs& a) {
  const Tensor mask = a.b("has_mask") ? in[3] : Tensor();
  AttentionResult r = ember::scaled_dot_product_attention(in[0], in[1], in[2], mask, dropout_of(a),
                                                          a.b("is_causal"), a.f("scale"));
  return {r.output, r.logsumexp};
}

// ---- the primitive formulas ----

// The scores [*, L, S] = q k^T scale + bias, and the dropout's keep factors (undefined without
// dropout), as graph nodes.
struct Scores {
  Val s;
  Val keep;
};

Scores scores_formula(Val q, Val k, Val mask, const Attrs& a) {
  Graph& g = *q.graph;
  const int64_t L = q.size(-2), S = k.size(-2);
  const double scale = q.size(-1) == 0 ? 0.0 : a.f("scale");
  Scores r;
  r.s = matmul(q, transpose(k, -2, -1)) * scale;
  const double inf = std::numeric_limits<double>::infinity();
  if (mask.defined()) {
    if (mask.dtype() == DType::Bool) r.s = masked_fill(r.s, logical_not(mask), -inf);
    else r.s = r.s + mask;
  }
  if (a.b("is_causal")) {  // a constant [L, S]: 0 where j <= i, -inf above
    std::vector<double> bias(size_t(L * S), 0.0);
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = i + 1; j < S; ++j) bias[size_t(i * S + j)] = -inf;
    r.s = r.s +
          g.constant(Tensor::from_vector(bias, {L, S}, q.device()).to(q.dtype()), "causal_bias");
  }
  const AttentionDropout d = dropout_of(a);
  if (d.p > 0) {
    const Shape batch = batch_of(r.s.shape());  // a copy: adding nodes may move the graph's values
    r.keep =
        g.constant(attention_dropout_scale(batch, L, S, d, q.dtype(), q.device()), "dropout_keep");
  }
  return r;
}

// softmax along the last dim with a fully masked row (all -inf) giving 0, as the kernels do, and
// the rows' log-sum-exp [*, L, 1]. The shift m (the row's max, or 0 for a masked row) is detached:
// softmax does not depend on it, and through amax a masked row would send 0 * NaN back.
std::pair<Val, Val> safe_softmax(Val s) {
  Val m = detach(amax(s, {-1}, true));
  Val shift = where(isfinite(m), m, zeros_like(m));
  Val e = exp(s - shift);
  Val total = sum(e, {-1}, true);
  Val p = e / where(gt(total, 0.0), total, ones_like(total));
  return {p, shift + log(total)};
}

// (q, k, v, mask?) -> (out, logsumexp): the forward with primitive ops.
Grads forward_formula(const std::vector<Val>& in, const Attrs& a) {
  Val mask = a.b("has_mask") ? in[3] : Val();
  Scores sc = scores_formula(in[0], in[1], mask, a);
  auto [p, lse] = safe_softmax(sc.s);
  if (sc.keep.defined()) p = p * sc.keep;
  // logsumexp in the fused op's dtype (float32 for half inputs), so the formula's outputs have
  // the op's types and a gradient reaching it has the dtype it expects
  Val lse_out = squeeze(lse, {-1});
  const DType lse_dtype = logsumexp_dtype(in[0].dtype());
  return {matmul(p, in[2]), lse_out.dtype() == lse_dtype ? lse_out : to(lse_out, lse_dtype)};
}

// (grad, q, k, v, mask?) -> (grad_q, grad_k, grad_v): the backward with primitive ops, P the
// probabilities and Z the keep factors:
//   dV = (P Z)^T dO,  dP = dO V^T Z,  dS = P (dP - rowsum(dP P)),  dQ = scale dS K,
//   dK = scale dS^T Q.
Grads backward_formula(Val grad, Val q, Val k, Val v, Val mask, const Attrs& a) {
  Scores sc = scores_formula(q, k, mask, a);
  Val p = safe_softmax(sc.s).first;
  Val pz = sc.keep.defined() ? p * sc.keep : p;
  Val dp = matmul(grad, transpose(v, -2, -1));
  if (sc.keep.defined()) dp = dp * sc.keep;
  const double scale = q.size(-1) == 0 ? 0.0 : a.f("scale");
  Val ds = p * (dp - sum(dp * p, {-1}, true)) * scale;
  return {matmul(ds, k), matmul(transpose(ds, -2, -1), q), matmul(transpose(pz, -2, -1), grad)};
}

// (q, k, v, mask?) -> (out, logsumexp): dq, dk, dv from the fused backward op; through the
// primitive forward formula instead when a gradient reaches logsumexp or an additive mask.
Grads attention_grad(const GradContext& c) {
  const bool has_mask = c.attrs.b("has_mask");
  if (c.dy(1).defined() || (has_mask && c.needs_grad[3]))
    return grad_of_formula(c, [&](const std::vector<Val>& in) {
      return forward_formula(in, c.attrs);
    });
  Grads d(c.inputs.size());
  if (!c.dy().defined()) return d;
  std::vector<Val> g =
      scaled_dot_product_attention_backward(c.dy(), c.x(0), c.x(1), c.x(2),
                                            has_mask ? c.x(3) : Val(), c.y(0), c.y(1), c.attrs);
  for (size_t i = 0; i < 3; ++i) d[i] = g[i];
  return d;
}

// Where the backward op's inputs sit: grad, q, k, v, then mask if given, out, logsumexp.
struct BackwardSlots {
  int mask, out, lse, count;
};
BackwardSlots backward_slots(const Attrs& a) {
  const bool has_mask = a.b("has_mask");
  return has_mask ? BackwardSlots{4, 5, 6, 7} : BackwardSlots{-1, 4, 5, 6};
}

// (grad, q, k, v, mask?, out, logsumexp) -> grad_q [*, L, E], grad_k [*, S, E], grad_v [*, S, Ev].
Types attention_backward_infer(const Types& in, const Attrs& a) {
  const BackwardSlots s = backward_slots(a);
  infer::arity(kBackward, in, size_t(s.count));
  infer::same_device(kBackward, in);
  const TensorType &q = in[1], &k = in[2], &v = in[3];
  const Shape batch =
      check_attention(kBackward, q, k, v, s.mask >= 0 ? &in[size_t(s.mask)] : nullptr,
                      a.b("is_causal"));
  const int64_t L = q.shape[q.shape.size() - 2], S = k.shape[k.shape.size() - 2];
  const TensorType out{with(batch, L, v.shape.back()), q.dtype, q.device};
  Shape lse_shape = batch;
  lse_shape.push_back(L);
  const TensorType lse{lse_shape, logsumexp_dtype(q.dtype), q.device};
  if (in[0] != out || in[size_t(s.out)] != out || in[size_t(s.lse)] != lse)
    throw ShapeError(kBackward, infer::describe("grad", in[0]) + ", " +
                                    infer::describe("out", in[size_t(s.out)]) + ", " +
                                    infer::describe("logsumexp", in[size_t(s.lse)]) +
                                    "; expected grad and out " + out.str() + " and logsumexp " +
                                    lse.str() + ", as the forward returns them");
  return {TensorType{with(batch, L, q.shape.back()), q.dtype, q.device},
          TensorType{with(batch, S, q.shape.back()), q.dtype, q.device},
          TensorType{with(batch, S, v.shape.back()), q.dtype, q.device}};
}

Tensors attention_backward_run(const Tensors& in, const Attrs& a) {
  const BackwardSlots s = backward_slots(a);
  AttentionGrads g =
      ember::scaled_dot_product_attention_backward(in[0], in[1], in[2], in[3],
                                                   s.mask >= 0 ? in[size_t(s.mask)] : Tensor(),
                                                   in[size_t(s.out)], in[size_t(s.lse)],
                                                   dropout_of(a), a.b("is_causal"), a.f("scale"));
  return {g.grad_q, g.grad_k, g.grad_v};
}

// The backward op's derivatives (second order and above) by differentiating backward_formula,
// which recomputes everything from q, k, v: out and logsumexp get none of their own (the forward
// op's rule carries their dependence on q, k, v).
Grads attention_backward_grad(const GradContext& c) {
  const BackwardSlots s = backward_slots(c.attrs);
  return grad_of_formula(c, [&](const std::vector<Val>& in) {
    return backward_formula(in[0], in[1], in[2], in[3], s.mask >= 0 ? in[size_t(s.mask)] : Val(),
                            c.attrs);
  });
}

}  // namespace

std::vector<OpDef> attention_ops() {
  return {
      {kForward, attention_infer, attention_run, attention_grad, false, false, true},
      {kBackward, attention_backward_infer, attention_backward_run, attention_backward_grad, false,
       false, true},
  };
}

}  // namespace ember::autodiff
