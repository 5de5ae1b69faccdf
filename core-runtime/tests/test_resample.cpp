// test_resample.cpp — interpolate and interpolate_backward against PyTorch's formulas written out
// here as double-precision loops, values derived by hand, and the adjoint identity
// <backward(g), x> == <g, forward(x)>.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;
using test::random_tensor;

class Resample : public test::DeviceTest {};

struct Config {
  std::string mode;
  bool align_corners;
  std::optional<std::vector<int64_t>> size;
  std::optional<std::vector<double>> scale;
};

const std::vector<Config>& configs() {
  using Sizes = std::vector<int64_t>;
  using Scales = std::vector<double>;
  static const std::vector<Config> all = {
      {"nearest", false, Sizes{8, 3}, std::nullopt},
      {"bilinear", false, Sizes{8, 3}, std::nullopt},
      {"bilinear", true, Sizes{8, 3}, std::nullopt},
      {"nearest", false, Sizes{5, 7}, std::nullopt},  // same size
      {"bilinear", false, Sizes{5, 7}, std::nullopt},
      {"bilinear", true, Sizes{2, 11}, std::nullopt},
      {"nearest", false, Sizes{1, 1}, std::nullopt},
      {"bilinear", false, Sizes{1, 1}, std::nullopt},
      {"bilinear", true, Sizes{1, 1}, std::nullopt},
      {"nearest", false, std::nullopt, Scales{2, 2}},
      {"bilinear", false, std::nullopt, Scales{2, 2}},
      {"nearest", false, std::nullopt, Scales{1.5, 0.5}},
      {"bilinear", false, std::nullopt, Scales{0.7, 2.3}},
      {"bilinear", true, std::nullopt, Scales{1.7, 0.6}},
  };
  return all;
}

std::string name(const Config& c) {
  std::string s = c.mode + (c.align_corners ? " align_corners" : "");
  if (c.size) s += " size " + shape_str(*c.size);
  if (c.scale) s += " scale " + std::to_string((*c.scale)[0]) + "," + std::to_string((*c.scale)[1]);
  return s;
}

// ---- PyTorch's rules, written out ----

int64_t out_size(int64_t in, const Config& c, size_t axis) {
  return c.size ? (*c.size)[axis] : int64_t(std::floor(double(in) * (*c.scale)[axis]));
}

// The input positions and weights output position o reads along one axis.
std::vector<std::pair<int64_t, double>> taps(int64_t o, int64_t in, int64_t out, const Config& c,
                                             size_t axis) {
  const double scale = c.scale ? (*c.scale)[axis] : 0.0;
  if (c.mode == "nearest") {  // PyTorch computes this index in float32
    const float step = scale > 0 ? float(1.0 / scale) : float(in) / float(out);
    return {{std::min<int64_t>(int64_t(std::floor(float(o) * step)), in - 1), 1.0}};
  }
  double src;
  if (c.align_corners) {
    src = out > 1 ? double(o) * double(in - 1) / double(out - 1) : 0.0;
  } else {
    const double step = scale > 0 ? 1.0 / scale : double(in) / double(out);
    src = std::max((double(o) + 0.5) * step - 0.5, 0.0);
  }
  const int64_t i0 = int64_t(std::floor(src));
  const double lambda = src - double(i0);
  return {{i0, 1 - lambda}, {std::min(i0 + 1, in - 1), lambda}};
}

// x: [N, C, H, W] row-major values -> the output, row-major.
std::vector<double> forward_reference(const std::vector<double>& x, const Shape& s,
                                      const Config& c) {
  const int64_t ho = out_size(s[2], c, 0), wo = out_size(s[3], c, 1);
  std::vector<double> out;
  for (int64_t p = 0; p < s[0] * s[1]; ++p)
    for (int64_t i = 0; i < ho; ++i)
      for (int64_t j = 0; j < wo; ++j) {
        double v = 0;
        for (auto [hi, hw] : taps(i, s[2], ho, c, 0))
          for (auto [wi, ww] : taps(j, s[3], wo, c, 1))
            v += hw * ww * x[size_t((p * s[2] + hi) * s[3] + wi)];
        out.push_back(v);
      }
  return out;
}

