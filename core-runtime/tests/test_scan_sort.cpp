// test_scan_sort.cpp — cumsum/cumprod and sort/argsort/topk against plain loops written here:
// running sums and products in double, std::stable_sort of each line's indices.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;
using Values = std::vector<double>;

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

const DType kAllDTypes[] = {DType::Bool,    DType::UInt8,  DType::Int8,    DType::Int16,
                            DType::Int32,   DType::Int64,  DType::Float16, DType::BFloat16,
                            DType::Float32, DType::Float64};

class ScanSort : public test::DeviceTest {};
EMBER_INSTANTIATE_DEVICE_TEST(ScanSort);

// The row-major flat indices of every line of `shape` along dim (a 0-d shape: one line {0}).
std::vector<std::vector<int64_t>> lines(const Shape& shape, int64_t dim) {
  if (shape.empty()) return {{0}};
  if (dim < 0) dim += int64_t(shape.size());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= shape[size_t(d)];
  for (size_t d = size_t(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t n = shape[size_t(dim)];
  std::vector<std::vector<int64_t>> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      std::vector<int64_t> line;
      for (int64_t j = 0; j < n; ++j) line.push_back((o * n + j) * inner + in);
      out.push_back(line);
    }
  return out;
}

// Random integers in [lo, hi] as doubles: values every dtype holds, with many ties.
Values random_ints(int64_t n, int lo, int hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  Values v(static_cast<size_t>(n));
  for (double& x : v) x = dist(gen);
  return v;
}

bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Every element of t equals want's (NaN matching NaN, inf matching inf).
void expect_exact(const Tensor& t, const Values& want) {
  const Values got = t.to_vector<double>();
  ASSERT_EQ(got.size(), want.size()) << t.str();
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(same_value(got[i], want[i]))
        << "element " << i << ": " << got[i] << " vs " << want[i];
}

Tensor make(const Values& v, const Shape& shape, DType dtype, Device device) {
  return Tensor::from_vector(v, shape).to(device, dtype);
}

// ---------------- cumsum / cumprod ----------------

// The running sum (or product) of x along dim, in double.
Values ref_scan(const Tensor& x, int64_t dim, bool product) {
  const Values v = x.to_vector<double>();
  Values out(v.size());
  for (const auto& line : lines(x.shape(), dim)) {
    double acc = product ? 1.0 : 0.0;
    for (int64_t i : line) {
      acc = product ? acc * v[size_t(i)] : acc + v[size_t(i)];
      out[size_t(i)] = acc;
    }
  }
  return out;
}

double tolerance(DType t) {
  if (t == DType::Float16) return 2e-3;
  if (t == DType::BFloat16) return 1.6e-2;
  if (t == DType::Float32) return 2e-5;
  return is_floating(t) ? 1e-12 : 0.0;
}

void expect_scan(const Tensor& x, int64_t dim, bool product, std::optional<DType> dtype = {}) {
  SCOPED_TRACE(x.str() + " dim " + std::to_string(dim) + (product ? " cumprod" : " cumsum"));
  Tensor got = product ? cumprod(x, dim, dtype) : cumsum(x, dim, dtype);
  const DType want = dtype ? *dtype : is_floating(x.dtype()) ? x.dtype() : DType::Int64;
  EXPECT_EQ(got.dtype(), want);
  EXPECT_EQ(got.shape(), x.shape());
  EXPECT_EQ(got.device(), x.device());
  const double tol = tolerance(want);
  expect_close(got, ref_scan(x, dim, product), tol, tol);
}

TEST_P(ScanSort, CumsumAndCumprodAlongEveryDim) {
  Tensor x = test::random_tensor({3, 5, 4}, 1, DType::Float32, device());
  for (int64_t dim : {0, 1, 2, -1, -3}) {
    expect_scan(x, dim, false);
    expect_scan(x, dim, true);
  }
  Tensor d = test::random_tensor({4, 33}, 2, DType::Float64, device());
  expect_scan(d, 1, false);
  expect_scan(d, 0, true);
}

TEST_P(ScanSort, CumsumEveryDType) {
  for (DType t : kAllDTypes) {
    const int lo = t == DType::Bool || t == DType::UInt8 ? 0 : -3;
    Tensor x = make(random_ints(6 * 40, lo, 3, 3), {6, 40}, t, device());
    expect_scan(x, 1, false);
    expect_scan(x, 0, false);
    expect_scan(x, 0, true);  // products of 6 factors: exact, or one rounding for bfloat16
    expect_scan(x.t(), -1, true);
  }
}

TEST_P(ScanSort, CumsumNonContiguous) {
  Tensor base = test::random_tensor({40, 6}, 4, DType::Float32, device());
  Tensor t = base.t();  // [6, 40]
  ASSERT_FALSE(t.is_contiguous());
  expect_scan(t, 1, false);
  expect_scan(t, 0, false);
  expect_scan(base.slice(0, 1, 40, 3), 0, false);  // a step of 3
  expect_scan(base.slice(0, 1, 40, 3), 1, true);
  Tensor row = test::random_tensor({1, 20}, 5, DType::Float32, device());
  expect_scan(row.expand({5, 20}), 0, false);  // an expanded input
  expect_scan(row.expand({5, 20}), 1, false);
  // A permuted 3-D view whose other dims do not merge into one stride.
  Tensor p = test::random_tensor({3, 4, 5}, 6, DType::Float32, device()).permute({2, 0, 1});
  expect_scan(p, 1, false);
  expect_scan(p, 0, true);
  expect_scan(p, 2, false);
}

TEST_P(ScanSort, CumsumShortAndLongLines) {
  // [4096, 7]: many short lines; [7, 4096] along dim 0: the same, strided; lines across tiles.
  expect_scan(test::random_tensor({4096, 7}, 7, DType::Float32, device()), 1, false);
  expect_scan(test::random_tensor({7, 4096}, 8, DType::Float32, device()), 0, false);
  expect_scan(test::random_tensor({300, 17}, 9, DType::Float32, device()), 1, false);
  expect_scan(test::random_tensor({3, 2500}, 10, DType::Float64, device()), 1, false);
  expect_scan(make(random_ints(3 * 2500, -9, 9, 11), {3, 2500}, DType::Int32, device()), 1, false);
  expect_scan(test::random_tensor({2, 3000}, 12, DType::Float32, device(), 0.9, 1.1), 1, true);
}

// A float32 running sum over 100000 elements is no less accurate than a sequential float loop.
TEST_P(ScanSort, CumsumLongLineAccuracy) {
  const int64_t n = 100000;
  Tensor x = test::random_tensor({n}, 13, DType::Float32, device(), 0.0, 1.0);
  const Values v = x.to_vector<double>(), ref = ref_scan(x, 0, false);
  double loop_err = 0, acc64 = 0;
  float acc32 = 0;
  for (int64_t i = 0; i < n; ++i) {
    acc32 += float(v[size_t(i)]);
    acc64 += v[size_t(i)];
    loop_err = std::max(loop_err, std::fabs(double(acc32) - acc64));
  }
  const Values got = cumsum(x, 0).to_vector<double>();
  double err = 0;
  for (int64_t i = 0; i < n; ++i) err = std::max(err, std::fabs(got[size_t(i)] - ref[size_t(i)]));
  EXPECT_LE(err, loop_err + 1e-7 * ref.back()) << "a sequential float loop is off by " << loop_err;
  // float16 and bfloat16 accumulate in float32: only the final rounding shows.
  for (DType t : {DType::Float16, DType::BFloat16}) {
    Tensor h = test::random_tensor({5000}, 14, t, device(), 0.0, 1.0);
    expect_scan(h, 0, false);
  }
}

TEST_P(ScanSort, CumsumResultDTypes) {
  Tensor i32 = make({1, 2, 3}, {3}, DType::Int32, device());
  expect_scan(i32, 0, false, DType::Float32);
  expect_scan(i32, 0, true, DType::Int16);
  expect_scan(test::random_tensor({8}, 15, DType::Float32, device()), 0, false, DType::Float64);
  expect_scan(make({1, 0, 1, 1}, {4}, DType::Bool, device()), 0, false);
  // An integer result wraps on overflow, as in PyTorch.
  Tensor i8 = make({100, 100, 100}, {3}, DType::Int8, device());
  EXPECT_EQ(cumsum(i8, 0, DType::Int8).to_vector<int64_t>(), (std::vector<int64_t>{100, -56, 44}));
  Tensor big = make(Values(70, 2.0), {70}, DType::Int64, device());
  std::vector<int64_t> wrap = cumprod(big, 0).to_vector<int64_t>();
  EXPECT_EQ(wrap[61], int64_t(1) << 62);
  EXPECT_EQ(wrap[62], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(wrap[63], 0);
}

TEST_P(ScanSort, CumsumSpecialValuesAndEdgeSizes) {
  Tensor f = make({1, kInf, 2, kNaN, 3}, {5}, DType::Float32, device());
  expect_exact(cumsum(f, 0), {1, kInf, kInf, kNaN, kNaN});
  expect_exact(cumprod(make({2, 0, kInf}, {3}, DType::Float64, device()), 0), {2, 0, kNaN});
  Tensor s = make({4.5}, {}, DType::Float32, device());
  for (int64_t dim : {0, -1}) {
    Tensor c = cumsum(s, dim);
    EXPECT_EQ(c.shape(), Shape{});
    EXPECT_EQ(c.item<double>(), 4.5);
    EXPECT_FALSE(c.shares_storage(s));
  }
  EXPECT_EQ(cumprod(make({3}, {}, DType::Int16, device()), 0).dtype(), DType::Int64);
  for (const Shape& shape : {Shape{0, 3}, Shape{3, 0}})
    for (int64_t dim : {0, 1}) {
      Tensor e = cumsum(Tensor::empty(shape, DType::Float32, device()), dim);
      EXPECT_EQ(e.shape(), shape);
    }
  expect_scan(test::random_tensor({5, 1}, 16, DType::Float32, device()), 1, true);
}

TEST_P(ScanSort, CumsumOut) {
  Tensor x = test::random_tensor({6, 40}, 17, DType::Float32, device());
  const Values want = ref_scan(x, 1, false);
  Tensor out = Tensor::empty({6, 40}, DType::Float32, device());
  const Tensor& r = cumsum_out(out, x, 1);
  EXPECT_EQ(r.data_ptr(), out.data_ptr());
  expect_close(out, want);
  // A transposed out, and one inside a larger buffer whose dims do not merge into one stride.
  Tensor t = Tensor::empty({40, 6}, DType::Float32, device()).t();
  expect_close(cumsum_out(t, x, 1), want);
  Tensor big = zeros({3, 8, 2, 40}, DType::Float32, device());
  Tensor view = big.select(2, 1).slice(1, 0, 8, 5);  // [3, 2, 40], strides 640, 400, 1
  Tensor x3 = x.view({3, 2, 40});
  cumsum_out(view, x3, 2);
  expect_close(view, want);
  cumprod_out(view, x3, 0);
  expect_close(view, ref_scan(x3, 0, true));
  // Into x itself; and with a dtype.
  Tensor y = x.clone();
  const int64_t before = y.version();
  cumsum_out(y, y, 1);
  EXPECT_GT(y.version(), before);
  expect_close(y, want);
  Tensor i = make({1, 2, 3}, {3}, DType::Int32, device());
  Tensor o64 = Tensor::empty({3}, DType::Float64, device());
  expect_close(cumsum_out(o64, i, 0, DType::Float64), {1, 3, 6}, 0);
}

TEST_P(ScanSort, CumsumErrors) {
  Tensor x = zeros({2, 3}, DType::Float32, device());
  expect_error<IndexError>([&] { cumsum(x, 2); }, {"cumsum", "[2, 3] float32", "dim 2"});
  expect_error<IndexError>([&] { cumprod(x, -3); }, {"cumprod", "[2, 3] float32"});
  expect_error<IndexError>([&] { cumsum(zeros({}, DType::Float32, device()), 1); },
                           {"cumsum", "[] float32"});
  expect_error<DTypeError>([&] { cumsum(x, 0, DType::Bool); }, {"cumsum", "bool", "[2, 3]"});
  expect_error<DTypeError>([&] { cumprod(x, 0, DType::Bool); }, {"cumprod", "bool"});
  expect_error<ValueError>([&] { cumsum(Tensor(), 0); }, {"cumsum", "undefined"});
  Tensor out = Tensor::empty({3, 2}, DType::Float32, device());
  expect_error<ShapeError>([&] { cumsum_out(out, x, 0); }, {"cumsum", "[3, 2]", "[2, 3]"});
  Tensor wrong = Tensor::empty({2, 3}, DType::Float64, device());
  expect_error<DTypeError>([&] { cumsum_out(wrong, x, 0); }, {"cumsum", "float64", "float32"});
  Tensor i = zeros({2, 3}, DType::Int32, device());
  Tensor i32 = Tensor::empty({2, 3}, DType::Int32, device());
  expect_error<DTypeError>([&] { cumsum_out(i32, i, 0); }, {"cumsum", "int64"});
  Tensor buf = zeros({3, 3}, DType::Float32, device());
  expect_error<ValueError>([&] { cumsum_out(buf.slice(0, 1, 3), buf.slice(0, 0, 2), 1); },
                           {"cumsum", "overlaps"});
  Tensor expanded = zeros({1, 3}, DType::Float32, device()).expand({2, 3});
  expect_error<ValueError>([&] { cumsum_out(expanded, x, 0); }, {"cumsum", "expanded"});
}

// ---------------- sort / argsort / topk ----------------

// Whether a goes strictly before b: NaN is the largest value.
bool ref_before(double a, double b, bool descending) {
  if (descending) return std::isnan(a) ? !std::isnan(b) : a > b;
  return std::isnan(b) ? !std::isnan(a) : a < b;
}

// Checks values/indices [..., k, ...] against the stable order of each line of x along dim: the
// values exactly; the indices exactly when `exact`, else that they point at the right values,
// are distinct and in range.
void expect_sorted(const Tensor& x, int64_t dim, bool descending, int64_t k, const Tensor& values,
                   const Tensor& indices, bool exact) {
  SCOPED_TRACE(x.str() + " dim " + std::to_string(dim) + (descending ? " descending" : ""));
  Shape shape = x.shape();
  if (!shape.empty()) shape[size_t(dim < 0 ? dim + x.dim() : dim)] = k;
  ASSERT_EQ(indices.shape(), shape);
  ASSERT_EQ(indices.dtype(), DType::Int64);
  const Values xv = x.to_vector<double>();
  const std::vector<int64_t> iv = indices.to_vector<int64_t>();
  const Values vv = values.defined() ? values.to_vector<double>() : Values();
  if (values.defined()) {
    ASSERT_EQ(values.shape(), shape);
    ASSERT_EQ(values.dtype(), x.dtype());
  }
  const auto in_lines = lines(x.shape(), dim), out_lines = lines(shape, dim);
  ASSERT_EQ(in_lines.size(), out_lines.size());
  int failures = 0;
  for (size_t l = 0; l < in_lines.size() && failures < 5; ++l) {
    const auto& in = in_lines[l];
    std::vector<int64_t> order(in.size());
    std::iota(order.begin(), order.end(), int64_t(0));
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return ref_before(xv[size_t(in[size_t(a)])], xv[size_t(in[size_t(b)])], descending);
    });
    std::vector<bool> seen(in.size(), false);
    for (int64_t j = 0; j < k; ++j) {
      const size_t o = size_t(out_lines[l][size_t(j)]);
      const double want = xv[size_t(in[size_t(order[size_t(j)])])];
      const int64_t idx = iv[o];
      bool ok = idx >= 0 && idx < int64_t(in.size()) && !seen[size_t(idx)] &&
                same_value(xv[size_t(in[size_t(idx)])], want);
      if (ok) seen[size_t(idx)] = true;
      if (exact) ok = ok && idx == order[size_t(j)];
      if (values.defined()) ok = ok && same_value(vv[o], want);
      if (!ok && ++failures <= 5)
        ADD_FAILURE() << "line " << l << " position " << j << ": index " << idx << " (want "
                      << order[size_t(j)] << "), value " << (vv.empty() ? 0.0 : vv[o]) << " (want "
                      << want << ")";
    }
  }
}

