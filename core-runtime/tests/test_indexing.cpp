// test_indexing.cpp — embedding, index_select/index_add, gather/scatter_add, masked_fill,
// one_hot and pad against brute-force loops written here.
#include <random>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;
using test::random_tensor;

class Indexing : public test::DeviceTest {};
class Pad : public test::DeviceTest {};

Tensor ints(const std::vector<int64_t>& v, const Shape& shape, Device dev) {
  return Tensor::from_vector(v, shape).to(dev);
}

std::vector<int64_t> random_ints(int64_t n, int64_t lo, int64_t hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> dist(lo, hi - 1);
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

// Row-major offset of (i, j, k) in a 3-D shape.
size_t at(const Shape& s, int64_t i, int64_t j, int64_t k) {
  return size_t((i * s[1] + j) * s[2] + k);
}

// ---------------- embedding / index_select / index_add ----------------

TEST_P(Indexing, EmbeddingLooksUpRows) {
  Tensor w = random_tensor({10, 4}, 1, DType::Float32, device());
  std::vector<int64_t> iv{3, 0, 9, 3, 7, 1};
  std::vector<double> wv = w.to_vector<double>(), want;
  for (int64_t i : iv)
    for (int64_t d = 0; d < 4; ++d) want.push_back(wv[size_t(i * 4 + d)]);
  Tensor out = embedding(w, ints(iv, {2, 3}, device()));
  EXPECT_EQ(out.shape(), (Shape{2, 3, 4}));
  expect_close(out, want, 0);
  // int32 indices, a transposed (non-contiguous) weight, a 0-d index.
  Tensor wt = w.t().contiguous().t();
  ASSERT_FALSE(wt.is_contiguous());
  expect_close(embedding(wt, ints(iv, {6}, device()).to(DType::Int32)), want, 0);
  Tensor one = embedding(w, ints({9}, {}, device()));
  EXPECT_EQ(one.shape(), (Shape{4}));
  expect_close(one, std::vector<double>(wv.begin() + 36, wv.end()), 0);
  EXPECT_EQ(embedding(w, ints({}, {0, 2}, device())).shape(), (Shape{0, 2, 4}));
}

TEST_P(Indexing, EmbeddingBackwardSumsRepeatedRowsAndSkipsPadding) {
  const int64_t v = 6, d = 3;
  std::vector<int64_t> iv{2, 5, 2, 0, 2, 5, 1, 0};
  Tensor grad = random_tensor({4, 2, d}, 2, DType::Float64, device());
  std::vector<double> gv = grad.to_vector<double>();
  std::vector<double> want(size_t(v * d), 0.0);
  for (size_t n = 0; n < iv.size(); ++n)
    for (int64_t k = 0; k < d; ++k) want[size_t(iv[n] * d + k)] += gv[n * size_t(d) + size_t(k)];
  Tensor idx = ints(iv, {4, 2}, device());
  expect_close(embedding_backward(grad, idx, v), want, 1e-14);
  std::vector<double> no_pad = want;
  for (int64_t k = 0; k < d; ++k) no_pad[size_t(5 * d + k)] = 0;
  expect_close(embedding_backward(grad, idx, v, 5), no_pad, 1e-14);
  expect_close(embedding_backward(grad, idx, v, -1), no_pad, 1e-14);  // -1 is row 5
  // float32 with many repeats: deterministic, bit-identical across calls.
  Tensor g32 = random_tensor({3000, 8}, 3, DType::Float32, device());
  Tensor i32 = ints(random_ints(3000, 0, 4, 4), {3000}, device());
  std::vector<double> a = embedding_backward(g32, i32, 4).to_vector<double>();
  std::vector<double> b = embedding_backward(g32, i32, 4).to_vector<double>();
  if (device().is_cpu()) EXPECT_EQ(a, b);
  std::vector<double> g = g32.to_vector<double>(), ref(32, 0.0);
  std::vector<int64_t> ii = i32.to_vector<int64_t>();
  for (size_t n = 0; n < 3000; ++n)
    for (size_t k = 0; k < 8; ++k) ref[size_t(ii[n]) * 8 + k] += g[n * 8 + k];
  expect_close(embedding_backward(g32, i32, 4), ref, 1e-3, 1e-5);
}

TEST_P(Indexing, IndexSelectAnyDimAndStrides) {
  const Shape s{3, 4, 5};
  Tensor x = random_tensor(s, 5, DType::Float64, device());
  std::vector<double> xv = x.to_vector<double>();
  std::vector<int64_t> iv{2, 0, 3, 3};
  Tensor idx = ints(iv, {4}, device());
  for (int64_t dim : {1, -2}) {
    std::vector<double> want;
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j : iv)
        for (int64_t k = 0; k < 5; ++k) want.push_back(xv[at(s, i, j, k)]);
    Tensor out = index_select(x, dim, idx);
    EXPECT_EQ(out.shape(), (Shape{3, 4, 5}));
    expect_close(out, want, 0);
  }
  // dim 2 of a permuted view: xp[i][j][k] = x[k][i][j], shape [4, 5, 3].
  Tensor xp = x.permute({1, 2, 0});
  std::vector<int64_t> kv{2, 2, 1};
  std::vector<double> want;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 5; ++j)
      for (int64_t k : kv) want.push_back(xv[at(s, k, i, j)]);
  expect_close(index_select(xp, 2, ints(kv, {3}, device()).to(DType::Int32)), want, 0);
  EXPECT_EQ(index_select(x, 0, ints({}, {0}, device())).shape(), (Shape{0, 4, 5}));
  // Integer and bool dtypes move unchanged.
  Tensor b = Tensor::from_vector(std::vector<bool>{true, false, false}, {3}).to(device());
  EXPECT_EQ(index_select(b, 0, ints({1, 0}, {2}, device())).to_vector<bool>(),
            (std::vector<bool>{false, true}));
}