// g: the output's gradient, row-major -> the input's gradient (each tap scattered back).
std::vector<double> backward_reference(const std::vector<double>& g, const Shape& s,
                                       const Config& c) {
  const int64_t ho = out_size(s[2], c, 0), wo = out_size(s[3], c, 1);
  std::vector<double> grad(size_t(shape_numel(s)), 0.0);
  for (int64_t p = 0; p < s[0] * s[1]; ++p)
    for (int64_t i = 0; i < ho; ++i)
      for (int64_t j = 0; j < wo; ++j)
        for (auto [hi, hw] : taps(i, s[2], ho, c, 0))
          for (auto [wi, ww] : taps(j, s[3], wo, c, 1))
            grad[size_t((p * s[2] + hi) * s[3] + wi)] += hw * ww * g[size_t((p * ho + i) * wo + j)];
  return grad;
}

Tensor run(const Tensor& x, const Config& c) {
  return interpolate(x, c.size, c.scale, c.mode, c.align_corners);
}

Tensor run_backward(const Tensor& g, const Shape& in, const Config& c) {
  return interpolate_backward(g, in, c.size, c.scale, c.mode, c.align_corners);
}

// Tolerance for a result stored in dt (values of magnitude about 1).
double tolerance(DType dt) {
  switch (dt) {
    case DType::Float64:
      return 1e-12;
    case DType::Float32:
      return 1e-5;  // the steps are float32, as in PyTorch
    case DType::Float16:
      return 2e-3;
    default:
      return 1.6e-2;  // bfloat16
  }
}

const DType kFloating[] = {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};

Tensor image(const std::vector<double>& v, const Shape& s, Device dev) {
  return Tensor::from_vector(v, s).to(dev);
}

// ---------------- values derived by hand ----------------

TEST_P(Resample, HandDerivedSmallCases) {
  Tensor x = image({1, 2, 3, 4}, {1, 1, 2, 2}, device());
  // bilinear, pixel centres: a row [1, 2] becomes [1, 1.25, 1.75, 2]; a column [1, 3] becomes
  // [1, 1.5, 2.5, 3]
  std::vector<double> want;
  for (double r : {0.0, 0.5, 1.5, 2.0})
    for (double c : {1.0, 1.25, 1.75, 2.0}) want.push_back(r + c);
  expect_close(interpolate(x, std::vector<int64_t>{4, 4}, std::nullopt, "bilinear"), want, 1e-6);
  // the same through scale_factor 2
  expect_close(interpolate(x, std::nullopt, std::vector<double>{2, 2}, "bilinear"), want, 1e-6);
  // align_corners: the corners stay, [1, 2] becomes [1, 4/3, 5/3, 2]
  want.clear();
  for (double r : {0.0, 2.0 / 3, 4.0 / 3, 2.0})
    for (double c : {1.0, 4.0 / 3, 5.0 / 3, 2.0}) want.push_back(r + c);
  expect_close(interpolate(x, std::vector<int64_t>{4, 4}, std::nullopt, "bilinear", true), want,
               1e-6);
  // nearest: [1, 2] -> [1, 1, 2, 2]; [a, b, c] -> 2 wide: [a, b]; [a, b] -> 3 wide: [a, a, b]
  expect_close(interpolate(x, std::vector<int64_t>{1, 4}), std::vector<double>{1, 1, 2, 2}, 0);
  Tensor row3 = image({5, 6, 7}, {1, 1, 1, 3}, device());
  expect_close(interpolate(row3, std::vector<int64_t>{1, 2}), std::vector<double>{5, 6}, 0);
  expect_close(interpolate(x, std::vector<int64_t>{1, 3}), std::vector<double>{1, 1, 2}, 0);
  // scale_factor 1.7 on [0, 1, 2]: 5 outputs at max((o + 0.5) / 1.7 - 0.5, 0), clamped to 2
  // (the given scale, not 3 / 5, which would give 0.4 at o = 1)
  Tensor ramp = image({0, 1, 2}, {1, 1, 1, 3}, device());
  Tensor r = interpolate(ramp, std::nullopt, std::vector<double>{1, 1.7}, "bilinear");
  EXPECT_EQ(r.shape(), (Shape{1, 1, 1, 5}));
  expect_close(r, std::vector<double>{0, 1.5 / 1.7 - 0.5, 2.5 / 1.7 - 0.5, 3.5 / 1.7 - 0.5, 2},
               1e-6);
  // one input pixel: every output is that pixel
  Tensor one = image({3.5}, {1, 1, 1, 1}, device());
  for (bool ac : {false, true})
    expect_close(interpolate(one, std::vector<int64_t>{2, 3}, std::nullopt, "bilinear", ac),
                 std::vector<double>(6, 3.5), 0);
  // backward of nearest 2x2 -> 4x4: every input pixel was read 4 times
  Tensor g = ones({1, 1, 4, 4}, DType::Float32, device());
  expect_close(interpolate_backward(g, {1, 1, 2, 2}, std::vector<int64_t>{4, 4}),
               std::vector<double>(4, 4.0), 0);
}