void expect_sort(const Tensor& x, int64_t dim, bool descending = false) {
  for (bool stable : {false, true}) {
    ValuesIndices r = sort(x, dim, descending, stable);
    const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
    expect_sorted(x, dim, descending, n, r.values, r.indices, stable);
    expect_sorted(x, dim, descending, n, Tensor(), argsort(x, dim, descending, stable), stable);
  }
}

TEST_P(ScanSort, SortEveryDTypeWithTies) {
  for (DType t : kAllDTypes) {
    const int lo = t == DType::Bool || t == DType::UInt8 ? 0 : -5;
    const int hi = t == DType::Bool ? 1 : 5;
    Tensor x = make(random_ints(5 * 37, lo, hi, 20), {5, 37}, t, device());
    for (bool desc : {false, true}) {
      expect_sort(x, 1, desc);
      expect_sort(x, 0, desc);
    }
  }
  Tensor f = test::random_tensor({2, 3, 5}, 21, DType::Float32, device());
  for (int64_t dim : {0, 1, 2, -2}) expect_sort(f, dim, dim == 1);
}

TEST_P(ScanSort, SortNaNInfAndSignedZero) {
  const double neg_nan = std::copysign(kNaN, -1.0);
  const Values v{3, kNaN, -kInf, 0.0, -0.0, kInf, neg_nan, -2, 0.0, 1, kNaN, -0.0};
  for (DType t : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64}) {
    Tensor x = make(v, {12}, t, device());
    expect_sort(x, 0, false);
    expect_sort(x, 0, true);
    ValuesIndices r = sort(x, 0, false, true);
    Values got = r.values.to_vector<double>();
    EXPECT_EQ(got[0], -kInf);
    EXPECT_TRUE(std::isnan(got[10]) && std::isnan(got[11]));
    // Zeros are equal: the stable order keeps -0.0, 0.0, 0.0, -0.0 as they came, signs intact.
    EXPECT_EQ(r.indices.to_vector<int64_t>()[2], 3);
    EXPECT_TRUE(std::signbit(got[3]));
    ValuesIndices top = topk(x, 4, 0, true);
    expect_sorted(x, 0, true, 4, top.values, top.indices, true);
  }
}