TEST_P(Indexing, IndexAddAccumulatesInPlaceAndOutOfPlace) {
  Tensor x = random_tensor({4, 3}, 6, DType::Float32, device());
  Tensor src = random_tensor({4, 5}, 7, DType::Float32, device());
  std::vector<int64_t> iv{2, 0, 2, 1, 2};
  std::vector<double> want = x.to_vector<double>(), sv = src.to_vector<double>();
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 5; ++j) want[i * 3 + size_t(iv[j])] += sv[i * 5 + j];
  Tensor out = index_add(x, 1, ints(iv, {5}, device()), src);
  expect_close(out, want, 1e-6);
  // In place on a non-contiguous view: the base buffer sees the result.
  Tensor base = x.t().contiguous();  // [3, 4]
  Tensor view = base.t();            // [4, 3] view
  index_add_(view, -1, ints(iv, {5}, device()), src);
  expect_close(view, want, 1e-6);
  expect_close(base.t(), want, 1e-6);
}

TEST_P(Indexing, IndexErrors) {
  Tensor w = Tensor::empty({10, 4}, DType::Float32, device());
  expect_error<IndexError>(
      [&] {
        embedding(w, ints({1, 10, 2}, {3}, device()));
      },
      {"embedding", "index 10 is out of range", "[10, 4] float32", "valid indices are 0 to 9"});
  expect_error<IndexError>([&] { embedding(w, ints({-1}, {1}, device())); },
                           {"embedding", "index -1", "0 to 9"});
  expect_error<DTypeError>([&] { embedding(w, Tensor::empty({2}, DType::Float32, device())); },
                           {"embedding", "indices is [2] float32", "int64"});
  expect_error<ShapeError>(
      [&] { embedding(Tensor::empty({10}, DType::Float32, device()), ints({1}, {1}, device())); },
      {"embedding", "weight is [10] float32", "2 dims"});
  Tensor x = Tensor::empty({3, 4}, DType::Float32, device());
  expect_error<IndexError>([&] { index_select(x, 1, ints({4}, {1}, device())); },
                           {"index_select", "index 4", "dim 1 of x ([3, 4] float32", "0 to 3"});
  expect_error<IndexError>([&] { index_select(x, 2, ints({0}, {1}, device())); },
                           {"index_select", "dim 2"});
  expect_error<ShapeError>(
      [&] {
        index_select(x, 0, ints({0, 1}, {1, 2}, device()));
      },
      {"index_select", "1-D"});
  expect_error<ShapeError>(
      [&] {
        embedding_backward(x, ints({0, 1}, {2}, device()), 5);
      },
      {"embedding_backward", "grad is [3, 4] float32", "indices is [2] int64"});
  expect_error<IndexError>(
      [&] {
        embedding_backward(x, ints({0, 1, 2}, {3}, device()), 5, 5);
      },
      {"embedding_backward", "padding_idx 5"});
  expect_error<ShapeError>([&] { index_add(x, 0, ints({0}, {1}, device()), x); },
                           {"index_add:", "src is [3, 4]", "[1, 4]"});
}

// ---------------- gather / scatter_add ----------------

