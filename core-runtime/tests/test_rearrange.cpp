// test_rearrange.cpp — tril/triu, flip, roll, repeat and tile against references written here as
// plain loops over coordinates, on every dtype, on strided inputs and into strided outs.
#include <functional>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_error;

const std::vector<DType> kAllDtypes = {DType::Bool,    DType::UInt8,    DType::Int8,
                                       DType::Int16,   DType::Int32,    DType::Int64,
                                       DType::Float16, DType::BFloat16, DType::Float32,
                                       DType::Float64};

class Rearrange : public test::DeviceTest {};
EMBER_INSTANTIATE_DEVICE_TEST(Rearrange);

using Coord = std::vector<int64_t>;

// The row-major coordinates of element i of shape.
Coord coords(int64_t i, const Shape& shape) {
  Coord c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = i % shape[d];
    i /= shape[d];
  }
  return c;
}

int64_t linear(const Coord& c, const Shape& shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + c[d];
  return i;
}

// The expected result of shape `out_shape`: element c is x's element source(c), or 0 where source
// returns false.
std::vector<double> remap(const Tensor& x, const Shape& out_shape,
                          const std::function<bool(const Coord&, Coord&)>& source) {
  std::vector<double> vx = x.to_vector<double>(), out(size_t(shape_numel(out_shape)));
  for (int64_t i = 0; i < int64_t(out.size()); ++i) {
    Coord from;
    out[size_t(i)] = source(coords(i, out_shape), from) ? vx[size_t(linear(from, x.shape()))] : 0;
  }
  return out;
}

void expect_equal(const Tensor& t, const Shape& shape, DType dtype,
                  const std::vector<double>& want) {
  EXPECT_EQ(t.shape(), shape);
  EXPECT_EQ(t.dtype(), dtype);
  std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), want.size()) << t.str();
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i], want[i]) << "element " << i << " of " << t.str();
}

// Distinct small integers (for bool: 0 and 1) of `shape`, in three layouts: contiguous, with the
// last two dims transposed, and a step slice of a wider tensor.
std::vector<Tensor> inputs(const Shape& shape, DType dtype, Device device, uint32_t seed) {
  std::vector<double> v = test::random_values(shape_numel(shape), seed, 0, 100);
  for (double& x : v) x = dtype == DType::Bool ? double(int(x) % 2) : std::floor(x) + 1;
  Tensor base = Tensor::from_vector(v, shape).to(device, dtype);
  std::vector<Tensor> out = {base};
  if (shape.size() >= 2) {
    Shape swapped = shape;
    std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
    Tensor t = empty(swapped, dtype, device).transpose(-1, -2);
    t.copy_(base);
    out.push_back(t);
  }
  if (!shape.empty()) {
    Shape wide = shape;
    wide.back() *= 2;
    Tensor s = zeros(wide, dtype, device).slice(-1, 0, wide.back(), 2);
    s.copy_(base);
    out.push_back(s);
  }
  return out;
}

// An out of `shape` whose last two dims are transposed in memory (or a step slice for 1-D).
Tensor strided_out(const Shape& shape, DType dtype, Device device) {
  if (shape.size() >= 2) {
    Shape swapped = shape;
    std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
    return empty(swapped, dtype, device).transpose(-1, -2);
  }
  Shape wide = shape;
  if (!wide.empty()) wide.back() *= 3;
  Tensor t = empty(wide, dtype, device);
  return wide.empty() ? t : t.slice(-1, 0, wide.back(), 3);
}

// ---- tril / triu ----

TEST_P(Rearrange, TrilTriuOnEveryDtypeLayoutAndDiagonal) {
  for (DType dt : kAllDtypes)
    for (const Tensor& x : inputs({2, 4, 5}, dt, device(), 1))
      for (int64_t k : {-5, -1, 0, 2, 7}) {
        SCOPED_TRACE(x.str() + " k=" + std::to_string(k));
        auto keep = [&](bool lower) {
          return [=](const Coord& c, Coord& from) {
            from = c;
            int64_t off = c[2] - c[1];
            return lower ? off <= k : off >= k;
          };
        };
        expect_equal(tril(x, k), x.shape(), dt, remap(x, x.shape(), keep(true)));
        expect_equal(triu(x, k), x.shape(), dt, remap(x, x.shape(), keep(false)));
        Tensor out = strided_out(x.shape(), dt, device());
        EXPECT_EQ(&triu_out(out, x, k), &out);
        expect_equal(out, x.shape(), dt, remap(x, x.shape(), keep(false)));
      }
}

