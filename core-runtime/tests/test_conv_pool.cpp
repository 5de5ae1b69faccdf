// test_conv_pool.cpp — conv2d and pooling against brute-force loops in double (direct
// convolution, window scans), their backward functions against the same loops and against
// central finite differences in float64, on contiguous and non-contiguous inputs.
#include <cmath>
#include <functional>
#include <limits>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;
using test::expect_exact;
using test::random_tensor;

// ---- shared helpers ---------------------------------------------------------------------------

// d/dx of sum(f(x) * weights) by central differences, one element of x (float64) at a time.
std::vector<double> numeric_grad(const std::function<Tensor(const Tensor&)>& f, const Tensor& x,
                                 const Tensor& weights, double h = 1e-6) {
  const std::vector<double> wv = weights.to_vector<double>();
  auto loss = [&](const std::vector<double>& xv) {
    std::vector<double> y =
        f(Tensor::from_vector(xv, x.shape()).to(x.device())).to_vector<double>();
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i) s += y[i] * wv[i];
    return s;
  };
  std::vector<double> xv = x.to_vector<double>(), grad(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) {
    const double keep = xv[i];
    xv[i] = keep + h;
    const double up = loss(xv);
    xv[i] = keep - h;
    const double down = loss(xv);
    xv[i] = keep;
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

// Puts back the CPU instruction set a test found, however it ends.
struct RestoreCpuIsa {
  std::string isa = cpu_isa();
  ~RestoreCpuIsa() { set_cpu_isa(isa); }
};

double tolerance(DType t) {
  return t == DType::Float64   ? 1e-10
         : t == DType::Float32 ? 1e-4
         : t == DType::Float16 ? 1e-2
                               : 5e-2;
}

// ---- convolution --------------------------------------------------------------------------

struct ConvCase {
  Shape x, w;
  bool bias;
  Size2 stride;
  Padding2 padding;
  Size2 dilation;
  int64_t groups;
};

// Top/left padding and output size of one spatial dim, from the definitions in conv_pool.h.
void conv_dim(const ConvCase& c, int64_t in, int64_t k, int64_t s, int64_t p, int64_t d,
              int64_t& pad, int64_t& out) {
  if (c.padding.mode == "same") {
    pad = d * (k - 1) / 2;
    out = in;
  } else {
    pad = c.padding.mode == "valid" ? 0 : p;
    out = (in + 2 * pad - d * (k - 1) - 1) / s + 1;
  }
}

struct ConvReference {
  Shape out_shape;
  std::vector<double> out, grad_x, grad_w, grad_b;
};

// Direct convolution in double, and its gradients for an upstream gradient `gout` (the values of
// a tensor of out_shape; may be empty to skip the gradients).
ConvReference reference_conv(const ConvCase& c, const std::vector<double>& x,
                             const std::vector<double>& w, const std::vector<double>& b,
                             const std::vector<double>& gout) {
  const int64_t N = c.x[0], C = c.x[1], H = c.x[2], W = c.x[3];
  const int64_t O = c.w[0], Cg = c.w[1], kh = c.w[2], kw = c.w[3], Og = O / c.groups;
  int64_t ph, pw, Ho, Wo;
  conv_dim(c, H, kh, c.stride.h, c.padding.size.h, c.dilation.h, ph, Ho);
  conv_dim(c, W, kw, c.stride.w, c.padding.size.w, c.dilation.w, pw, Wo);
  ConvReference r;
  r.out_shape = {N, O, Ho, Wo};
  r.out.assign(size_t(N * O * Ho * Wo), 0.0);
  r.grad_x.assign(x.size(), 0.0);
  r.grad_w.assign(w.size(), 0.0);
  r.grad_b.assign(size_t(O), 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < Ho; ++oh)
        for (int64_t ow = 0; ow < Wo; ++ow) {
          const size_t oi = size_t(((n * O + o) * Ho + oh) * Wo + ow);
          const double g = gout.empty() ? 0.0 : gout[oi];
          double s = c.bias ? b[size_t(o)] : 0.0;
          r.grad_b[size_t(o)] += g;
          for (int64_t cc = 0; cc < Cg; ++cc)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t ih = oh * c.stride.h - ph + i * c.dilation.h;
                const int64_t iw = ow * c.stride.w - pw + j * c.dilation.w;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const int64_t ch = (o / Og) * Cg + cc;  // input channel of o's group
                const size_t xi = size_t(((n * C + ch) * H + ih) * W + iw);
                const size_t wi = size_t(((o * Cg + cc) * kh + i) * kw + j);
                s += x[xi] * w[wi];
                r.grad_x[xi] += g * w[wi];
                r.grad_w[wi] += g * x[xi];
              }
          r.out[oi] = s;
        }
  return r;
}

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases = {
      {{2, 3, 7, 8}, {4, 3, 3, 3}, true, 1, 0, 1, 1},
      {{2, 3, 9, 7}, {6, 3, 3, 2}, false, {2, 1}, {1, 0}, 1, 1},  // stride and padding per dim
      {{1, 2, 9, 9}, {3, 2, 3, 3}, true, 1, 2, 2, 1},             // dilation
      {{2, 4, 6, 6}, {6, 2, 3, 3}, true, 1, 1, 1, 2},             // two groups
      {{1, 3, 5, 5}, {3, 1, 3, 3}, false, 2, 1, 1, 3},            // depthwise, strided
      {{1, 2, 6, 7}, {3, 2, 3, 5}, true, 1, "same", 1, 1},
      {{1, 2, 6, 7}, {2, 2, 4, 2}, false, 1, "same", 1, 1},  // even kernel: extra pad at end
      {{1, 1, 8, 8}, {1, 1, 2, 2}, false, 1, "same", 3, 1},  // 'same' with dilation
      {{1, 2, 5, 5}, {2, 2, 3, 3}, true, 1, "valid", 1, 1},
      {{2, 4, 3, 5}, {6, 2, 1, 1}, true, 1, 0, 1, 2},   // 1x1: no im2col
      {{1, 2, 5, 5}, {3, 2, 1, 1}, false, 2, 0, 1, 1},  // strided 1x1
      {{1, 1, 1, 1}, {1, 1, 1, 1}, true, 1, 0, 1, 1},   // all sizes 1
      {{1, 2, 3, 3}, {2, 2, 3, 3}, true, 1, 0, 1, 1},   // kernel covers the input
      {{0, 2, 4, 4}, {3, 2, 3, 3}, true, 1, 1, 1, 1},   // empty batch
      // More output columns than one GEMM takes (images_per_gemm): batches of 3 images and 2.
      {{5, 2, 24, 24}, {3, 2, 3, 3}, true, 1, 1, 1, 1},
      {{7, 4, 17, 19}, {6, 2, 3, 2}, true, {1, 2}, {1, 0}, 1, 2},  // ... with groups, strides
  };
  return cases;
}

