// test_masking.cpp — nonzero, masked_select and index_put against loops written here, and the
// patterns Python's indexing reduces to: x[mask] = v, x[idx] = v, x[i, j] = v, x[idx] += v.
#include <algorithm>
#include <random>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;
using test::random_tensor;

class Masking : public test::DeviceTest {};

const DType kAllDTypes[] = {DType::Bool,    DType::UInt8,  DType::Int8,    DType::Int16,
                            DType::Int32,   DType::Int64,  DType::Float16, DType::BFloat16,
                            DType::Float32, DType::Float64};
const DType kNumeric[] = {DType::UInt8,    DType::Int8,    DType::Int16,
                          DType::Int32,    DType::Int64,   DType::Float16,
                          DType::BFloat16, DType::Float32, DType::Float64};

Tensor ints(const std::vector<int64_t>& v, const Shape& shape, Device dev) {
  return Tensor::from_vector(v, shape).to(dev);
}

Tensor bools(const std::vector<bool>& v, const Shape& shape, Device dev) {
  return Tensor::from_vector(v, shape).to(dev);
}

// Values in {0, 1, 2} (about a third zero), as float64 for building any dtype.
std::vector<double> sparse_values(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> dist(0, 2);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = dist(gen);
  return v;
}

std::vector<bool> random_mask(int64_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<bool> m(static_cast<size_t>(n));
  for (size_t i = 0; i < m.size(); ++i) m[i] = gen() % 3 == 0;
  return m;
}

// The row-major coordinates of every nonzero of values (of `shape`), flattened.
std::vector<int64_t> nonzero_reference(const std::vector<double>& values, const Shape& shape) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i] == 0) continue;
    std::vector<int64_t> c(shape.size());
    int64_t rest = int64_t(i);
    for (size_t d = shape.size(); d-- > 0;) {
      c[d] = rest % shape[d];
      rest /= shape[d];
    }
    out.insert(out.end(), c.begin(), c.end());
  }
  return out;
}

// ---------------- nonzero ----------------

TEST_P(Masking, NonzeroListsCoordinatesInRowMajorOrderForEveryDType) {
  const Shape shape{3, 5, 4};
  const std::vector<double> v = sparse_values(60, 1);
  const std::vector<int64_t> want = nonzero_reference(v, shape);
  for (DType dt : kAllDTypes) {
    Tensor x = Tensor::from_vector(v, shape).to(device(), dt);
    Tensor nz = nonzero(x);
    EXPECT_EQ(nz.dtype(), DType::Int64);
    EXPECT_EQ(nz.shape(), (Shape{int64_t(want.size() / 3), 3})) << dtype_name(dt);
    EXPECT_EQ(nz.to_vector<int64_t>(), want) << dtype_name(dt);
  }
}

TEST_P(Masking, NonzeroOnViewsAndSpecialValues) {
  const std::vector<double> v = sparse_values(6 * 8, 2);
  Tensor base = Tensor::from_vector(v, {6, 8}).to(device());
  // transposed, sliced with a step, expanded
  for (Tensor view : {base.t(), base.slice(1, 1, 8, 3), base.slice(0, 2, 3).expand({4, 8})}) {
    ASSERT_FALSE(view.is_contiguous());
    EXPECT_EQ(nonzero(view).to_vector<int64_t>(),
              nonzero_reference(view.to_vector<double>(), view.shape()));
  }
  // NaN is nonzero, -0.0 is zero
  Tensor special = Tensor::from_vector(std::vector<double>{-0.0, NAN, 0.0, -2.0}, {4}).to(device());
  EXPECT_EQ(nonzero(special).to_vector<int64_t>(), (std::vector<int64_t>{1, 3}));
}