// ---------------- against the reference loops ----------------

TEST_P(Resample, ForwardMatchesReferenceForEveryDTypeAndLayout) {
  const Shape s{2, 3, 5, 7};
  Tensor base = random_tensor(s, 1, DType::Float64, device());
  // channels-last storage viewed as [N, C, H, W], and every other row of a taller image
  Tensor nhwc = base.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  Tensor tall = random_tensor({2, 3, 10, 7}, 2, DType::Float64, device());
  Tensor stepped = tall.slice(2, 0, 10, 2);
  for (const Config& c : configs())
    for (DType dt : kFloating)
      for (const Tensor& x : {base, nhwc, stepped}) {
        Tensor xd = x.to(dt);
        Tensor got = run(xd, c);
        EXPECT_EQ(got.dtype(), dt);
        EXPECT_EQ(got.shape(), (Shape{2, 3, out_size(5, c, 0), out_size(7, c, 1)})) << name(c);
        SCOPED_TRACE(name(c) + " " + dtype_name(dt) + (x.is_contiguous() ? "" : " strided"));
        expect_close(got, forward_reference(xd.to_vector<double>(), s, c), tolerance(dt),
                     tolerance(dt));
      }
}

TEST_P(Resample, BackwardMatchesReferenceForEveryDType) {
  const Shape s{2, 3, 5, 7};
  for (const Config& c : configs()) {
    const Shape os{2, 3, out_size(5, c, 0), out_size(7, c, 1)};
    Tensor g = random_tensor(os, 3, DType::Float64, device());
    for (DType dt : kFloating) {
      Tensor gd = g.to(dt);
      SCOPED_TRACE(name(c) + " " + dtype_name(dt));
      Tensor got = run_backward(gd, s, c);
      EXPECT_EQ(got.shape(), s);
      EXPECT_EQ(got.dtype(), dt);
      // a gradient sums up to about (out / in)^2 terms: scale the tolerance with it
      expect_close(got, backward_reference(gd.to_vector<double>(), s, c), 4 * tolerance(dt),
                   tolerance(dt));
    }
    // a non-contiguous grad_output: every other channel of a larger one
    Tensor wide = random_tensor({2, 6, os[2], os[3]}, 4, DType::Float64, device());
    Tensor gs = wide.slice(1, 0, 6, 2);
    ASSERT_FALSE(gs.is_contiguous());
    expect_close(run_backward(gs, s, c), backward_reference(gs.to_vector<double>(), s, c), 1e-12);
  }
}

TEST_P(Resample, BackwardIsTheAdjointOfForward) {
  const Shape s{2, 2, 6, 4};
  for (const Config& c : configs()) {
    Tensor x = random_tensor(s, 4, DType::Float64, device());
    Tensor y = run(x, c);
    Tensor g = random_tensor(y.shape(), 5, DType::Float64, device());
    Tensor gx = run_backward(g, s, c);
    const std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>(),
                              gv = g.to_vector<double>(), gxv = gx.to_vector<double>();
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < xv.size(); ++i) lhs += gxv[i] * xv[i];
    for (size_t i = 0; i < yv.size(); ++i) rhs += gv[i] * yv[i];
    EXPECT_NEAR(lhs, rhs, 1e-10 * (1 + std::fabs(rhs))) << name(c);
  }
}