// index of shape `is` with values in [0, n) along dim d of x [3, 4, 5]; checked by brute force.
void check_gather(Device dev, const Tensor& x, int64_t dim, const Shape& is, uint32_t seed) {
  const int64_t d = dim < 0 ? dim + 3 : dim;
  const Shape& xs = x.shape();
  std::vector<int64_t> iv = random_ints(shape_numel(is), 0, xs[size_t(d)], seed);
  std::vector<double> xv = x.contiguous().to_vector<double>(), want;
  for (int64_t i = 0; i < is[0]; ++i)
    for (int64_t j = 0; j < is[1]; ++j)
      for (int64_t k = 0; k < is[2]; ++k) {
        int64_t c[3] = {i, j, k};
        c[d] = iv[at(is, i, j, k)];
        want.push_back(xv[at(xs, c[0], c[1], c[2])]);
      }
  Tensor out = gather(x, dim, ints(iv, is, dev));
  EXPECT_EQ(out.shape(), is);
  EXPECT_EQ(out.dtype(), x.dtype());
  expect_close(out, want, 0);
}

TEST_P(Indexing, GatherEveryDimDtypeAndLayout) {
  Tensor x = random_tensor({3, 4, 5}, 8, DType::Float32, device());
  check_gather(device(), x, 0, {2, 4, 5}, 9);
  check_gather(device(), x, 1, {3, 6, 2}, 10);  // longer than x along dim, shorter elsewhere
  check_gather(device(), x, -1, {1, 3, 7}, 11);
  Tensor xp = random_tensor({5, 3, 4}, 12, DType::Float64, device()).permute({1, 2, 0});
  check_gather(device(), xp, 2, {3, 4, 2}, 13);
  for (DType t : {DType::Float16, DType::BFloat16, DType::Int64, DType::UInt8})
    check_gather(device(), random_tensor({3, 4, 5}, 14, t, device(), 0, 100), 1, {3, 2, 5}, 15);
  // A stride-0 (expanded) index.
  Tensor idx = ints({3, 1}, {1, 2, 1}, device()).expand({3, 2, 5});
  std::vector<double> xv = x.to_vector<double>(), want;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j : {3, 1})
      for (int64_t k = 0; k < 5; ++k) want.push_back(xv[at({3, 4, 5}, i, j, k)]);
  expect_close(gather(x, 1, idx), want, 0);
  EXPECT_EQ(gather(x, 0, ints({}, {0, 4, 5}, device())).shape(), (Shape{0, 4, 5}));
}

void check_scatter_add(Device dev, const Tensor& x, int64_t d, const Tensor& src, const Shape& is,
                       uint32_t seed) {
  const Shape& xs = x.shape();
  std::vector<int64_t> iv = random_ints(shape_numel(is), 0, xs[size_t(d)], seed);
  std::vector<double> want = x.contiguous().to_vector<double>();
  std::vector<double> sv = src.contiguous().to_vector<double>();
  for (int64_t i = 0; i < is[0]; ++i)
    for (int64_t j = 0; j < is[1]; ++j)
      for (int64_t k = 0; k < is[2]; ++k) {
        int64_t c[3] = {i, j, k};
        c[d] = iv[at(is, i, j, k)];
        want[at(xs, c[0], c[1], c[2])] += sv[at(src.shape(), i, j, k)];
      }
  Tensor idx = ints(iv, is, dev);
  expect_close(scatter_add(x, d, idx, src), want, 1e-12);
  Tensor inplace = x.clone();
  scatter_add_(inplace, d, idx, src);
  expect_close(inplace, want, 1e-12);
}

TEST_P(Indexing, ScatterAddAccumulatesRepeatedIndices) {
  Tensor x = random_tensor({3, 4, 5}, 16, DType::Float64, device());
  Tensor src = random_tensor({3, 6, 5}, 17, DType::Float64, device());
  check_scatter_add(device(), x, 1, src, {3, 6, 5}, 18);  // 6 updates into 4 slots per line
  check_scatter_add(device(), x, 0, src, {2, 4, 3}, 19);  // index smaller than src
  check_scatter_add(device(), x, 2, src, {3, 3, 5}, 20);
  Tensor xi = random_tensor({3, 4, 5}, 21, DType::Int64, device(), -50, 50);
  Tensor si = random_tensor({3, 4, 5}, 22, DType::Int64, device(), -50, 50);
  check_scatter_add(device(), xi, 1, si, {3, 4, 5}, 23);
  // In place through a non-contiguous view of a buffer.
  Tensor base = Tensor::empty({5, 3}, DType::Float64, device());
  base.zero_();
  Tensor view = base.t();  // [3, 5]
  scatter_add_(view, 1, ints({4, 4, 0}, {3, 1}, device()),
               Tensor::from_vector(std::vector<double>{1, 2, 3}, {3, 1}).to(device()));
  expect_close(base, {0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0}, 0);
}

