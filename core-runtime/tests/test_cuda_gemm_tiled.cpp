// test_cuda_gemm_tiled.cpp — every version of the hand-tiled CUDA SGEMM (src/cuda/gemm_tiled.cuh)
// and cuBLAS against a brute-force product in double written here, on odd shapes that hit the
// edge tiles (1, 17, 33 x 65 x 129, 513, 1000 x 777 x 513, 1024), transposed, misaligned, batched
// and broadcast operands. Also: cuBLAS float32 is true FP32 (no TF32), and the other dtypes with
// bounds tight enough to tell float accumulation from half. GPU only: every test skips visibly
// without one.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "cuda_test.h"
#include "test_util.h"

namespace ember {
namespace {

using test::expect_error;
using test::random_tensor;

const Device kCuda("cuda:0");
constexpr int kVersions = 5;  // kTiledVersions in gemm_tiled.cuh

using TiledGemm = test::CudaTest;

// Sets EMBER_GEMM_TILED_VERSION for the scope of a test.
struct TiledVersion {
  explicit TiledVersion(const std::string& v) { setenv("EMBER_GEMM_TILED_VERSION", v.c_str(), 1); }
  explicit TiledVersion(int v) : TiledVersion(std::to_string(v)) {}
  ~TiledVersion() { unsetenv("EMBER_GEMM_TILED_VERSION"); }
};

// a @ b for 2-D a, b (any layout) in double on the host; with `abs`, also sum |a_ip b_pj| per
// entry, the scale of a dot product's rounding error.
std::vector<double> reference(const Tensor& a, const Tensor& b,
                              std::vector<double>* abs = nullptr) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  std::vector<double> c(size_t(m * n), 0.0);
  if (abs) abs->assign(c.size(), 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) {
      const double x = av[size_t(i * k + p)];
      double* ci = c.data() + i * n;
      const double* bp = bv.data() + p * n;
      for (int64_t j = 0; j < n; ++j) ci[j] += x * bp[j];
      if (abs)
        for (int64_t j = 0; j < n; ++j) (*abs)[size_t(i * n + j)] += std::fabs(x * bp[j]);
    }
  return c;
}

// Largest |got - want| over all elements, and shapes equal; one failure line, not one per element.
void expect_near_all(const Tensor& got, const std::vector<double>& want, double atol,
                     const std::string& what) {
  const std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  double worst = 0.0;
  size_t at = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double d = std::isnan(g[i]) ? INFINITY : std::fabs(g[i] - want[i]);
    if (d > worst) {
      worst = d;
      at = i;
    }
  }
  EXPECT_LE(worst, atol) << what << ": element " << at << " is " << g[at] << ", expected "
                         << want[at];
}

// Per element: |got - want| <= u * |want| + k * u_acc * sum |a_ip b_pj|, the rounding of the
// result to its dtype (u) plus the worst case of a k-term dot product accumulated with unit
// roundoff u_acc (float for the half types, double for float64).
void expect_within_rounding(const Tensor& got, const std::vector<double>& want,
                            const std::vector<double>& abs, int64_t k, double u, double u_acc,
                            const std::string& what) {
  const std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size()) << what;
  double worst = 0.0;  // the largest error as a fraction of its bound
  size_t at = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double bound = u * std::fabs(want[i]) + double(k) * u_acc * abs[i] + 1e-300;
    const double r = std::isnan(g[i]) ? INFINITY : std::fabs(g[i] - want[i]) / bound;
    if (r > worst) {
      worst = r;
      at = i;
    }
  }
  EXPECT_LE(worst, 1.0) << what << ": element " << at << " is " << g[at] << ", expected "
                        << want[at];
}

// Float32 rounding error of a K-term dot product of values in [-1, 1], with a safety margin.
double fp32_tol(int64_t k) { return 2e-5 * std::sqrt(double(k) + 1.0); }

struct MKN {
  int64_t m, k, n;
};
std::string str(const MKN& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n);
}

// Odd sizes hit every edge path: partial tiles in m and n, a k tail shorter than a tile, sizes
// that are not multiples of 4 (no float4 loads), and exact multiples of the 128 x 128 x 8 tiles.
// These small shapes are also what racecheck runs (ci/gpu-check.sh); the realistic sizes below
// cost up to 1.1e9 multiply-adds in the reference, a second or two on the host.
const std::vector<MKN> kShapes = {{1, 1, 1},     {17, 17, 17},  {33, 65, 129}, {128, 8, 128},
                                  {64, 36, 132}, {129, 7, 255}, {2, 3000, 5}};