TEST_P(ScanSort, SortShortAndLongLines) {
  Tensor many = test::random_tensor({4096, 7}, 22, DType::Float32, device());
  expect_sort(many, 1);
  expect_sort(many, 0, true);  // 7 lines of 4096, strided
  Tensor ties = make(random_ints(4096 * 7, -2, 2, 23), {4096, 7}, DType::Int32, device());
  expect_sort(ties, 1, true);
  expect_sort(test::random_tensor({100000}, 24, DType::Float32, device()), 0);
  Tensor long_ties = make(random_ints(100000, -50, 50, 25), {100000}, DType::Int64, device());
  expect_sort(long_ties, 0, true);
  expect_sort(test::random_tensor({3, 5000}, 26, DType::Float64, device()), 1, true);
  expect_sort(make(random_ints(140 * 1000, -99, 99, 27), {140, 1000}, DType::Int16, device()), 1);
  expect_sort(test::random_tensor({140, 1000}, 28, DType::BFloat16, device()), 1, true);
}

TEST_P(ScanSort, SortNonContiguousAndEdgeSizes) {
  Tensor base = test::random_tensor({40, 6}, 29, DType::Float32, device());
  expect_sort(base.t(), 1);
  expect_sort(base.t(), 0, true);
  expect_sort(base.slice(0, 1, 40, 3), 0);
  expect_sort(base.slice(0, 1, 40, 3), 1, true);
  Tensor col = test::random_tensor({5, 1}, 30, DType::Float32, device());
  expect_sort(col.expand({5, 8}), 1);  // every line a run of equal values
  expect_sort(col.expand({5, 8}), 0, true);
  expect_sort(col, 1);  // size-1 lines: indices 0
  Tensor p = test::random_tensor({3, 4, 5}, 31, DType::Float32, device()).permute({2, 0, 1});
  expect_sort(p, 1);
  expect_sort(p, 0, true);
  // 0-d: a copy and index 0.
  Tensor s = make({2.5}, {}, DType::Float32, device());
  ValuesIndices r = sort(s, -1);
  EXPECT_EQ(r.values.shape(), Shape{});
  EXPECT_EQ(r.values.item<double>(), 2.5);
  EXPECT_EQ(r.indices.item<int64_t>(), 0);
  EXPECT_EQ(argsort(s, 0).item<int64_t>(), 0);
  for (const Shape& shape : {Shape{0, 5}, Shape{5, 0}}) {
    ValuesIndices e = sort(Tensor::empty(shape, DType::Float32, device()), 1);
    EXPECT_EQ(e.values.shape(), shape);
    EXPECT_EQ(e.indices.shape(), shape);
  }
}