TEST_P(Indexing, GatherScatterErrors) {
  Tensor x = Tensor::empty({3, 4}, DType::Float32, device());
  expect_error<IndexError>(
      [&] {
        gather(x, 1, ints({0, 4}, {1, 2}, device()));
      },
      {"gather", "index 4", "dim 1 of x ([3, 4] float32", "0 to 3"});
  expect_error<ShapeError>(
      [&] {
        gather(x, 1, ints({0, 1}, {2}, device()));
      },
      {"gather", "index is [2] int64", "number of dims"});
  expect_error<ShapeError>(
      [&] {
        gather(x, 1, ints({0, 0, 0, 0}, {4, 1}, device()));
      },
      {"gather", "x.size(d) for every d != dim (1)"});
  expect_error<IndexError>(
      [&] {
        gather(x, -3, ints({0}, {1, 1}, device()));
      },
      {"gather", "dim -3"});
  Tensor y = x.clone();
  expect_error<DTypeError>(
      [&] {
        scatter_add_(y, 0, ints({0}, {1, 1}, device()), x.to(DType::Float64));
      },
      {"scatter_add_", "src is [3, 4] float64", "one dtype"});
  expect_error<ShapeError>(
      [&] {
        scatter_add_(y, 0, ints({0, 0}, {2, 1}, device()), x.narrow(0, 0, 1));
      },
      {"scatter_add_", "src.size(d)"});
  expect_error<IndexError>(
      [&] {
        scatter_add_(y, 0, ints({-2}, {1, 1}, device()), x);
      },
      {"scatter_add_", "index -2", "0 to 2"});
}

// ---------------- masked_fill / one_hot ----------------

TEST_P(Indexing, MaskedFillBroadcastsTheMask) {
  Tensor x = random_tensor({4, 3}, 24, DType::Float32, device()).t();  // [3, 4] view
  Tensor mask =
      Tensor::from_vector(std::vector<bool>{true, false, false, true}, {1, 4}).to(device());
  std::vector<double> xv = x.to_vector<double>(), want;
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 4; ++j) want.push_back(j == 0 || j == 3 ? -7.5 : xv[i * 4 + j]);
  expect_close(masked_fill(x, mask, -7.5), want, 0);
  Tensor xi = Tensor::from_vector(std::vector<int64_t>{1, 2, 3}, {3}).to(device());
  Tensor mi = Tensor::from_vector(std::vector<bool>{false, true, false}, {3}).to(device());
  EXPECT_EQ(masked_fill(xi, mi, 9).to_vector<int64_t>(), (std::vector<int64_t>{1, 9, 3}));
  EXPECT_EQ(masked_fill(Tensor::empty({0, 3}, DType::Float32, device()), mi, 1).shape(),
            (Shape{0, 3}));
  expect_error<DTypeError>([&] { masked_fill(xi, xi, 0); },
                           {"masked_fill", "mask is [3] int64", "bool"});
  expect_error<ShapeError>([&] { masked_fill(x, mi, 0); },
                           {"masked_fill", "x is [3, 4] float32", "mask is [3] bool", "broadcast"});
}