const std::vector<MKN> kRealisticShapes = {{513, 513, 513}, {1000, 777, 513}, {1024, 1024, 1024}};

void check_every_version(const MKN& s) {
  const Tensor a = random_tensor({s.m, s.k}, 1, DType::Float32, kCuda);
  const Tensor b = random_tensor({s.k, s.n}, 2, DType::Float32, kCuda);
  const std::vector<double> want = reference(a, b);
  expect_near_all(matmul(a, b), want, fp32_tol(s.k), "cuBLAS " + str(s));
  for (int v = 1; v <= kVersions; ++v) {
    TiledVersion version(v);
    expect_near_all(matmul(a, b, MatmulAlgo::Tiled), want, fp32_tol(s.k),
                    "tiled v" + std::to_string(v) + " " + str(s));
  }
}

// a.t() and b.t() views are read in place (the v4/v5 loaders switch to their other layout).
void check_transposed(const MKN& s) {
  const Tensor at = random_tensor({s.k, s.m}, 3, DType::Float32, kCuda);
  const Tensor bt = random_tensor({s.n, s.k}, 4, DType::Float32, kCuda);
  const Tensor a = at.t().contiguous(), b = bt.t().contiguous();
  const std::vector<double> want = reference(at.t(), bt.t());
  for (int v = 1; v <= kVersions; ++v) {
    TiledVersion version(v);
    const std::string tag = "tiled v" + std::to_string(v) + " " + str(s);
    expect_near_all(matmul(at.t(), b, MatmulAlgo::Tiled), want, fp32_tol(s.k), tag + " a.t()");
    expect_near_all(matmul(a, bt.t(), MatmulAlgo::Tiled), want, fp32_tol(s.k), tag + " b.t()");
    expect_near_all(matmul(at.t(), bt.t(), MatmulAlgo::Tiled), want, fp32_tol(s.k), tag + " both");
  }
  expect_near_all(matmul(at.t(), bt.t()), want, fp32_tol(s.k), "cuBLAS both transposed");
}

TEST_F(TiledGemm, EveryVersionMatchesBruteForceOnOddShapes) {
  for (const MKN& s : kShapes) check_every_version(s);
}

// 128 x 64 x 96 keeps every stride a multiple of 4, so the float4 paths run too.
TEST_F(TiledGemm, TransposedOperands) {
  for (const MKN& s : {MKN{33, 65, 129}, MKN{128, 64, 96}}) check_transposed(s);
}

TEST_F(TiledGemm, EveryVersionMatchesBruteForceAtRealisticSizes) {
  for (const MKN& s : kRealisticShapes) check_every_version(s);
  check_transposed({1000, 777, 513});
}

// Rows that start 1 element into a wider buffer: misaligned base, leading dims not multiples of
// 4, so every load takes the scalar path.
TEST_F(TiledGemm, MisalignedSlices) {
  const int64_t m = 64, k = 40, n = 72;
  const Tensor abig = random_tensor({m, k + 3}, 5, DType::Float32, kCuda);
  const Tensor bbig = random_tensor({k, n + 3}, 6, DType::Float32, kCuda);
  const Tensor a = abig.narrow(1, 1, k), b = bbig.narrow(1, 3, n);
  const std::vector<double> want = reference(a, b);
  for (int v = 1; v <= kVersions; ++v) {
    TiledVersion version(v);
    expect_near_all(matmul(a, b, MatmulAlgo::Tiled), want, fp32_tol(k),
                    "tiled v" + std::to_string(v) + " misaligned");
  }
}

TEST_F(TiledGemm, BatchedAndBroadcast) {
  const Tensor a = random_tensor({3, 33, 65}, 7, DType::Float32, kCuda);
  const Tensor b = random_tensor({3, 65, 129}, 8, DType::Float32, kCuda);
  const Tensor a2 = random_tensor({33, 65}, 9, DType::Float32, kCuda);
  std::vector<double> want, want_bc;  // [3, 33, 129]: the batches one after another
  for (int p = 0; p < 3; ++p) {
    const std::vector<double> c = reference(a[p], b[p]), c_bc = reference(a2, b[p]);
    want.insert(want.end(), c.begin(), c.end());
    want_bc.insert(want_bc.end(), c_bc.begin(), c_bc.end());
  }
  expect_near_all(matmul(a, b), want, fp32_tol(65), "cuBLAS batched");
  for (int v = 1; v <= kVersions; ++v) {
    TiledVersion version(v);
    const std::string tag = "tiled v" + std::to_string(v);
    expect_near_all(matmul(a, b, MatmulAlgo::Tiled), want, fp32_tol(65), tag + " batched");
    expect_near_all(matmul(a2, b, MatmulAlgo::Tiled), want_bc, fp32_tol(65), tag + " broadcast");
  }
}