TEST_P(Masking, NonzeroEdgeSizes) {
  EXPECT_EQ(nonzero(Tensor::empty({0, 3}, DType::Float32, device())).shape(), (Shape{0, 2}));
  EXPECT_EQ(nonzero(zeros({4, 2}, DType::Int32, device())).shape(), (Shape{0, 2}));
  EXPECT_EQ(nonzero(scalar_tensor(5, DType::Float32, device())).shape(), (Shape{1, 0}));
  EXPECT_EQ(nonzero(scalar_tensor(0, DType::Float32, device())).shape(), (Shape{0, 0}));
  EXPECT_EQ(nonzero(ones({1}, DType::Bool, device())).to_vector<int64_t>(),
            (std::vector<int64_t>{0}));
  // long enough to be split between threads (and blocks)
  const Shape big{7, 20011};
  const std::vector<double> v = sparse_values(shape_numel(big), 3);
  EXPECT_EQ(nonzero(Tensor::from_vector(v, big).to(device())).to_vector<int64_t>(),
            nonzero_reference(v, big));
  expect_error<ValueError>([] { nonzero(Tensor()); }, {"nonzero", "undefined"});
}

// ---------------- masked_select ----------------

TEST_P(Masking, MaskedSelectPicksElementsInOrder) {
  Tensor x = random_tensor({4, 6}, 4, DType::Float64, device());
  const std::vector<bool> m = random_mask(24, 5);
  const std::vector<double> xv = x.to_vector<double>();
  std::vector<double> want;
  for (size_t i = 0; i < 24; ++i)
    if (m[i]) want.push_back(xv[i]);
  for (DType dt : kAllDTypes) {
    Tensor xd = x.to(dt), got = masked_select(xd, bools(m, {4, 6}, device()));
    EXPECT_EQ(got.dtype(), dt);
    const std::vector<double> xdv = xd.to_vector<double>();  // x's values as dt holds them
    std::vector<double> want_dt;
    for (size_t i = 0; i < 24; ++i)
      if (m[i]) want_dt.push_back(xdv[i]);
    EXPECT_EQ(got.to_vector<double>(), want_dt) << dtype_name(dt);
  }
  expect_close(masked_select(x, bools(m, {4, 6}, device())), want, 0);
}

TEST_P(Masking, MaskedSelectBroadcastsAndTakesViews) {
  Tensor x = random_tensor({5, 3}, 6, DType::Float32, device());
  const std::vector<double> xv = x.to_vector<double>();
  // mask [3] over every row; mask [5, 1] over whole rows
  std::vector<double> want;
  for (size_t i = 0; i < 5; ++i)
    for (size_t j : {0, 2}) want.push_back(xv[i * 3 + j]);
  expect_close(masked_select(x, bools({true, false, true}, {3}, device())), want, 0);
  want.clear();
  for (size_t i : {1, 4})
    for (size_t j = 0; j < 3; ++j) want.push_back(xv[i * 3 + j]);
  expect_close(masked_select(x, bools({false, true, false, false, true}, {5, 1}, device())), want,
               0);
  // x broadcast up to the mask's shape: x [3], mask [2, 3]
  Tensor row = x.select(0, 0);
  want = {xv[1], xv[0], xv[2]};
  expect_close(masked_select(row, bools({false, true, false, true, false, true}, {2, 3}, device())),
               want, 0);
  // a transposed x with a mask of its (transposed) shape
  Tensor xt = x.t();  // [3, 5]
  const std::vector<bool> m = random_mask(15, 7);
  const std::vector<double> tv = xt.to_vector<double>();
  want.clear();
  for (size_t i = 0; i < 15; ++i)
    if (m[i]) want.push_back(tv[i]);
  expect_close(masked_select(xt, bools(m, {3, 5}, device())), want, 0);
  // large, every element selected or none
  Tensor big = random_tensor({70001}, 8, DType::Float32, device());
  expect_close(masked_select(big, ones({70001}, DType::Bool, device())), big, 0);
  EXPECT_EQ(masked_select(big, zeros({1}, DType::Bool, device())).shape(), (Shape{0}));
  EXPECT_EQ(masked_select(Tensor::empty({0, 3}, DType::Float32, device()),
                          bools({true, true, false}, {3}, device()))
                .shape(),
            (Shape{0}));
  EXPECT_EQ(masked_select(scalar_tensor(2.5, DType::Float32, device()),
                          scalar_tensor(1, DType::Bool, device()))
                .to_vector<double>(),
            (std::vector<double>{2.5}));
}

