// conv_tilings.cu — times conv2d's implicit-GEMM passes (core-runtime/src/cuda/
// conv_implicit_gemm.cuh) at each tile width the kernel takes, on one GPU, beside the width the op
// launches, and checks each width's results against the launched one's.
//
// As benchmarks/tools/attention_tilings.cu does, it includes the kernels' source (a header here)
// and calls them on raw device buffers, with none of the library's host code. Problems: the
// digits CNN's convolutions as the conv_pool family runs them (3 x 3, no padding, float32, with
// bias): 1 -> 16 and 16 -> 32 channels on 28 x 28 images at batch 32 and 256. Each pass launches
// as the op does (launch_conv_gemm at tile_cols or split_tile_cols, weight_k_split), or on BN-wide
// tiles (launch_conv_gemm_on; backward-weight's split then follows that BN's tile count). Output,
// CSV on stdout:
//   pass,BN,launched,N,C,O,ms,max_diff,ref_max
// ms: the mean of 20 calls after one (backward-weight's includes adding its splits' partial
// sums); max_diff: the largest |difference| from the launched width's result; ref_max: the
// largest |value| of that result.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

struct Problem {
  cv::ConvShape s;
  int sms;
  float *x, *w, *bias, *grad_out, *out, *grad_x, *grad_w, *partial;
  std::vector<float> ref;  // the launched width's result of the pass being timed
};

// Times one width of one pass (launch(bn_or_0) runs it, 0: as the op launches) and prints its row.
template <class Launch>
void row(Problem& P, const char* pass, int bn, const float* result, size_t n, Launch launch) {
  const float ms = tool::mean_ms([&] { launch(bn); });
  const std::vector<float> got = tool::to_host(result, n);
  if (bn == 0) P.ref = got;
  std::printf("%s,%d,%d,%d,%d,%d,%.4f,%.3g,%.3g\n", pass, bn, int(bn == 0), P.s.N, P.s.C, P.s.O, ms,
              tool::max_diff(got, P.ref), tool::max_abs({&P.ref}));
}

// Every width BN of 32, 64, 128 and 256 on BM-row tiles, or for bn == 0 the op's own launch at
// its width `chosen` (cv::tile_cols, cv::split_tile_cols).
template <class Pass, int BM>
void launch_width(const Pass& pass, int bn, int chosen, int M, int N, int K, int splits,
                  int chunk) {
  switch (bn) {
    case 0:
      return cv::launch_conv_gemm(pass, M, N, K, 1, splits, chunk, chosen, nullptr);
    case 32:
      return cv::launch_conv_gemm_on<Pass, BM, 32>(pass, M, N, K, 1, splits, chunk, nullptr);
    case 64:
      return cv::launch_conv_gemm_on<Pass, BM, 64>(pass, M, N, K, 1, splits, chunk, nullptr);
    case 128:
      return cv::launch_conv_gemm_on<Pass, BM, 128>(pass, M, N, K, 1, splits, chunk, nullptr);
    default:
      return cv::launch_conv_gemm_on<Pass, BM, 256>(pass, M, N, K, 1, splits, chunk, nullptr);
  }
}

// BM: the forward's and backward-weight's tile rows (tile_rows(O)); BMI: backward-input's (of C).
template <int BM, int BMI> void run_passes(Problem& P) {
  const cv::ConvShape& s = P.s;
  const int widths[] = {0, 32, 64, 128, 256};
  const cv::Forward<float> fwd{s, {P.w}, {P.x, s.H, s.W, 1, 1}, P.bias, P.out};
  const int nf = s.N * s.P, chosen_f = cv::tile_cols(s.O, nf, 1, P.sms);
  for (int bn : widths)
    row(P, "forward", bn, P.out, size_t(s.N) * s.O * s.P, [&](int b) {
      launch_width<cv::Forward<float>, BM>(fwd, b, chosen_f, s.O, nf, s.R, 1, s.R);
    });
  const cv::BackwardInput<float> bwi{s, {P.w}, {P.grad_out, s.Ho, s.Wo, 1, 1}, P.grad_x};
  const int ki = s.O * s.khw, ni = s.N * s.HW, chosen_i = cv::tile_cols(s.C, ni, 1, P.sms);
  for (int bn : widths)
    row(P, "backward_input", bn, P.grad_x, size_t(s.N) * s.C * s.HW, [&](int b) {
      launch_width<cv::BackwardInput<float>, BMI>(bwi, b, chosen_i, s.C, ni, ki, 1, ki);
    });
  const cv::BackwardWeight<float> bww{s, {P.grad_out}, {P.x, s.H, s.W, 1, 1}, P.partial};
  const int kw = s.N * s.P;
  const int64_t count = int64_t(s.O) * s.R;
  const int chosen_w = cv::split_tile_cols(s.R);
  for (int bn : widths)
    row(P, "backward_weight", bn, P.grad_w, size_t(count), [&](int b) {
      const int width = b ? b : chosen_w;
      const int64_t tiles = int64_t((s.O + BM - 1) / BM) * ((s.R + width - 1) / width);
      const cv::KSplit split = cv::weight_k_split<float>(kw, tiles, P.sms);
      launch_width<cv::BackwardWeight<float>, BM>(bww, b, chosen_w, s.O, s.R, kw, split.splits,
                                                  split.chunk);
      cv::sum_splits<float, float>
          <<<unsigned((count + 255) / 256), 256>>>(P.partial, split.splits, count, P.grad_w);
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

// With arguments N C O, only that problem (for a profiler: its passes' launched widths are then
// conv_gemm's launches 1, 106 and 211).
int main(int argc, char** argv) {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::printf("pass,BN,launched,N,C,O,ms,max_diff,ref_max\n");
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
