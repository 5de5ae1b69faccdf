// test_attention_layouts.cpp — scaled_dot_product_attention and its backward on inputs that are
// not contiguous: the transposed per-head views of one qkv projection (a GPT's layout), slices,
// batch and head broadcasts (stride 0), and layouts the CPU kernels cannot read in place (a
// last dim of stride 2, rows of stride 0 or overlapping), which fall back to a contiguous copy.
// Every result equals the float64 reference (attention_reference.h) and, bit for bit, the op on
// contiguous copies of the same inputs (on CUDA dq within the tolerance: see check()); on CPU a
// strided call allocates no copy of its inputs.
#include <cmath>
#include <optional>
#include <vector>

#include "attention_reference.h"
#include "ember/allocator.h"
#include "ember/ops/attention.h"
#include "ops/attention_kernels.h"  // kAttentionCpuTileQ, kAttentionCpuPanel
#include "test_util.h"

namespace ember {
namespace {

using test::AttentionRef;
using test::expect_close;
using test::expect_exact;
using test::kInf;
using test::make_ref;
using test::random_tensor;

class AttentionLayouts : public test::DeviceTest {};
EMBER_INSTANTIATE_DEVICE_TEST(AttentionLayouts);

// Inputs of one problem, in whatever layout: q [*, L, E], k [*, S, E], v [*, S, Ev], the
// backward's grad_out g [B, H, L, Ev] (batch dims broadcast to [B, H]).
struct Inputs {
  Tensor q, k, v, g;
};

Shape with(int64_t B, int64_t H, int64_t rows, int64_t cols) { return {B, H, rows, cols}; }

// t [B, H, rows, cols] as a transposed view of a contiguous [B, rows, H, cols] copy: the layout of
// a GPT's per-head views, here for the backward's output argument.
Tensor transposed_copy(const Tensor& t) {
  Tensor u = Tensor::empty({t.size(0), t.size(2), t.size(1), t.size(3)}, t.dtype(), t.device());
  u.copy_(t.transpose(1, 2));
  return u.transpose(1, 2);
}

// The op on `in` against the reference and against the op on contiguous copies of the inputs.
// bias: [B*H, L, S] (empty: none; causal adds its own).
void check(const Inputs& in, const Tensor& mask, std::vector<double> bias, bool causal,
           const AttentionDropout& dropout, double tol) {
  const int64_t B = in.g.size(0), H = in.g.size(1), L = in.q.size(-2), S = in.k.size(-2);
  const int64_t E = in.q.size(-1), Ev = in.v.size(-1);
  const Tensor q = in.q.expand(with(B, H, L, E)).contiguous();
  const Tensor k = in.k.expand(with(B, H, S, E)).contiguous();
  const Tensor v = in.v.expand(with(B, H, S, Ev)).contiguous();
  const Tensor g = in.g.contiguous();
  if (causal) {
    bias.assign(size_t(B * H * L * S), 0.0);
    for (int64_t h = 0; h < B * H; ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = i + 1; j < S; ++j) bias[size_t((h * L + i) * S + j)] = -kInf;
  }
  AttentionRef ref = make_ref(q, k, v, bias, 1 / std::sqrt(double(E)));
  if (dropout.p > 0)
    ref.keep = attention_dropout_scale({B, H}, L, S, dropout, DType::Float64, q.device())
                   .to_vector<double>();
  std::vector<double> out, lse, dq, dk, dv;
  ref.forward(out, lse);
  ref.backward(g.to_vector<double>(), dq, dk, dv);

  const AttentionResult r = scaled_dot_product_attention(in.q, in.k, in.v, mask, dropout, causal);
  expect_close(r.output, out, tol, tol);
  test::expect_close_lse(r.logsumexp, lse, tol);
  const AttentionGrads d =
      scaled_dot_product_attention_backward(in.g, in.q, in.k, in.v, mask, transposed_copy(r.output),
                                            r.logsumexp, dropout, causal);
  expect_close(d.grad_q, dq, tol, tol);
  expect_close(d.grad_k, dk, tol, tol);
  expect_close(d.grad_v, dv, tol, tol);

  // The same products in the same order, read from elsewhere: the same bits.
  const AttentionResult rc = scaled_dot_product_attention(q, k, v, mask, dropout, causal);
  expect_exact(r.output, rc.output.to_vector<double>());
  expect_exact(r.logsumexp, rc.logsumexp.to_vector<double>());
  const AttentionGrads dc = scaled_dot_product_attention_backward(g, q, k, v, mask, rc.output,
                                                                  rc.logsumexp, dropout, causal);
  // On CUDA the backward adds each key block's share of dq by atomic adds, in whatever order the
  // blocks finish (as PyTorch's flash backward does): two calls agree within the tolerance, not
  // to the bit. dk and dv are each summed by one block, in order.
  if (q.device().is_cpu()) expect_exact(d.grad_q, dc.grad_q.to_vector<double>());
  else expect_close(d.grad_q, dc.grad_q.to_vector<double>(), tol, tol);
  expect_exact(d.grad_k, dc.grad_k.to_vector<double>());
  expect_exact(d.grad_v, dc.grad_v.to_vector<double>());
}

// q, k, v as a GPT makes them: one [B, T, 3C] projection split along its last dim, each part
// viewed [B, T, H, D] and transposed to [B, H, T, D] (row stride 3C, head stride D).
Inputs gpt_layout(int64_t B, int64_t H, int64_t T, int64_t D, DType dtype, Device device) {
  const int64_t C = H * D;
  const Tensor qkv = random_tensor({B, T, 3 * C}, 1, dtype, device);
  auto part = [&](int64_t i) { return qkv.narrow(2, i * C, C).view({B, T, H, D}).transpose(1, 2); };
  return {part(0), part(1), part(2), random_tensor({B, T, H, D}, 4, dtype, device).transpose(1, 2)};
}

TEST_P(AttentionLayouts, GptLayoutAcrossTheTilesAndPanels) {
  const int64_t tq = kAttentionCpuTileQ, pn = kAttentionCpuPanel;
  for (int64_t T : {int64_t(1), tq - 1, tq + 1, 2 * tq + 3})
    for (bool causal : {false, true})
      check(gpt_layout(2, 3, T, 8, DType::Float64, device()), Tensor(), {}, causal, {}, 1e-10);
  check(gpt_layout(1, 2, pn + 3, 8, DType::Float64, device()), Tensor(), {}, true, {}, 1e-10);
}

TEST_P(AttentionLayouts, GptLayoutInFloat32AndBFloat16) {
  for (bool causal : {false, true}) {
    check(gpt_layout(2, 2, 70, 16, DType::Float32, device()), Tensor(), {}, causal, {}, 2e-5);
    check(gpt_layout(2, 2, 70, 16, DType::BFloat16, device()), Tensor(), {}, causal, {}, 6e-2);
  }
}

// At the head sizes of the tensor-core kernels (E 64 and 128, 16-bit types), which on CUDA read
// an input in place when each head's rows are contiguous and start 16-byte aligned (v4/b4) and
// otherwise copy it: the GPT layout (rows 3C apart), projections whose row stride (3C + 1) or
// start (one element in) is not aligned either, and contiguous inputs one element into their
// allocation.
TEST_P(AttentionLayouts, GptLayoutAtTheTensorCoreHeadSizes) {
  for (DType dtype : {DType::BFloat16, DType::Float16})
    for (int64_t D : {64, 128}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " D " + std::to_string(D));
      const double tol = dtype == DType::BFloat16 ? 6e-2 : 1e-2;
      for (int64_t T : {int64_t(1), int64_t(70), int64_t(130)})
        for (bool causal : {false, true})
          check(gpt_layout(2, 2, T, D, dtype, device()), Tensor(), {}, causal, {}, tol);
      const int64_t B = 2, H = 2, T = 67, C = H * D;
      for (int64_t pad : {0, 1}) {
        const Tensor qkv =
            random_tensor({B, T, 3 * C + 1}, 5, dtype, device()).narrow(2, pad, 3 * C);
        const Tensor padded =
            random_tensor({B, T, 3 * C + pad}, 6, dtype, device()).narrow(2, 0, 3 * C);
        for (const Tensor& x : {qkv, padded}) {
          auto part = [&](int64_t i) {
            return x.narrow(2, i * C, C).view({B, T, H, D}).transpose(1, 2);
          };
          const Tensor g = random_tensor({B, T, H, D}, 7, dtype, device()).transpose(1, 2);
          check({part(0), part(1), part(2), g}, Tensor(), {}, true, {}, tol);
        }
      }
      // Contiguous, but one element into its allocation: copied too.
      const int64_t n = B * H * T * D;
      auto shifted = [&](uint32_t seed) {
        return random_tensor({n + 1}, seed, dtype, device()).narrow(0, 1, n).view({B, H, T, D});
      };
      check({shifted(8), shifted(9), shifted(10), shifted(11)}, Tensor(), {}, false, {}, tol);
    }
}

// Dropout draws by (head, query, key), whatever the layout: the same weights are dropped.
TEST_P(AttentionLayouts, GptLayoutWithDropout) {
  Generator gen(7);
  const AttentionDropout d = attention_dropout(0.25, &gen);
  check(gpt_layout(2, 2, 67, 8, DType::Float64, device()), Tensor(), {}, true, d, 1e-10);
  check(gpt_layout(1, 2, 67, 16, DType::BFloat16, device()), Tensor(), {}, false, d, 6e-2);
}

// Slices of larger tensors (an offset, a row stride past the row's end), L != S, with masks.
TEST_P(AttentionLayouts, SlicesWithMasks) {
  const int64_t B = 2, H = 2, L = 70, S = 131, E = 8, Ev = 5;
  auto slice = [&](int64_t rows, int64_t cols, uint32_t seed) {
    return random_tensor({B, H, rows + 3, cols + 5}, seed, DType::Float64, device())
        .narrow(2, 1, rows)
        .narrow(3, 2, cols);
  };
  const Inputs in{slice(L, E, 1), slice(S, E, 2), slice(S, Ev, 3), slice(L, Ev, 4)};
  // An additive mask per batch element, shared by the heads ([B, 1, L, S]).
  const std::vector<double> m = test::random_values(B * L * S, 9, -2, 2);
  std::vector<double> bias;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      bias.insert(bias.end(), m.begin() + b * L * S, m.begin() + (b + 1) * L * S);
  check(in, Tensor::from_vector(m, {B, 1, L, S}).to(device()), bias, false, {}, 1e-10);
  // A bool mask [L, S] for every head with a fully masked row.
  std::vector<double> keep(size_t(L * S), 1.0);
  for (int64_t j = 0; j < S; ++j) keep[size_t(5 * S + j)] = 0;
  for (int64_t i = 0; i < L; ++i) keep[size_t(i * S + 64)] = 0;
  std::vector<double> bool_bias;
  for (int64_t h = 0; h < B * H; ++h)
    for (double x : keep) bool_bias.push_back(x != 0 ? 0.0 : -kInf);
  check(in, Tensor::from_vector(keep, {L, S}).to(device(), DType::Bool), bool_bias, false, {},
        1e-10);
}

// k shared by the batch and v by the heads (expanded: stride 0), k also broadcast by the op.
TEST_P(AttentionLayouts, BroadcastBatchAndHeads) {
  const int64_t B = 2, H = 3, L = 66, S = 65, E = 8, Ev = 6;
  for (DType dtype : {DType::Float64, DType::Float32, DType::BFloat16}) {
    const double tol = dtype == DType::Float64 ? 1e-10 : dtype == DType::Float32 ? 2e-5 : 6e-2;
    const Tensor q = random_tensor({B, L, H, E}, 1, dtype, device()).transpose(1, 2);
    const Tensor k = random_tensor({1, H, S, E}, 2, dtype, device());
    const Tensor v = random_tensor({B, 1, S, Ev}, 3, dtype, device());
    const Tensor g = random_tensor({B, H, L, Ev}, 4, dtype, device());
    check({q, k.expand({B, H, S, E}), v.expand({B, H, S, Ev}), g}, Tensor(), {}, true, {}, tol);
    check({q, k[0], v, g}, Tensor(), {}, false, {}, tol);  // k [H, S, E]: broadcast by the op
  }
}

// Layouts BLAS cannot read as rows: the op copies them, and the result is the same.
TEST_P(AttentionLayouts, UnusualLayoutsFallBackToACopy) {
  const int64_t B = 2, H = 2, L = 67, S = 70, E = 8, Ev = 4;
  for (DType dtype : {DType::Float64, DType::BFloat16}) {
    const double tol = dtype == DType::Float64 ? 1e-10 : 6e-2;
    // A last dim of stride 2.
    const Tensor q = random_tensor({B, H, L, 2 * E}, 1, dtype, device()).slice(3, 0, 2 * E, 2);
    // Every key row the same (row stride 0).
    const Tensor k = random_tensor({B, H, 1, E}, 2, dtype, device()).expand({B, H, S, E});
    // Overlapping rows: row r is elements [r, r + Ev) of one buffer per head.
    const Tensor v = random_tensor({B * H * (S + Ev)}, 3, dtype, device())
                         .as_strided({B, H, S, Ev}, {H * (S + Ev), S + Ev, 1, 1}, 0);
    const Tensor g = random_tensor({B, H, L, Ev}, 4, dtype, device());
    check({q, k, v, g}, Tensor(), {}, true, {}, tol);
  }
}

// On CPU a call on a GPT's strided q, k, v allocates its results and no copy of the inputs: its
// peak stays below the results plus one input's size.
TEST_P(AttentionLayouts, StridedInputsAreReadInPlaceOnCpu) {
  if (!device().is_cpu()) GTEST_SKIP() << "CUDA kernels take contiguous copies";
  const int64_t B = 2, H = 4, T = 128, D = 32;
  const Inputs in = gpt_layout(B, H, T, D, DType::Float32, device());
  const int64_t input_bytes = B * H * T * D * 4;  // one of q, k, v, grad_out, output
  const int64_t before = memory_stats().in_use;
  reset_peak_memory();
  const AttentionResult r = scaled_dot_product_attention(in.q, in.k, in.v, Tensor(), {}, true);
  const int64_t results = input_bytes + B * H * T * 4;  // output, logsumexp
  EXPECT_LT(memory_stats().peak - before, results + input_bytes);
  const Tensor out = transposed_copy(r.output);
  const int64_t before_backward = memory_stats().in_use;
  reset_peak_memory();
  const AttentionGrads d = scaled_dot_product_attention_backward(in.g, in.q, in.k, in.v, Tensor(),
                                                                 out, r.logsumexp, {}, true);
  EXPECT_LT(memory_stats().peak - before_backward, 3 * input_bytes + input_bytes);  // dq, dk, dv
  // A layout the kernels cannot read in place is copied: the same measure sees the copy.
  const Tensor q2 =
      random_tensor({B, H, T, 2 * D}, 5, DType::Float32, device()).slice(3, 0, 2 * D, 2);
  const int64_t before_copy = memory_stats().in_use;
  reset_peak_memory();
  const AttentionResult rc = scaled_dot_product_attention(q2, in.k, in.v, Tensor(), {}, true);
  EXPECT_GE(memory_stats().peak - before_copy, results + input_bytes);
}

}  // namespace
}  // namespace ember
