// conv_tilings.cu — times conv2d's implicit-GEMM passes (core-runtime/src/cuda/
// conv_implicit_gemm.cuh) at each tiling the kernel takes, on one GPU, beside the tiling the op
// launches, and checks each tiling's results against the launched one's.
//
// As benchmarks/tools/attention_tilings.cu does, it includes the kernels' source (a header here)
// and calls them on raw device buffers, with none of the library's host code. Problems: the
// digits CNN's convolutions as the conv_pool family runs them (3 x 3, no padding, float32, with
// bias): 1 -> 16 and 16 -> 32 channels on 28 x 28 images at batch 32 and 256. Each pass launches
// as the op does (launch_conv_gemm at gemm_tiling or weight_tiling, weight_k_split), or on BN-wide
// tiles computed by WM rows of warps along m (launch_conv_gemm_on; backward-weight's split then
// follows that BN's tile count). Output, CSV on stdout:
//   pass,BN,WM,TM,TN,launched,N,C,O,ms,max_diff,ref_max
// BN, WM, TM, TN: 0 for the op's launch; TM x TN, the values a thread owns. ms: the mean of 20
// calls after one (backward-weight's includes adding its splits' partial sums); max_diff: the
// largest |difference| from the launched tiling's result; ref_max: the largest |value| of that
// result.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include "cuda/conv_implicit_gemm.cuh"
#include "tool_support.cuh"