TEST_P(Resample, LargeAndEmptyAndOutputsGiven) {
  // enough planes and pixels to be split between threads
  const Shape s{4, 8, 40, 50};
  const Config c{"bilinear", false, std::vector<int64_t>{65, 33}, std::nullopt};
  Tensor x = random_tensor(s, 6, DType::Float32, device());
  expect_close(run(x, c), forward_reference(x.to_vector<double>(), s, c), 1e-5, 1e-5);
  Tensor g = random_tensor({4, 8, 65, 33}, 7, DType::Float32, device());
  expect_close(run_backward(g, s, c), backward_reference(g.to_vector<double>(), s, c), 2e-5, 2e-5);
  // empty batch or channels
  EXPECT_EQ(interpolate(Tensor::empty({0, 3, 4, 4}, DType::Float32, device()),
                        std::vector<int64_t>{8, 2})
                .shape(),
            (Shape{0, 3, 8, 2}));
  EXPECT_EQ(interpolate_backward(Tensor::empty({2, 0, 8, 2}, DType::Float32, device()),
                                 {2, 0, 4, 4}, std::vector<int64_t>{8, 2}, std::nullopt, "bilinear")
                .shape(),
            (Shape{2, 0, 4, 4}));
  // a strided out and grad_input
  const Shape small{1, 2, 3, 3};
  const Config up{"bilinear", true, std::vector<int64_t>{5, 4}, std::nullopt};
  Tensor xs = random_tensor(small, 8, DType::Float64, device());
  Tensor out = Tensor::empty({1, 2, 5, 8}, DType::Float64, device()).slice(3, 0, 8, 2);
  ASSERT_FALSE(out.is_contiguous());
  const int64_t v0 = out.version();
  interpolate_out(out, xs, up.size, up.scale, up.mode, up.align_corners);
  EXPECT_GT(out.version(), v0);
  expect_close(out, forward_reference(xs.to_vector<double>(), small, up), 1e-12);
  Tensor gs = random_tensor({1, 2, 5, 4}, 9, DType::Float64, device());
  Tensor gin = Tensor::empty({1, 2, 3, 6}, DType::Float64, device()).slice(3, 1, 6, 2);
  gin.fill_(123);  // overwritten, not added to
  interpolate_backward_out(gin, gs, small, up.size, up.scale, up.mode, up.align_corners);
  expect_close(gin, backward_reference(gs.to_vector<double>(), small, up), 1e-12);
}

TEST_P(Resample, Errors) {
  Tensor x = zeros({1, 2, 3, 3}, DType::Float32, device());
  const std::vector<int64_t> size{4, 4};
  expect_error<ShapeError>(
      [&] {
        interpolate(zeros({2, 3, 3}, DType::Float32, device()), size);
      },
      {"interpolate", "x is [2, 3, 3] float32", "4 dims"});
  expect_error<DTypeError>(
      [&] {
        interpolate(zeros({1, 1, 2, 2}, DType::Int64, device()), size);
      },
      {"interpolate", "x is [1, 1, 2, 2] int64", "floating"});
  expect_error<ValueError>(
      [&] {
        interpolate(x, size, std::vector<double>{2, 2});
      },
      {"interpolate", "both size and scale_factor", "exactly one"});
  expect_error<ValueError>([&] { interpolate(x, std::nullopt, std::nullopt); },
                           {"interpolate", "neither"});
  expect_error<ValueError>(
      [&] {
        interpolate(x, std::vector<int64_t>{0, 4});
      },
      {"interpolate", "size is [0, 4]", "> 0"});
  expect_error<ValueError>([&] { interpolate(x, std::vector<int64_t>{4}); },
                           {"interpolate", "size is [4]", "two sizes"});
  expect_error<ValueError>(
      [&] {
        interpolate(x, std::nullopt, std::vector<double>{-1, 2});
      },
      {"interpolate", "scale_factor is {-1, 2}"});
  expect_error<ValueError>(
      [&] {
        interpolate(x, std::nullopt, std::vector<double>{0.2, 1});
      },
      {"interpolate", "scale_factor 0.2", "input size 3", "output size of 0"});
  expect_error<ValueError>([&] { interpolate(x, size, std::nullopt, "nearest", true); },
                           {"interpolate", "align_corners", "bilinear"});
  expect_error<ValueError>([&] { interpolate(x, size, std::nullopt, "bicubic"); },
                           {"interpolate", "unknown mode \"bicubic\""});
  expect_error<ShapeError>(
      [&] {
        interpolate(zeros({1, 1, 0, 3}, DType::Float32, device()), size);
      },
      {"interpolate", "[1, 1, 0, 3]", "height and width"});
  expect_error<ShapeError>(
      [&] {
        interpolate_out(zeros({1, 2, 4, 5}, DType::Float32, device()), x, size);
      },
      {"interpolate", "out is [1, 2, 4, 5] float32", "[1, 2, 4, 4]"});
  expect_error<DTypeError>(
      [&] {
        interpolate_out(zeros({1, 2, 4, 4}, DType::Float64, device()), x, size);
      },
      {"interpolate", "out is [1, 2, 4, 4] float64"});
  expect_error<ShapeError>(
      [&] {
        interpolate_backward(zeros({1, 2, 4, 5}, DType::Float32, device()), {1, 2, 3, 3}, size);
      },
      {"interpolate_backward", "grad_output is [1, 2, 4, 5] float32", "[1, 2, 4, 4]"});
  expect_error<ShapeError>(
      [&] {
        interpolate_backward(zeros({1, 2, 4, 4}, DType::Float32, device()), {2, 3, 3}, size);
      },
      {"interpolate_backward", "input_shape is [2, 3, 3]"});
  expect_error<ValueError>([&] { interpolate(Tensor(), size); }, {"interpolate", "undefined"});
}