TEST_P(Masking, MaskedSelectErrors) {
  Tensor x = zeros({2, 3}, DType::Float32, device());
  expect_error<DTypeError>(
      [&] {
        masked_select(x, zeros({2, 3}, DType::Int64, device()));
      },
      {"masked_select", "x is [2, 3] float32", "mask is [2, 3] int64", "bool"});
  expect_error<ShapeError>([&] { masked_select(x, zeros({2}, DType::Bool, device())); },
                           {"masked_select", "mask is [2] bool", "broadcast"});
  expect_error<ValueError>([&] { masked_select(x, Tensor()); }, {"masked_select", "undefined"});
}

// ---------------- index_put ----------------

TEST_P(Masking, MaskAssignment) {  // x[mask] = v
  Tensor x = random_tensor({4, 5}, 10, DType::Float32, device());
  const std::vector<bool> m = random_mask(20, 11);
  Tensor mask = bools(m, {4, 5}, device());
  std::vector<double> xv = x.to_vector<double>(), want = xv;
  for (size_t i = 0; i < 20; ++i)
    if (m[i]) want[i] = -3;
  Tensor y = index_put(x, {mask}, scalar_tensor(-3, DType::Float32, device()));
  expect_close(y, want, 0);
  expect_close(x, xv, 0);  // out of place: x untouched
  // one value per true element, in row-major order
  const int64_t n = std::count(m.begin(), m.end(), true);
  Tensor vals = arange(0, double(n), 1, DType::Float32, device());
  want = xv;
  for (size_t i = 0, k = 0; i < 20; ++i)
    if (m[i]) want[i] = double(k++);
  const int64_t before = x.version();
  index_put_(x, {mask}, vals);
  EXPECT_GT(x.version(), before);
  expect_close(x, want, 0);
  // a row mask over dim 0 of a [4, 5]: x[rows] = row vector, broadcast
  Tensor z = zeros({4, 5}, DType::Int64, device());
  index_put_(z, {bools({true, false, false, true}, {4}, device())},
             ints({1, 2, 3, 4, 5}, {5}, device()));
  EXPECT_EQ(z.to_vector<int64_t>(),
            (std::vector<int64_t>{1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5}));
}

TEST_P(Masking, IntegerListAssignmentWrapsNegatives) {  // x[[0, 2, -1]] = v
  for (DType dt : kAllDTypes) {
    Tensor x = zeros({4, 3}, dt, device());
    Tensor v = Tensor::from_vector(std::vector<double>{1, 0, 1, 1, 1, 0, 0, 1, 1}, {3, 3})
                   .to(device(), dt);
    for (DType it : {DType::Int64, DType::Int32})
      index_put_(x, {ints({0, 2, -1}, {3}, device()).to(it)}, v);
    EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 0, 1, 0, 0, 0, 1, 1, 0, 0, 1, 1}))
        << dtype_name(dt);
  }
  // a slice before the index: x[:, idx] = v, with v broadcast over the rows
  Tensor x = zeros({2, 4}, DType::Float64, device());
  index_put_(x, {Tensor(), ints({3, -4}, {2}, device())},
             Tensor::from_vector(std::vector<double>{7, 8}, {2}).to(device()));
  expect_close(x, std::vector<double>{8, 0, 0, 7, 8, 0, 0, 7}, 0);
  // a strided index (every other element of a longer one) and a transposed mask
  Tensor y = zeros({4}, DType::Int64, device());
  index_put_(y, {ints({3, 9, 0, 9}, {4}, device()).slice(0, 0, 4, 2)}, ints({5, 6}, {2}, device()));
  EXPECT_EQ(y.to_vector<int64_t>(), (std::vector<int64_t>{6, 0, 0, 5}));
  Tensor mt = bools({true, false, false, true, true, false}, {2, 3}, device()).t();  // [3, 2]
  Tensor w = zeros({3, 2}, DType::Float32, device());
  index_put_(w, {mt}, scalar_tensor(1, DType::Float32, device()));
  expect_close(w, std::vector<double>{1, 1, 0, 1, 0, 0}, 0);
}