void expect_topk(const Tensor& x, int64_t k, int64_t dim, bool largest) {
  for (bool sorted : {true, false}) {
    ValuesIndices r = topk(x, k, dim, largest, sorted);
    expect_sorted(x, dim, largest, k, r.values, r.indices, true);
  }
}

TEST_P(ScanSort, Topk) {
  Tensor many = test::random_tensor({4096, 7}, 32, DType::Float32, device());
  for (int64_t k : {0, 1, 3, 7}) {
    expect_topk(many, k, 1, true);
    expect_topk(many, k, -1, false);
  }
  expect_topk(many, 5, 0, true);
  expect_topk(test::random_tensor({100000}, 33, DType::Float64, device()), 10, 0, true);
  expect_topk(test::random_tensor({100000}, 34, DType::Float16, device()), 25, 0, false);
  for (DType t : kAllDTypes) {
    const int lo = t == DType::Bool || t == DType::UInt8 ? 0 : -5;
    Tensor x = make(random_ints(6 * 30, lo, t == DType::Bool ? 1 : 5, 35), {6, 30}, t, device());
    expect_topk(x, 4, 1, true);
    expect_topk(x.t(), 2, 0, false);
  }
  Tensor nan = make({1, kNaN, 3, kNaN, 2}, {5}, DType::Float32, device());
  expect_exact(topk(nan, 3).values, {kNaN, kNaN, 3});
  expect_close(topk(nan, 2, 0, false).values, {1, 2}, 0);
  // 0-d: 0-d results, for k = 0 too (as PyTorch).
  Tensor s = make({7}, {}, DType::Int32, device());
  for (int64_t k : {0, 1}) {
    ValuesIndices r = topk(s, k);
    EXPECT_EQ(r.values.shape(), Shape{});
    EXPECT_EQ(r.values.item<int64_t>(), 7);
    EXPECT_EQ(r.indices.item<int64_t>(), 0);
  }
  EXPECT_EQ(topk(Tensor::empty({4, 0}, DType::Float32, device()), 0).values.shape(), (Shape{4, 0}));
}