std::string describe_case(const ConvCase& c) {
  return "x " + shape_str(c.x) + " w " + shape_str(c.w) + " stride " + std::to_string(c.stride.h) +
         "," + std::to_string(c.stride.w) + " padding " +
         (c.padding.mode.empty()
              ? std::to_string(c.padding.size.h) + "," + std::to_string(c.padding.size.w)
              : c.padding.mode) +
         " dilation " + std::to_string(c.dilation.h) + " groups " + std::to_string(c.groups);
}

class Conv2d : public test::DeviceTest {
 protected:
  // Runs conv2d and its three backward functions for `c` in `dtype` and compares each with the
  // brute-force reference.
  void check(const ConvCase& c, DType dtype, uint32_t seed) {
    SCOPED_TRACE(describe_case(c) + " " + dtype_name(dtype));
    Tensor x = random_tensor(c.x, seed, dtype, device());
    Tensor w = random_tensor(c.w, seed + 1, dtype, device());
    Tensor b = c.bias ? random_tensor({c.w[0]}, seed + 2, dtype, device()) : Tensor();
    Tensor y = conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups);
    Tensor gout = random_tensor(y.shape(), seed + 3, dtype, device());
    ConvReference r = reference_conv(c, x.to_vector<double>(), w.to_vector<double>(),
                                     c.bias ? b.to_vector<double>() : std::vector<double>(),
                                     gout.to_vector<double>());
    const double tol = tolerance(dtype);
    ASSERT_EQ(y.shape(), r.out_shape);
    EXPECT_EQ(y.dtype(), dtype);
    expect_close(y, r.out, tol, tol);
    Tensor gx = conv2d_backward_input(gout, w, c.x, c.stride, c.padding, c.dilation, c.groups);
    ASSERT_EQ(gx.shape(), c.x);
    expect_close(gx, r.grad_x, tol, tol);
    Tensor gw = conv2d_backward_weight(gout, x, c.w, c.stride, c.padding, c.dilation, c.groups);
    ASSERT_EQ(gw.shape(), c.w);
    expect_close(gw, r.grad_w, tol, tol);
    expect_close(conv2d_backward_bias(gout), r.grad_b, tol, tol);
  }
};

TEST_P(Conv2d, ForwardAndBackwardMatchDirectConvolution) {
  uint32_t seed = 100;
  for (const ConvCase& c : conv_cases()) {
    check(c, DType::Float32, seed);
    check(c, DType::Float64, seed);
    seed += 10;
  }
}

// The specialised paths of the CPU convolution over a grid of kernel x stride x dilation x
// padding x groups: a pointwise (1x1, stride 1, unpadded) conv reads x in place; im2col copies
// stride-1 rows whole and fills padding only at a row's ends; several images share one GEMM when
// an image has few output columns. Each against the direct convolution, with every instruction
// set's kernels on the CPU.
TEST_P(Conv2d, EveryParameterCombinationMatchesDirectConvolution) {
  std::vector<std::string> isas = {""};  // "": the backend's own kernels
  if (device().is_cpu()) isas = available_cpu_isas();
  const RestoreCpuIsa restore;
  uint32_t seed = 1000;
  for (const std::string& isa : isas) {
    if (!isa.empty()) set_cpu_isa(isa);
    for (int64_t k : {1, 2, 3})
      for (Size2 stride : {Size2(1), Size2(2), Size2(1, 3)})
        for (Size2 dilation : {Size2(1), Size2(2, 1)})
          for (Size2 padding : {Size2(0), Size2(1), Size2(0, 2)})
            for (int64_t groups : {1, 2}) {
              SCOPED_TRACE(isa);
              const ConvCase c{{3, 4, 7, 9}, {6, 4 / groups, k, k},  groups == 1,
                               stride,       {padding.h, padding.w}, dilation,
                               groups};
              check(c, DType::Float64, seed++);
            }
  }
}