TEST_P(Masking, TwoIndexTensorsBroadcast) {  // x[i, j] = v with i: [3, 1], j: [2]
  Tensor x = random_tensor({4, 5, 2}, 12, DType::Float64, device());
  const std::vector<int64_t> iv{3, 0, 1}, jv{4, -5};
  Tensor v = random_tensor({3, 2, 2}, 13, DType::Float64, device());
  std::vector<double> want = x.to_vector<double>(), vv = v.to_vector<double>();
  for (size_t a = 0; a < 3; ++a)
    for (size_t b = 0; b < 2; ++b) {
      const int64_t j = jv[b] < 0 ? jv[b] + 5 : jv[b];
      for (size_t k = 0; k < 2; ++k)
        want[size_t((iv[a] * 5 + j) * 2) + k] = vv[(a * 2 + b) * 2 + k];
    }
  Tensor y = index_put(x, {ints(iv, {3, 1}, device()), ints(jv, {2}, device())}, v);
  expect_close(y, want, 0);
  // indices separated by a slice put their broadcast dims first: x[i, :, j] -> [2, 5]
  Tensor z = zeros({3, 5, 4}, DType::Float32, device());
  Tensor w = arange(0, 10, 1, DType::Float32, device()).view({2, 5});
  index_put_(z, {ints({2, 0}, {2}, device()), Tensor(), ints({1, 3}, {2}, device())}, w);
  std::vector<double> zw(60, 0.0);
  for (int64_t c = 0; c < 5; ++c) {
    zw[size_t((2 * 5 + c) * 4 + 1)] = double(c);
    zw[size_t((0 * 5 + c) * 4 + 3)] = double(5 + c);
  }
  expect_close(z, zw, 0);
  // a mask and an integer index together: x[mask, j] with mask over dim 0
  Tensor q = zeros({3, 4}, DType::Int32, device());
  index_put_(q, {bools({true, false, true}, {3}, device()), ints({1, 2}, {2}, device())},
             ints({5, 6}, {2}, device()).to(DType::Int32));
  EXPECT_EQ(q.to_vector<int64_t>(), (std::vector<int64_t>{0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0}));
}

TEST_P(Masking, AccumulateSumsRepeatedIndices) {
  for (DType dt : kNumeric) {
    Tensor x = ones({5}, dt, device());
    Tensor v = Tensor::from_vector(std::vector<double>{1, 2, 3, 4, 5}, {5}).to(device(), dt);
    index_put_(x, {ints({1, 1, 3, 1, -4}, {5}, device())}, v, true);
    EXPECT_EQ(x.to_vector<double>(), (std::vector<double>{1, 13, 1, 4, 1})) << dtype_name(dt);
  }
  // a mask with accumulate, on a 2-d x with rows summed into repeated rows
  Tensor x = zeros({3, 2}, DType::Float32, device());
  Tensor v = arange(0, 8, 1, DType::Float32, device()).view({4, 2});
  Tensor y = index_put(x, {ints({2, 0, 2, 2}, {4}, device())}, v, true);
  expect_close(y, std::vector<double>{2, 3, 0, 0, 0 + 4 + 6, 1 + 5 + 7}, 0);
}