TEST_P(Rearrange, TrilInPlaceEdgeSizesAndErrors) {
  Tensor x = inputs({5, 3}, DType::Float32, device(), 2)[1];  // transposed layout
  std::vector<double> want = remap(x, {5, 3}, [](const Coord& c, Coord& from) {
    from = c;
    return c[1] - c[0] <= -1;
  });
  tril_out(x, x, -1);  // out identical to x: allowed
  expect_equal(x, {5, 3}, DType::Float32, want);
  for (const Shape& s : {Shape{0, 3}, Shape{3, 0}, Shape{1, 1}, Shape{2, 0, 4}}) {
    Tensor e = zeros(s, DType::Int32, device()).fill_(4);
    expect_equal(tril(e), s, DType::Int32, std::vector<double>(size_t(shape_numel(s)), 4));
  }
  Tensor v = zeros({3}, DType::Float32, device());
  expect_error<ShapeError>([&] { tril(v); }, {"tril", "x is [3] float32", "at least 2 dims"});
  expect_error<ShapeError>([&] { triu(Tensor::from_vector<float>({1}, {}, device())); },
                           {"triu", "x is [] float32"});
}

// ---- flip ----

TEST_P(Rearrange, FlipOnEveryDtypeLayoutAndDims) {
  const std::vector<std::vector<int64_t>> dim_sets = {{0}, {2}, {0, 2}, {-1, 1, 0}, {}, {1}};
  for (DType dt : kAllDtypes)
    for (const Tensor& x : inputs({3, 4, 5}, dt, device(), 3))
      for (const auto& dims : dim_sets) {
        SCOPED_TRACE(x.str() + " dims of " + std::to_string(dims.size()));
        std::vector<bool> flipped(3, false);
        for (int64_t d : dims) flipped[size_t((d + 3) % 3)] = true;
        auto source = [&](const Coord& c, Coord& from) {
          from = c;
          for (size_t d = 0; d < 3; ++d)
            if (flipped[d]) from[d] = x.size(int64_t(d)) - 1 - c[d];
          return true;
        };
        std::vector<double> want = remap(x, x.shape(), source);
        expect_equal(flip(x, dims), x.shape(), dt, want);
        Tensor out = strided_out(x.shape(), dt, device());
        flip_out(out, x, dims);
        expect_equal(out, x.shape(), dt, want);
      }
}

TEST_P(Rearrange, FlipEdgeSizesLargeAndErrors) {
  Tensor big = test::random_tensor({1001, 257}, 4, DType::Float32, device());
  std::vector<double> want = remap(big, big.shape(), [&](const Coord& c, Coord& from) {
    from = {1000 - c[0], 256 - c[1]};
    return true;
  });
  expect_equal(flip(big, {0, 1}), big.shape(), DType::Float32, want);
  Tensor e = zeros({0, 4}, DType::Float32, device());
  EXPECT_EQ(flip(e, {0, 1}).shape(), (Shape{0, 4}));
  Tensor one = Tensor::from_vector<int64_t>({7}, {1, 1}, device());
  expect_equal(flip(one, {0, 1}), {1, 1}, DType::Int64, {7});
  Tensor s = Tensor::from_vector<double>({2.5}, {}, device());
  expect_equal(flip(s, {}), {}, DType::Float64, {2.5});
  Tensor x = zeros({2, 3}, DType::Float32, device());
  expect_error<ValueError>([&] { flip(x, {1, -1}); }, {"flip", "x is [2, 3] float32", "dim 1"});
  expect_error<IndexError>([&] { flip(x, {2}); }, {"flip", "[2, 3]"});
  expect_error<ValueError>([&] { flip_out(x, x, {0}); }, {"flip", "overlaps"});
}

// ---- roll ----