TEST_P(ScanSort, SortAndTopkOut) {
  Tensor x = test::random_tensor({6, 40}, 36, DType::Float32, device());
  Tensor v = Tensor::empty({40, 6}, DType::Float32, device()).t();
  Tensor i = Tensor::empty({6, 40}, DType::Int64, device());
  ValuesIndices r = sort_out(v, i, x, 1, true);
  EXPECT_EQ(r.values.data_ptr(), v.data_ptr());
  EXPECT_EQ(r.indices.data_ptr(), i.data_ptr());
  expect_sorted(x, 1, true, 40, v, i, true);
  // Outputs inside larger buffers, in layouts whose dims do not merge into one stride.
  Tensor x3 = x.view({3, 2, 40});
  Tensor vb = zeros({3, 4, 2, 40}, DType::Float32, device());
  Tensor ib = zeros({2, 40, 3, 2}, DType::Int64, device());
  Tensor vs = vb.slice(1, 0, 4, 2).select(1, 1);   // [3, 2, 40]
  Tensor is = ib.select(0, 1).permute({1, 2, 0});  // [3, 2, 40]
  sort_out(vs, is, x3, 2, false);
  expect_sorted(x3, 2, false, 40, vs, is, true);
  Tensor ai = Tensor::empty({40, 6}, DType::Int64, device()).t();
  EXPECT_EQ(argsort_out(ai, x, 0).data_ptr(), ai.data_ptr());
  expect_sorted(x, 0, false, 6, Tensor(), ai, true);
  Tensor tv = Tensor::empty({5, 6}, DType::Float32, device()).t();
  Tensor ti = Tensor::empty({5, 6}, DType::Int64, device()).t();
  topk_out(tv, ti, x, 5, 1);
  expect_sorted(x, 1, true, 5, tv, ti, true);
  const int64_t before = ti.version();
  topk_out(tv, ti, x, 5, 1, false);
  EXPECT_GT(ti.version(), before);
  expect_sorted(x, 1, false, 5, tv, ti, true);
}