TEST_P(Masking, PythonAugmentedAssignment) {  // x[idx] += v is a read, an add and a put
  Tensor x = random_tensor({5, 3}, 14, DType::Float32, device());
  const std::vector<double> xv = x.to_vector<double>();
  Tensor idx = ints({4, 0, 2}, {3}, device());
  Tensor v = random_tensor({3}, 15, DType::Float32, device());
  const std::vector<double> vv = v.to_vector<double>();
  index_put_(x, {idx}, add(index_select(x, 0, idx), v));
  std::vector<double> want = xv;
  for (size_t r : {4, 0, 2})
    for (size_t c = 0; c < 3; ++c) want[r * 3 + c] += vv[c];
  expect_close(x, want, 1e-6);
  // x[mask] += 1
  Tensor mask = gt(x, 0.0);
  const std::vector<double> before = x.to_vector<double>();
  index_put_(x, {mask}, add(masked_select(x, mask), 1.0));
  for (size_t i = 0; i < want.size(); ++i) want[i] = before[i] > 0 ? before[i] + 1 : before[i];
  expect_close(x, want, 1e-6);
  // repeated indices without accumulate: one of the writes lands (the last on the CPU)
  Tensor r = zeros({3}, DType::Float32, device());
  index_put_(r, {ints({1, 1, 1}, {3}, device())},
             Tensor::from_vector(std::vector<float>{4, 5, 6}, {3}).to(device()));
  const double got = r.to_vector<double>()[1];
  if (device().is_cpu()) {
    EXPECT_EQ(got, 6);
  }
  EXPECT_TRUE(got == 4 || got == 5 || got == 6) << got;
}

TEST_P(Masking, IndexPutOnViewsAndOutputs) {
  // self a transposed view: writes land in the base tensor
  Tensor base = zeros({3, 4}, DType::Float32, device());
  Tensor t = base.t();  // [4, 3]
  index_put_(t, {ints({1, 3}, {2}, device())},
             Tensor::from_vector(std::vector<float>{1, 2, 3}, {3}).to(device()));
  expect_close(base, std::vector<double>{0, 1, 0, 1, 0, 2, 0, 2, 0, 3, 0, 3}, 0);
  // values that overlap self: x[[3, 2, 1, 0]] = x reverses x
  Tensor x = arange(0, 4, 1, DType::Float32, device());
  index_put_(x, {ints({3, 2, 1, 0}, {4}, device())}, x);
  expect_close(x, std::vector<double>{3, 2, 1, 0}, 0);
  // values sliced with a step and expanded
  Tensor src = arange(0, 18, 1, DType::Float64, device()).view({3, 6});
  Tensor vals = src.select(0, 1).slice(0, 0, 6, 2).unsqueeze(0).expand({2, 3});  // [[6, 8, 10]] x2
  Tensor y =
      index_put(zeros({3, 3}, DType::Float64, device()), {ints({0, 2}, {2}, device())}, vals);
  expect_close(y, std::vector<double>{6, 8, 10, 0, 0, 0, 6, 8, 10}, 0);
  // a strided out; out being x itself
  Tensor x2 = random_tensor({3, 3}, 16, DType::Float64, device());
  std::vector<double> want = x2.to_vector<double>();
  for (size_t c = 0; c < 3; ++c) want[3 + c] = -1;
  Tensor out = Tensor::empty({6, 3}, DType::Float64, device()).slice(0, 0, 6, 2);
  ASSERT_FALSE(out.is_contiguous());
  EXPECT_TRUE(index_put_out(out, x2, {ints({1}, {1}, device())},
                            scalar_tensor(-1, DType::Float64, device()))
                  .shares_storage(out));
  expect_close(out, want, 0);
  index_put_out(x2, x2, {ints({1}, {1}, device())}, scalar_tensor(-1, DType::Float64, device()));
  expect_close(x2, want, 0);
  // nothing indexed: an empty index, an empty x
  Tensor e = ones({3}, DType::Float32, device());
  index_put_(e, {ints({}, {0}, device())}, scalar_tensor(5, DType::Float32, device()));
  expect_close(e, std::vector<double>{1, 1, 1}, 0);
  Tensor none = Tensor::empty({0, 2}, DType::Float32, device());
  index_put_(none, {zeros({0}, DType::Bool, device())}, scalar_tensor(5, DType::Float32, device()));
  EXPECT_EQ(
      index_put(none, {ints({}, {0}, device())}, zeros({2}, DType::Float32, device())).shape(),
      (Shape{0, 2}));
  // no index at all: x[:] = v; a 0-d x
  Tensor all = zeros({2, 2}, DType::Int64, device());
  index_put_(all, {}, ints({3, 4}, {2}, device()));
  EXPECT_EQ(all.to_vector<int64_t>(), (std::vector<int64_t>{3, 4, 3, 4}));
  Tensor s0 = scalar_tensor(1, DType::Float32, device());
  index_put_(s0, {}, scalar_tensor(9, DType::Float32, device()));
  EXPECT_EQ(s0.item<double>(), 9);
  // large: a mask over enough elements to cross every threading threshold
  Tensor big = random_tensor({300, 301}, 17, DType::Float32, device());
  std::vector<double> bw = big.to_vector<double>();
  for (double& b : bw) b = b > 0.5 ? 0.0 : b;
  index_put_(big, {gt(big, 0.5)}, scalar_tensor(0, DType::Float32, device()));
  expect_close(big, bw, 0);
}