TEST_P(Indexing, OneHot) {
  Tensor idx = ints({2, 0, 3, 2}, {2, 2}, device());
  Tensor oh = one_hot(idx);
  EXPECT_EQ(oh.shape(), (Shape{2, 2, 4}));
  EXPECT_EQ(oh.dtype(), DType::Int64);
  EXPECT_EQ(oh.to_vector<int64_t>(),
            (std::vector<int64_t>{0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0}));
  EXPECT_EQ(one_hot(ints({1}, {}, device()), 3).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(one_hot(ints({}, {0}, device()), 5).shape(), (Shape{0, 5}));
  expect_error<IndexError>([&] { one_hot(idx, 3); },
                           {"one_hot", "index 3", "num_classes 3", "0 to 2"});
  expect_error<IndexError>([&] { one_hot(ints({-1}, {1}, device())); }, {"one_hot", "index -1"});
  expect_error<ValueError>([&] { one_hot(ints({}, {0}, device())); },
                           {"one_hot", "cannot infer num_classes"});
}

// ---------------- pad ----------------

// Brute-force pad of x [A, B, C] (row-major values) by {cl, cr, bl, br} (last dim first).
std::vector<double> pad_reference(const std::vector<double>& x, const Shape& s,
                                  const std::vector<int64_t>& p, const std::string& mode,
                                  double value) {
  auto source = [&](int64_t o, int64_t l, int64_t n, bool* inside) {
    int64_t i = o - l;
    *inside = i >= 0 && i < n;
    if (mode == "reflect") return i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i);
    return std::clamp<int64_t>(i, 0, n - 1);
  };
  std::vector<double> out;
  for (int64_t a = 0; a < s[0]; ++a)
    for (int64_t b = 0; b < s[1] + p[2] + p[3]; ++b)
      for (int64_t c = 0; c < s[2] + p[0] + p[1]; ++c) {
        bool in_b, in_c;
        int64_t sb = source(b, p[2], s[1], &in_b), sc = source(c, p[0], s[2], &in_c);
        out.push_back(mode == "constant" && !(in_b && in_c) ? value : x[at(s, a, sb, sc)]);
      }
  return out;
}

TEST_P(Pad, ConstantReflectReplicateMatchBruteForce) {
  const Shape s{2, 3, 4};
  Tensor x = random_tensor(s, 30, DType::Float32, device());
  std::vector<double> xv = x.to_vector<double>();
  for (const char* mode : {"constant", "reflect", "replicate"}) {
    for (const std::vector<int64_t>& p :
         std::vector<std::vector<int64_t>>{{1, 2, 2, 0}, {3, 3, 1, 1}, {0, 0, 0, 2}}) {
      Tensor out = pad(x, p, mode, 1.5);
      EXPECT_EQ(out.shape(), (Shape{2, 3 + p[2] + p[3], 4 + p[0] + p[1]})) << mode;
      expect_close(out, pad_reference(xv, s, p, mode, 1.5), 0);
    }
  }
  // Non-contiguous input, pads on the last dim only, float64 and int64.
  Tensor xt = random_tensor({4, 3}, 31, DType::Float64, device()).t();  // [3, 4]
  std::vector<double> tv = xt.to_vector<double>();
  std::vector<double> want;
  for (size_t i = 0; i < 3; ++i) {
    const double* r = tv.data() + i * 4;
    for (double v : {r[2], r[1], r[0], r[1], r[2], r[3], r[2]}) want.push_back(v);
  }
  expect_close(pad(xt, {2, 1}, "reflect"), want, 0);
  Tensor xi = Tensor::from_vector(std::vector<int64_t>{5, 6}, {1, 2}).to(device());
  EXPECT_EQ(pad(xi, {1, 1, 1, 0}, "replicate").to_vector<int64_t>(),
            (std::vector<int64_t>{5, 5, 6, 6, 5, 5, 6, 6}));
  EXPECT_EQ(pad(Tensor::empty({0, 3}, DType::Float32, device()), {1, 1}, "reflect").shape(),
            (Shape{0, 5}));
}

TEST_P(Pad, NegativeConstantPadsCropAndBackward) {
  Tensor x = random_tensor({3, 5}, 32, DType::Float64, device());
  std::vector<double> xv = x.to_vector<double>();
  // pads {-1, 2} on the last dim, {1, -2} on the first: rows 0 (pad), x row 0; cols x 1..4, 2 pad
  Tensor out = pad(x, {-1, 2, 1, -2}, "constant", 9);
  EXPECT_EQ(out.shape(), (Shape{2, 6}));
  std::vector<double> want{9, 9, 9, 9, 9, 9, xv[1], xv[2], xv[3], xv[4], 9, 9};
  expect_close(out, want, 0);
  // pad_backward: the gradient of the kept elements, zero for cropped ones.
  Tensor g = random_tensor({2, 6}, 33, DType::Float64, device());
  std::vector<double> gv = g.to_vector<double>(), gin(15, 0.0);
  for (size_t j = 1; j < 5; ++j) gin[j] = gv[6 + j - 1];
  expect_close(pad_backward(g, {3, 5}, {-1, 2, 1, -2}), gin, 0);
  Tensor g2 = random_tensor({4, 8}, 34, DType::Float32, device());
  expect_close(pad_backward(g2, {3, 5}, {2, 1, 0, 1}), g2.narrow(0, 0, 3).narrow(1, 2, 5), 0);
}

