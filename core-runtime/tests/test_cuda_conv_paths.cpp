// test_cuda_conv_paths.cpp — both CUDA conv2d implementations (the implicit GEMM and im2col +
// cuBLAS, forced with EMBER_CONV_ALGO) against brute-force references written here in double
// (plain loops over the definition, one output entry at a time), for forward, backward-input,
// backward-weight and backward-bias, on realistic shapes: the small MNIST CNN's layers,
// [32, 16, 28, 28] * [32, 16, 3, 3] padded, a wide layer whose im2col runs in several chunks,
// strided + dilated + grouped with a rectangular kernel, depthwise and 1x1. Every case runs on
// contiguous operands and on non-contiguous ones holding the same values (channels-last x and
// weight, a stepped grad_out and bias). Where the full reference would cost more than ~1.5e8
// multiply-adds, a sample is checked: every entry whose coordinates all lie in {0, 1, middle,
// last - 1, last} (corners and edges) plus 3000 random ones. GPU only: skips visibly without one.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>

#include "cuda_test.h"
#include "test_util.h"

namespace ember {
namespace {

using test::random_tensor;
using Values = std::vector<double>;

const Device kCuda("cuda:0");

using ConvPaths = test::CudaTest;

// Sets EMBER_CONV_ALGO for the scope.
struct ConvAlgo {
  explicit ConvAlgo(const char* algo) { setenv("EMBER_CONV_ALGO", algo, 1); }
  ~ConvAlgo() { unsetenv("EMBER_CONV_ALGO"); }
};

struct Case {
  const char* name;
  Shape x, w;
  int64_t stride, padding, dilation, groups;
};

// The geometry of a case: x [N, C, H, W], weight [O, Cg, kh, kw], grad_out [N, O, Ho, Wo].
struct Geometry {
  int64_t N, C, H, W, O, Cg, Og, kh, kw, s, p, d, Ho, Wo;
  explicit Geometry(const Case& c)
      : N(c.x[0]),
        C(c.x[1]),
        H(c.x[2]),
        W(c.x[3]),
        O(c.w[0]),
        Cg(c.w[1]),
        Og(O / c.groups),
        kh(c.w[2]),
        kw(c.w[3]),
        s(c.stride),
        p(c.padding),
        d(c.dilation),
        Ho((H + 2 * p - d * (kh - 1) - 1) / s + 1),
        Wo((W + 2 * p - d * (kw - 1) - 1) / s + 1) {}
  Shape out_shape() const { return {N, O, Ho, Wo}; }
};

// The operands' values, row-major, as double: what the references read.
struct Operands {
  Values x, w, b, go;
};

// An entry of a reference: its value, and the sum of |partial| over the partial sums a path may
// round separately (im2col's backward-input rounds each tap's column entry to the dtype before
// col2im adds them; the forward's product before the bias, below); 0 where the whole sum is
// rounded once.
struct Entry {
  double value = 0, spread = 0;
};

// y[n, o, i, j] = b[o] + sum over c of o's group and taps (p, q) of
//                 x[n, c, i*s - pad + p*d, j*s - pad + q*d] * w[o, c - g*Cg, p, q]
Entry ref_forward(const Geometry& g, const Operands& v, int64_t e) {
  const int64_t j = e % g.Wo, i = e / g.Wo % g.Ho, o = e / (g.Wo * g.Ho) % g.O;
  const int64_t n = e / (g.Wo * g.Ho * g.O), c0 = o / g.Og * g.Cg;
  double acc = v.b.empty() ? 0.0 : v.b[size_t(o)];
  for (int64_t cl = 0; cl < g.Cg; ++cl)
    for (int64_t p = 0; p < g.kh; ++p)
      for (int64_t q = 0; q < g.kw; ++q) {
        const int64_t h = i * g.s - g.p + p * g.d, w = j * g.s - g.p + q * g.d;
        if (h < 0 || h >= g.H || w < 0 || w >= g.W) continue;
        acc += v.x[size_t(((n * g.C + c0 + cl) * g.H + h) * g.W + w)] *
               v.w[size_t(((o * g.Cg + cl) * g.kh + p) * g.kw + q)];
      }
  // The im2col path preloads the bias into the output and runs the GEMM with beta = 1; in a
  // half type cuBLAS may round the product to the dtype before adding it (seen on the H200 in
  // bfloat16), so the product without the bias is rounded once more.
  const double product = v.b.empty() ? 0.0 : acc - v.b[size_t(o)];
  return {acc, std::fabs(product)};
}

// gx[n, c, h, w] = sum over taps (p, q) and the output (i, j) that read x[n, c, h, w] through
// them (h = i*s - pad + p*d) of sum over o of c's group of go[n, o, i, j] * w[o, c % Cg, p, q].
Entry ref_grad_input(const Geometry& g, const Operands& v, int64_t e) {
  const int64_t w = e % g.W, h = e / g.W % g.H, c = e / (g.W * g.H) % g.C;
  const int64_t n = e / (g.W * g.H * g.C), o0 = c / g.Cg * g.Og, cl = c % g.Cg;
  Entry r;
  for (int64_t p = 0; p < g.kh; ++p)
    for (int64_t q = 0; q < g.kw; ++q) {
      const int64_t th = h + g.p - p * g.d, tw = w + g.p - q * g.d;
      if (th < 0 || tw < 0 || th % g.s != 0 || tw % g.s != 0) continue;
      const int64_t i = th / g.s, j = tw / g.s;
      if (i >= g.Ho || j >= g.Wo) continue;
      double tap = 0;
      for (int64_t o = o0; o < o0 + g.Og; ++o)
        tap += v.go[size_t(((n * g.O + o) * g.Ho + i) * g.Wo + j)] *
               v.w[size_t(((o * g.Cg + cl) * g.kh + p) * g.kw + q)];
      r.value += tap;
      r.spread += std::fabs(tap);
    }
  return r;
}

// gw[o, cl, p, q] = sum over n, i, j of go[n, o, i, j] * x[n, c, i*s - pad + p*d, j*s - pad + q*d]
// with c = (o's group) * Cg + cl.
Entry ref_grad_weight(const Geometry& g, const Operands& v, int64_t e) {
  const int64_t q = e % g.kw, p = e / g.kw % g.kh, cl = e / (g.kw * g.kh) % g.Cg;
  const int64_t o = e / (g.kw * g.kh * g.Cg), c = o / g.Og * g.Cg + cl;
  double acc = 0;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t i = 0; i < g.Ho; ++i)
      for (int64_t j = 0; j < g.Wo; ++j) {
        const int64_t h = i * g.s - g.p + p * g.d, w = j * g.s - g.p + q * g.d;
        if (h < 0 || h >= g.H || w < 0 || w >= g.W) continue;
        acc += v.go[size_t(((n * g.O + o) * g.Ho + i) * g.Wo + j)] *
               v.x[size_t(((n * g.C + c) * g.H + h) * g.W + w)];
      }
  return {acc, 0.0};
}

// gb[o] = sum over n, i, j of go[n, o, i, j]
Entry ref_grad_bias(const Geometry& g, const Operands& v, int64_t o) {
  double acc = 0;
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t k = 0; k < g.Ho * g.Wo; ++k) acc += v.go[size_t((n * g.O + o) * g.Ho * g.Wo + k)];
  return {acc, 0.0};
}