TEST_P(Conv2d, HalfTypes) {
  for (DType t : {DType::Float16, DType::BFloat16}) {
    check(conv_cases()[0], t, 1);
    check(conv_cases()[3], t, 2);
  }
}

TEST_P(Conv2d, NonContiguousInputs) {
  // x channels-last ([N, H, W, C] permuted), weight stored [C, O, kh, kw] and transposed,
  // grad_out a strided slice.
  const ConvCase c{{2, 3, 6, 5}, {4, 3, 3, 3}, true, 1, 1, 1, 1};
  Tensor x = random_tensor({2, 6, 5, 3}, 1, DType::Float64, device()).permute({0, 3, 1, 2});
  Tensor w = random_tensor({3, 4, 3, 3}, 2, DType::Float64, device()).transpose(0, 1);
  Tensor b = random_tensor({8}, 3, DType::Float64, device()).slice(0, 0, 8, 2);
  Tensor gout = random_tensor({2, 4, 6, 10}, 4, DType::Float64, device()).slice(3, 0, 10, 2);
  ASSERT_FALSE(x.is_contiguous());
  ConvReference r = reference_conv(c, x.to_vector<double>(), w.to_vector<double>(),
                                   b.to_vector<double>(), gout.to_vector<double>());
  expect_close(conv2d(x, w, b, 1, 1), r.out, 1e-10, 1e-10);
  expect_close(conv2d_backward_input(gout, w, c.x, 1, 1), r.grad_x, 1e-10, 1e-10);
  expect_close(conv2d_backward_weight(gout, x, c.w, 1, 1), r.grad_w, 1e-10, 1e-10);
  expect_close(conv2d_backward_bias(gout), r.grad_b, 1e-10, 1e-10);
}

TEST_P(Conv2d, BackwardMatchesFiniteDifferences) {
  for (const ConvCase& c : {conv_cases()[1], conv_cases()[3], conv_cases()[6]}) {
    SCOPED_TRACE(describe_case(c));
    Tensor x = random_tensor(c.x, 1, DType::Float64, device());
    Tensor w = random_tensor(c.w, 2, DType::Float64, device());
    Tensor b = random_tensor({c.w[0]}, 3, DType::Float64, device());
    Tensor gout = random_tensor(conv2d(x, w, b, c.stride, c.padding, c.dilation, c.groups).shape(),
                                4, DType::Float64, device());
    auto wrt_x = [&](const Tensor& v) {
      return conv2d(v, w, b, c.stride, c.padding, c.dilation, c.groups);
    };
    auto wrt_w = [&](const Tensor& v) {
      return conv2d(x, v, b, c.stride, c.padding, c.dilation, c.groups);
    };
    auto wrt_b = [&](const Tensor& v) {
      return conv2d(x, w, v, c.stride, c.padding, c.dilation, c.groups);
    };
    expect_close(conv2d_backward_input(gout, w, c.x, c.stride, c.padding, c.dilation, c.groups),
                 numeric_grad(wrt_x, x, gout), 1e-6, 1e-6);
    expect_close(conv2d_backward_weight(gout, x, c.w, c.stride, c.padding, c.dilation, c.groups),
                 numeric_grad(wrt_w, w, gout), 1e-6, 1e-6);
    expect_close(conv2d_backward_bias(gout), numeric_grad(wrt_b, b, gout), 1e-6, 1e-6);
  }
}

