// test_cuda_attention.cpp — every version of the CUDA attention ladder (src/cuda/
// attention_ladder.cu, picked by EMBER_ATTENTION_VERSION) and the fused backward against the
// formula in double on the host (attention_reference.h), on sizes that cut the kernels' tiles
// (1, 15, 17, 33, 65, 130), with masks of both kinds, causal with L != S, dropout, and every
// floating dtype (v3 on float16/bfloat16 with head sizes that are multiples of 16, and the
// fallback to v2 where they are not). The tensor-core backwards (b3, b4) and forwards (v3, v4) on
// float16 and bfloat16 also against the formula with broadcast masks, dropout and fully masked
// rows, at a tolerance derived from the dtype's unit roundoff; v4 and b4 on E = Ev = 64 and 128
// with lengths that cut their tiles (1, 17, 100, 257), non-contiguous and misaligned inputs, and
// their fallbacks to v3 and b3. GPU only: every test skips visibly without one.
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
  for (int version = 0; version <= 4; ++version) {  // 3 and 4 run v2 on these dtypes
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
  for (int version : {2, 3, 4}) {  // 4: v4 on the E = Ev = 64 problems, v3 on the others
    LadderVersion use(version);
    for (const Problem& p : kProblems) {
      SCOPED_TRACE("version " + std::to_string(version) + ", L " + std::to_string(p.L));
      // Rounding of the probabilities to the 16-bit type before p v is the largest error.
      check(p, DType::Float16, 1e-2, true);
      check(p, DType::BFloat16, 6e-2, true);
    }
  }
  for (int version : {3, 4}) {  // E = 24 is not a multiple of 16: v4 and v3 fall back to v2
    LadderVersion use(version);
    check({2, 20, 30, 24, 8, true, 0}, DType::Float16, 1e-2, true);
  }
}