// The flat indices of `shape` to check: all of them when numel * cost fits the budget, else the
// entries whose every coordinate is in {0, 1, mid, last - 1, last}, plus 3000 random ones.
std::vector<int64_t> entries_to_check(const Shape& shape, int64_t cost) {
  const int64_t numel = shape_numel(shape);
  std::vector<int64_t> out;
  if (double(numel) * double(cost) <= 1.5e8) {
    for (int64_t e = 0; e < numel; ++e) out.push_back(e);
    return out;
  }
  std::vector<std::vector<int64_t>> picks;
  for (int64_t n : shape) {
    std::vector<int64_t> p = {0, 1, n / 2, n - 2, n - 1};
    p.erase(std::remove_if(p.begin(), p.end(), [&](int64_t v) { return v < 0 || v >= n; }),
            p.end());
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
    picks.push_back(p);
  }
  std::vector<size_t> at(shape.size(), 0);  // an odometer over picks
  for (bool more = true; more;) {
    int64_t e = 0;
    for (size_t d = 0; d < shape.size(); ++d) e = e * shape[d] + picks[d][at[d]];
    out.push_back(e);
    more = false;
    for (size_t d = shape.size(); d-- > 0;) {
      if (++at[d] < picks[d].size()) {
        more = true;
        break;
      }
      at[d] = 0;
    }
  }
  std::mt19937_64 gen(12345);
  std::uniform_int_distribution<int64_t> any(0, numel - 1);
  for (int k = 0; k < 3000; ++k) out.push_back(any(gen));
  return out;
}