TEST_P(Conv2d, ErrorsNameTheOperands) {
  const Device d = device();
  const std::string dev = " " + d.str();
  Tensor x = random_tensor({2, 3, 8, 8}, 1, DType::Float32, d);
  expect_error<ShapeError>(
      [&] {
        conv2d(x, random_tensor({4, 2, 3, 3}, 2, DType::Float32, d));
      },
      {"conv2d: x is [2, 3, 8, 8] float32" + dev + ", weight is [4, 2, 3, 3] float32" + dev,
       "the input has 3 channels, but weight [4, 2, 3, 3] with groups 1 expects 2"});
  expect_error<ShapeError>(
      [&] {
        conv2d(random_tensor({1, 4, 5, 5}, 1, DType::Float32, d),
               random_tensor({3, 2, 3, 3}, 2, DType::Float32, d), {}, 1, 0, 1, 2);
      },
      {"conv2d", "[3, 2, 3, 3]", "weight.shape[0] (3 output channels) must divide by groups (2)"});
  expect_error<ShapeError>(
      [&] {
        conv2d(random_tensor({1, 1, 2, 2}, 1, DType::Float32, d),
               random_tensor({1, 1, 3, 3}, 2, DType::Float32, d));
      },
      {"conv2d", "x is [1, 1, 2, 2] float32", "larger than the padded input (2 x 2)"});
  expect_error<ShapeError>(
      [&] {
        conv2d(x.select(0, 0), random_tensor({4, 3, 3, 3}, 2, DType::Float32, d));
      },
      {"conv2d", "x is [3, 8, 8] float32", "expected 4-D [N, C, H, W]", "unsqueeze(0)"});
  // A batch of 16 single-channel images [N, H, W] lacks the channel dim, not the batch dim.
  expect_error<ShapeError>(
      [&] {
        conv2d(random_tensor({16, 8, 8}, 1, DType::Float32, d),
               random_tensor({4, 1, 3, 3}, 2, DType::Float32, d));
      },
      {"conv2d", "x is [16, 8, 8] float32", "single-channel images [N, H, W]", "unsqueeze(1)"});
  expect_error<ShapeError>(
      [&] {
        conv2d(x, random_tensor({4, 3, 3, 3}, 2, DType::Float32, d),
               random_tensor({3}, 3, DType::Float32, d));
      },
      {"conv2d", "bias is [3] float32", "bias must be [4]"});
  expect_error<DTypeError>(
      [&] {
        conv2d(x, random_tensor({4, 3, 3, 3}, 2, DType::Float64, d));
      },
      {"conv2d", "[2, 3, 8, 8] float32", "[4, 3, 3, 3] float64", "one dtype"});
  expect_error<DTypeError>(
      [&] {
        conv2d(random_tensor({1, 1, 4, 4}, 1, DType::Int32, d),
               random_tensor({1, 1, 3, 3}, 2, DType::Int32, d));
      },
      {"conv2d", "x is [1, 1, 4, 4] int32", "floating dtype"});
  Tensor w = random_tensor({4, 3, 3, 3}, 2, DType::Float32, d);
  expect_error<ValueError>([&] { conv2d(x, w, {}, 2, "same"); },
                           {"conv2d", "padding='same' needs stride 1"});
  expect_error<ValueError>([&] { conv2d(x, w, {}, 1, "full"); }, {"conv2d", "'full'"});
  expect_error<ValueError>([&] { conv2d(x, w, {}, {1, 0}); }, {"conv2d", "stride (1, 0)"});
  expect_error<ValueError>([&] { conv2d(x, w, {}, 1, -1); },
                           {"conv2d", "padding (-1, -1)", "must be >= 0", "pass 0 for none"});
  // Every size parameter below 1 is refused, naming it, its value and the fix.
  expect_error<ValueError>([&] { conv2d(x, w, {}, 0); },
                           {"conv2d", "stride (0, 0)", "must be >= 1", "pass a positive int"});
  expect_error<ValueError>(
      [&] {
        conv2d(x, w, {}, 1, 0, {2, -1});
      },
      {"conv2d", "dilation (2, -1)", "must be >= 1"});
  expect_error<ValueError>([&] { conv2d(x, w, {}, 1, 0, 1, 0); },
                           {"conv2d", "groups (0)", "pass 1 for a plain convolution"});
  expect_error<ValueError>([&] { conv2d(x, w, {}, Size2()); }, {"conv2d", "stride (not given)"});
  expect_error<ShapeError>(
      [&] {
        conv2d_backward_input(random_tensor({2, 4, 5, 5}, 3, DType::Float32, d), w, x.shape());
      },
      {"conv2d_backward_input", "grad_out is [2, 4, 5, 5] float32", "input_shape is [2, 3, 8, 8]",
       "grad_out must be [2, 4, 6, 6]"});
  expect_error<ShapeError>(
      [&] {
        conv2d_backward_weight(random_tensor({2, 4, 6, 6}, 3, DType::Float32, d), x, {4, 3, 3});
      },
      {"conv2d_backward_weight", "weight_shape is [4, 3, 3]", "weight is [4, 3, 3], expected 4-D"});
  if (d.is_cuda())
    expect_error<DeviceError>([&] { conv2d(x, w.to(Device("cpu"))); },
                              {"conv2d", "x is [2, 3, 8, 8] float32 cuda:0",
                               "weight is [4, 3, 3, 3] float32 cpu"});
}

EMBER_INSTANTIATE_DEVICE_TEST(Conv2d);

// ---- pooling ------------------------------------------------------------------------------

using test::pool_out;
using test::PoolCase;

struct PoolReference {
  Shape out_shape;
  std::vector<double> values, indices, grad_x;
};

// Every window scanned in row-major order; max keeps the first of equal values or the first NaN.
// With count_include_pad the divisor counts the padding inside [-p, in + p).
PoolReference reference_pool(const PoolCase& c, const std::vector<double>& x, bool max,
                             bool count_include_pad, const std::vector<double>& gout) {
  const int64_t planes = c.x[0] * c.x[1], H = c.x[2], W = c.x[3];
  const Size2 s = c.stride.given() ? c.stride : c.kernel;
  const Size2 d = max ? c.dilation : Size2(1);
  const int64_t Ho = pool_out(H, c.kernel.h, s.h, c.padding.h, d.h, c.ceil_mode);
  const int64_t Wo = pool_out(W, c.kernel.w, s.w, c.padding.w, d.w, c.ceil_mode);
  PoolReference r;
  r.out_shape = {c.x[0], c.x[1], Ho, Wo};
  r.grad_x.assign(x.size(), 0.0);
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t oh = 0; oh < Ho; ++oh)
      for (int64_t ow = 0; ow < Wo; ++ow) {
        const double g = gout.empty() ? 0.0 : gout[r.values.size()];
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t best_at = -1, inside = 0, padded = 0;
        for (int64_t i = 0; i < c.kernel.h; ++i)
          for (int64_t j = 0; j < c.kernel.w; ++j) {
            const int64_t ih = oh * s.h - c.padding.h + i * d.h;
            const int64_t iw = ow * s.w - c.padding.w + j * d.w;
            if (ih < H + c.padding.h && iw < W + c.padding.w) ++padded;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const double v = x[size_t((pl * H + ih) * W + iw)];
            ++inside;
            sum += v;
            if (best_at < 0 || (!std::isnan(best) && (std::isnan(v) || v > best))) {
              best = v;
              best_at = ih * W + iw;
            }
          }
        if (max) {
          r.values.push_back(best);
          r.indices.push_back(double(best_at));
          if (best_at >= 0) r.grad_x[size_t(pl * H * W + best_at)] += g;  // -1: all padding
          continue;
        }
        const double divisor = double(count_include_pad ? padded : inside);
        r.values.push_back(sum / divisor);
        for (int64_t ih = std::max<int64_t>(oh * s.h - c.padding.h, 0);
             ih < std::min(oh * s.h - c.padding.h + c.kernel.h, H); ++ih)
          for (int64_t iw = std::max<int64_t>(ow * s.w - c.padding.w, 0);
               iw < std::min(ow * s.w - c.padding.w + c.kernel.w, W); ++iw)
            r.grad_x[size_t((pl * H + ih) * W + iw)] += g / divisor;
      }
  return r;
}