namespace conv_tilings {

namespace cv = ember::cuda::conv;

constexpr int kKernel = 3;

float* device_values(size_t n, uint64_t seed) {  // uniform in [-1, 1)
  std::vector<float> h(n);
  for (float& v : h) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    v = float(seed >> 40) * 0x1p-23f - 1.f;
  }
  float* d = tool::device_buffer<float>(n);
  CHECK(cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  return d;
}

// x [N, C, H, W] * w [O, C, 3, 3] -> out [N, O, H - 2, W - 2]: stride 1, no padding, one group.
cv::ConvShape conv_shape(int N, int C, int H, int W, int O) {
  cv::ConvShape s{};
  s.N = N, s.C = C, s.H = H, s.W = W, s.O = O, s.kh = s.kw = kKernel;
  s.Ho = H - kKernel + 1, s.Wo = W - kKernel + 1, s.G = 1;
  s.sh = s.sw = s.dh = s.dw = 1, s.ph = s.pw = 0;
  cv::derive_sizes(s);
  return s;
}

// A row's arrangement of the kernel (all 0: the op's own tiling, cv::Tiling): BN columns computed
// by WM rows of warps along m, each thread owning TM x TN values of the tile.
struct Arrangement {
  int bn = 0, wm = 0, tm = 0, tn = 0;
};

struct Problem {
  cv::ConvShape s;
  int sms;
  float *x, *w, *bias, *grad_out, *out, *grad_x, *grad_w, *partial;
  std::vector<float> ref;  // the launched tiling's result of the pass being timed
};

// Times one tiling of one pass (launch() runs it; t.bn == 0: as the op launches) and prints its
// row.
template <class Launch>
void row(Problem& P, const char* pass, Arrangement t, const float* result, size_t n,
         Launch launch) {
  const float ms = tool::mean_ms(launch);
  const std::vector<float> got = tool::to_host(result, n);
  if (t.bn == 0) P.ref = got;
  std::printf("%s,%d,%d,%d,%d,%d,%d,%d,%d,%.4f,%.3g,%.3g\n", pass, t.bn, t.wm, t.tm, t.tn,
              int(t.bn == 0), P.s.N, P.s.C, P.s.O, ms, tool::max_diff(got, P.ref),
              tool::max_abs({&P.ref}));
}

// Calls f(Arrangement, launch) for every arrangement of BM rows whose thread tile is at most 8
// columns wide and 64 values: BN of 32 to 256 columns (256 x 32 floats: most of the 48 KiB of
// static shared memory), TM of BM / 8 to BM rows a thread. launch(pass, M, N, K, splits, chunk)
// runs it.
template <int BM, class F> void each_tiling(F f) {
  auto with = [&](auto bn, auto wm) {
    constexpr int BN = decltype(bn)::value, WM = decltype(wm)::value;
    constexpr int WN = cv::kWarps / WM, TM = BM / WM, TN = BN / (32 * WN);
    if constexpr (TM * WM == BM && TN >= 1 && TN * 32 * WN == BN && TN <= 8 && TM * TN <= 64)
      f(Arrangement{BN, WM, TM, TN},
        [](const auto& pass, int M, int N, int K, int splits, int chunk) {
          cv::launch_conv_gemm_on<std::decay_t<decltype(pass)>, BM, BN, TM>(pass, M, N, K, 1,
                                                                            splits, chunk, nullptr);
        });
  };
  auto with_wm = [&](auto bn) {
    with(bn, std::integral_constant<int, 8>{}), with(bn, std::integral_constant<int, 4>{});
    with(bn, std::integral_constant<int, 2>{}), with(bn, std::integral_constant<int, 1>{});
  };
  with_wm(std::integral_constant<int, 32>{}), with_wm(std::integral_constant<int, 64>{});
  with_wm(std::integral_constant<int, 128>{}), with_wm(std::integral_constant<int, 256>{});
}

// BM: the forward's and backward-weight's tile rows (tile_rows(O)); BMI: backward-input's (of C).
template <int BM, int BMI> void run_passes(Problem& P) {
  using Image = cv::PlaneGather<float, false>;   // x, as the op gathers it unpadded
  using GradOut = cv::PlaneGather<float, true>;  // at unit stride
  const cv::ConvShape& s = P.s;
  const cv::Forward<float, Image> fwd{s, {P.w}, {P.x, s.H, s.W}, P.bias, P.out};
  const int nf = s.N * s.P;
  const size_t nout = size_t(s.N) * s.O * s.P;
  row(P, "forward", {}, P.out, nout, [&] {
    cv::launch_conv_gemm(fwd, s.O, nf, s.R, 1, 1, s.R, cv::gemm_tiling(s.O, nf, 1, P.sms), nullptr);
  });
  each_tiling<BM>([&](Arrangement t, auto launch) {
    row(P, "forward", t, P.out, nout, [&] { launch(fwd, s.O, nf, s.R, 1, s.R); });
  });
  const cv::BackwardInput<float, GradOut> bwi{s, {P.w}, {P.grad_out, s.Ho, s.Wo}, P.grad_x};
  const int ki = s.O * s.khw, ni = s.N * s.HW;
  const size_t nx = size_t(s.N) * s.C * s.HW;
  row(P, "backward_input", {}, P.grad_x, nx, [&] {
    cv::launch_conv_gemm(bwi, s.C, ni, ki, 1, 1, ki, cv::gemm_tiling(s.C, ni, 1, P.sms), nullptr);
  });
  each_tiling<BMI>([&](Arrangement t, auto launch) {
    row(P, "backward_input", t, P.grad_x, nx, [&] { launch(bwi, s.C, ni, ki, 1, ki); });
  });
  const cv::BackwardWeight<float, Image> bww{s, {P.grad_out}, {P.x, s.H, s.W}, P.partial};
  const int kw = s.N * s.P;
  const int64_t count = int64_t(s.O) * s.R;
  // Backward-weight's split follows the tile count of its width; its time includes adding up
  // the splits.
  auto weight_pass = [&](int width, auto launch) {
    const int64_t tiles = int64_t((s.O + BM - 1) / BM) * ((s.R + width - 1) / width);
    const cv::KSplit split = cv::weight_k_split<float>(kw, tiles, P.sms);
    launch(split);
    cv::sum_splits<float, float>
        <<<unsigned((count + 255) / 256), 256>>>(P.partial, split.splits, count, P.grad_w);
  };
  row(P, "backward_weight", {}, P.grad_w, size_t(count), [&] {
    const cv::Tiling t = cv::weight_tiling(s.R);
    weight_pass(t.cols, [&](cv::KSplit split) {
      cv::launch_conv_gemm(bww, s.O, s.R, kw, 1, split.splits, split.chunk, t, nullptr);
    });
  });
  each_tiling<BM>([&](Arrangement t, auto launch) {
    row(P, "backward_weight", t, P.grad_w, size_t(count), [&] {
      weight_pass(t.bn,
                  [&](cv::KSplit split) { launch(bww, s.O, s.R, kw, split.splits, split.chunk); });
    });
  });
}

void run(int N, int C, int O, int sms) {
  Problem P{conv_shape(N, C, 28, 28, O), sms};
  const cv::ConvShape& s = P.s;
  const size_t nx = size_t(N) * C * s.HW, nw = size_t(O) * s.R, no = size_t(N) * O * s.P;
  P.x = device_values(nx, 1), P.w = device_values(nw, 2), P.bias = device_values(size_t(O), 3);
  P.grad_out = device_values(no, 4), P.out = device_values(no, 5), P.grad_x = device_values(nx, 6);
  P.grad_w = device_values(nw, 7);
  const int most_splits = std::max(1, N * s.P / (8 * cv::tile_depth<float>()));
  P.partial = device_values(nw * size_t(most_splits), 8);
  if (cv::tile_rows(C) != 16 || cv::tile_rows(O) > 32) {  // the instances below
    std::fprintf(stderr, "conv_tilings: no instances for C %d, O %d\n", C, O);
    std::exit(2);
  }
  if (cv::tile_rows(O) == 16) run_passes<16, 16>(P);
  else run_passes<32, 16>(P);
  for (float* p : {P.x, P.w, P.bias, P.grad_out, P.out, P.grad_x, P.grad_w, P.partial})
    CHECK(cudaFree(p));
}

}  // namespace conv_tilings

// With arguments N C O, only that problem (for a profiler: every CSV row launches conv_gemm 21
// times, one to warm up and 20 timed, so row r's first timed launch is launch 21 r + 1).
int main(int argc, char** argv) {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::printf("pass,BN,WM,TM,TN,launched,N,C,O,ms,max_diff,ref_max\n");
  if (argc == 4) {
    conv_tilings::run(std::atoi(argv[1]), std::atoi(argv[2]), std::atoi(argv[3]), sms);
    return 0;
  }
  for (int n : {32, 256}) {
    conv_tilings::run(n, 1, 16, sms);
    conv_tilings::run(n, 16, 32, sms);
  }
  return 0;
}