// The tensor-core backward (b3) and forward (v3) on float16 and bfloat16.
struct HalfCase {
  int64_t BH, L, S, E, Ev;
  bool causal;
  int mask;         // 0: none, 1: bool [L, S], 2: additive [L, S]; both broadcast over heads
  double dropout;   // p, 0 for none
  bool masked_row;  // the mask drops every key of row L / 2
  int layout = 0;   // q, k, v: 0 contiguous, 1 transposed views, 2 one element off 16-byte aligned
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

// A [BH, rows, cols] input of `layout` (HalfCase): the transposed view of a [rows, BH, cols]
// tensor, or a contiguous tensor starting one element into its storage (the op then copies the
// first to a contiguous tensor, and hands the second to the kernels as it is: v4 and b4, whose
// cp.async needs 16-byte alignment, leave it to v3 and b3).
Tensor input(int64_t BH, int64_t rows, int64_t cols, uint32_t seed, DType dtype, int layout) {
  if (layout == 1) return random_tensor({rows, BH, cols}, seed, dtype, kCuda).transpose(0, 1);
  if (layout == 2)
    return random_tensor({BH * rows * cols + 1}, seed, dtype, kCuda)
        .narrow(0, 1, BH * rows * cols)
        .view({BH, rows, cols});
  return random_tensor({BH, rows, cols}, seed, dtype, kCuda);
}

void check_half_case(const HalfCase& c, DType dtype) {
  const Tensor q = input(c.BH, c.L, c.E, 1, dtype, c.layout);
  const Tensor k = input(c.BH, c.S, c.E, 2, dtype, c.layout);
  const Tensor v = input(c.BH, c.S, c.Ev, 3, dtype, c.layout);
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

std::string describe(const HalfCase& c, DType dtype, int version) {
  return std::string(dtype_name(dtype)) + ", version " + std::to_string(version) + ", BH " +
         std::to_string(c.BH) + ", L " + std::to_string(c.L) + ", S " + std::to_string(c.S) +
         ", E " + std::to_string(c.E) + ", Ev " + std::to_string(c.Ev) + ", causal " +
         std::to_string(c.causal) + ", mask " + std::to_string(c.mask) + ", dropout " +
         std::to_string(c.dropout) + ", layout " + std::to_string(c.layout);
}

TEST_F(CudaAttention, TensorCoreBackwardMatchesTheFormulaInHalfTypes) {
  // Unset (the default) runs v4 and b4 on the E = Ev = 64 cases and v3 and b3 on the others; 4
  // asked for does the same; 3 runs v3 and b3 on all.
  for (int version : {-1, 3, 4}) {
    if (version < 0) unsetenv("EMBER_ATTENTION_VERSION");
    else setenv("EMBER_ATTENTION_VERSION", std::to_string(version).c_str(), 1);
    for (const HalfCase& c : kHalfCases)
      for (DType dtype : {DType::Float16, DType::BFloat16}) {
        SCOPED_TRACE(describe(c, dtype, version));
        check_half_case(c, dtype);
      }
  }
  unsetenv("EMBER_ATTENTION_VERSION");
}

// v4 and b4 (E == Ev in {64, 128}): lengths that cut the 64-row and 64-key tiles and b4's query
// tiles (64 rows at E = 64, 32 at E = 128) — 1, 17, 100, 257 —, L != S both ways, several heads,
// causal and not, masks of both kinds, dropout, a fully masked row, and inputs that are
// non-contiguous views (copied by the op) or misaligned (left to v3 and b3).
const std::vector<HalfCase> kV4Cases = {
    {2, 1, 1, 64, 64, false, 0, 0.0, false},      {3, 17, 100, 64, 64, false, 0, 0.0, false},
    {2, 100, 17, 128, 128, true, 0, 0.0, false},  {2, 257, 257, 64, 64, true, 0, 0.0, false},
    {2, 257, 100, 128, 128, false, 1, 0.0, true}, {2, 100, 257, 128, 128, true, 0, 0.0, false},
    {2, 17, 257, 64, 64, false, 2, 0.0, true},    {2, 100, 100, 128, 128, true, 2, 0.0, false},
    {2, 100, 257, 64, 64, false, 0, 0.25, false}, {2, 257, 100, 128, 128, true, 1, 0.25, true},
    {1, 1, 257, 128, 128, true, 0, 0.0, false},   {2, 257, 1, 64, 64, false, 0, 0.0, false},
    {2, 100, 17, 64, 64, true, 0, 0.0, false, 1}, {2, 17, 100, 128, 128, false, 2, 0.0, false, 1},
    {2, 100, 17, 64, 64, true, 0, 0.0, false, 2}, {2, 17, 100, 128, 128, false, 1, 0.0, true, 2},
};

// Where v4 does not apply, asking for it runs v3 and b3: E = Ev not in {64, 128}, and E != Ev.
const std::vector<HalfCase> kV4Fallbacks = {
    {2, 17, 100, 32, 32, true, 0, 0.0, false},
    {2, 100, 17, 80, 80, false, 1, 0.0, false},
    {2, 65, 33, 64, 128, true, 0, 0.0, false},
    {2, 33, 65, 128, 64, false, 2, 0.25, false},
};

TEST_F(CudaAttention, V4AndB4MatchTheFormulaInHalfTypes) {
  LadderVersion use(4);
  for (const std::vector<HalfCase>* cases : {&kV4Cases, &kV4Fallbacks})
    for (const HalfCase& c : *cases)
      for (DType dtype : {DType::Float16, DType::BFloat16}) {
        SCOPED_TRACE(describe(c, dtype, 4));
        check_half_case(c, dtype);
      }
}

// Unset, the op runs v4 and b4 where they apply: the forward and dK, dV (no atomics in either)
// are bit for bit those of EMBER_ATTENTION_VERSION=4.
TEST_F(CudaAttention, V4IsTheDefaultWhereItApplies) {
  for (int64_t E : {64, 128}) {
    const Tensor q = random_tensor({2, 100, E}, 1, DType::BFloat16, kCuda);
    const Tensor k = random_tensor({2, 130, E}, 2, DType::BFloat16, kCuda);
    const Tensor v = random_tensor({2, 130, E}, 3, DType::BFloat16, kCuda);
    const Tensor g = random_tensor({2, 100, E}, 4, DType::BFloat16, kCuda);
    const auto run = [&](const char* version) {
      if (version) setenv("EMBER_ATTENTION_VERSION", version, 1);
      else unsetenv("EMBER_ATTENTION_VERSION");
      AttentionResult r = scaled_dot_product_attention(q, k, v, Tensor(), {}, true);
      AttentionGrads d = scaled_dot_product_attention_backward(g, q, k, v, Tensor(), r.output,
                                                               r.logsumexp, {}, true);
      unsetenv("EMBER_ATTENTION_VERSION");
      return std::vector<Tensor>{r.output, r.logsumexp, d.grad_k, d.grad_v};
    };
    const std::vector<Tensor> by_default = run(nullptr), asked = run("4");
    for (size_t n = 0; n < asked.size(); ++n)
      test::expect_exact(by_default[n], asked[n].to_vector<double>());
  }
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
  for (int version = 0; version <= 4; ++version) {
    LadderVersion use(version);
    const Tensor got =
        scaled_dot_product_attention(q.to(kCuda), k.to(kCuda), v.to(kCuda), Tensor(), d).output;
    expect_close(got, want, 3e-5, 3e-5);
  }
}

TEST_F(CudaAttention, ABadVersionIsAValueError) {
  const Tensor q = random_tensor({1, 2, 16}, 1, DType::Float32, kCuda);
  for (const char* bad : {"7", "5", "-1", "34"}) {
    setenv("EMBER_ATTENTION_VERSION", bad, 1);
    test::expect_error<ValueError>([&] { scaled_dot_product_attention(q, q, q); },
                                   {"EMBER_ATTENTION_VERSION='" + std::string(bad) + "'",
                                    "expected 0, 1, 2, 3 or 4"});
  }
  unsetenv("EMBER_ATTENTION_VERSION");
}

}  // namespace
}  // namespace ember