const std::vector<PoolCase>& pool_cases() {
  static const std::vector<PoolCase> cases = {
      {{2, 3, 7, 8}, 2, {}, 0, 1, false},                // stride defaults to the kernel
      {{1, 2, 7, 7}, 3, 2, 1, 1, false},                 // padding
      {{1, 2, 9, 8}, {3, 2}, {2, 1}, {1, 0}, 2, false},  // per-dim sizes, dilation (max only)
      {{1, 1, 8, 8}, 3, 2, 0, 1, true},                  // ceil_mode keeps a partial window
      {{1, 1, 5, 5}, 2, 2, 1, 1, true},                  // ceil_mode drops a window in the padding
      {{1, 1, 4, 4}, 3, 2, 1, 1, true},                  // ceil_mode and padding
      {{2, 3, 10, 12}, 2, 2, 0, 1, false},               // 2x2 stride 2: no bounds tests
      {{1, 2, 9, 11}, 2, 2, 0, 1, true},                 // ... and ceil_mode's partial windows
      {{2, 1, 1, 1}, 1, {}, 0, 1, false},                // 1 x 1
      {{0, 3, 4, 4}, 2, {}, 0, 1, false},                // empty batch
  };
  return cases;
}

std::string describe_pool(const PoolCase& c) {
  return "x " + shape_str(c.x) + " kernel " + std::to_string(c.kernel.h) + "," +
         std::to_string(c.kernel.w) + " stride " +
         (c.stride.given() ? std::to_string(c.stride.h) + "," + std::to_string(c.stride.w)
                           : "default") +
         " padding " + std::to_string(c.padding.h) + "," + std::to_string(c.padding.w) +
         " dilation " + std::to_string(c.dilation.h) + (c.ceil_mode ? " ceil" : "");
}

class Pool2d : public test::DeviceTest {};

TEST_P(Pool2d, MaxPoolMatchesWindowScan) {
  uint32_t seed = 1;
  for (const PoolCase& c : pool_cases())
    for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
      SCOPED_TRACE(describe_pool(c) + " " + dtype_name(t));
      Tensor x = random_tensor(c.x, seed++, t, device());
      auto [y, idx] = max_pool2d(x, c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode);
      Tensor gout = random_tensor(y.shape(), seed++, t, device());
      PoolReference r =
          reference_pool(c, x.to_vector<double>(), true, false, gout.to_vector<double>());
      ASSERT_EQ(y.shape(), r.out_shape);
      EXPECT_EQ(idx.dtype(), DType::Int64);
      expect_close(y, r.values, 0, 0);  // a max is one of the inputs, exactly
      expect_close(idx, r.indices, 0, 0);
      expect_close(max_pool2d_backward(gout, idx, c.x), r.grad_x, tolerance(t), tolerance(t));
    }
}

TEST_P(Pool2d, MaxPoolTiesTakeTheFirstAndNaNWins) {
  // Values from {0, 1, 2}: most windows hold ties.
  Tensor x = random_tensor({2, 2, 6, 7}, 5, DType::Float32, device(), 0, 3)
                 .to(DType::Int32)
                 .to(DType::Float32);
  const PoolCase c{{2, 2, 6, 7}, 3, 1, 1, 1, false};
  auto [y, idx] = max_pool2d(x, 3, 1, 1);
  PoolReference r = reference_pool(c, x.to_vector<double>(), true, false, {});
  expect_close(y, r.values, 0, 0);
  expect_close(idx, r.indices, 0, 0);
  // A constant plane: every window's index is its first in-bounds position.
  auto [cy, cidx] = max_pool2d(
      Tensor::from_vector(std::vector<double>(9, 1.0), {1, 1, 3, 3}).to(device(), DType::Float32),
      2, 1);
  expect_close(cidx, {0, 1, 3, 4}, 0, 0);
  // A NaN beats a larger value seen before it; of two NaNs the first is kept.
  const double nan = std::nan("");
  std::vector<double> v(16, 0.0);
  v[0] = 7;
  v[5] = v[11] = v[14] = nan;
  auto [ny, nidx] = max_pool2d(Tensor::from_vector(v, {1, 1, 4, 4}).to(device()), 2);
  expect_close(ny, {nan, 0, 0, nan}, 0, 0);
  expect_close(nidx, {5, 2, 8, 11}, 0, 0);
}