TEST_P(ScanSort, SortAndTopkErrors) {
  Tensor x = zeros({4, 7}, DType::Float32, device());
  expect_error<IndexError>([&] { sort(x, 2); }, {"sort", "[4, 7] float32", "dim 2"});
  expect_error<IndexError>([&] { argsort(x, -3); }, {"argsort", "[4, 7] float32"});
  expect_error<IndexError>([&] { topk(x, 1, 5); }, {"topk", "[4, 7] float32"});
  expect_error<IndexError>([&] { sort(zeros({}, DType::Float32, device()), 1); },
                           {"sort", "[] float32"});
  expect_error<ValueError>([&] { topk(x, 8); }, {"topk", "k is 8", "size 7", "[4, 7]"});
  expect_error<ValueError>([&] { topk(x, 5, 0); }, {"topk", "k is 5", "size 4"});
  expect_error<ValueError>([&] { topk(x, -1); }, {"topk", "k is -1"});
  expect_error<ValueError>([&] { topk(zeros({}, DType::Float32, device()), 2); },
                           {"topk", "k is 2", "size 1"});
  expect_error<ValueError>([&] { sort(Tensor(), 0); }, {"sort", "undefined"});
  Tensor v = Tensor::empty({4, 7}, DType::Float32, device());
  Tensor i = Tensor::empty({4, 7}, DType::Int64, device());
  Tensor i32 = Tensor::empty({4, 7}, DType::Int32, device());
  expect_error<DTypeError>([&] { sort_out(v, i32, x); }, {"sort", "int32", "int64"});
  expect_error<DTypeError>([&] { argsort_out(i32, x); }, {"argsort", "int32"});
  expect_error<DTypeError>([&] { sort_out(i, i, x); }, {"sort", "int64", "float32"});
  expect_error<ShapeError>([&] { topk_out(v, i, x, 3); }, {"topk", "[4, 7]", "[4, 3]"});
  expect_error<ValueError>([&] { sort_out(x, i, x); }, {"sort", "overlaps"});
  Tensor xi = zeros({4, 7}, DType::Int64, device());
  Tensor vi = Tensor::empty({4, 7}, DType::Int64, device());
  expect_error<ValueError>([&] { sort_out(vi, xi, xi); }, {"sort", "overlaps"});
  expect_error<ValueError>([&] { topk_out(vi.slice(1, 0, 3), xi.slice(1, 0, 3), xi, 3); },
                           {"topk", "overlaps"});
}

}  // namespace
}  // namespace ember