// The reference entries of one op's result: which flat indices are checked, their values, and
// the largest |value| (the scale of the accumulation error). Computed once per case and op, then
// compared with every algorithm and layout.
struct Reference {
  Shape shape;
  std::vector<int64_t> index;
  std::vector<Entry> want;
  double scale = 0;
};

template <class Ref> Reference reference(const Shape& shape, int64_t cost, Ref ref) {
  Reference r{shape, entries_to_check(shape, cost), {}, 0.0};
  r.want.reserve(r.index.size());
  for (int64_t e : r.index) {
    r.want.push_back(ref(e));
    r.scale = std::max(r.scale, std::fabs(r.want.back().value));
  }
  return r;
}

// Accepts |got - want| <= u * (|want| + spread) + rtol * max |want| for every checked entry: u is
// the unit roundoff of a half dtype's final rounding(s) (0 for float32/float64), rtol float's (or
// double's) accumulation error, relative to the largest value. One failure line per tensor.
struct Bound {
  double u, rtol;
};

void expect_matches(const Tensor& got, const Reference& r, const Bound& bound,
                    const std::string& what) {
  ASSERT_EQ(got.shape(), r.shape) << what;
  const Values g = got.to_vector<double>();
  double worst = 0;  // the largest error as a fraction of its bound
  size_t at = 0;
  for (size_t k = 0; k < r.index.size(); ++k) {
    const Entry& want = r.want[k];
    const double err = std::fabs(g[size_t(r.index[k])] - want.value);
    const double allowed =
        bound.u * (std::fabs(want.value) + want.spread) + bound.rtol * r.scale + 1e-300;
    const double ratio = std::isnan(err) ? INFINITY : err / allowed;
    if (ratio > worst) {
      worst = ratio;
      at = k;
    }
  }
  EXPECT_LE(worst, 1.0) << what << ": entry " << r.index[at] << " is " << g[size_t(r.index[at])]
                        << ", expected " << r.want[at].value << " (" << r.index.size()
                        << " entries checked, largest reference value " << r.scale << ")";
}

// The same values as t in another layout: 4-D tensors channels-last (permuted from [N, H, W, C]),
// or with `stepped`, every other element of a buffer twice as wide in the last dim.
Tensor other_layout(const Tensor& t, bool stepped) {
  if (!stepped) return t.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  Shape wide = t.shape();
  wide.back() *= 2;
  Tensor view = zeros(wide, t.dtype(), t.device()).slice(t.dim() - 1, 0, wide.back(), 2);
  view.copy_(t);
  return view;
}