TEST_P(Pool2d, AvgPoolMatchesWindowScan) {
  uint32_t seed = 1;
  for (const PoolCase& c : pool_cases())
    for (bool include_pad : {true, false})
      for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
        SCOPED_TRACE(describe_pool(c) + " " + dtype_name(t) +
                     (include_pad ? " count_include_pad" : ""));
        Tensor x = random_tensor(c.x, seed++, t, device());
        Tensor y = avg_pool2d(x, c.kernel, c.stride, c.padding, c.ceil_mode, include_pad);
        Tensor gout = random_tensor(y.shape(), seed++, t, device());
        PoolReference r =
            reference_pool(c, x.to_vector<double>(), false, include_pad, gout.to_vector<double>());
        ASSERT_EQ(y.shape(), r.out_shape);
        expect_close(y, r.values, tolerance(t), tolerance(t));
        Tensor gx =
            avg_pool2d_backward(gout, c.x, c.kernel, c.stride, c.padding, c.ceil_mode, include_pad);
        expect_close(gx, r.grad_x, tolerance(t), tolerance(t));
      }
}

TEST_P(Pool2d, AvgPoolCeilModeDivisorsAsPyTorch) {
  // Ones [4, 4], kernel 3, stride 2, padding 1, ceil_mode: windows start at -1, 1 and 3; the
  // last is clipped at 4 + 1 = 5. Values worked out by hand.
  Tensor ones = Tensor::from_vector(std::vector<double>(16, 1.0), {1, 1, 4, 4}).to(device());
  expect_close(avg_pool2d(ones, 3, 2, 1, true, true),
               {4.0 / 9, 6.0 / 9, 2.0 / 6, 6.0 / 9, 1, 3.0 / 6, 2.0 / 6, 3.0 / 6, 1.0 / 4}, 1e-12,
               1e-12);
  expect_close(avg_pool2d(ones, 3, 2, 1, true, false), std::vector<double>(9, 1.0), 1e-12, 1e-12);
}

TEST_P(Pool2d, NonContiguousInput) {
  Tensor x = random_tensor({2, 5, 6, 3}, 1, DType::Float64, device()).permute({0, 3, 1, 2});
  const PoolCase c{{2, 3, 5, 6}, 2, 1, 1, 1, false};
  PoolReference rmax = reference_pool(c, x.to_vector<double>(), true, false, {});
  expect_close(max_pool2d(x, 2, 1, 1).values, rmax.values, 0, 0);
  PoolReference ravg = reference_pool(c, x.to_vector<double>(), false, true, {});
  expect_close(avg_pool2d(x, 2, 1, 1), ravg.values, 1e-12, 1e-12);
  Tensor g = random_tensor({2, 3, 6, 14}, 2, DType::Float64, device()).slice(3, 0, 14, 2);
  PoolReference rg = reference_pool(c, x.to_vector<double>(), false, true, g.to_vector<double>());
  expect_close(avg_pool2d_backward(g, c.x, 2, 1, 1), rg.grad_x, 1e-12, 1e-12);
}

// Every (kernel, stride, dilation, padding, ceil_mode) of a grid, on planes of even and odd
// sizes. It holds each specialised path (2x2 windows at stride 2, with and without ceil_mode's
// partial windows) and its near misses (2x2 at stride 2 with dilation, padding or another
// stride), which must take the general path: a fast path that ignores a parameter shows up here.
std::vector<PoolCase> pool_grid() {
  std::vector<PoolCase> grid;
  for (const Shape& shape : {Shape{2, 3, 8, 10}, Shape{1, 2, 7, 9}})
    for (Size2 k : {Size2(1), Size2(2), Size2(3), Size2(2, 3)})
      for (Size2 stride : {Size2(), Size2(1), Size2(2), Size2(3), Size2(2, 1)})
        for (Size2 dilation : {Size2(1), Size2(2), Size2(1, 2)})
          for (int64_t ph = 0; ph <= k.h / 2; ++ph)
            for (int64_t pw = 0; pw <= k.w / 2; ++pw)
              for (bool ceil_mode : {false, true})
                grid.push_back({shape, k, stride, {ph, pw}, dilation, ceil_mode});
  return grid;
}

// x of c.x's shape, contiguous or an NHWC tensor seen as NCHW.
Tensor pool_input(const PoolCase& c, bool contiguous, uint32_t seed, DType t, Device d) {
  if (contiguous) return random_tensor(c.x, seed, t, d);
  return random_tensor({c.x[0], c.x[2], c.x[3], c.x[1]}, seed, t, d).permute({0, 3, 1, 2});
}

// A grad_out of `shape`: contiguous, or every other column of a wider tensor.
Tensor pool_grad(Shape shape, bool contiguous, uint32_t seed, DType t, Device d) {
  if (contiguous) return random_tensor(shape, seed, t, d);
  shape[3] *= 2;
  return random_tensor(shape, seed, t, d).slice(3, 0, shape[3], 2);
}

