// test_max_pool_offsets.cpp — max pooling's compact form (max_pool2d_with_offsets, its backward
// and its conversion to int64 indices) against a brute-force window scan in double, and against
// the int64-index path it stands in for: every floating dtype, contiguous and not, ties, NaN and
// -inf, padding, dilation, stride, ceil_mode, odd sizes, and windows past 256 elements (int32
// offsets).
#include <cmath>
#include <limits>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;
using test::expect_exact;
using test::random_tensor;

using test::pool_out;
using Case = test::PoolCase;

std::string describe(const Case& c) {
  auto pair = [](Size2 s) { return std::to_string(s.h) + "," + std::to_string(s.w); };
  return "x " + shape_str(c.x) + " kernel " + pair(c.kernel) + " stride " + pair(c.stride) +
         " padding " + pair(c.padding) + " dilation " + pair(c.dilation) +
         (c.ceil_mode ? " ceil" : "");
}

struct Reference {
  Shape out_shape;
  std::vector<double> values, offsets, indices, grad_x;
};

// Every window scanned tap by tap in row-major order: the first NaN wins, else the first of the
// largest values. A window with no input element: -inf, offset 0, index -1, no gradient.
Reference scan(const Case& c, const std::vector<double>& x, const std::vector<double>& g) {
  const int64_t planes = c.x[0] * c.x[1], H = c.x[2], W = c.x[3];
  const int64_t Ho = pool_out(H, c.kernel.h, c.stride.h, c.padding.h, c.dilation.h, c.ceil_mode);
  const int64_t Wo = pool_out(W, c.kernel.w, c.stride.w, c.padding.w, c.dilation.w, c.ceil_mode);
  Reference r;
  r.out_shape = {c.x[0], c.x[1], Ho, Wo};
  r.grad_x.assign(x.size(), 0.0);
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t oh = 0; oh < Ho; ++oh)
      for (int64_t ow = 0; ow < Wo; ++ow) {
        double best = -std::numeric_limits<double>::infinity();
        int64_t tap = -1, at = -1;
        for (int64_t i = 0; i < c.kernel.h; ++i)
          for (int64_t j = 0; j < c.kernel.w; ++j) {
            const int64_t ih = oh * c.stride.h - c.padding.h + i * c.dilation.h;
            const int64_t iw = ow * c.stride.w - c.padding.w + j * c.dilation.w;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const double v = x[size_t((pl * H + ih) * W + iw)];
            if (tap < 0 || (!std::isnan(best) && (std::isnan(v) || v > best))) {
              best = v;
              tap = i * c.kernel.w + j;
              at = ih * W + iw;
            }
          }
        const size_t q = r.values.size();
        r.values.push_back(best);
        r.offsets.push_back(double(tap < 0 ? 0 : tap));
        r.indices.push_back(double(at));
        if (at >= 0 && !g.empty()) r.grad_x[size_t(pl * H * W + at)] += g[q];
      }
  return r;
}

double tolerance(DType t) {
  return t == DType::Float64   ? 1e-12
         : t == DType::Float32 ? 1e-5
         : t == DType::Float16 ? 1e-2
                               : 5e-2;
}

// x of c.x's shape: contiguous, or an NHWC tensor seen as NCHW.
Tensor input(const Case& c, bool contiguous, uint32_t seed, DType t, Device d) {
  if (contiguous) return random_tensor(c.x, seed, t, d);
  return random_tensor({c.x[0], c.x[2], c.x[3], c.x[1]}, seed, t, d).permute({0, 3, 1, 2});
}

