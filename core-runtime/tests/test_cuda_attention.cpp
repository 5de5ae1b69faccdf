// test_cuda_attention.cpp — every version of the CUDA attention ladder (src/cuda/
// attention_ladder.cu, picked by EMBER_ATTENTION_VERSION) and the fused backward against the
// formula in double on the host (attention_reference.h), on sizes that cut the kernels' tiles
// (1, 15, 17, 33, 65, 130), with masks of both kinds, causal with L != S, dropout, and every
// floating dtype (v3 on float16/bfloat16 with head sizes that are multiples of 16, and the
// fallback to v2 where they are not). The tensor-core backward (b3) and forward on float16 and
// bfloat16 also against the formula with broadcast masks, dropout and fully masked rows, at a
// tolerance derived from the dtype's unit roundoff. GPU only: every test skips visibly without
// one.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "attention_reference.h"
#include "cuda_test.h"
#include "test_util.h"

namespace ember {
namespace {

using test::AttentionRef;
using test::expect_close;
using test::kInf;
using test::make_ref;
using test::random_tensor;

const Device kCuda("cuda:0");

using CudaAttention = test::CudaTest;

// Sets EMBER_ATTENTION_VERSION for the scope of a test.
struct LadderVersion {
  explicit LadderVersion(int v) { setenv("EMBER_ATTENTION_VERSION", std::to_string(v).c_str(), 1); }
  ~LadderVersion() { unsetenv("EMBER_ATTENTION_VERSION"); }
};

struct Problem {
  int64_t BH, L, S, E, Ev;
  bool causal;
  int mask;  // 0: none, 1: bool [L, S], 2: additive [BH, L, S]
};

// The forward (and the backward) of `p` on the GPU in `dtype` against the reference computed
// from the same (rounded) inputs; tol scales with the dtype's precision.
void check(const Problem& p, DType dtype, double tol, bool backward) {
  const Tensor q = random_tensor({p.BH, p.L, p.E}, 1, dtype, kCuda);
  const Tensor k = random_tensor({p.BH, p.S, p.E}, 2, dtype, kCuda);
  const Tensor v = random_tensor({p.BH, p.S, p.Ev}, 3, dtype, kCuda);
  const Tensor g = random_tensor({p.BH, p.L, p.Ev}, 4, dtype, kCuda);
  std::vector<double> bias(size_t(p.BH * p.L * p.S), 0.0);
  Tensor mask;
  if (p.mask == 1) {
    std::vector<double> m(size_t(p.L * p.S), 1.0);
    for (int64_t i = 0; i < p.L; ++i) m[size_t(i * p.S + (i * 7) % p.S)] = 0;  // one key each
    mask = Tensor::from_vector(m, {p.L, p.S}).to(kCuda, DType::Bool);
    for (int64_t h = 0; h < p.BH; ++h)
      for (int64_t n = 0; n < p.L * p.S; ++n)
        bias[size_t(h * p.L * p.S + n)] = m[size_t(n)] != 0 ? 0.0 : -kInf;
  } else if (p.mask == 2) {
    mask = random_tensor({p.BH, p.L, p.S}, 5, dtype, kCuda);
    bias = mask.to_vector<double>();
  }
  if (p.causal)
    for (int64_t h = 0; h < p.BH; ++h)
      for (int64_t i = 0; i < p.L; ++i)
        for (int64_t j = i + 1; j < p.S; ++j) bias[size_t((h * p.L + i) * p.S + j)] = -kInf;
  const AttentionRef ref = make_ref(q, k, v, bias, 1 / std::sqrt(double(p.E)));
  std::vector<double> out, lse;
  ref.forward(out, lse);
  AttentionResult r = scaled_dot_product_attention(q, k, v, mask, {}, p.causal);
  expect_close(r.output, out, tol, tol);
  test::expect_close_lse(r.logsumexp, lse, tol);
  if (!backward) return;
  std::vector<double> dq, dk, dv;
  ref.backward(g.to_vector<double>(), dq, dk, dv);
  AttentionGrads d =
      scaled_dot_product_attention_backward(g, q, k, v, mask, r.output, r.logsumexp, {}, p.causal);
  expect_close(d.grad_q, dq, 4 * tol, 4 * tol);
  expect_close(d.grad_k, dk, 4 * tol, 4 * tol);
  expect_close(d.grad_v, dv, 4 * tol, 4 * tol);
}

const std::vector<Problem> kProblems = {
    {1, 1, 1, 16, 16, false, 0},  {2, 15, 17, 16, 32, false, 0},   {2, 33, 65, 64, 64, true, 0},
    {3, 65, 33, 32, 16, true, 0}, {2, 130, 130, 64, 64, false, 1}, {2, 17, 66, 48, 16, false, 2},
    {1, 70, 7, 16, 16, true, 0},
};

TEST_F(CudaAttention, EveryVersionMatchesTheFormulaInFloat32AndFloat64) {
  for (int version = 0; version <= 3; ++version) {
    LadderVersion use(version);
    for (const Problem& p : kProblems) {
      SCOPED_TRACE("version " + std::to_string(version) + ", L " + std::to_string(p.L) + ", S " +
                   std::to_string(p.S));
      check(p, DType::Float64, 1e-10, version == 2);
      check(p, DType::Float32, 3e-5, false);
    }
  }
}

TEST_F(CudaAttention, TensorCoresOnHalfTypesAndTheirFallback) {
  for (int version : {2, 3}) {
    LadderVersion use(version);
    for (const Problem& p : kProblems) {
      SCOPED_TRACE("version " + std::to_string(version) + ", L " + std::to_string(p.L));
      // Rounding of the probabilities to the 16-bit type before p v is the largest error.
      check(p, DType::Float16, 1e-2, true);
      check(p, DType::BFloat16, 6e-2, true);
    }
  }
  LadderVersion use(3);  // E = 24 is not a multiple of 16: v3 falls back to v2
  check({2, 20, 30, 24, 8, true, 0}, DType::Float16, 1e-2, true);
}

// The tensor-core backward (b3) and forward (v3) on float16 and bfloat16.
struct HalfCase {
  int64_t BH, L, S, E, Ev;
  bool causal;
  int mask;         // 0: none, 1: bool [L, S], 2: additive [L, S]; both broadcast over heads
  double dropout;   // p, 0 for none
  bool masked_row;  // the mask drops every key of row L / 2
};

// The largest finite |x| of a reference, floored at 0.05: a gradient the formula makes exactly 0
// (one key: a constant softmax) still gets the rounding of the output that delta reads.
double max_abs(const std::vector<double>& x) {
  double m = 0.05;
  for (double v : x) m = std::isinf(v) ? m : std::max(m, std::fabs(v));
  return m;
}

// Tolerance, for a result of a 16-bit dtype with unit roundoff u: the inputs are the same rounded
// values on both sides, so the kernels' error comes from rounding p (and, in the backward, P Z,
// dS and the output that delta reads) to the 16-bit type before their products, float
// accumulation, and the final rounding: each a few u relative to the terms. The terms of a
// gradient's sums are of its own size or smaller, so 16 u times the tensor's largest magnitude
// (plus 16 u relative) leaves a wide margin over those roundings, yet fails a lost or doubled
// tile, a wrong scale or a misplaced mask, each off by far more than 6% (bfloat16) or 0.8%
// (float16) of the largest gradient.
void expect_close_16(const Tensor& got, const std::vector<double>& want) {
  const double tol = 16 * test::unit_roundoff(got.dtype());
  expect_close(got, want, tol * max_abs(want), tol);
}

void check_half_case(const HalfCase& c, DType dtype) {
  const Tensor q = random_tensor({c.BH, c.L, c.E}, 1, dtype, kCuda);
  const Tensor k = random_tensor({c.BH, c.S, c.E}, 2, dtype, kCuda);
  const Tensor v = random_tensor({c.BH, c.S, c.Ev}, 3, dtype, kCuda);
  const Tensor g = random_tensor({c.BH, c.L, c.Ev}, 4, dtype, kCuda);
  const int64_t dead = c.masked_row ? c.L / 2 : -1;  // the fully masked row, if any
  // The [L, S] bias of every head (-inf where a key is dropped), and the mask the op takes. The op
  // takes either a mask or is_causal, so a causal case with a mask folds the causal part into it.
  const bool causal_in_mask = c.causal && c.mask != 0;
  const auto hidden = [&](int64_t i, int64_t j) { return causal_in_mask && j > i; };
  std::vector<double> bias2(size_t(c.L * c.S), 0.0);
  Tensor mask;
  if (c.mask == 1) {
    std::vector<double> m(size_t(c.L * c.S), 1.0);
    for (int64_t i = 0; i < c.L; ++i) m[size_t(i * c.S + (i * 7) % c.S)] = 0;  // one key each
    for (int64_t i = 0; i < c.L; ++i)
      for (int64_t j = 0; j < c.S; ++j)
        if (hidden(i, j)) m[size_t(i * c.S + j)] = 0;
    if (dead >= 0)
      for (int64_t j = 0; j < c.S; ++j) m[size_t(dead * c.S + j)] = 0;
    mask = Tensor::from_vector(m, {c.L, c.S}).to(kCuda, DType::Bool);
    for (size_t n = 0; n < m.size(); ++n) bias2[n] = m[n] != 0 ? 0.0 : -kInf;
  } else if (c.mask == 2) {
    std::vector<double> m = test::random_values(c.L * c.S, 5);
    for (int64_t i = 0; i < c.L; ++i)
      for (int64_t j = 0; j < c.S; ++j)
        if (hidden(i, j)) m[size_t(i * c.S + j)] = -kInf;
    if (dead >= 0)
      for (int64_t j = 0; j < c.S; ++j) m[size_t(dead * c.S + j)] = -kInf;
    mask = Tensor::from_vector(m, {c.L, c.S}).to(kCuda, dtype);
    bias2 = mask.to_vector<double>();  // the values rounded to dtype, as the kernels see them
  }
  std::vector<double> bias(size_t(c.BH * c.L * c.S));
  for (int64_t h = 0; h < c.BH; ++h)
    for (int64_t i = 0; i < c.L; ++i)
      for (int64_t j = 0; j < c.S; ++j)
        bias[size_t((h * c.L + i) * c.S + j)] =
            c.causal && j > i ? -kInf : bias2[size_t(i * c.S + j)];
  AttentionRef ref = make_ref(q, k, v, bias, 1 / std::sqrt(double(c.E)));
  AttentionDropout d;
  if (c.dropout > 0) {
    Generator gen(11);
    d = attention_dropout(c.dropout, &gen);
    // The factors the CPU stream gives: the GPU's must be the same ones.
    ref.keep =
        attention_dropout_scale({c.BH}, c.L, c.S, d, DType::Float64, Device()).to_vector<double>();
  }
  std::vector<double> out, lse, dq, dk, dv;
  ref.forward(out, lse);
  ref.backward(g.to_vector<double>(), dq, dk, dv);

  const bool is_causal = c.causal && !causal_in_mask;
  const AttentionResult r = scaled_dot_product_attention(q, k, v, mask, d, is_causal);
  expect_close_16(r.output, out);
  test::expect_close_lse(r.logsumexp, lse, 16 * test::unit_roundoff(dtype));
  const AttentionGrads grads =
      scaled_dot_product_attention_backward(g, q, k, v, mask, r.output, r.logsumexp, d, is_causal);
  expect_close_16(grads.grad_q, dq);
  expect_close_16(grads.grad_k, dk);
  expect_close_16(grads.grad_v, dv);
  if (dead >= 0) {  // the fully masked row: output and dQ exactly 0 (no NaN from 0 / 0)
    const std::vector<double> o = r.output.to_vector<double>();
    const std::vector<double> gq = grads.grad_q.to_vector<double>();
    for (int64_t h = 0; h < c.BH; ++h) {
      for (int64_t e = 0; e < c.Ev; ++e) EXPECT_EQ(o[size_t((h * c.L + dead) * c.Ev + e)], 0.0);
      for (int64_t e = 0; e < c.E; ++e) EXPECT_EQ(gq[size_t((h * c.L + dead) * c.E + e)], 0.0);
    }
  }
}

// Sizes that cut the 64-row and 64-key tiles (1, 17, 65, 130), L != S both ways, E = Ev = 64 and
// E = 32 < Ev = 64, causal and not, masks of both kinds broadcast over the heads, dropout, and a
// fully masked row.
const std::vector<HalfCase> kHalfCases = {
    {2, 1, 17, 64, 64, false, 0, 0.0, false},    {2, 17, 1, 64, 64, false, 0, 0.0, false},
    {2, 65, 130, 64, 64, true, 0, 0.0, false},   {2, 130, 65, 32, 64, true, 1, 0.0, false},
    {3, 130, 17, 64, 64, false, 1, 0.0, true},   {2, 17, 130, 32, 64, false, 2, 0.0, true},
    {2, 65, 130, 64, 64, false, 0, 0.25, false}, {2, 130, 65, 32, 64, true, 2, 0.25, true},
    {1, 130, 130, 64, 64, true, 1, 0.25, false}, {2, 17, 65, 64, 64, true, 0, 0.0, false},
};

TEST_F(CudaAttention, TensorCoreBackwardMatchesTheFormulaInHalfTypes) {
  for (int version : {-1, 3}) {  // unset (the default) and asked for: both run v3 and b3 here
    if (version < 0) unsetenv("EMBER_ATTENTION_VERSION");
    else setenv("EMBER_ATTENTION_VERSION", "3", 1);
    for (const HalfCase& c : kHalfCases)
      for (DType dtype : {DType::Float16, DType::BFloat16}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + ", version " + std::to_string(version) +
                     ", BH " + std::to_string(c.BH) + ", L " + std::to_string(c.L) + ", S " +
                     std::to_string(c.S) + ", E " + std::to_string(c.E) + ", causal " +
                     std::to_string(c.causal) + ", mask " + std::to_string(c.mask) + ", dropout " +
                     std::to_string(c.dropout));
        check_half_case(c, dtype);
      }
  }
  unsetenv("EMBER_ATTENTION_VERSION");
}

TEST_F(CudaAttention, DropoutMatchesTheCpuStreamOnEveryVersion) {
  const Tensor q = random_tensor({2, 9, 16}, 1, DType::Float32);
  const Tensor k = random_tensor({2, 70, 16}, 2, DType::Float32);
  const Tensor v = random_tensor({2, 70, 16}, 3, DType::Float32);
  Generator gen(11);
  const AttentionDropout d = attention_dropout(0.25, &gen);
  const Tensor keep_cpu = attention_dropout_scale({2}, 9, 70, d, DType::Float32, Device());
  const Tensor keep_gpu = attention_dropout_scale({2}, 9, 70, d, DType::Float32, kCuda);
  test::expect_exact(keep_gpu, keep_cpu.to_vector<double>());
  const Tensor want = scaled_dot_product_attention(q, k, v, Tensor(), d).output;
  for (int version = 0; version <= 3; ++version) {
    LadderVersion use(version);
    const Tensor got =
        scaled_dot_product_attention(q.to(kCuda), k.to(kCuda), v.to(kCuda), Tensor(), d).output;
    expect_close(got, want, 3e-5, 3e-5);
  }
}

TEST_F(CudaAttention, ABadVersionIsAValueError) {
  setenv("EMBER_ATTENTION_VERSION", "7", 1);
  const Tensor q = random_tensor({1, 2, 16}, 1, DType::Float32, kCuda);
  test::expect_error<ValueError>([&] { scaled_dot_product_attention(q, q, q); },
                                 {"EMBER_ATTENTION_VERSION='7'"});
  unsetenv("EMBER_ATTENTION_VERSION");
}

}  // namespace
}  // namespace ember