// Brute-force backward of a reflect/replicate pad of [A, B, C] by {cl, cr, bl, br}: every output
// position adds its gradient to the input element it copied.
std::vector<double> pad_backward_reference(const std::vector<double>& g, const Shape& s,
                                           const std::vector<int64_t>& p, const std::string& mode) {
  auto source = [&](int64_t o, int64_t l, int64_t n) {
    const int64_t i = o - l;
    if (mode == "reflect") return i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i);
    return std::clamp<int64_t>(i, 0, n - 1);
  };
  std::vector<double> grad(size_t(s[0] * s[1] * s[2]), 0.0);
  size_t k = 0;
  for (int64_t a = 0; a < s[0]; ++a)
    for (int64_t b = 0; b < s[1] + p[2] + p[3]; ++b)
      for (int64_t c = 0; c < s[2] + p[0] + p[1]; ++c)
        grad[at(s, a, source(b, p[2], s[1]), source(c, p[0], s[2]))] += g[k++];
  return grad;
}

TEST_P(Pad, ReflectAndReplicateBackwardSumEveryCopy) {
  const Shape s{2, 3, 4};
  for (const char* mode : {"reflect", "replicate"}) {
    for (const std::vector<int64_t>& p :
         std::vector<std::vector<int64_t>>{{1, 2, 2, 0}, {3, 3, 1, 1}, {0, 0, 0, 2}, {2, 1}}) {
      const std::vector<int64_t> p4{p[0], p[1], p.size() > 2 ? p[2] : 0, p.size() > 2 ? p[3] : 0};
      const Shape padded{2, 3 + p4[2] + p4[3], 4 + p4[0] + p4[1]};
      for (DType dt : {DType::Float64, DType::Float32}) {
        Tensor g = random_tensor(padded, 40, dt, device());
        const std::vector<double> want = pad_backward_reference(g.to_vector<double>(), s, p4, mode);
        expect_close(pad_backward(g, s, p, mode), want, dt == DType::Float64 ? 1e-12 : 1e-5);
      }
      // The adjoint identity <pad(x), g> = <x, pad_backward(g)>, with a transposed grad_out.
      Tensor x = random_tensor(s, 41, DType::Float64, device());
      Tensor gt = random_tensor({padded[0], padded[2], padded[1]}, 42, DType::Float64, device())
                      .transpose(1, 2);
      const double lhs = sum(mul(pad(x, p, mode), gt)).item<double>();
      const double rhs = sum(mul(x, pad_backward(gt, s, p, mode))).item<double>();
      EXPECT_NEAR(lhs, rhs, 1e-10) << mode;
    }
  }
  // No pads: the gradient passes through as a copy.
  Tensor g = random_tensor({2, 3}, 43, DType::Float32, device());
  expect_close(pad_backward(g, {2, 3}, {0, 0}, "reflect"), g, 0);
  expect_error<ValueError>(
      [&] {
        pad_backward(g, {1, 3}, {0, 0, 1, 0}, "reflect");
      },
      {"pad_backward", "input shape [1, 3]", "reflect pads (1, 0)", "dim 0"});
  expect_error<ValueError>(
      [&] {
        pad_backward(g, {2, 3}, {0, 0}, "circular");
      },
      {"unknown mode 'circular'"});
}

TEST_P(Pad, Errors) {
  Tensor x = Tensor::empty({2, 3}, DType::Float32, device());
  expect_error<ValueError>([&] { pad(x, {1}); }, {"pad", "1 values", "even"});
  expect_error<ValueError>([&] { pad(x, {1, 1, 1, 1, 1, 1}); }, {"pad", "at most 4"});
  expect_error<ValueError>([&] { pad(x, {1, 1}, "circular"); }, {"pad", "unknown mode 'circular'"});
  expect_error<ValueError>(
      [&] {
        pad(x, {3, 0}, "reflect");
      },
      {"pad", "x is [2, 3] float32", "reflect pads (3, 0)", "dim 1"});
  expect_error<ValueError>([&] { pad(x, {-1, 0}, "replicate"); }, {"pad", "replicate pads"});
  expect_error<ShapeError>([&] { pad(x, {-2, -2}); }, {"pad", "negative size"});
  expect_error<ShapeError>(
      [&] {
        pad_backward(x, {2, 3}, {1, 1});
      },
      {"pad_backward", "grad_out is [2, 3]", "[2, 5]"});
}

EMBER_INSTANTIATE_DEVICE_TEST(Indexing);
EMBER_INSTANTIATE_DEVICE_TEST(Pad);

}  // namespace
}  // namespace ember