// Checks one case on x: offsets, values, indices and both backwards against the scan and
// against the int64-index path.
void check(const Case& c, const Tensor& x, uint32_t seed, bool contiguous_grad) {
  const DType t = x.dtype();
  const auto [values, offsets] =
      max_pool2d_with_offsets(x, c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode);
  Shape gshape = values.shape();
  if (!contiguous_grad) gshape[3] *= 2;
  Tensor g = random_tensor(gshape, seed, t, x.device());
  if (!contiguous_grad) g = g.slice(3, 0, gshape[3], 2);
  const Reference r = scan(c, x.to_vector<double>(), g.to_vector<double>());
  ASSERT_EQ(values.shape(), r.out_shape);
  EXPECT_EQ(offsets.dtype(), max_pool2d_offsets_dtype(c.kernel));
  expect_exact(values, r.values);  // a max is one of the inputs
  expect_exact(offsets, r.offsets);
  const Tensor indices = max_pool2d_offsets_to_indices(offsets, c.x, c.kernel, c.stride, c.padding,
                                                       c.dilation, c.ceil_mode);
  EXPECT_EQ(indices.dtype(), DType::Int64);
  expect_exact(indices, r.indices);
  const MaxPoolResult public_form =
      max_pool2d(x, c.kernel, c.stride, c.padding, c.dilation, c.ceil_mode);
  expect_exact(public_form.values, values.to_vector<double>());
  expect_exact(public_form.indices, indices.to_vector<double>());
  const Tensor gx = max_pool2d_offsets_backward(g, offsets, c.x, c.kernel, c.stride, c.padding,
                                                c.dilation, c.ceil_mode);
  ASSERT_EQ(gx.shape(), c.x);
  expect_close(gx, r.grad_x, tolerance(t), tolerance(t));
  expect_close(gx, max_pool2d_backward(g, public_form.indices, c.x), tolerance(t), tolerance(t));
}

class MaxPoolOffsets : public test::DeviceTest {};

// A grid of geometries on even and odd planes: 2x2 at stride 2 (the kernels' fast paths) and its
// near misses (padding, dilation, another stride, ceil_mode's partial windows).
TEST_P(MaxPoolOffsets, EveryGeometryMatchesTheWindowScanAndTheIndexPath) {
  uint32_t seed = 1;
  for (const Shape& shape : {Shape{2, 3, 8, 10}, Shape{1, 2, 7, 9}})
    for (Size2 k : {Size2(1), Size2(2), Size2(3), Size2(2, 3)})
      for (Size2 stride : {Size2(1), Size2(2), Size2(3), Size2(2, 1)})
        for (Size2 dilation : {Size2(1), Size2(2), Size2(1, 2)})
          for (int64_t pad = 0; pad <= k.h / 2 && pad <= k.w / 2; ++pad)
            for (bool ceil_mode : {false, true})
              for (bool contiguous : {true, false}) {
                const Case c{shape, k, stride, pad, dilation, ceil_mode};
                SCOPED_TRACE(describe(c) + (contiguous ? "" : " non-contiguous"));
                check(c, input(c, contiguous, seed, DType::Float64, device()), seed + 1,
                      contiguous);
                seed += 2;
              }
}

TEST_P(MaxPoolOffsets, EveryFloatingDtype) {
  const Case cases[] = {{{2, 3, 9, 11}, 2, 2, 0, 1, false},  // the usual pool, odd sizes
                        {{2, 3, 9, 11}, 3, 2, 1, 1, true},
                        {{1, 2, 9, 8}, {3, 2}, {2, 1}, {1, 0}, 2, false}};
  uint32_t seed = 1000;
  for (DType t : {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16})
    for (const Case& c : cases)
      for (bool contiguous : {true, false}) {
        SCOPED_TRACE(describe(c) + " " + dtype_name(t) + (contiguous ? "" : " non-contiguous"));
        check(c, input(c, contiguous, seed, t, device()), seed + 1, contiguous);
        seed += 2;
      }
}

// Values from {0, 1, 2} (ties in most windows), with -inf and NaN planted: ties keep the first
// tap, a NaN beats anything before or after it, -inf is a value like any other.
TEST_P(MaxPoolOffsets, TiesNaNAndMinusInfinity) {
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  std::vector<double> v =
      random_tensor({2, 2, 6, 7}, 5, DType::Float64, Device(), 0, 3).to_vector<double>();
  for (double& e : v) e = std::floor(e);
  v[3] = v[17] = v[40] = nan;
  for (size_t i : {0, 1, 7, 8, 60, 61, 67, 68}) v[i] = -inf;  // a window of -inf only
  for (DType t : {DType::Float64, DType::Float32, DType::Float16, DType::BFloat16})
    for (const Case& c :
         {Case{{2, 2, 6, 7}, 2, 2, 0, 1, false}, Case{{2, 2, 6, 7}, 3, 1, 1, 1, false},
          Case{{2, 2, 6, 7}, 2, 2, 1, 1, true}}) {
      SCOPED_TRACE(describe(c) + " " + dtype_name(t));
      check(c, Tensor::from_vector(v, c.x).to(device(), t), 7, true);
    }
}

