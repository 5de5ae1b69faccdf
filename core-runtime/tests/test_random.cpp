// test_random.cpp — the Philox generator (known answers), Ember's stream layout, reproducibility,
// the distributions' moments and ranges, and CPU == CUDA streams.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "../src/philox.h"  // the generator itself, for the known-answer and layout tests
#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;

class Random : public test::DeviceTest {};
EMBER_INSTANTIATE_DEVICE_TEST(Random);

struct Moments {
  double mean = 0, var = 0, min = 0, max = 0;
};

Moments moments(const Tensor& t) {
  std::vector<double> v = t.to_vector<double>();
  Moments m;
  m.min = *std::min_element(v.begin(), v.end());
  m.max = *std::max_element(v.begin(), v.end());
  for (double x : v) m.mean += x;
  m.mean /= double(v.size());
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= double(v.size() - 1);
  return m;
}

// Random123's published known-answer vectors for Philox4x32-10 (counter, key -> output).
TEST(Philox, KnownAnswers) {
  struct Kat {
    Philox4 counter;
    uint32_t key0, key1;
    Philox4 expected;
  };
  const Kat kats[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
      {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
       0xffffffff,
       0xffffffff,
       {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
      {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
       0xa4093822,
       0x299f31d0,
       {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
  };
  for (const Kat& k : kats) {
    Philox4 got = philox4x32_10(k.counter, k.key0, k.key1);
    for (int w = 0; w < 4; ++w) EXPECT_EQ(got.v[w], k.expected.v[w]) << "word " << w;
  }
}

// rand/randint element i is the documented function of Philox block (i / K) of stream
// (seed, offset): checked bit for bit on each device, so CPU and CUDA agree with each other.
TEST_P(Random, StreamsFollowThePhiloxLayoutBitForBit) {
  const uint64_t seed = 0x123456789abcdefull;
  Generator g(seed);
  const int64_t n = 100003;  // enough to split across threads, not a multiple of 4
  std::vector<float> f = rand({n}, DType::Float32, device(), &g).to_vector<float>();
  std::vector<double> d = rand({n}, DType::Float64, device(), &g).to_vector<double>();
  std::vector<int64_t> r = randint(-5, 1000, {n}, DType::Int64, device(), &g).to_vector<int64_t>();
  EXPECT_EQ(g.offset, 3u);
  for (int64_t i = 0; i < n; ++i) {
    Philox4 b0 = PhiloxStream{seed, 0}.block(uint64_t(i / 4));
    ASSERT_EQ(f[size_t(i)], float(b0.v[i % 4] >> 8) * 0x1p-24f) << i;
    Philox4 b1 = PhiloxStream{seed, 1}.block(uint64_t(i / 2));
    uint64_t bits1 = (uint64_t(b1.v[2 * (i % 2) + 1]) << 32) | b1.v[2 * (i % 2)];
    ASSERT_EQ(d[size_t(i)], double(bits1 >> 11) * 0x1p-53) << i;
    Philox4 b2 = PhiloxStream{seed, 2}.block(uint64_t(i / 2));
    uint64_t bits2 = (uint64_t(b2.v[2 * (i % 2) + 1]) << 32) | b2.v[2 * (i % 2)];
    ASSERT_EQ(r[size_t(i)], -5 + int64_t(bits2 % 1005)) << i;
  }
}

TEST_P(Random, SameSeedSameStreamDifferentSeedsDiffer) {
  manual_seed(42);
  std::vector<float> a = rand({1000}, DType::Float32, device()).to_vector<float>();
  std::vector<float> a2 = rand({1000}, DType::Float32, device()).to_vector<float>();
  manual_seed(42);
  std::vector<float> b = rand({1000}, DType::Float32, device()).to_vector<float>();
  EXPECT_EQ(a, b);
  EXPECT_NE(a, a2);  // the second call draws a fresh stream
  EXPECT_EQ(default_generator().offset, 1u);
  manual_seed(43);
  std::vector<float> c = rand({1000}, DType::Float32, device()).to_vector<float>();
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == c[i];
  EXPECT_LT(same, 5);

  // A copied generator replays; the shape does not change the values.
  Generator g(7);
  Generator replay = g;
  Tensor x = randn({10, 100}, DType::Float32, device(), &g);
  Tensor y = randn({1000}, DType::Float32, device(), &replay);
  EXPECT_EQ(x.flatten().to_vector<float>(), y.to_vector<float>());
  EXPECT_EQ(g.offset, 1u);
}

TEST_P(Random, UniformRangeAndMoments) {
  const int64_t n = 200000;
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    Generator g(1);
    Tensor u = uniform({n}, -2.0, 3.0, dt, device(), &g);
    EXPECT_EQ(u.dtype(), dt);
    Moments m = moments(u);
    EXPECT_GE(m.min, -2.0);
    if (dt == DType::Float32 || dt == DType::Float64) EXPECT_LT(m.max, 3.0);
    else EXPECT_LE(m.max, 3.0);  // rounding to 8-11 bits may reach high
    double sd = 5.0 / std::sqrt(12.0);
    EXPECT_NEAR(m.mean, 0.5, 5 * sd / std::sqrt(double(n)));
    EXPECT_NEAR(m.var, sd * sd, 0.02 * sd * sd);
  }
  Tensor r = rand({4, 5, 6}, DType::Float32, device());
  EXPECT_EQ(r.shape(), (Shape{4, 5, 6}));
  EXPECT_EQ(r.device(), device());
  Moments m = moments(r);
  EXPECT_GE(m.min, 0.0);
  EXPECT_LT(m.max, 1.0);
  expect_close(uniform({3}, 2.0, 2.0, DType::Float32, device()), {2, 2, 2});
}

TEST_P(Random, NormalMoments) {
  const int64_t n = 200000;
  for (DType dt : {DType::Float32, DType::Float64, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    Generator g(2);
    Tensor z = normal({n}, 1.0, 2.0, dt, device(), &g);
    std::vector<double> v = z.to_vector<double>();
    Moments m = moments(z);
    EXPECT_NEAR(m.mean, 1.0, 5 * 2.0 / std::sqrt(double(n)));
    EXPECT_NEAR(m.var, 4.0, 0.03 * 4.0);
    double skew = 0, within = 0;
    for (double x : v) {
      double s = (x - 1.0) / 2.0;
      skew += s * s * s;
      within += std::fabs(s) < 1.0;
    }
    EXPECT_NEAR(skew / double(n), 0.0, 0.05);
    EXPECT_NEAR(within / double(n), 0.682689, 0.01);  // P(|Z| < 1)
    EXPECT_TRUE(std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); }));
  }
  Moments s = moments(randn({n}, DType::Float32, device()));
  EXPECT_NEAR(s.mean, 0.0, 5 / std::sqrt(double(n)));
  EXPECT_NEAR(s.var, 1.0, 0.03);
  expect_close(normal({2}, 3.0, 0.0, DType::Float64, device()), {3, 3});
}

TEST_P(Random, BernoulliWithScalarAndTensorProbabilities) {
  const int64_t n = 100000;
  Moments m = moments(bernoulli({n}, 0.3, DType::Float32, device()));
  EXPECT_NEAR(m.mean, 0.3, 5 * std::sqrt(0.3 * 0.7 / double(n)));
  EXPECT_EQ(m.min, 0.0);
  EXPECT_EQ(m.max, 1.0);
  Tensor mask = bernoulli({1000}, 0.5, DType::Bool, device());
  EXPECT_EQ(mask.dtype(), DType::Bool);
  EXPECT_EQ(moments(bernoulli({100}, 0.0, DType::Int32, device())).max, 0.0);
  EXPECT_EQ(moments(bernoulli({100}, 1.0, DType::Float16, device())).min, 1.0);

  // probs: a non-contiguous [rows, 3] tensor of columns 0, 1 and 0.25.
  const int64_t rows = 40000;
  std::vector<double> p;
  for (int c : {0, 1, 2})
    for (int64_t r = 0; r < rows; ++r) p.push_back(c == 0 ? 0.0 : (c == 1 ? 1.0 : 0.25));
  Tensor probs = Tensor::from_vector(p, {3, rows}, device()).to(DType::Float32).t();
  Tensor draw = bernoulli(probs);
  EXPECT_EQ(draw.shape(), (Shape{rows, 3}));
  EXPECT_EQ(draw.dtype(), DType::Float32);
  Moments c0 = moments(draw.select(1, 0)), c1 = moments(draw.select(1, 1));
  Moments c2 = moments(draw.select(1, 2));
  EXPECT_EQ(c0.max, 0.0);
  EXPECT_EQ(c1.min, 1.0);
  EXPECT_NEAR(c2.mean, 0.25, 5 * std::sqrt(0.25 * 0.75 / double(rows)));
}

TEST_P(Random, RandintCoversTheRangeEvenly) {
  const int64_t n = 70000;
  Tensor r = randint(-3, 4, {n}, DType::Int64, device());
  EXPECT_EQ(r.dtype(), DType::Int64);
  std::vector<int64_t> v = r.to_vector<int64_t>();
  std::vector<int64_t> counts(7, 0);
  for (int64_t x : v) {
    ASSERT_GE(x, -3);
    ASSERT_LT(x, 4);
    ++counts[size_t(x + 3)];
  }
  double expected = double(n) / 7, sd = std::sqrt(double(n) * (1.0 / 7) * (6.0 / 7));
  for (int64_t c : counts) EXPECT_NEAR(double(c), expected, 5 * sd);
  Moments i8 = moments(randint(-128, 128, {5000}, DType::Int8, device()));
  EXPECT_GE(i8.min, -128);
  EXPECT_LE(i8.max, 127);
  Tensor f = randint(0, 10, {100}, DType::Float32, device());
  std::vector<double> fv = f.to_vector<double>();
  for (double x : fv) EXPECT_EQ(x, std::floor(x));
  // The full int64 range (high - low overflows int64 but not the kernel's uint64).
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  std::vector<int64_t> wide = randint(lo, hi, {1000}, DType::Int64, device()).to_vector<int64_t>();
  int negative = 0;
  for (int64_t x : wide) negative += x < 0;
  EXPECT_NEAR(negative, 500, 100);
}

TEST_P(Random, RandpermIsAPermutation) {
  Generator g(3);
  Tensor p = randperm(1000, DType::Int64, device(), &g);
  std::vector<int64_t> v = p.to_vector<int64_t>();
  std::vector<int64_t> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  EXPECT_EQ(sorted, iota);
  EXPECT_NE(v, iota);
  std::vector<int64_t> again = randperm(1000, DType::Int64, device(), &g).to_vector<int64_t>();
  EXPECT_NE(v, again);
  Tensor p32 = randperm(50, DType::Int32, device());
  EXPECT_EQ(p32.dtype(), DType::Int32);
  std::vector<int32_t> v32 = p32.to_vector<int32_t>();
  std::sort(v32.begin(), v32.end());
  for (int32_t i = 0; i < 50; ++i) EXPECT_EQ(v32[size_t(i)], i);
  EXPECT_EQ(randperm(0, DType::Int64, device()).numel(), 0);
  EXPECT_EQ(randperm(1, DType::Int64, device()).to_vector<int64_t>(), (std::vector<int64_t>{0}));
  // Each value lands in each position equally often (a uniform permutation): position 0 of
  // many small permutations.
  std::vector<int> first(4, 0);
  for (int k = 0; k < 4000; ++k)
    ++first[size_t(randperm(4, DType::Int64, device(), &g)[0].item<int64_t>())];
  for (int c : first) EXPECT_NEAR(c, 1000, 5 * std::sqrt(4000 * 0.25 * 0.75));
}

TEST_P(Random, InPlaceFillsOnlyTheView) {
  Tensor base = zeros({4, 6}, DType::Float32, device());
  Tensor view = base.slice(1, 0, 6, 2);  // [4, 3] stepped
  uniform_(view, 1.0, 2.0);
  std::vector<double> v = base.to_vector<double>();
  for (int i = 0; i < 24; ++i) {
    if (i % 2 == 0) {
      EXPECT_GE(v[size_t(i)], 1.0);
      EXPECT_LT(v[size_t(i)], 2.0);
    } else {
      EXPECT_EQ(v[size_t(i)], 0.0);
    }
  }
  Tensor w = zeros({2000}, DType::Float64, device());
  normal_(w, 5.0, 0.5);
  Moments m = moments(w);
  EXPECT_NEAR(m.mean, 5.0, 5 * 0.5 / std::sqrt(2000.0));
}

TEST_P(Random, ArgumentErrors) {
  expect_error<ValueError>([&] { uniform({2}, 1.0, 0.0, DType::Float32, device()); },
                           {"uniform", "greater than high"});
  expect_error<DTypeError>([&] { rand({2}, DType::Int64, device()); },
                           {"uniform", "int64", "randint"});
  expect_error<ValueError>([&] { normal({2}, 0.0, -1.0, DType::Float32, device()); },
                           {"normal", "std is -1"});
  expect_error<ValueError>([&] { bernoulli({2}, 1.5, DType::Float32, device()); },
                           {"bernoulli", "p is 1.5"});
  Tensor ip = Tensor::from_vector<int64_t>({0, 1}, {2}, device());
  expect_error<DTypeError>([&] { bernoulli(ip); }, {"bernoulli", "probs is [2] int64", "floating"});
  expect_error<ValueError>([&] { randint(3, 3, {2}, DType::Int64, device()); },
                           {"randint", "low (3) must be less than high (3)"});
  expect_error<ValueError>([&] { randint(0, 300, {2}, DType::Int8, device()); },
                           {"randint", "do not fit in int8"});
  expect_error<DTypeError>([&] { randint(0, 2, {2}, DType::Bool, device()); }, {"randint", "bool"});
  expect_error<ValueError>([&] { randperm(-1, DType::Int64, device()); }, {"randperm", "n is -1"});
  expect_error<ValueError>([&] { randperm(300, DType::Int8, device()); }, {"randperm", "int8"});
  expect_error<ValueError>(
      [&] {
        randn({-1, 2}, DType::Float32, device());
      },
      {"normal", "[-1, 2]", "negative"});
  EXPECT_EQ(rand({0, 3}, DType::Float32, device()).numel(), 0);
}

// The same seed gives the same tensors on the CPU and the GPU: bit for bit for uniform, randint,
// bernoulli and randperm; to float rounding for normal (different log/sin/cos implementations).
TEST_P(Random, CudaStreamsEqualCpuStreams) {
  if (device().is_cpu()) GTEST_SKIP() << "compares CUDA against the CPU: see the cuda0 case";
  const Device cpu("cpu");
  const int64_t n = 50001;
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(dt));
    Generator gc(11), gg(11);
    EXPECT_EQ(uniform({n}, -1.0, 3.0, dt, cpu, &gc).to_vector<double>(),
              uniform({n}, -1.0, 3.0, dt, device(), &gg).to_vector<double>());
    expect_close(normal({n}, 0.5, 2.0, dt, device(), &gg),
                 normal({n}, 0.5, 2.0, dt, cpu, &gc).to_vector<double>(), 1e-5,
                 dt == DType::Float32 || dt == DType::Float64 ? 1e-5 : 1e-2);
  }
  Generator gc(12), gg(12);
  EXPECT_EQ(randint(-7, 100000, {n}, DType::Int64, cpu, &gc).to_vector<int64_t>(),
            randint(-7, 100000, {n}, DType::Int64, device(), &gg).to_vector<int64_t>());
  EXPECT_EQ(bernoulli({n}, 0.4, DType::Bool, cpu, &gc).to_vector<bool>(),
            bernoulli({n}, 0.4, DType::Bool, device(), &gg).to_vector<bool>());
  Tensor probs = rand({n}, DType::Float32, cpu);
  EXPECT_EQ(bernoulli(probs, &gc).to_vector<float>(),
            bernoulli(probs.to(device()), &gg).to_vector<float>());
  EXPECT_EQ(randperm(n, DType::Int64, cpu, &gc).to_vector<int64_t>(),
            randperm(n, DType::Int64, device(), &gg).to_vector<int64_t>());
}

}  // namespace
}  // namespace ember
