// test_matmul.cpp — matmul and linear against a brute-force triple loop in double that follows
// NumPy's rules on its own (1-D promotion, batch broadcasting), on contiguous, transposed,
// sliced and broadcast operands, for every supported dtype and both algorithms.
#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;
using test::random_tensor;

struct Expected {
  std::vector<double> values;
  Shape shape;
};

// Row-major offsets of a multi-index `idx` (right-aligned) into `shape`, broadcasting size-1 dims.
int64_t broadcast_offset(const Shape& shape, const Shape& idx) {
  int64_t off = 0, stride = 1;
  for (int64_t d = int64_t(shape.size()) - 1, e = int64_t(idx.size()) - 1; d >= 0; --d, --e) {
    off += (shape[size_t(d)] == 1 ? 0 : idx[size_t(e)]) * stride;
    stride *= shape[size_t(d)];
  }
  return off;
}

// numpy.matmul in double, written out loop by loop.
Expected reference_matmul(const Tensor& a, const Tensor& b) {
  const std::vector<double> av = a.to_vector<double>(), bv = b.to_vector<double>();
  Shape as = a.shape(), bs = b.shape();
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  Shape abatch(as.begin(), as.end() - 2), bbatch(bs.begin(), bs.end() - 2);
  Shape batch(std::max(abatch.size(), bbatch.size()), 1);
  for (size_t i = 0; i < abatch.size(); ++i) batch[batch.size() - abatch.size() + i] = abatch[i];
  for (size_t i = 0; i < bbatch.size(); ++i) {
    int64_t& d = batch[batch.size() - bbatch.size() + i];
    d = d == 1 ? bbatch[i] : d;
  }
  Expected e;
  const int64_t count = shape_numel(batch);
  for (int64_t p = 0; p < count; ++p) {
    Shape idx(batch.size());
    for (int64_t d = int64_t(batch.size()) - 1, rest = p; d >= 0; --d) {
      idx[size_t(d)] = rest % batch[size_t(d)];
      rest /= batch[size_t(d)];
    }
    const int64_t ao = broadcast_offset(abatch, idx) * m * k;
    const int64_t bo = broadcast_offset(bbatch, idx) * k * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < k; ++l)
          s += av[size_t(ao + i * k + l)] * bv[size_t(bo + l * n + j)];
        e.values.push_back(s);
      }
  }
  e.shape = batch;
  if (a.dim() > 1) e.shape.push_back(m);
  if (b.dim() > 1) e.shape.push_back(n);
  return e;
}

// Tolerance for results of `dtype`: float16/bfloat16 outputs are rounded to 11/8 mantissa bits.
double tolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return 1e-10;
    case DType::Float32:
      return 1e-4;
    case DType::Float16:
      return 2e-3;
    case DType::BFloat16:
      return 1e-2;
    default:
      return 0;  // integers are exact
  }
}

void check_matmul(const Tensor& a, const Tensor& b, MatmulAlgo algo = MatmulAlgo::Default) {
  SCOPED_TRACE("a " + a.str() + ", b " + b.str());
  Tensor out = matmul(a, b, algo);
  Expected e = reference_matmul(a, b);
  ASSERT_EQ(out.shape(), e.shape);
  EXPECT_EQ(out.dtype(), a.dtype());
  EXPECT_EQ(out.device(), a.device());
  const double tol = tolerance(a.dtype());
  expect_close(out, e.values, tol, tol);
}

Tensor rnd(const Shape& shape, uint32_t seed, Device device, DType dtype = DType::Float32) {
  // Integers get small values so every product and sum is exact.
  if (is_integral(dtype))
    return random_tensor(shape, seed, dtype, device, dtype == DType::UInt8 ? 0 : -5, 5);
  return random_tensor(shape, seed, dtype, device);
}

class Matmul : public test::DeviceTest {};

