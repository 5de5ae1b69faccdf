// test_conv_gemm_on_host.cpp — conv2d's implicit-GEMM kernel (src/cuda/conv_implicit_gemm.cuh)
// compiled by the host compiler and run on the CPU, so that its addressing is checked where no GPU
// is (CI): each block's 256 threads are std::threads meeting at its __syncthreads (the stand-ins
// in cuda_runtime.h beside this file). Every pass, with each gather conv_pool.cu launches it with
// (the unpadded image gather only where the conv has no padding, the unit-stride grad_out gather
// only at stride 1), at every tiling launch_conv_gemm takes (kTilings), in float64 and float32,
// against a brute-force reference in double over small shapes: padded, strided, dilated, grouped,
// depthwise, 1x1, rectangular strides and kernels, padding wider than the kernel. Backward-weight's
// K split runs as it would on a 6-SM GPU, so most of its shapes split. What this cannot check:
// anything of the GPU's own (memory model, vector loads, occupancy); test_cuda_conv_paths.cpp runs
// the op on a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cuda/conv_implicit_gemm.cuh"

namespace ember::cuda::conv {
namespace {

// Runs conv_gemm<Pass, BM, BN, TM> over a grid of tiles x groups x splits, one block at a time.
template <class Pass, int BM, int BN, int TM>
void run_grid(const Pass& pass, int M, int N, int K, int groups, int splits, int k_chunk) {
  const int tiles = (M + BM - 1) / BM * ((N + BN - 1) / BN);
  pthread_barrier_init(&block_barrier, nullptr, kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      threadIdx = {unsigned(t), 0, 0};
      for (int z = 0; z < splits; ++z)
        for (int y = 0; y < groups; ++y)
          for (int x = 0; x < tiles; ++x) {
            blockIdx = {unsigned(x), unsigned(y), unsigned(z)};
            conv_gemm<Pass, BM, BN, TM>(pass, M, N, K, k_chunk);
          }
    });
  for (std::thread& t : threads) t.join();
  pthread_barrier_destroy(&block_barrier);
}

// Runs pass over its grid at tiling t, with the template arguments launch_conv_gemm launches it
// with on a GPU (with_tile_shape).
template <class Pass>
void run_at(Tiling t, const Pass& pass, int M, int N, int K, int groups, int splits, int k_chunk) {
  with_tile_shape(M, t, [&](auto bm, auto bn, auto tm) {
    run_grid<Pass, decltype(bm)::value, decltype(bn)::value, decltype(tm)::value>(pass, M, N, K,
                                                                                  groups, splits,
                                                                                  k_chunk);
  });
}

// A conv: x [N, C, H, W] * weight [O, C / G, kh, kw], stride, padding, dilation per spatial dim.
struct Case {
  const char* name;
  int N, C, H, W, O, kh, kw, sh, sw, ph, pw, dh, dw, G;
};

const Case kCases[] = {
    {"16 channels, 3x3, padded", 2, 16, 9, 11, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1},
    {"strided dilated grouped", 2, 8, 17, 19, 12, 3, 3, 2, 2, 1, 1, 2, 2, 2},
    {"5x3, stride 3, padding 2, dilation 2, 3 groups", 2, 9, 23, 20, 6, 5, 3, 3, 3, 2, 2, 2, 2, 3},
    {"depthwise strided", 2, 32, 14, 14, 32, 3, 3, 2, 2, 1, 1, 1, 1, 32},
    {"1x1, 40 outputs", 2, 24, 9, 9, 40, 1, 1, 1, 1, 0, 0, 1, 1, 1},
    {"dilated, padding 3 (wider than the reach)", 2, 5, 12, 10, 7, 3, 3, 1, 1, 3, 3, 2, 2, 1},
    {"strided dilated unpadded", 2, 6, 15, 14, 5, 3, 3, 2, 2, 0, 0, 2, 2, 1},
    {"the digits CNN's second conv, unpadded", 3, 16, 13, 13, 32, 3, 3, 1, 1, 0, 0, 1, 1, 1},
    {"the digits CNN's first conv, one channel", 3, 1, 28, 28, 16, 3, 3, 1, 1, 0, 0, 1, 1, 1},
    {"stride 2x1, padding 0x1, dilation 1x2", 2, 4, 11, 13, 6, 3, 2, 2, 1, 0, 1, 1, 2, 1},
    {"stride 1x2, dilation 2x1, unpadded, 2 groups", 2, 4, 11, 13, 6, 2, 3, 1, 2, 0, 0, 2, 1, 2},
    {"padding wider than the kernel, 65 outputs", 1, 3, 6, 7, 65, 2, 2, 1, 1, 2, 2, 1, 1, 1},
};

// Case c's operands in T (uniform in [-1, 1)) and the three passes' results in double, by the
// definition: out[n][o][oh][ow] = sum over (c, i, j) of weight[o][c][i][j] *
// x[n][g Cg + c][oh sh - ph + i dh][ow sw - pw + j dw] (zero outside x), with o in group g.
template <class T> struct Problem {
  ConvShape s{};
  std::vector<T> x, w, go;          // x, weight, grad_out
  std::vector<double> out, gx, gw;  // forward (no bias), grad_x, grad_w
  explicit Problem(const Case& c) {
    s.N = c.N, s.C = c.C, s.H = c.H, s.W = c.W, s.O = c.O, s.kh = c.kh, s.kw = c.kw, s.G = c.G;
    s.sh = c.sh, s.sw = c.sw, s.ph = c.ph, s.pw = c.pw, s.dh = c.dh, s.dw = c.dw;
    s.Ho = (c.H + 2 * c.ph - c.dh * (c.kh - 1) - 1) / c.sh + 1;
    s.Wo = (c.W + 2 * c.pw - c.dw * (c.kw - 1) - 1) / c.sw + 1;
    derive_sizes(s);
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> uniform(-1, 1);
    auto fill = [&](std::vector<T>& v, size_t n) {
      v.resize(n);
      for (T& e : v) e = T(uniform(rng));
    };
    fill(x, size_t(s.N) * s.C * s.HW), fill(w, size_t(s.O) * s.R),
        fill(go, size_t(s.N) * s.O * s.P);
    out.assign(go.size(), 0), gx.assign(x.size(), 0), gw.assign(w.size(), 0);
    for (int n = 0; n < s.N; ++n)
      for (int o = 0; o < s.O; ++o)
        for (int p = 0; p < s.P; ++p) {
          const int oh = p / s.Wo, ow = p % s.Wo, g = o / s.Og;
          const size_t out_at = (size_t(n) * s.O + o) * s.P + p;
          for (int c = 0; c < s.Cg; ++c)
            for (int i = 0; i < s.kh; ++i)
              for (int j = 0; j < s.kw; ++j) {
                const int h = oh * s.sh - s.ph + i * s.dh, v = ow * s.sw - s.pw + j * s.dw;
                if (h < 0 || h >= s.H || v < 0 || v >= s.W) continue;
                const size_t x_at = ((size_t(n) * s.C + g * s.Cg + c) * s.H + h) * s.W + v;
                const size_t w_at = size_t(o) * s.R + (c * s.kh + i) * s.kw + j;
                out[out_at] += double(w[w_at]) * double(x[x_at]);
                gx[x_at] += double(w[w_at]) * double(go[out_at]);
                gw[w_at] += double(go[out_at]) * double(x[x_at]);
              }
        }
  }
};

// float64 sums up to ~300 products: 1e-12 of the largest value; float32 accumulates in float32:
// 3e-5 of it (one wrong or missing tap moves an entry by ~1e-2 of it).
template <class T>
void expect_matches(const std::vector<T>& got, const std::vector<double>& ref,
                    const std::string& what) {
  double largest = 1, worst = 0;
  for (double r : ref) largest = std::max(largest, std::fabs(r));
  for (size_t i = 0; i < ref.size(); ++i)
    worst = std::max(worst, std::fabs(double(got[i]) - ref[i]));
  EXPECT_LE(worst, (sizeof(T) == 8 ? 1e-12 : 3e-5) * largest) << what;
}

template <class T, class Gather>
void check_forward(const Problem<T>& p, Gather image, const std::string& gather) {
  const ConvShape& s = p.s;
  for (Tiling t : kTilings) {
    std::vector<T> out(p.go.size(), T(-7));  // -7: an entry never written shows
    const Forward<T, Gather> pass{s, {p.w.data()}, image, nullptr, out.data()};
    run_at(t, pass, s.Og, s.N * s.P, s.R, s.G, 1, s.R);
    expect_matches(out, p.out, "forward, " + gather + ", tiling " + tiling_name(t));
  }
}

template <class T, class Gather>
void check_backward_input(const Problem<T>& p, Gather grad_out, const std::string& gather) {
  const ConvShape& s = p.s;
  const int k = s.Og * s.khw;
  for (Tiling t : kTilings) {
    std::vector<T> gx(p.x.size(), T(-7));
    const BackwardInput<T, Gather> pass{s, {p.w.data()}, grad_out, gx.data()};
    run_at(t, pass, s.Cg, s.N * s.HW, k, s.G, 1, k);
    expect_matches(gx, p.gx, "backward-input, " + gather + ", tiling " + tiling_name(t));
  }
}

template <class T, class Gather>
void check_backward_weight(const Problem<T>& p, Gather image, const std::string& gather) {
  using Acc = compute_t<T>;
  const ConvShape& s = p.s;
  const int k = s.N * s.P, bm = tile_rows(s.Og);
  for (Tiling t : kTilings) {
    const int64_t tiles = int64_t((s.Og + bm - 1) / bm) * ((s.R + t.cols - 1) / t.cols) * s.G;
    const KSplit split = weight_k_split<Acc>(k, tiles, /*sms=*/6);
    const size_t count = size_t(s.O) * s.R;
    std::vector<Acc> partial(split.splits * count, Acc(-7));
    const BackwardWeight<T, Gather> pass{s, {p.go.data()}, image, partial.data()};
    run_at(t, pass, s.Og, s.R, k, s.G, split.splits, split.chunk);
    std::vector<T> gw(count, T(0));  // sum_splits, in split order
    for (int part = 0; part < split.splits; ++part)
      for (size_t i = 0; i < count; ++i) gw[i] += T(partial[part * count + i]);
    expect_matches(gw, p.gw,
                   "backward-weight, " + gather + ", tiling " + tiling_name(t) + ", " +
                       std::to_string(split.splits) + " K splits");
  }
}

// Every pass of every case with each gather that applies to it.
template <class T> void check_every_case() {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const Problem<T> p(c);
    const ConvShape& s = p.s;
    const PlaneGather<T, true> x_padded{p.x.data(), s.H, s.W};
    check_forward(p, x_padded, "padded image");
    check_backward_weight(p, x_padded, "padded image");
    if (s.ph == 0 && s.pw == 0) {
      const PlaneGather<T, false> x_unpadded{p.x.data(), s.H, s.W};
      check_forward(p, x_unpadded, "unpadded image");
      check_backward_weight(p, x_unpadded, "unpadded image");
    }
    check_backward_input(p, StridedPlaneGather<T>{p.go.data(), s.Ho, s.Wo, s.sh, s.sw},
                         "strided grad_out");
    if (s.sh == 1 && s.sw == 1)
      check_backward_input(p, PlaneGather<T, true>{p.go.data(), s.Ho, s.Wo},
                           "unit-stride grad_out");
  }
}

TEST(ConvGemmOnHost, EveryPassGatherAndTilingMatchesBruteForceInFloat64) {
  check_every_case<double>();
}

TEST(ConvGemmOnHost, EveryPassGatherAndTilingMatchesBruteForceInFloat32) {
  check_every_case<float>();
}

}  // namespace
}  // namespace ember::cuda::conv