// A window with no input element (dilation steps over the plane): -inf, offset 0 (a tap in the
// padding), index -1, and no gradient routed anywhere.
TEST_P(MaxPoolOffsets, WindowWithNoInputElement) {
  const Case c{{1, 1, 2, 2}, 2, 1, 1, 3, false};
  const Tensor x = random_tensor(c.x, 3, DType::Float32, device());
  check(c, x, 4, true);
  const auto [values, offsets] = max_pool2d_with_offsets(x, 2, 1, 1, 3);
  expect_exact(values, {-std::numeric_limits<double>::infinity()});
  expect_exact(max_pool2d_offsets_to_indices(offsets, c.x, 2, 1, 1, 3), {-1});
}

// Past 256 taps the offsets are int32; 256 taps still fit uint8 (offsets up to 255, which the
// planted maximum at the last tap of the first window uses).
TEST_P(MaxPoolOffsets, LargeWindowsFallBackToInt32) {
  EXPECT_EQ(max_pool2d_offsets_dtype(16), DType::UInt8);
  EXPECT_EQ(max_pool2d_offsets_dtype({16, 17}), DType::Int32);
  EXPECT_EQ(max_pool2d_offsets_dtype({1, 257}), DType::Int32);
  EXPECT_EQ(max_pool2d_offsets_dtype({65536, 65537}), DType::Int64);
  uint32_t seed = 50;
  for (const Case& c : {Case{{1, 2, 16, 16}, 16, 1, 0, 1, false},
                        Case{{2, 2, 21, 19}, {17, 16}, {2, 3}, {8, 8}, 1, true},
                        Case{{1, 3, 40, 37}, 18, 5, 4, {2, 1}, false}})
    for (bool contiguous : {true, false}) {
      SCOPED_TRACE(describe(c) + (contiguous ? "" : " non-contiguous"));
      check(c, input(c, contiguous, seed, DType::Float32, device()), seed + 1, contiguous);
      seed += 2;
    }
  std::vector<double> v(256, 0.0);
  v[255] = 1;
  const auto [values, offsets] =
      max_pool2d_with_offsets(Tensor::from_vector(v, {1, 1, 16, 16}).to(device()), 16);
  EXPECT_EQ(offsets.dtype(), DType::UInt8);
  expect_exact(offsets, {255});
}

TEST_P(MaxPoolOffsets, ErrorsNameTheOp) {
  const Tensor x = random_tensor({1, 2, 5, 5}, 1, DType::Float32, device());
  const auto [y, offsets] = max_pool2d_with_offsets(x, 2);
  expect_error<DTypeError>(
      [&] { max_pool2d_offsets_backward(y, offsets.to(DType::Int32), x.shape(), 2); },
      {"max_pool2d_offsets_backward", "offsets must be uint8 for a 2 x 2 window"});
  expect_error<ShapeError>(
      [&] {
        max_pool2d_offsets_backward(y, offsets, {1, 2, 7, 7}, 2);
      },
      {"max_pool2d_offsets_backward", "offsets must be [1, 2, 3, 3]"});
  expect_error<ShapeError>([&] { max_pool2d_offsets_to_indices(offsets, x.shape(), 2, 1); },
                           {"max_pool2d_offsets_to_indices", "offsets must be [1, 2, 4, 4]"});
  const Tensor bad = offsets.clone().fill_(4);  // a 2 x 2 window has taps 0..3
  expect_error<IndexError>(
      [&] {
        Tensor gx = max_pool2d_offsets_backward(y, bad, x.shape(), 2);
        gx.to(Device());  // a CUDA kernel's error surfaces at the next synchronising point
      },
      {"max_pool2d_offsets_backward", "outside [0, kernel_h * kernel_w) = [0, 4)"});
  expect_error<IndexError>([&] { max_pool2d_offsets_to_indices(bad, x.shape(), 2).to(Device()); },
                           {"max_pool2d_offsets_to_indices",
                            "outside [0, kernel_h * kernel_w) = [0, 4)"});
}

EMBER_INSTANTIATE_DEVICE_TEST(MaxPoolOffsets);

}  // namespace
}  // namespace ember
