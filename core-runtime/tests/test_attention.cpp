// test_attention.cpp — scaled_dot_product_attention and its backward on every device against the
// primitive formula evaluated in double on the host (written here, independent of the kernels):
// sizes around the CPU kernel's tiles, masks of both kinds and their broadcasts, causal with
// L != S, scale, fully masked rows, empty shapes, every floating dtype, dropout's determinism,
// and the typed errors.
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "attention_reference.h"
#include "ember/ops/attention.h"
#include "ops/attention_kernels.h"  // kAttentionCpuTileQ, kAttentionCpuTileK, kAttentionCpuPanel
#include "test_util.h"

namespace ember {
namespace {

using test::AttentionRef;
using test::expect_close;
using test::expect_error;
using test::kInf;
using test::make_ref;
using test::random_tensor;

class Attention : public test::DeviceTest {};
EMBER_INSTANTIATE_DEVICE_TEST(Attention);

// Forward and backward on `device` against the reference, for heads [B, H] and the given bias
// (a tensor `mask` passed to the op and its [B*H, L, S] expansion for the reference).
void check(Device device, int64_t B, int64_t H, int64_t L, int64_t S, int64_t E, int64_t Ev,
           DType dtype, const Tensor& mask, const std::vector<double>& bias, bool causal,
           std::optional<double> scale, double tol) {
  const Tensor q = random_tensor({B, H, L, E}, 1, dtype, device);
  const Tensor k = random_tensor({B, H, S, E}, 2, dtype, device);
  const Tensor v = random_tensor({B, H, S, Ev}, 3, dtype, device);
  const Tensor g = random_tensor({B, H, L, Ev}, 4, dtype, device);
  std::vector<double> full_bias = bias;
  if (causal) {
    full_bias.assign(size_t(B * H * L * S), 0.0);
    for (int64_t h = 0; h < B * H; ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = i + 1; j < S; ++j) full_bias[size_t((h * L + i) * S + j)] = -kInf;
  }
  const double sc = scale ? *scale : 1 / std::sqrt(double(E));
  const AttentionRef ref = make_ref(q, k, v, full_bias, sc);
  std::vector<double> out, lse, dq, dk, dv;
  ref.forward(out, lse);
  ref.backward(g.to_vector<double>(), dq, dk, dv);

  AttentionResult r = scaled_dot_product_attention(q, k, v, mask, {}, causal, scale);
  ASSERT_EQ(r.output.shape(), Shape({B, H, L, Ev}));
  ASSERT_EQ(r.logsumexp.shape(), Shape({B, H, L}));
  expect_close(r.output, out, tol, tol);
  test::expect_close_lse(r.logsumexp, lse, tol);
  AttentionGrads d = scaled_dot_product_attention_backward(g, q, k, v, mask, r.output, r.logsumexp,
                                                           {}, causal, scale);
  expect_close(d.grad_q, dq, tol, tol);
  expect_close(d.grad_k, dk, tol, tol);
  expect_close(d.grad_v, dv, tol, tol);
}

TEST_P(Attention, MatchesTheFormulaAroundTheTileBoundaries) {
  const int64_t tq = kAttentionCpuTileQ, tk = kAttentionCpuTileK;
  for (int64_t L : {int64_t(1), tq - 1, tq, tq + 1, 2 * tq + 3})
    for (int64_t S : {int64_t(1), tk - 1, tk + 1, 2 * tk + 5})
      check(device(), 1, 2, L, S, 8, 5, DType::Float64, Tensor(), {}, false, std::nullopt, 1e-10);
}

// Lengths around the CPU kernel's panels (keys per forward GEMM, queries per backward GEMM), causal
// and not, with L != S so that a panel ends inside the other length.
TEST_P(Attention, MatchesTheFormulaAroundThePanelBoundaries) {
  const int64_t pn = kAttentionCpuPanel;
  for (auto [L, S] :
       {std::pair<int64_t, int64_t>{pn - 1, pn + 1}, {pn + 1, pn - 1}, {pn + 3, pn + 3}})
    for (bool causal : {false, true})
      check(device(), 1, 2, L, S, 8, 5, DType::Float64, Tensor(), {}, causal, std::nullopt, 1e-10);
  // float32 (the BLAS and exp paths the benchmarks take), and a bool mask that masks a whole row,
  // keys on both sides of the panel boundary, and (in the mask: the op takes a mask or the causal
  // rule) every key after its query.
  check(device(), 1, 1, pn + 5, pn + 5, 16, 16, DType::Float32, Tensor(), {}, true, std::nullopt,
        2e-5);
  const int64_t L = pn + 5, S = pn + 5;
  std::vector<double> m(size_t(L * S), 1.0);
  for (int64_t j = 0; j < S; ++j) m[size_t(3 * S + j)] = 0;
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < S; ++j)
      if (j > i || j == 1 || j == pn - 1 || j == pn || j == pn + 2) m[size_t(i * S + j)] = 0;
  const Tensor mask = Tensor::from_vector(m, {L, S}).to(device(), DType::Bool);
  std::vector<double> bias;
  for (double x : m) bias.push_back(x != 0 ? 0.0 : -kInf);
  check(device(), 1, 1, L, S, 8, 5, DType::Float64, mask, bias, false, std::nullopt, 1e-10);
}

TEST_P(Attention, CausalWithMoreOrFewerKeysThanQueries) {
  const int64_t tq = kAttentionCpuTileQ;
  for (auto [L, S] : {std::pair<int64_t, int64_t>{5, 5},
                      {tq + 1, tq + 1},
                      {7, 130},
                      {130, 7},
                      {2 * tq + 1, 3},
                      {1, 1}})
    check(device(), 2, 1, L, S, 4, 6, DType::Float64, Tensor(), {}, true, std::nullopt, 1e-10);
}

TEST_P(Attention, Float32AndAScale) {
  check(device(), 2, 3, 70, 67, 16, 16, DType::Float32, Tensor(), {}, false, 0.3, 2e-5);
  check(device(), 1, 1, 33, 65, 64, 64, DType::Float32, Tensor(), {}, true, std::nullopt, 2e-5);
}

TEST_P(Attention, HalfTypesComputeInFloat) {
  // Inputs are rounded to the half type, so the reference sees the same values; the tolerance is
  // the rounding of the outputs and of the float32 tiles' products.
  check(device(), 1, 2, 40, 70, 16, 8, DType::Float16, Tensor(), {}, true, std::nullopt, 1e-2);
  check(device(), 1, 2, 40, 70, 16, 8, DType::BFloat16, Tensor(), {}, false, std::nullopt, 6e-2);
}

// A bool mask [L, S] for every head, with a fully masked row 2 (which gives 0) and a masked key.
TEST_P(Attention, BoolMaskBroadcastOverBatchAndHeads) {
  const int64_t B = 2, H = 3, L = 6, S = 70;
  std::vector<double> m(size_t(L * S), 1.0);
  for (int64_t j = 0; j < S; ++j) m[size_t(2 * S + j)] = 0;
  for (int64_t i = 0; i < L; ++i) m[size_t(i * S + 4)] = 0;
  const Tensor mask = Tensor::from_vector(m, {L, S}).to(device(), DType::Bool);
  std::vector<double> bias;
  for (int64_t h = 0; h < B * H; ++h)
    for (double x : m) bias.push_back(x != 0 ? 0.0 : -kInf);
  check(device(), B, H, L, S, 8, 8, DType::Float64, mask, bias, false, std::nullopt, 1e-10);
}

// An additive mask [B, 1, L, S] (one per batch element, shared by the heads: key padding).
TEST_P(Attention, AdditiveMaskPerBatchElement) {
  const int64_t B = 2, H = 3, L = 5, S = 66;
  std::vector<double> m = test::random_values(B * L * S, 9, -2, 2);
  const Tensor mask = Tensor::from_vector(m, {B, 1, L, S}).to(device());
  std::vector<double> bias;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      bias.insert(bias.end(), m.begin() + b * L * S, m.begin() + (b + 1) * L * S);
  check(device(), B, H, L, S, 8, 4, DType::Float64, mask, bias, false, 0.5, 1e-10);
}

TEST_P(Attention, EmptyShapes) {
  for (auto [B, L, S, E] :
       {std::array<int64_t, 4>{0, 3, 4, 2}, {2, 0, 4, 2}, {2, 3, 0, 2}, {2, 3, 4, 0}})
    check(device(), B, 1, L, S, E, 3, DType::Float64, Tensor(), {}, false, std::nullopt, 1e-12);
}

// Broadcast batch dims: k and v shared by every head, q with its own.
TEST_P(Attention, BroadcastBatchDims) {
  const Tensor q = random_tensor({2, 3, 5, 4}, 1, DType::Float64, device());
  const Tensor k = random_tensor({1, 1, 7, 4}, 2, DType::Float64, device());
  const Tensor v = random_tensor({7, 3}, 3, DType::Float64, device());
  AttentionResult r = scaled_dot_product_attention(q, k, v);
  AttentionResult e = scaled_dot_product_attention(q, k.expand({2, 3, 7, 4}).contiguous(),
                                                   v.expand({2, 3, 7, 3}).contiguous());
  expect_close(r.output, e.output, 1e-12, 1e-12);
}

TEST_P(Attention, DropoutIsDeterministicAndItsBackwardDropsTheSameWeights) {
  const int64_t L = 9, S = 70, E = 4, Ev = 3;
  const Tensor q = random_tensor({2, L, E}, 1, DType::Float64, device());
  const Tensor k = random_tensor({2, S, E}, 2, DType::Float64, device());
  const Tensor v = random_tensor({2, S, Ev}, 3, DType::Float64, device());
  const Tensor g = random_tensor({2, L, Ev}, 4, DType::Float64, device());
  Generator gen(123);
  const AttentionDropout d = attention_dropout(0.3, &gen);
  EXPECT_EQ(gen.offset, 1u);  // one stream drawn
  AttentionResult a = scaled_dot_product_attention(q, k, v, Tensor(), d);
  AttentionResult b = scaled_dot_product_attention(q, k, v, Tensor(), d);
  test::expect_exact(a.output, b.output.to_vector<double>());
  // The reference with the kept weights the op reports, and their fraction near 1 - p.
  AttentionRef ref = make_ref(q, k, v, {}, 0.5);
  const Tensor keep = attention_dropout_scale({2}, L, S, d, DType::Float64, device());
  ref.keep = keep.to_vector<double>();
  int64_t kept = 0;
  for (double z : ref.keep) {
    EXPECT_TRUE(z == 0 || std::fabs(z - 1 / 0.7) < 1e-12);
    kept += z != 0;
  }
  EXPECT_NEAR(double(kept) / double(ref.keep.size()), 0.7, 0.05);
  std::vector<double> out, lse, dq, dk, dv;
  ref.forward(out, lse);
  ref.backward(g.to_vector<double>(), dq, dk, dv);
  expect_close(a.output, out, 1e-10, 1e-10);
  AttentionGrads grads =
      scaled_dot_product_attention_backward(g, q, k, v, Tensor(), a.output, a.logsumexp, d);
  expect_close(grads.grad_q, dq, 1e-10, 1e-10);
  expect_close(grads.grad_k, dk, 1e-10, 1e-10);
  expect_close(grads.grad_v, dv, 1e-10, 1e-10);
}

TEST_P(Attention, BadInputIsATypedError) {
  const Tensor q = random_tensor({2, 3, 4}, 1, DType::Float32, device());
  const Tensor k = random_tensor({2, 5, 4}, 2, DType::Float32, device());
  const Tensor v = random_tensor({2, 5, 6}, 3, DType::Float32, device());
  const char* op = "scaled_dot_product_attention";
  expect_error<ShapeError>([&] { scaled_dot_product_attention(q, k.narrow(2, 0, 3), v); },
                           {op, "embedding size E"});
  expect_error<ShapeError>([&] { scaled_dot_product_attention(q, k, v.narrow(1, 0, 4)); },
                           {op, "number of keys S"});
  expect_error<DTypeError>([&] { scaled_dot_product_attention(q, k.to(DType::Float64), v); },
                           {op, "one dtype"});
  expect_error<DTypeError>(
      [&] { scaled_dot_product_attention(q.to(DType::Int64), k.to(DType::Int64), v); },
      {op, "floating"});
  const Tensor bool_mask =
      Tensor::from_vector(std::vector<double>(15, 1.0), {3, 5}).to(device(), DType::Bool);
  expect_error<ValueError>([&] { scaled_dot_product_attention(q, k, v, bool_mask, {}, true); },
                           {op, "not both"});
  expect_error<DTypeError>(
      [&] { scaled_dot_product_attention(q, k, v, bool_mask.to(DType::Int64)); },
      {op, "attn_mask must be bool"});
  expect_error<ShapeError>(
      [&] { scaled_dot_product_attention(q, k, v, bool_mask.narrow(1, 0, 4)); }, {op, "[2, 3, 5]"});
  expect_error<ValueError>([&] { scaled_dot_product_attention(q, k, v, Tensor(), {1.5}); },
                           {op, "dropout_p is 1.5"});
  expect_error<ShapeError>([&] { scaled_dot_product_attention(q[0][0], k, v); },
                           {op, "at least 2 dims"});
}

}  // namespace
}  // namespace ember