// linear adds onto the bias already in its output (beta = 1); the tiled epilogue is not reached
// by linear, so this checks cuBLAS's accumulate path against the reference.
TEST_F(TiledGemm, CublasAccumulateThroughLinear) {
  const Tensor x = random_tensor({37, 70}, 10, DType::Float32, kCuda);
  const Tensor w = random_tensor({19, 70}, 11, DType::Float32, kCuda);
  const Tensor bias = random_tensor({19}, 12, DType::Float32, kCuda);
  std::vector<double> want = reference(x, w.t().contiguous());
  const std::vector<double> bv = bias.to_vector<double>();
  for (size_t i = 0; i < want.size(); ++i) want[i] += bv[i % 19];
  expect_near_all(linear(x, w, bias), want, fp32_tol(70), "linear");
}

// With TF32 the products keep 10 mantissa bits and a 1024-term dot product is off by ~1e-3;
// true FP32 stays near 1e-5.
TEST_F(TiledGemm, CublasFloat32IsTrueFp32) {
  if (const char* tf32 = std::getenv("EMBER_ALLOW_TF32"); tf32 && std::string(tf32) == "1")
    GTEST_SKIP() << "EMBER_ALLOW_TF32=1 is set";
  const Tensor a = random_tensor({128, 1024}, 13, DType::Float32, kCuda);
  const Tensor b = random_tensor({1024, 128}, 14, DType::Float32, kCuda);
  expect_near_all(matmul(a, b), reference(a, b), 2e-4, "cuBLAS float32 1024-deep");
}

// Other dtypes under MatmulAlgo::Tiled run v2 templated on the dtype; integers always do. The
// half types accumulate in float and round once, so each entry is within u * |c| (the dtype's
// unit roundoff) plus float's k * 2^-24 * sum |a b|: at k = 513 about 4e-3 (float16) and 3e-2
// (bfloat16) for |c| near 7. Accumulated in the half type, the error would be ~sqrt(k) u |c|:
// 0.08 and 0.6.
TEST_F(TiledGemm, OtherDtypes) {
  for (const MKN& s : {MKN{33, 65, 129}, MKN{129, 513, 65}})
    for (DType t : {DType::Float64, DType::Float16, DType::BFloat16}) {
      const std::string tag = std::string(dtype_name(t)) + " " + str(s);
      const Tensor a = random_tensor({s.m, s.k}, 15, t, kCuda);
      const Tensor b = random_tensor({s.k, s.n}, 16, t, kCuda);
      std::vector<double> abs;
      const std::vector<double> want = reference(a, b, &abs);
      // float64: no final rounding, but the reference's own error as large as the GPU's.
      const double u = t == DType::Float64 ? 0.0 : test::unit_roundoff(t);
      const double u_acc =
          t == DType::Float64 ? 2 * test::unit_roundoff(t) : test::unit_roundoff(DType::Float32);
      expect_within_rounding(matmul(a, b), want, abs, s.k, u, u_acc, "cuBLAS " + tag);
      expect_within_rounding(matmul(a, b, MatmulAlgo::Tiled), want, abs, s.k, u, u_acc,
                             "tiled " + tag);
    }
  // Integers: exact, and int8 wraps as its arithmetic does (sums reach +-1000 here).
  const MKN s{33, 65, 129};
  for (DType t : {DType::Int32, DType::Int64, DType::Int8}) {
    const Tensor a = random_tensor({s.m, s.k}, 17, DType::Float64, Device(), -3, 4).to(t);
    const Tensor b = random_tensor({s.k, s.n}, 18, DType::Float64, Device(), -3, 4).to(t);
    std::vector<double> want = reference(a, b);  // exact: integers far below 2^53
    if (t == DType::Int8)
      for (double& w : want) w = double(static_cast<int8_t>(static_cast<int64_t>(w)));
    expect_near_all(matmul(a.to(kCuda), b.to(kCuda)), want, 0.0,
                    std::string("integer ") + dtype_name(t));
  }
}

TEST_F(TiledGemm, BadVersionIsAValueError) {
  const Tensor a = random_tensor({4, 4}, 19, DType::Float32, kCuda);
  TiledVersion version("9");
  expect_error<ValueError>([&] { matmul(a, a, MatmulAlgo::Tiled); },
                           {"EMBER_GEMM_TILED_VERSION", "1..5"});
}

}  // namespace
}  // namespace ember