// The grid forward and backward, max and avg (with and without count_include_pad), contiguous
// and not, against the window scan; on the CPU with every instruction set's kernels.
TEST_P(Pool2d, EveryParameterCombinationMatchesWindowScan) {
  std::vector<std::string> isas = {""};  // "": the backend's own kernels
  if (device().is_cpu()) isas = available_cpu_isas();
  const RestoreCpuIsa restore;
  uint32_t seed = 100;
  for (const std::string& isa : isas) {
    if (!isa.empty()) set_cpu_isa(isa);
    for (const PoolCase& c : pool_grid())
      for (DType t : {DType::Float64, DType::Float32})
        for (bool contiguous : {true, false}) {
          SCOPED_TRACE(isa + " " + describe_pool(c) + " dilation_w " +
                       std::to_string(c.dilation.w) + " " + dtype_name(t) +
                       (contiguous ? "" : " non-contiguous"));
          const Tensor x = pool_input(c, contiguous, seed++, t, device());
          const std::vector<double> xv = x.to_vector<double>();
          auto [y, idx] = max_pool2d(x, c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode);
          const Tensor g = pool_grad(y.shape(), contiguous, seed++, t, device());
          const PoolReference r = reference_pool(c, xv, true, false, g.to_vector<double>());
          ASSERT_EQ(y.shape(), r.out_shape);
          expect_exact(y, r.values);  // a max is one of the inputs
          expect_exact(idx, r.indices);
          expect_close(max_pool2d_backward(g, idx, c.x), r.grad_x, tolerance(t), tolerance(t));
          if (c.dilation.h != 1 || c.dilation.w != 1) continue;  // avg_pool2d has no dilation
          for (bool include_pad : {true, false}) {
            SCOPED_TRACE(include_pad ? "count_include_pad" : "");
            const Tensor a = avg_pool2d(x, c.kernel, c.stride, c.padding, c.ceil_mode, include_pad);
            const PoolReference ra =
                reference_pool(c, xv, false, include_pad, g.to_vector<double>());
            ASSERT_EQ(a.shape(), ra.out_shape);
            expect_close(a, ra.values, tolerance(t), tolerance(t));
            expect_close(avg_pool2d_backward(g, c.x, c.kernel, c.stride, c.padding, c.ceil_mode,
                                             include_pad),
                         ra.grad_x, tolerance(t), tolerance(t));
          }
        }
  }
}

TEST_P(Pool2d, BackwardMatchesFiniteDifferences) {
  const PoolCase c{{1, 2, 5, 6}, 3, 2, 1, 1, true};
  Tensor x = random_tensor(c.x, 1, DType::Float64, device());  // distinct values: max is smooth
  auto [y, idx] = max_pool2d(x, c.kernel, c.stride, c.padding, 1, c.ceil_mode);
  Tensor g = random_tensor(y.shape(), 2, DType::Float64, device());
  expect_close(max_pool2d_backward(g, idx, c.x),
               numeric_grad(
                   [&](const Tensor& v) {
                     return max_pool2d(v, c.kernel, c.stride, c.padding, 1, c.ceil_mode).values;
                   },
                   x, g),
               1e-6, 1e-6);
  for (bool include_pad : {true, false})
    expect_close(avg_pool2d_backward(g, c.x, c.kernel, c.stride, c.padding, true, include_pad),
                 numeric_grad(
                     [&](const Tensor& v) {
                       return avg_pool2d(v, c.kernel, c.stride, c.padding, true, include_pad);
                     },
                     x, g),
                 1e-6, 1e-6);
  Tensor ga = random_tensor({1, 2, 3, 4}, 3, DType::Float64, device());
  expect_close(adaptive_avg_pool2d_backward(ga, c.x),
               numeric_grad(
                   [&](const Tensor& v) {
                     return adaptive_avg_pool2d(v, {3, 4});
                   },
                   x, ga),
               1e-6, 1e-6);
}

// Adaptive windows: output i covers input [floor(i * in / out), ceil((i + 1) * in / out)).
std::vector<double> reference_adaptive(const Shape& xs, const std::vector<double>& x, int64_t Ho,
                                       int64_t Wo, const std::vector<double>& gout,
                                       std::vector<double>& grad_x) {
  const int64_t planes = xs[0] * xs[1], H = xs[2], W = xs[3];
  std::vector<double> out;
  grad_x.assign(x.size(), 0.0);
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t oh = 0; oh < Ho; ++oh)
      for (int64_t ow = 0; ow < Wo; ++ow) {
        const int64_t h0 = int64_t(std::floor(double(oh * H) / double(Ho)));
        const int64_t h1 = int64_t(std::ceil(double((oh + 1) * H) / double(Ho)));
        const int64_t w0 = int64_t(std::floor(double(ow * W) / double(Wo)));
        const int64_t w1 = int64_t(std::ceil(double((ow + 1) * W) / double(Wo)));
        const double count = double((h1 - h0) * (w1 - w0));
        double sum = 0;
        for (int64_t ih = h0; ih < h1; ++ih)
          for (int64_t iw = w0; iw < w1; ++iw) {
            sum += x[size_t((pl * H + ih) * W + iw)];
            grad_x[size_t((pl * H + ih) * W + iw)] += gout[out.size()] / count;
          }
        out.push_back(sum / count);
      }
  return out;
}

TEST_P(Pool2d, AdaptiveAvgPoolMatchesWindowScan) {
  const std::vector<std::pair<Shape, Size2>> cases = {{{2, 3, 7, 5}, {3, 2}},
                                                      {{1, 2, 6, 6}, 1},
                                                      {{1, 2, 7, 5}, {7, 5}},
                                                      {{1, 1, 3, 4}, {5, 7}},
                                                      {{0, 2, 4, 4}, 2}};
  uint32_t seed = 1;
  for (const auto& [shape, size] : cases)
    for (DType t : {DType::Float32, DType::Float64, DType::BFloat16}) {
      SCOPED_TRACE(shape_str(shape) + " -> " + std::to_string(size.h) + "," +
                   std::to_string(size.w) + " " + dtype_name(t));
      Tensor x = random_tensor(shape, seed++, t, device());
      Tensor y = adaptive_avg_pool2d(x, size);
      ASSERT_EQ(y.shape(), (Shape{shape[0], shape[1], size.h, size.w}));
      Tensor g = random_tensor(y.shape(), seed++, t, device());
      std::vector<double> gx;
      std::vector<double> ref = reference_adaptive(shape, x.to_vector<double>(), size.h, size.w,
                                                   g.to_vector<double>(), gx);
      expect_close(y, ref, tolerance(t), tolerance(t));
      expect_close(adaptive_avg_pool2d_backward(g, shape), gx, tolerance(t), tolerance(t));
    }
}