TEST_P(Matmul, VectorDotAndEmptyDot) {
  check_matmul(rnd({7}, 1, device()), rnd({7}, 2, device()));
  Tensor z = matmul(rnd({0}, 1, device()), rnd({0}, 2, device()));
  EXPECT_EQ(z.shape(), Shape{});
  EXPECT_EQ(z.item<double>(), 0.0);
}

TEST_P(Matmul, TwoDimSizesIncludingEmptyAndOdd) {
  const std::vector<std::array<int64_t, 3>> sizes = {{1, 1, 1},    {33, 17, 9}, {0, 5, 3},
                                                     {4, 0, 3},    {4, 5, 0},   {64, 64, 64},
                                                     {70, 130, 90}};
  uint32_t seed = 10;
  for (auto [m, k, n] : sizes) {
    check_matmul(rnd({m, k}, seed, device()), rnd({k, n}, seed + 1, device()));
    check_matmul(rnd({m, k}, seed, device(), DType::Float64),
                 rnd({k, n}, seed + 1, device(), DType::Float64));
    seed += 2;
  }
}

TEST_P(Matmul, OneDimOperandsArePromotedAndDropped) {
  check_matmul(rnd({5}, 1, device()), rnd({5, 3}, 2, device()));     // [5] @ [5, 3] -> [3]
  check_matmul(rnd({4, 5}, 3, device()), rnd({5}, 4, device()));     // -> [4]
  check_matmul(rnd({5}, 5, device()), rnd({2, 5, 3}, 6, device()));  // -> [2, 3]
  check_matmul(rnd({2, 4, 5}, 7, device()), rnd({5}, 8, device()));  // -> [2, 4]
}

TEST_P(Matmul, BatchDimsBroadcast) {
  check_matmul(rnd({2, 1, 3, 4}, 1, device()), rnd({5, 4, 6}, 2, device()));  // -> [2, 5, 3, 6]
  check_matmul(rnd({3, 4, 5}, 3, device()), rnd({5, 2}, 4, device()));  // folded into one GEMM
  check_matmul(rnd({4, 5}, 5, device()), rnd({3, 5, 2}, 6, device()));
  check_matmul(rnd({1, 3, 4}, 7, device()), rnd({2, 4, 5}, 8, device()));
  check_matmul(rnd({0, 3, 4}, 9, device()), rnd({4, 5}, 10, device()));
  check_matmul(rnd({2, 0, 4}, 11, device()), rnd({2, 4, 5}, 12, device()));
  check_matmul(rnd({1, 1, 1}, 13, device()), rnd({6, 1, 1}, 14, device()));
  // Many small GEMMs (the batch is spread over threads on the CPU).
  check_matmul(rnd({64, 8, 9}, 15, device()), rnd({64, 9, 7}, 16, device()));
}

TEST_P(Matmul, NonContiguousOperands) {
  Tensor a = rnd({9, 6}, 1, device()), b = rnd({7, 9}, 2, device());
  check_matmul(a.t(), b.t());  // both read transposed, no copy
  check_matmul(a.t(), rnd({9, 4}, 3, device()));
  check_matmul(a.slice(1, 1, 5), rnd({4, 3}, 4, device()));     // leading dim 6 > 4 columns
  check_matmul(a.slice(1, 0, 6, 2), rnd({3, 2}, 5, device()));  // column step 2: copied
  check_matmul(a.slice(0, 0, 9, 2), a.t());                     // row step 2: a larger leading dim
  Tensor row = rnd({1, 9}, 6, device()).expand({5, 9});         // stride-0 rows: copied
  check_matmul(row, b.t());
  Tensor batched = rnd({3, 5, 4}, 7, device());
  check_matmul(batched.transpose(1, 2), rnd({3, 5, 2}, 8, device()));  // [3, 4, 5] transposed
  check_matmul(batched.permute({1, 0, 2}), rnd({4, 6}, 9, device()));  // batch stride 4
  check_matmul(rnd({2, 4}, 10, device()), batched.select(1, 1).t());   // [4, 3], strides (1, 20)
  check_matmul(rnd({2, 3}, 11, device()), batched.select(2, 1));  // [3, 5], strides (20, 4): copied
  // A transposed 1-x-n slice: size-1 dims may carry any stride.
  check_matmul(rnd({4, 1}, 11, device()).t(), rnd({4, 3}, 12, device()));
}

