// test_cuda_conv_paths.cpp — both CUDA conv2d implementations (the implicit GEMM and im2col +
// cuBLAS, forced with EMBER_CONV_ALGO) against the CPU backend, for forward, backward-input,
// backward-weight and backward-bias, on realistic shapes: the small MNIST CNN's two layers, a
// wide layer whose im2col runs in several chunks, strided + dilated + grouped, and depthwise.
// test_conv_pool.cpp checks the default path on small cases against brute force; this covers the
// path the heuristic did not pick, and sizes where tiling, split-K and chunking matter. GPU only:
// skips visibly without one.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "test_util.h"

namespace ember {
namespace {

using test::random_tensor;

const Device kCuda("cuda:0");

class ConvPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_is_available())
      GTEST_SKIP() << "no CUDA device here (cuda_compiled=" << cuda_compiled() << ")";
  }
};

// Sets EMBER_CONV_ALGO for the scope.
struct ConvAlgo {
  explicit ConvAlgo(const char* algo) { setenv("EMBER_CONV_ALGO", algo, 1); }
  ~ConvAlgo() { unsetenv("EMBER_CONV_ALGO"); }
};

// max |got - want| <= rtol * max |want| + atol: one line per failing tensor, not per element.
void expect_near_scaled(const Tensor& got, const Tensor& want, double rtol,
                        const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < g.size(); ++i) {
    worst = std::max(worst, std::isnan(g[i]) ? INFINITY : std::fabs(g[i] - w[i]));
    scale = std::max(scale, std::fabs(w[i]));
  }
  EXPECT_LE(worst, rtol * scale + 1e-6) << what << " (largest reference value " << scale << ")";
}

struct Case {
  const char* name;
  Shape x, w;
  int64_t stride, padding, dilation, groups;
};

const std::vector<Case> kCases = {
    {"mnist conv1", {32, 1, 28, 28}, {16, 1, 3, 3}, 1, 0, 1, 1},
    {"mnist conv2", {32, 16, 13, 13}, {32, 16, 3, 3}, 1, 0, 1, 1},
    {"wide, im2col in chunks", {40, 64, 32, 32}, {128, 64, 3, 3}, 1, 1, 1, 1},
    {"strided dilated grouped", {8, 8, 17, 19}, {12, 4, 3, 3}, 2, 1, 2, 2},
    {"depthwise strided", {8, 32, 14, 14}, {32, 1, 3, 3}, 2, 1, 1, 32},
    {"1x1", {8, 24, 9, 9}, {80, 24, 1, 1}, 1, 0, 1, 1},
};

void check_case(const Case& c, DType dtype, double rtol) {
  SCOPED_TRACE(std::string(c.name) + " " + dtype_name(dtype));
  const Tensor x = random_tensor(c.x, 1, dtype), w = random_tensor(c.w, 2, dtype);
  const Tensor b = random_tensor({c.w[0]}, 3, dtype);
  const Tensor y = conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);  // CPU
  const Tensor go = random_tensor(y.shape(), 4, dtype);
  const Tensor gx = conv2d_backward_input(go, w, c.x, c.stride, c.padding, c.dilation, c.groups);
  const Tensor gw = conv2d_backward_weight(go, x, c.w, c.stride, c.padding, c.dilation, c.groups);
  const Tensor gb = conv2d_backward_bias(go);
  const Tensor xc = x.to(kCuda), wc = w.to(kCuda), bc = b.to(kCuda), goc = go.to(kCuda);
  for (const char* algo : {"implicit", "im2col"}) {
    ConvAlgo force(algo);
    const std::string tag = std::string(algo) + " ";
    expect_near_scaled(conv2d(xc, wc, bc, c.stride, c.padding, c.dilation, c.groups), y, rtol,
                       tag + "forward");
    expect_near_scaled(conv2d_backward_input(goc, wc, c.x, c.stride, c.padding, c.dilation,
                                             c.groups),
                       gx, rtol, tag + "backward-input");
    expect_near_scaled(conv2d_backward_weight(goc, xc, c.w, c.stride, c.padding, c.dilation,
                                              c.groups),
                       gw, rtol, tag + "backward-weight");
    expect_near_scaled(conv2d_backward_bias(goc), gb, rtol, tag + "backward-bias");
  }
}

TEST_F(ConvPaths, BothPathsMatchTheCpuInFloat32) {
  for (const Case& c : kCases) check_case(c, DType::Float32, 1e-4);
}

TEST_F(ConvPaths, BothPathsMatchTheCpuInFloat64) {
  for (const Case& c : {kCases[1], kCases[3], kCases[4]}) check_case(c, DType::Float64, 1e-12);
}

// float16/bfloat16 compute in float32; the CPU rounds differently, hence the loose bounds.
TEST_F(ConvPaths, BothPathsMatchTheCpuInHalfTypes) {
  check_case(kCases[1], DType::Float16, 5e-3);
  check_case(kCases[3], DType::BFloat16, 3e-2);
}

TEST_F(ConvPaths, UnknownAlgoIsAValueError) {
  const Tensor x = random_tensor({1, 1, 4, 4}, 5, DType::Float32, kCuda);
  const Tensor w = random_tensor({1, 1, 3, 3}, 6, DType::Float32, kCuda);
  ConvAlgo force("winograd");
  test::expect_error<ValueError>([&] { conv2d(x, w); }, {"EMBER_CONV_ALGO", "winograd"});
}

}  // namespace
}  // namespace ember