// A valid avg_pool2d(x, 2) output, as a grad_out.
Tensor y_for(const Tensor& x) { return avg_pool2d(x, 2); }

TEST_P(Pool2d, ErrorsNameTheOperands) {
  const Device d = device();
  Tensor x = random_tensor({1, 2, 5, 5}, 1, DType::Float32, d);
  expect_error<ShapeError>(
      [&] {
        max_pool2d(random_tensor({1, 1, 2, 2}, 1, DType::Float32, d), 3);
      },
      {"max_pool2d", "x is [1, 1, 2, 2] float32 " + d.str(),
       "larger than the padded input (2 x 2)"});
  expect_error<ValueError>([&] { max_pool2d(x, 2, 1, 2); },
                           {"max_pool2d", "padding (2, 2)", "at most half of kernel_size (2, 2)"});
  expect_error<ValueError>([&] { avg_pool2d(x, 2, {1, 0}); }, {"avg_pool2d", "stride (1, 0)"});
  // An explicit stride of 0 is an error, not "the default" (that is Size2(), not given).
  expect_error<ValueError>([&] { avg_pool2d(x, 2, 0); },
                           {"avg_pool2d", "stride (0, 0)", "must be >= 1", "pass a positive int"});
  expect_error<ValueError>([&] { max_pool2d(x, 2, 0); }, {"max_pool2d", "stride (0, 0)"});
  expect_error<ValueError>([&] { avg_pool2d_backward(y_for(x), x.shape(), 2, 0); },
                           {"avg_pool2d_backward", "stride (0, 0)"});
  expect_error<ValueError>([&] { max_pool2d(x, 2, {}, 0, 0); },
                           {"max_pool2d", "dilation (0, 0)", "must be >= 1"});
  expect_error<ValueError>(
      [&] {
        max_pool2d(x, 2, {}, 0, {1, -2});
      },
      {"max_pool2d", "dilation (1, -2)"});
  expect_error<ValueError>([&] { avg_pool2d(x, {-1, 2}); }, {"avg_pool2d", "kernel_size (-1, 2)"});
  expect_error<ValueError>([&] { max_pool2d(x, 3, 1, -1); },
                           {"max_pool2d", "padding (-1, -1)", "must be >= 0"});
  expect_error<ValueError>(
      [&] {
        avg_pool2d(x, {3, 4}, 1, {1, 3});
      },
      {"avg_pool2d", "padding (1, 3)", "at most half of kernel_size (3, 4)",
       "use padding <= kernel_size // 2 = (1, 2)"});
  expect_error<ValueError>([&] { max_pool2d(x, 0); }, {"max_pool2d", "kernel_size (0, 0)"});
  expect_error<ShapeError>([&] { avg_pool2d(x.select(0, 0), 2); },
                           {"avg_pool2d", "x is [2, 5, 5] float32", "4-D", "unsqueeze(0)"});
  expect_error<DTypeError>([&] { max_pool2d(x.to(DType::Int64), 2); },
                           {"max_pool2d", "x is [1, 2, 5, 5] int64", "floating dtype"});
  auto [y, idx] = max_pool2d(x, 2);
  expect_error<DTypeError>([&] { max_pool2d_backward(y, idx.to(DType::Int32), x.shape()); },
                           {"max_pool2d_backward", "indices is [1, 2, 2, 2] int32",
                            "indices must be int64"});
  expect_error<ShapeError>(
      [&] {
        max_pool2d_backward(y, idx, {1, 3, 5, 5});
      },
      {"max_pool2d_backward", "input_shape is [1, 3, 5, 5]"});
  if (d.is_cpu())  // the CUDA kernel cannot report a bad index without a host round trip
    expect_error<IndexError>(
        [&] {
          max_pool2d_backward(y, idx, {1, 2, 2, 2});
        },
        {"max_pool2d_backward", "outside [0, H * W) = [0, 4)", "pass the indices max_pool2d"});
  expect_error<ShapeError>([&] { avg_pool2d_backward(y, x.shape(), 3); },
                           {"avg_pool2d_backward", "grad_out is [1, 2, 2, 2] float32",
                            "grad_out must be [1, 2, 1, 1]"});
  expect_error<ValueError>(
      [&] {
        adaptive_avg_pool2d(x, {0, 2});
      },
      {"adaptive_avg_pool2d", "output_size (0, 2)"});
  expect_error<ShapeError>(
      [&] {
        adaptive_avg_pool2d_backward(y, {2, 2, 5, 5});
      },
      {"adaptive_avg_pool2d_backward", "input_shape is [2, 2, 5, 5]"});
}

EMBER_INSTANTIATE_DEVICE_TEST(Pool2d);

}  // namespace
}  // namespace ember