TEST_P(Matmul, EveryDType) {
  for (DType t : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64, DType::Int8,
                  DType::UInt8, DType::Int16, DType::Int32, DType::Int64}) {
    SCOPED_TRACE(dtype_name(t));
    check_matmul(rnd({33, 17}, 1, device(), t), rnd({17, 9}, 2, device(), t));
    check_matmul(rnd({2, 5, 4}, 3, device(), t).transpose(1, 2), rnd({2, 5, 6}, 4, device(), t));
    check_matmul(rnd({8}, 5, device(), t), rnd({8}, 6, device(), t));
  }
}

// float16 / bfloat16 in every layout the GEMM reads in place (on CUDA: cuBLASLt's layouts and
// batch strides), at sizes off every tile multiple, against the float64 reference.
TEST_P(Matmul, HalfTypesInEveryLayout) {
  for (DType t : {DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    Tensor a = rnd({70, 130}, 1, device(), t), b = rnd({65, 130}, 2, device(), t);
    check_matmul(a, b.t());                                          // b read transposed
    check_matmul(a.t().contiguous().t(), b.t().contiguous());        // a column-major
    check_matmul(a.slice(1, 3, 68), rnd({65, 17}, 3, device(), t));  // leading dim > columns
    Tensor batched = rnd({3, 33, 40}, 4, device(), t);
    check_matmul(batched, rnd({3, 40, 9}, 5, device(), t));
    check_matmul(batched.transpose(1, 2), rnd({3, 33, 24}, 6, device(), t));
    check_matmul(batched.permute({1, 0, 2}), rnd({40, 8}, 7, device(), t));  // batch stride 40
    check_matmul(rnd({1, 40}, 8, device(), t), batched.select(1, 0).t());    // one row
  }
}

TEST_P(Matmul, IntegerResultsWrapLikeTheirDType) {
  // 16 * 16 = 256 does not fit int8: accumulated in int64, then wrapped as a cast does.
  Tensor a = Tensor::from_vector<int8_t>({16}, {1, 1}).to(device());
  EXPECT_EQ(matmul(a, a).item<int64_t>(), 0);
}

TEST_P(Matmul, TiledAlgorithmMatchesForEachDType) {
  for (DType t : {DType::Float16, DType::BFloat16, DType::Float32, DType::Float64, DType::Int32}) {
    SCOPED_TRACE(dtype_name(t));
    // Sizes that cut across the block edges (64 rows, 256 columns, 128 of k on the CPU).
    check_matmul(rnd({70, 130}, 1, device(), t), rnd({130, 260}, 2, device(), t),
                 MatmulAlgo::Tiled);
    check_matmul(rnd({3, 9, 6}, 3, device(), t).transpose(1, 2), rnd({5, 9}, 4, device(), t).t(),
                 MatmulAlgo::Tiled);
    check_matmul(rnd({2, 1, 1, 0}, 5, device(), t), rnd({3, 0, 4}, 6, device(), t),
                 MatmulAlgo::Tiled);
  }
}

TEST_P(Matmul, ErrorsNameTheOperands) {
  const Device d = device();
  const std::string dev = " " + d.str();
  expect_error<ShapeError>(
      [&] {
        matmul(Tensor::empty({32, 784}, DType::Float32, d),
               Tensor::empty({748, 10}, DType::Float32, d));
      },
      {"matmul: a is [32, 784] float32" + dev + ", b is [748, 10] float32" + dev +
       "; a.shape[-1] (784) must equal b.shape[-2] (748)"});
  expect_error<ShapeError>(
      [&] {
        matmul(rnd({3, 4}, 1, d), rnd({5}, 2, d));
      },
      {"a.shape[-1] (4) must equal b.shape[0] (5)"});
  expect_error<ShapeError>(
      [&] {
        matmul(rnd({2, 3, 4}, 1, d), rnd({3, 4, 5}, 2, d));
      },
      {"matmul", "[2, 3, 4] float32", "[3, 4, 5] float32", "batch dims [2]", "[3]", "broadcast"});
  expect_error<ShapeError>([&] { matmul(rnd({}, 1, d), rnd({3}, 2, d)); },
                           {"matmul", "a is [] float32", "at least 1 dim"});
  expect_error<DTypeError>(
      [&] {
        matmul(rnd({2, 3}, 1, d), rnd({3, 2}, 2, d, DType::Float64));
      },
      {"matmul", "[2, 3] float32", "[3, 2] float64", "one dtype"});
  expect_error<DTypeError>(
      [&] {
        matmul(rnd({2, 2}, 1, d, DType::Bool), rnd({2, 2}, 2, d, DType::Bool));
      },
      {"matmul", "[2, 2] bool", "bool is not supported"});
  if (d.is_cuda())
    expect_error<DeviceError>(
        [&] {
          matmul(rnd({2, 3}, 1, d), rnd({3, 2}, 2, Device("cpu")));
        },
        {"matmul", "[2, 3] float32 cuda:0", "[3, 2] float32 cpu", ".to("});
}

// ---- linear ----

TEST_P(Matmul, LinearIsXTimesWeightTransposedPlusBias) {
  Tensor x = rnd({2, 3, 4}, 1, device()), w = rnd({5, 4}, 2, device()),
         bias = rnd({5}, 3, device());
  Expected e = reference_matmul(x, w.t());
  const std::vector<double> bv = bias.to_vector<double>();
  for (size_t i = 0; i < e.values.size(); ++i) e.values[i] += bv[i % 5];
  Tensor y = linear(x, w, bias);
  ASSERT_EQ(y.shape(), (Shape{2, 3, 5}));
  expect_close(y, e.values, 1e-5, 1e-5);
  expect_close(linear(x, w), reference_matmul(x, w.t()).values, 1e-5, 1e-5);
  // A 1-D input, a transposed (non-contiguous) weight and an empty batch.
  Tensor wt = rnd({4, 5}, 4, device()).t();
  expect_close(linear(x.select(0, 1).select(0, 2), wt),
               reference_matmul(x.select(0, 1).select(0, 2), wt.t()).values, 1e-5, 1e-5);
  EXPECT_EQ(linear(rnd({0, 4}, 5, device()), w, bias).shape(), (Shape{0, 5}));
}

TEST_P(Matmul, LinearErrors) {
  const Device d = device();
  Tensor x = rnd({2, 4}, 1, d), w = rnd({5, 4}, 2, d);
  expect_error<ShapeError>(
      [&] {
        linear(x, rnd({5, 3}, 3, d));
      },
      {"linear", "x is [2, 4] float32", "weight is [5, 3] float32",
       "x.shape[-1] must equal weight.shape[1] (3)"});
  expect_error<ShapeError>([&] { linear(x, w, rnd({4}, 3, d)); },
                           {"linear", "bias is [4] float32", "bias must be [5]"});
  expect_error<ShapeError>([&] { linear(x, rnd({5, 4, 1}, 3, d)); }, {"weight must be 2-D"});
  expect_error<DTypeError>([&] { linear(x, w, rnd({5}, 3, d, DType::Float64)); },
                           {"linear", "bias is [5] float64", "bias must have x's dtype"});
}

EMBER_INSTANTIATE_DEVICE_TEST(Matmul);

}  // namespace
}  // namespace ember