// Small shapes every path's edges show on (also what racecheck runs: ci/gpu-check.sh), and
// realistic ones, where tiling, split-K and chunking matter. The implicit GEMM's tiling follows
// the GPU's SM count (conv::gemm_tiling): on an H100, 32-wide tiles on the small shapes, 64-wide on
// the padded [32, 16, 28, 28]'s forward and backward-input; ImplicitGemmAtEveryTiling forces each
// tiling.
const std::vector<Case> kSmallCases = {
    {"16 channels, 3x3, padded", {4, 16, 9, 11}, {8, 16, 3, 3}, 1, 1, 1, 1},
    {"strided dilated grouped", {8, 8, 17, 19}, {12, 4, 3, 3}, 2, 1, 2, 2},
    {"5x3, stride 3, padding 2, dilation 2, 3 groups", {4, 9, 23, 20}, {6, 3, 5, 3}, 3, 2, 2, 3},
    {"depthwise strided", {8, 32, 14, 14}, {32, 1, 3, 3}, 2, 1, 1, 32},
    {"dilated, padding 3 (wider than the reach)", {3, 5, 12, 10}, {7, 5, 3, 3}, 1, 3, 2, 1},
    {"strided dilated unpadded", {4, 6, 15, 14}, {5, 6, 3, 3}, 2, 0, 2, 1},
    {"1x1", {8, 24, 9, 9}, {80, 24, 1, 1}, 1, 0, 1, 1},
};
const std::vector<Case> kRealisticCases = {
    {"mnist conv1", {32, 1, 28, 28}, {16, 1, 3, 3}, 1, 0, 1, 1},
    {"[32, 16, 28, 28] * [32, 16, 3, 3] padded", {32, 16, 28, 28}, {32, 16, 3, 3}, 1, 1, 1, 1},
    {"mnist conv2", {32, 16, 13, 13}, {32, 16, 3, 3}, 1, 0, 1, 1},
    {"wide, im2col in chunks", {40, 64, 32, 32}, {128, 64, 3, 3}, 1, 1, 1, 1},
};

// Runs the four ops of case c on CUDA with each algorithm, on contiguous and non-contiguous
// operands, against the brute-force references.
void check_case(const Case& c, DType dtype, const Bound& bound) {
  SCOPED_TRACE(std::string(c.name) + " " + dtype_name(dtype));
  const Geometry geo(c);
  const Tensor x = random_tensor(c.x, 1, dtype, kCuda), w = random_tensor(c.w, 2, dtype, kCuda);
  const Tensor b = random_tensor({c.w[0]}, 3, dtype, kCuda);
  const Tensor go = random_tensor(geo.out_shape(), 4, dtype, kCuda);
  const Operands v{x.to_vector<double>(), w.to_vector<double>(), b.to_vector<double>(),
                   go.to_vector<double>()};
  const Operands no_bias{v.x, v.w, {}, v.go};
  const int64_t fwd_cost = geo.Cg * geo.kh * geo.kw, gx_cost = geo.Og * geo.kh * geo.kw;
  const int64_t gw_cost = geo.N * geo.Ho * geo.Wo;
  const Reference y =
      reference(geo.out_shape(), fwd_cost, [&](int64_t e) { return ref_forward(geo, v, e); });
  const Reference y0 =
      reference(geo.out_shape(), fwd_cost, [&](int64_t e) { return ref_forward(geo, no_bias, e); });
  const Reference gx =
      reference(c.x, gx_cost, [&](int64_t e) { return ref_grad_input(geo, v, e); });
  const Reference gw =
      reference(c.w, gw_cost, [&](int64_t e) { return ref_grad_weight(geo, v, e); });
  const Reference gb =
      reference({c.w[0]}, gw_cost, [&](int64_t e) { return ref_grad_bias(geo, v, e); });
  Tensor xs = other_layout(x, false);
  if (xs.is_contiguous()) xs = other_layout(x, true);  // one channel: channels-last is NCHW
  const Tensor ws = other_layout(w, false);
  const Tensor gos = other_layout(go, true), bs = other_layout(b, true);
  ASSERT_FALSE(xs.is_contiguous());
  ASSERT_FALSE(gos.is_contiguous());
  ASSERT_FALSE(bs.is_contiguous());
  const int64_t s = c.stride, p = c.padding, d = c.dilation, g = c.groups;
  for (const char* algo : {"implicit", "im2col"})
    for (bool strided : {false, true}) {
      ConvAlgo force(algo);
      const Tensor& xi = strided ? xs : x;
      const Tensor& wi = strided ? ws : w;
      const Tensor& gi = strided ? gos : go;
      const std::string tag = std::string(algo) + (strided ? " non-contiguous " : " ");
      expect_matches(conv2d(xi, wi, strided ? bs : b, s, p, d, g), y, bound, tag + "forward");
      expect_matches(conv2d(xi, wi, Tensor(), s, p, d, g), y0, bound, tag + "forward, no bias");
      expect_matches(conv2d_backward_input(gi, wi, c.x, s, p, d, g), gx, bound,
                     tag + "backward-input");
      expect_matches(conv2d_backward_weight(gi, xi, c.w, s, p, d, g), gw, bound,
                     tag + "backward-weight");
      expect_matches(conv2d_backward_bias(gi), gb, bound, tag + "backward-bias");
    }
}

