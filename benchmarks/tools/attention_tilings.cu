// attention_tilings.cu — times the tilings of attention's v4 forward and b4 backward kernels
// (core-runtime/src/cuda/attention_ladder.cu) on one GPU, and checks each against the tiling the
// op launches (V4Tiling, B4Tiling), so that the choice written there rests on a measurement.
//
// The library compiles only the launched tilings, so this program includes the kernels' source
// and instantiates the others itself; it calls the kernels on raw device buffers and needs none
// of the library's host code (linked with --gc-sections, which drops it). ci/gpu-tilings.sh
// builds and runs it. Each problem is causal attention in bfloat16 on packed [BH, T, D] inputs
// with random values: a GPT's shapes (the benchmarks' SDPA ladder, 32 heads at T 1024 and 4096,
// and GPT-2 small's 96 heads at T 1024). Output, CSV on stdout:
//   pass,tiling,launched,BH,T,D,ms,max_diff,ref_max
// ms: the mean of 20 calls (the backward's dQ buffer zeroed before each, as the op does);
// max_diff: the largest absolute difference from the launched tiling's results (out and
// logsumexp; dQ, dK and dV), 0 for the launched tiling itself; ref_max: the largest magnitude
// among those results, the scale max_diff compares with (a few units of bfloat16's rounding,
// 2^-8 of it, where the sums only run in another order).
#include <cstdio>
#include <random>

#include "cuda/attention_ladder.cu"
#include "tool_support.cuh"

namespace tilings {

using ember::AttentionParams;
using ember::cuda::B4Launch;
using ember::cuda::HeadRows;
using ember::cuda::MaskView;
using ember::cuda::V4Launch;
using Bf16 = ember::BFloat16;

// One problem's inputs, the outputs, and the launched tilings' results to check the others
// against. The forward's out and lse are the launched tiling's (the backward's inputs); the
// others write theirs to out_try and lse_try.
struct Problem {
  int64_t BH, T, D;
  AttentionParams p;
  HeadRows rows;  // packed [BH, T, D]
  Bf16 *q, *k, *v, *dout, *out, *out_try, *dk, *dv;
  float *lse, *lse_try, *delta, *dq;
  std::vector<float> ref_out, ref_lse, ref_dq, ref_dk, ref_dv;