TEST_P(Masking, IndexPutErrors) {
  Tensor x = zeros({3, 4}, DType::Float32, device());
  Tensor v = scalar_tensor(1, DType::Float32, device());
  expect_error<IndexError>(
      [&] {
        index_put_(x, {ints({0, 3}, {2}, device())}, v);
      },
      {"index_put_", "index 3", "dim 0 (size 3)", "-3 to 2"});
  expect_error<IndexError>(
      [&] {
        index_put(x, {Tensor(), ints({-5}, {1}, device())}, v);
      },
      {"index_put", "index -5", "dim 1 (size 4)", "indices[1]"});
  expect_error<IndexError>(
      [&] {
        index_put(x, {Tensor(), Tensor(), ints({0}, {1}, device())}, v);
      },
      {"index_put", "too many indices", "x is [3, 4] float32"});
  expect_error<IndexError>([&] { index_put(x, {zeros({4}, DType::Bool, device())}, v); },
                           {"index_put", "indices[0] is [4] bool", "shape"});
  expect_error<DTypeError>([&] { index_put(x, {zeros({2}, DType::Float32, device())}, v); },
                           {"index_put", "indices[0] is [2] float32", "int64"});
  expect_error<DTypeError>(
      [&] { index_put(x, {ints({0}, {1}, device())}, ints({1}, {1}, device())); },
      {"index_put", "values is [1] int64", "dtype"});
  expect_error<ShapeError>(
      [&] {
        index_put(x, {ints({0, 1}, {2}, device()), ints({0, 1, 2}, {3}, device())}, v);
      },
      {"index_put", "indices[0] is [2] int64", "indices[1] is [3] int64", "broadcast"});
  expect_error<ShapeError>(
      [&] {
        index_put(x, {ints({0, 1}, {2}, device())}, zeros({3}, DType::Float32, device()));
      },
      {"index_put", "values is [3] float32", "[2, 4]"});
  expect_error<DTypeError>(
      [&] {
        index_put(zeros({2}, DType::Bool, device()), {ints({0}, {1}, device())},
                  ones({1}, DType::Bool, device()), true);
      },
      {"index_put", "bool", "accumulate"});
  expect_error<ValueError>([&] { index_put_(v.expand({3}), {ints({0}, {1}, device())}, v); },
                           {"index_put_", "expanded"});
  expect_error<ShapeError>(
      [&] {
        index_put_out(zeros({4, 3}, DType::Float32, device()), x, {ints({0}, {1}, device())}, v);
      },
      {"index_put_out", "out is [4, 3] float32"});
  expect_error<ValueError>(
      [&] {
        index_put_out(x, zeros({3, 4}, DType::Float32, device()), {ints({0}, {1}, device())},
                      x.select(0, 1));
      },
      {"index_put_out", "out overlaps values"});
  expect_error<NotSupportedError>(
      [&] { index_put(x, {scalar_tensor(1, DType::Bool, device())}, v); }, {"index_put", "0-d"});
  expect_error<ValueError>([&] { index_put(Tensor(), {}, v); }, {"index_put", "undefined"});
}

EMBER_INSTANTIATE_DEVICE_TEST(Masking);

}  // namespace
}  // namespace ember