TEST_P(Rearrange, RollOnEveryDtypeLayoutAndShift) {
  struct Case {
    std::vector<int64_t> shifts, dims;
  };
  const std::vector<Case> cases = {
      {{1}, {0}}, {{-2}, {2}}, {{7, -3}, {1, 2}},      {{2, 1}, {0, 0}},
      {{5}, {}},  {{-13}, {}}, {{1, 1, 1}, {0, 1, 2}}, {{0}, {1}}};
  for (DType dt : kAllDtypes)
    for (const Tensor& x : inputs({3, 4, 5}, dt, device(), 5))
      for (const Case& c : cases) {
        SCOPED_TRACE(x.str() + " shifts[0]=" + std::to_string(c.shifts[0]));
        std::vector<double> want;
        if (c.dims.empty()) {  // flattened: out[i] = x[(i - s) mod n]
          std::vector<double> vx = x.to_vector<double>();
          const int64_t n = int64_t(vx.size());
          for (int64_t i = 0; i < n; ++i)
            want.push_back(vx[size_t((((i - c.shifts[0]) % n) + n) % n)]);
        } else {
          want = remap(x, x.shape(), [&](const Coord& o, Coord& from) {
            from = o;
            for (size_t k = 0; k < c.dims.size(); ++k) {
              const size_t d = size_t(c.dims[k]);
              const int64_t n = x.size(int64_t(d));
              from[d] = (((from[d] - c.shifts[k]) % n) + n) % n;
            }
            return true;
          });
        }
        expect_equal(roll(x, c.shifts, c.dims), x.shape(), dt, want);
        Tensor out = strided_out(x.shape(), dt, device());
        roll_out(out, x, c.shifts, c.dims);
        expect_equal(out, x.shape(), dt, want);
      }
}

TEST_P(Rearrange, RollEdgeSizesAndErrors) {
  Tensor s = Tensor::from_vector<float>({3}, {}, device());
  expect_equal(roll(s, {4}), {}, DType::Float32, {3});
  Tensor e = zeros({0, 2}, DType::Float32, device());
  EXPECT_EQ(roll(e, {1}, {0}).shape(), (Shape{0, 2}));
  EXPECT_EQ(roll(e, {3}).shape(), (Shape{0, 2}));
  Tensor big = test::random_tensor({999, 131}, 6, DType::Float64, device());
  std::vector<double> want = remap(big, big.shape(), [](const Coord& c, Coord& from) {
    from = {(c[0] + 999 - 400) % 999, (c[1] + 131 * 3 + 500) % 131};
    return true;
  });
  expect_equal(roll(big, {400, -500}, {0, 1}), big.shape(), DType::Float64, want);
  Tensor x = zeros({2, 3}, DType::Float32, device());
  expect_error<ValueError>(
      [&] {
        roll(x, {1, 2}, {0});
      },
      {"roll", "x is [2, 3] float32", "2 shifts"});
  expect_error<ValueError>([&] { roll(x, {1, 2}); }, {"roll", "no dims"});
  expect_error<IndexError>([&] { roll(x, {1}, {-3}); }, {"roll", "[2, 3]"});
  expect_error<ValueError>([&] { roll_out(x, x, {1}, {0}); }, {"roll", "overlaps"});
}

// ---- repeat / tile ----

// out[c] = x[c mod x's (1-padded) shape].
std::vector<double> tiled(const Tensor& x, const Shape& out_shape) {
  const size_t lead = out_shape.size() - size_t(x.dim());
  return remap(x, out_shape, [&](const Coord& c, Coord& from) {
    from.clear();
    for (size_t d = lead; d < c.size(); ++d) from.push_back(c[d] % x.size(int64_t(d - lead)));
    return true;
  });
}