  size_t elements() const { return size_t(BH * T * D); }
};

Problem make_problem(int64_t BH, int64_t T, int64_t D) {
  Problem P{BH, T, D};
  P.p.heads = BH, P.p.L = T, P.p.S = T, P.p.E = D, P.p.Ev = D;
  P.p.scale = 1 / std::sqrt(double(D)), P.p.causal = true;
  P.rows.heads.ndim = 1, P.rows.heads.size[0] = BH, P.rows.heads.stride[0] = T * D, P.rows.ld = D;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  const size_t n = P.elements();
  for (Bf16** x : {&P.q, &P.k, &P.v, &P.dout, &P.out, &P.out_try, &P.dk, &P.dv}) {
    *x = tool::device_buffer<Bf16>(n);
    std::vector<Bf16> h(n);
    for (Bf16& e : h) e = Bf16(normal(rng));
    CHECK(cudaMemcpy(*x, h.data(), n * 2, cudaMemcpyHostToDevice));
  }
  P.lse = tool::device_buffer<float>(size_t(BH * T));
  P.lse_try = tool::device_buffer<float>(size_t(BH * T));
  P.delta = tool::device_buffer<float>(size_t(BH * T));
  P.dq = tool::device_buffer<float>(n);
  return P;
}

void forward(Problem& P, const V4Launch<Bf16>& L, const char* tiling, bool launched) {
  CHECK(cudaFuncSetAttribute(L.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(L.bytes)));
  Bf16* out_to = launched ? P.out : P.out_try;
  float* lse_to = launched ? P.lse : P.lse_try;
  const float ms = tool::mean_ms([&] {
    L.kernel<<<L.grid(P.BH, P.T), 32 * L.warps, L.bytes>>>(P.q, P.k, P.v, P.rows, P.rows, P.rows,
                                                           MaskView{}, P.p, out_to, lse_to);
  });
  const std::vector<float> out = tool::to_host(out_to, P.elements()),
                           lse = tool::to_host(lse_to, size_t(P.BH * P.T));
  if (launched) P.ref_out = out, P.ref_lse = lse;
  std::printf("forward,%s,%d,%lld,%lld,%lld,%.4f,%.3g,%.3g\n", tiling, int(launched),
              (long long)P.BH, (long long)P.T, (long long)P.D, ms,
              std::max(tool::max_diff(out, P.ref_out), tool::max_diff(lse, P.ref_lse)),
              tool::max_abs({&P.ref_out, &P.ref_lse}));
}

void backward(Problem& P, const B4Launch<Bf16>& L, const char* tiling, bool launched) {
  CHECK(cudaFuncSetAttribute(L.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(L.bytes)));
  const float ms = tool::mean_ms([&] {
    CHECK(cudaMemsetAsync(P.dq, 0, P.elements() * sizeof(float)));
    L.kernel<<<L.grid(P.BH, P.T), 32 * L.warps, L.bytes>>>(P.dout, P.q, P.k, P.v, P.rows, P.rows,
                                                           P.rows, P.rows, MaskView{}, P.lse,
                                                           P.delta, P.p, P.dq, P.dk, P.dv);
  });
  const std::vector<float> dq = tool::to_host(P.dq, P.elements()),
                           dk = tool::to_host(P.dk, P.elements()),
                           dv = tool::to_host(P.dv, P.elements());
  if (launched) P.ref_dq = dq, P.ref_dk = dk, P.ref_dv = dv;
  const float diff = std::max(
      {tool::max_diff(dq, P.ref_dq), tool::max_diff(dk, P.ref_dk), tool::max_diff(dv, P.ref_dv)});
  std::printf("backward,%s,%d,%lld,%lld,%lld,%.4f,%.3g,%.3g\n", tiling, int(launched),
              (long long)P.BH, (long long)P.T, (long long)P.D, ms, diff,
              tool::max_abs({&P.ref_dq, &P.ref_dk, &P.ref_dv}));
}

// Tilings other than V4Tiling<D> / B4Tiling<D>, launched as the op would launch them.
template <int W, int G, int MinBlocks> struct V4Try {
  static constexpr int kWarps = W, kGroups = G, kMinBlocks = MinBlocks;
};
template <int W, int G, int R, int MinBlocks> struct B4Try {
  static constexpr int kWarps = W, kGroups = G, kRows = R, kMinBlocks = MinBlocks;
};

template <int D, int W, int G, int MinBlocks> V4Launch<Bf16> v4_tiling() {
  return ember::cuda::v4_launch_on_tiling<Bf16, D, V4Try<W, G, MinBlocks>>();
}

template <int D, int W, int G, int R, int MinBlocks> B4Launch<Bf16> b4_tiling() {
  return ember::cuda::b4_launch_on_tiling<Bf16, D, B4Try<W, G, R, MinBlocks>>();
}

// Every tiling tried at head size D, the launched one first (the others are checked against it).
template <int D> void run(int64_t BH, int64_t T) {
  Problem P = make_problem(BH, T, D);
  forward(P, ember::cuda::v4_launch<Bf16>(D), "launched", true);
  forward(P, v4_tiling<D, 4, 1, 1>(), "W4_G1_MB1", false);
  forward(P, v4_tiling<D, 4, 1, 4>(), "W4_G1_MB4", false);
  forward(P, v4_tiling<D, 8, 1, 1>(), "W8_G1_MB1", false);
  forward(P, v4_tiling<D, 8, 1, 2>(), "W8_G1_MB2", false);
  forward(P, v4_tiling<D, 4, 2, 1>(), "W4_G2_MB1", false);
  forward(P, v4_tiling<D, 4, 2, 2>(), "W4_G2_MB2", false);
  forward(P, v4_tiling<D, 8, 2, 1>(), "W8_G2_MB1", false);
  forward(P, v4_tiling<D, 2, 2, 4>(), "W2_G2_MB4", false);
  forward(P, v4_tiling<D, 2, 2, 2>(), "W2_G2_MB2", false);
  // The backward's inputs: the launched forward's out and logsumexp, and delta = dO . O.
  ember::cuda::attention_delta<Bf16, float><<<1024, 256>>>(P.dout, P.rows, P.out, P.p, P.delta);
  CHECK(cudaGetLastError());
  backward(P, ember::cuda::b4_launch<Bf16>(D), "launched", true);
  backward(P, b4_tiling<D, 4, 1, 32, 1>(), "W4_G1_R32_MB1", false);
  backward(P, b4_tiling<D, 4, 1, 32, 3>(), "W4_G1_R32_MB3", false);
  backward(P, b4_tiling<D, 8, 1, 32, 2>(), "W8_G1_R32_MB2", false);
  backward(P, b4_tiling<D, 4, 2, 32, 1>(), "W4_G2_R32_MB1", false);
  backward(P, b4_tiling<D, 4, 2, 32, 2>(), "W4_G2_R32_MB2", false);
  backward(P, b4_tiling<D, 2, 2, 32, 2>(), "W2_G2_R32_MB2", false);
  backward(P, b4_tiling<D, 2, 2, 32, 4>(), "W2_G2_R32_MB4", false);
  backward(P, b4_tiling<D, 8, 2, 32, 1>(), "W8_G2_R32_MB1", false);
  if constexpr (D == 64) {
    backward(P, b4_tiling<D, 4, 1, 64, 1>(), "W4_G1_R64_MB1", false);
    backward(P, b4_tiling<D, 4, 2, 64, 1>(), "W4_G2_R64_MB1", false);
    backward(P, b4_tiling<D, 2, 2, 64, 2>(), "W2_G2_R64_MB2", false);
  }
}

}  // namespace tilings

int main() {
  std::printf("pass,tiling,launched,BH,T,D,ms,max_diff,ref_max\n");
  tilings::run<64>(32, 1024);
  tilings::run<64>(96, 1024);
  tilings::run<64>(32, 4096);
  tilings::run<128>(32, 1024);
  return 0;
}