// The shape rule autodiff-engine's inference uses: the output shape worked out by hand (the size
// given, or floor(H * s_h) and floor(W * s_w)), the same as interpolate's own, and the same errors
// as interpolate for bad arguments.
TEST(ResampleShape, InterpolateShapeIsInterpolatesOutputShapeWithItsChecks) {
  const char* op = "interpolate";
  const std::string who = "x is [2, 3, 5, 7]";
  const Shape in{2, 3, 5, 7};
  using Sizes = std::vector<int64_t>;
  using Scales = std::vector<double>;
  EXPECT_EQ(interpolate_shape(op, who, in, Sizes{4, 9}, std::nullopt, "nearest", false),
            (Shape{2, 3, 4, 9}));
  // floor(5 * 1.7) = 8, floor(7 * 0.6) = 4
  EXPECT_EQ(interpolate_shape(op, who, in, std::nullopt, Scales{1.7, 0.6}, "bilinear", true),
            (Shape{2, 3, 8, 4}));
  EXPECT_EQ(interpolate(zeros(in), std::nullopt, Scales{1.7, 0.6}, "bilinear", true).shape(),
            (Shape{2, 3, 8, 4}));
  EXPECT_EQ(interpolate_shape(op, who, {0, 3, 5, 7}, Sizes{1, 1}, std::nullopt, "nearest", false),
            (Shape{0, 3, 1, 1}));

  expect_error<ShapeError>(
      [&] {
        interpolate_shape(op, "x is [5, 7]", {5, 7}, Sizes{4, 4}, {}, "nearest", false);
      },
      {"interpolate", "x is [5, 7]", "4 dims"});
  expect_error<ValueError>(
      [&] {
        interpolate_shape(op, who, in, Sizes{4, 4}, Scales{2, 2}, "nearest", false);
      },
      {"interpolate", "both size and scale_factor"});
  expect_error<ValueError>(
      [&] {
        interpolate_shape(op, who, in, std::nullopt, Scales{0.1, 1}, "nearest", false);
      },
      {"interpolate", "scale_factor 0.1", "output size of 0"});
  expect_error<ValueError>(
      [&] {
        interpolate_shape(op, who, in, Sizes{4, 4}, std::nullopt, "bicubic", false);
      },
      {"interpolate", "unknown mode"});
  expect_error<ValueError>(
      [&] {
        interpolate_shape(op, who, in, Sizes{4, 4}, std::nullopt, "nearest", true);
      },
      {"interpolate", "align_corners", "bilinear"});
  expect_error<ShapeError>(
      [&] {
        interpolate_shape(op, who, {1, 1, 0, 3}, Sizes{4, 4}, {}, "nearest", false);
      },
      {"interpolate", "[1, 1, 0, 3]", "height and width"});
}

EMBER_INSTANTIATE_DEVICE_TEST(Resample);

}  // namespace
}  // namespace ember