TEST_P(Rearrange, RepeatAndTileOnEveryDtypeAndLayout) {
  struct Case {
    std::vector<int64_t> reps;
    Shape repeat_shape, tile_shape;  // for x [3, 4]
  };
  const std::vector<Case> cases = {{{2, 1, 2}, {2, 3, 8}, {2, 3, 8}},
                                   {{1, 1}, {3, 4}, {3, 4}},
                                   {{3, 2}, {9, 8}, {9, 8}},
                                   {{0, 2}, {0, 8}, {0, 8}}};
  for (DType dt : kAllDtypes)
    for (const Tensor& x : inputs({3, 4}, dt, device(), 7)) {
      for (const Case& c : cases) {
        SCOPED_TRACE(x.str() + " to " + shape_str(c.repeat_shape));
        std::vector<double> want = tiled(x, c.repeat_shape);
        expect_equal(repeat(x, c.reps), c.repeat_shape, dt, want);
        expect_equal(tile(x, c.reps), c.tile_shape, dt, want);
        Tensor out = strided_out(c.repeat_shape, dt, device());
        repeat_out(out, x, c.reps);
        expect_equal(out, c.repeat_shape, dt, want);
      }
      // tile pads short reps with leading 1s: [3, 4] with {2} -> [3, 8].
      expect_equal(tile(x, {2}), {3, 8}, dt, tiled(x, {3, 8}));
      Tensor out = strided_out({3, 8}, dt, device());
      tile_out(out, x, {2});
      expect_equal(out, {3, 8}, dt, tiled(x, {3, 8}));
    }
}

TEST_P(Rearrange, RepeatEdgeSizesLargeAndErrors) {
  Tensor s = Tensor::from_vector<int32_t>({5}, {}, device());
  expect_equal(repeat(s, {3}), {3}, DType::Int32, {5, 5, 5});
  expect_equal(repeat(s, {}), {}, DType::Int32, {5});
  expect_equal(tile(s, {2, 2}), {2, 2}, DType::Int32, {5, 5, 5, 5});
  Tensor e = zeros({0, 2}, DType::Float32, device());
  EXPECT_EQ(repeat(e, {3, 2}).shape(), (Shape{0, 4}));
  Tensor row = test::random_tensor({1, 777}, 8, DType::Float32, device()).expand({3, 777});
  expect_equal(repeat(row, {2, 300}), {6, 233100}, DType::Float32, tiled(row, {6, 233100}));
  Tensor x = zeros({2, 3}, DType::Float32, device());
  expect_error<ShapeError>([&] { repeat(x, {2}); }, {"repeat", "x is [2, 3] float32", "1 repeats"});
  expect_error<ValueError>([&] { repeat(x, {2, -1}); }, {"repeat", "-1", ">= 0"});
  expect_error<ValueError>([&] { tile(x, {-2}); }, {"tile", "-2"});
  expect_error<ShapeError>([&] { repeat(x, {int64_t(1) << 62, 8}); }, {"repeat"});
}

// ---- out= errors, common to the family ----

TEST_P(Rearrange, OutErrorsNameTheOp) {
  Tensor x = zeros({2, 3}, DType::Float32, device());
  Tensor wrong_shape = zeros({3, 2}, DType::Float32, device());
  Tensor wrong_dtype = zeros({2, 3}, DType::Float64, device());
  expect_error<ShapeError>([&] { tril_out(wrong_shape, x); },
                           {"tril", "out is [3, 2] float32", "the result is [2, 3] float32"});
  expect_error<DTypeError>([&] { flip_out(wrong_dtype, x, {0}); },
                           {"flip", "out is [2, 3] float64"});
  expect_error<ValueError>([&] { roll_out(Tensor(), x, {1}); }, {"roll", "out is an undefined"});
  expect_error<ShapeError>([&] { repeat_out(x, x, {2, 1}); }, {"repeat", "[4, 3]"});
  expect_error<ShapeError>([&] { tile_out(wrong_shape, x, {1}); }, {"tile", "out is [3, 2]"});
  Tensor expanded = zeros({1, 3}, DType::Float32, device()).expand({2, 3});
  expect_error<ValueError>([&] { triu_out(expanded, x); }, {"triu", "expanded"});
  Tensor big = zeros({4, 3}, DType::Float32, device());
  expect_error<ValueError>([&] { flip_out(big.narrow(0, 1, 2), big.narrow(0, 0, 2), {0}); },
                           {"flip", "overlaps"});
  expect_error<ValueError>([&] { tril_out(big.narrow(0, 1, 2), big.narrow(0, 0, 2)); },
                           {"tril", "overlaps"});
  if (device().is_cuda()) {
    Tensor cpu_out = zeros({2, 3}, DType::Float32, Device("cpu"));
    expect_error<DeviceError>([&] { flip_out(cpu_out, x, {0}); },
                              {"flip", "out is [2, 3] float32 cpu"});
  }
}

}  // namespace
}  // namespace ember