// float32 accumulates in float32: errors near 1e-6 of the largest value (a random walk over up
// to 40960 terms); 3e-5 of it still fails on one wrong or missing tap, which moves an entry by
// ~1e-2 of the largest value.
TEST_F(ConvPaths, BothPathsMatchBruteForceInFloat32) {
  for (const Case& c : kSmallCases) check_case(c, DType::Float32, {0.0, 3e-5});
}

TEST_F(ConvPaths, BothPathsMatchBruteForceAtRealisticSizesInFloat32) {
  for (const Case& c : kRealisticCases) check_case(c, DType::Float32, {0.0, 3e-5});
}

TEST_F(ConvPaths, BothPathsMatchBruteForceInFloat64) {
  for (const Case& c : kSmallCases) check_case(c, DType::Float64, {0.0, 1e-12});
  check_case(kRealisticCases[1], DType::Float64, {0.0, 1e-12});
}

// Every tiling the implicit GEMM launches (EMBER_CONV_TILING), whatever the rule would pick on
// this GPU: tiles with padding columns (the small shapes' N are no multiple of 32) and
// backward-weight's K split at each width, with the 8 warps in one column along m and in two.
TEST_F(ConvPaths, ImplicitGemmAtEveryTiling) {
  for (const char* tiling : {"32", "64", "128", "128/4"}) {
    SCOPED_TRACE(std::string("EMBER_CONV_TILING=") + tiling);
    const test::ScopedEnv force("EMBER_CONV_TILING", tiling);
    for (const Case& c : kSmallCases) check_case(c, DType::Float64, {0.0, 1e-12});
    check_case(kRealisticCases[1], DType::Float32, {0.0, 3e-5});
    check_case(kSmallCases[1], DType::BFloat16, {test::unit_roundoff(DType::BFloat16), 3e-5});
  }
}

// float16/bfloat16 are computed in float32 and rounded to the dtype once per entry (im2col's
// backward-input also rounds each tap's column entry: the spread term): u = the dtype's unit
// roundoff, plus float's 3e-5. Accumulated in the half type, a 144-term sum would be off by
// ~sqrt(144) u of the largest value, and fail.
TEST_F(ConvPaths, BothPathsMatchBruteForceInHalfTypes) {
  check_case(kSmallCases[0], DType::Float16, {test::unit_roundoff(DType::Float16), 3e-5});
  check_case(kSmallCases[1], DType::BFloat16, {test::unit_roundoff(DType::BFloat16), 3e-5});
}

TEST_F(ConvPaths, BothPathsMatchBruteForceAtRealisticSizesInHalfTypes) {
  check_case(kRealisticCases[2], DType::Float16, {test::unit_roundoff(DType::Float16), 3e-5});
  check_case(kRealisticCases[1], DType::BFloat16, {test::unit_roundoff(DType::BFloat16), 3e-5});
}

TEST_F(ConvPaths, UnknownAlgoIsAValueError) {
  const Tensor x = random_tensor({1, 1, 4, 4}, 5, DType::Float32, kCuda);
  const Tensor w = random_tensor({1, 1, 3, 3}, 6, DType::Float32, kCuda);
  ConvAlgo force("winograd");
  test::expect_error<ValueError>([&] { conv2d(x, w); }, {"EMBER_CONV_ALGO", "winograd"});
}

TEST_F(ConvPaths, UnknownTilingIsAValueError) {
  const Tensor x = random_tensor({1, 1, 4, 4}, 5, DType::Float32, kCuda);
  const Tensor w = random_tensor({1, 1, 3, 3}, 6, DType::Float32, kCuda);
  ConvAlgo implicit("implicit");
  const test::ScopedEnv force("EMBER_CONV_TILING", "64/4");
  test::expect_error<ValueError>([&] { conv2d(x, w); },
                                 {"conv2d", "EMBER_CONV_TILING", "'64/4'", "32, 64, 128, 128/4"});
}

}  // namespace
}  // namespace ember
