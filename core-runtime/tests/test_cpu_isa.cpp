// test_cpu_isa.cpp — the CPU kernels' instruction-set copies (ember/cpu.h): choosing one, and
// every copy this CPU runs against the baseline's results for each family it covers, on odd
// sizes (vector tails), strided views and every floating dtype.
//
// Elementwise ops, copies, casts, pooling, the optimizer updates, creation and the random ops
// must give the baseline's bits exactly (the build fuses no multiply-adds, and the vectorised exp
// is the same arithmetic at every width). Sums may be taken in another order, so reductions,
// softmax, the losses, normalization and conv2d must agree within a few units of roundoff of
// their largest value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "test_util.h"

namespace ember {
namespace {

// Restores the instruction set a test found when it ends.
class CpuIsaTest : public ::testing::Test {
 protected:
  void TearDown() override { set_cpu_isa(initial_); }
  std::string initial_ = cpu_isa();
};

TEST_F(CpuIsaTest, TheAvailableSetsStartWithTheBaselineAndHoldTheCurrentOne) {
  const std::vector<std::string> isas = available_cpu_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), "baseline");
  EXPECT_NE(std::find(isas.begin(), isas.end(), cpu_isa()), isas.end());
  for (const std::string& isa : isas) {
    set_cpu_isa(isa);
    EXPECT_EQ(cpu_isa(), isa);
  }
}

TEST_F(CpuIsaTest, TheDefaultIsTheWidestOrTheOneTheEnvironmentNames) {
  const char* forced = std::getenv("EMBER_CPU_ISA");
  EXPECT_EQ(initial_, forced && *forced ? std::string(forced) : available_cpu_isas().back());
}

TEST_F(CpuIsaTest, AnUnknownNameIsAValueErrorListingTheChoices) {
  test::expect_error<ValueError>([] { set_cpu_isa("avx9"); },
                                 {"set_cpu_isa", "avx9", "baseline, avx2, avx512"});
  EXPECT_EQ(cpu_isa(), initial_);
}

TEST_F(CpuIsaTest, ASetThisCpuCannotRunIsNotSupported) {
  std::vector<std::string> missing;
  const std::vector<std::string> isas = available_cpu_isas();
  for (const char* isa : {"avx2", "avx512"})
    if (std::find(isas.begin(), isas.end(), isa) == isas.end()) missing.push_back(isa);
  if (missing.empty()) GTEST_SKIP() << "this CPU runs every instruction set";
  test::expect_error<NotSupportedError>([&] { set_cpu_isa(missing.front()); },
                                        {"set_cpu_isa", missing.front(), "runs baseline"});
}

// ---- every copy against the baseline ----------------------------------------------------------

struct Case {
  std::string name;
  std::function<std::vector<Tensor>()> run;  // makes its own inputs: a fixed seed per case
  double ulps;                               // 0: the same bits
};

Tensor rnd(const Shape& shape, uint32_t seed, DType dtype = DType::Float32, double lo = -3,
           double hi = 3) {
  return test::random_tensor(shape, seed, dtype, Device(), lo, hi);
}

// A [37, 129] float32 tensor seen through a transpose: [129, 37] with strides (1, 129).
Tensor strided(uint32_t seed) { return rnd({37, 129}, seed).transpose(0, 1); }

std::vector<Case> cases() {
  std::vector<Case> c;
  for (DType dt : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16}) {
    const std::string d = dtype_name(dt);
    c.push_back({"unary " + d,
                 [dt] {
                   Tensor x = rnd({1031}, 1, dt);
                   return std::vector<Tensor>{exp(x),  tanh(x), sigmoid(x),
                                              relu(x), gelu(x), gelu(x, "tanh"),
                                              silu(x), abs(x),  sqrt(abs(x))};
                 },
                 0});
    c.push_back({"binary " + d,
                 [dt] {
                   Tensor a = rnd({7, 149}, 2, dt), b = rnd({7, 149}, 3, dt), r = rnd({149}, 4, dt);
                   return std::vector<Tensor>{add(a, b),
                                              mul(a, b),
                                              div(a, b),
                                              sub(a, r),
                                              maximum(a, b),
                                              lt(a, b),
                                              where(lt(a, b), a, r),
                                              mul(a, 2.5)};
                 },
                 0});
    c.push_back(
        {"backward " + d,
         [dt] {
           Tensor g = rnd({1031}, 5, dt), x = rnd({1031}, 6, dt);
           return std::vector<Tensor>{relu_backward(g, x),         gelu_backward(g, x),
                                      gelu_backward(g, x, "tanh"), sigmoid_backward(g, sigmoid(x)),
                                      silu_backward(g, x),         tanh_backward(g, tanh(x))};
         },
         0});
    c.push_back({"reductions " + d,
                 [dt] {
                   Tensor x = rnd({33, 257}, 7, dt);
                   return std::vector<Tensor>{sum(x, {1}),  sum(x, {0}),  mean(x, {1}),
                                              var(x, {0}),  amax(x, {1}), amax(x, {0}),
                                              amin(x, {1}), argmax(x, 1), sum(x)};
                 },
                 16});
    c.push_back({"softmax and losses " + d,
                 [dt] {
                   Tensor x = rnd({19, 131}, 8, dt), g = rnd({19, 131}, 9, dt);
                   Tensor target = Tensor::from_vector<int64_t>(std::vector<int64_t>(19, 7), {19});
                   Tensor y = softmax(x, 1), ly = log_softmax(x, 1);
                   return std::vector<Tensor>{y,
                                              ly,
                                              softmax(x, 0),
                                              softmax_backward(g, y, 1),
                                              log_softmax_backward(g, ly, 1),
                                              cross_entropy(x, target),
                                              cross_entropy_backward(ones({}, dt), x, target)};
                 },
                 16});
    c.push_back({"normalization " + d,
                 [dt] {
                   Tensor x = rnd({5, 6, 7, 9}, 10, dt), w = rnd({6}, 11, dt), b = rnd({6}, 12, dt);
                   Tensor g = rnd({5, 6, 7, 9}, 13, dt);
                   BatchNormResult bn = batch_norm(x, w, b, Tensor(), Tensor(), true);
                   NormGrads bg = batch_norm_backward(g, x, w, bn.save_mean, bn.save_invstd, true);
                   Tensor lw = rnd({9}, 14, dt), lb = rnd({9}, 15, dt);
                   LayerNormResult ln = layer_norm(x, {9}, lw, lb);
                   NormGrads lg = layer_norm_backward(g, x, {9}, ln.mean, ln.rstd, lw);
                   return std::vector<Tensor>{bn.output,     bn.save_mean,   bn.save_invstd,
                                              bg.grad_input, bg.grad_weight, bg.grad_bias,
                                              ln.output,     lg.grad_input,  lg.grad_weight};
                 },
                 16});
  }
  c.push_back({"copies and casts",
               [] {
                 Tensor x = strided(20);
                 return std::vector<Tensor>{x.contiguous(),        x.to(DType::Float16),
                                            x.to(DType::BFloat16), x.to(DType::Float64),
                                            x.to(DType::Int32),    full({1031}, 0.25)};
               },
               0});
  c.push_back({"strided elementwise",
               [] {
                 Tensor a = strided(21), b = strided(22);
                 return std::vector<Tensor>{add(a, b), exp(a), mul(a, b), relu(a), gelu(a, "tanh")};
               },
               0});
  c.push_back(
      {"strided reductions and softmax",
       [] {
         Tensor a = strided(23);
         return std::vector<Tensor>{sum(a, {1}), amax(a, {1}), softmax(a, 1), log_softmax(a, 0)};
       },
       16});
  c.push_back({"conv2d",
               [] {
                 Tensor x = rnd({2, 3, 11, 13}, 30), w = rnd({5, 3, 3, 3}, 31), b = rnd({5}, 32);
                 Tensor y = conv2d(x, w, b, 2, 1);
                 Tensor g = rnd(y.shape(), 33);
                 return std::vector<Tensor>{y, conv2d_backward_input(g, w, x.shape(), 2, 1),
                                            conv2d_backward_weight(g, x, w.shape(), 2, 1),
                                            conv2d_backward_bias(g)};
               },
               16});
  c.push_back({"pooling",
               [] {
                 Tensor x = rnd({2, 3, 11, 13}, 34);
                 MaxPoolResult mp = max_pool2d(x, 3, 2, 1), mp2 = max_pool2d(x, 2, 2);
                 Tensor g = rnd(mp.values.shape(), 35);
                 Tensor ap = avg_pool2d(x, 2);
                 return std::vector<Tensor>{mp.values,
                                            mp.indices,
                                            max_pool2d_backward(g, mp.indices, x.shape()),
                                            ap,
                                            avg_pool2d_backward(rnd(ap.shape(), 36), x.shape(), 2),
                                            adaptive_avg_pool2d(x, {3, 4})};
               },
               0});
  c.push_back({"optimizer updates",
               [] {
                 Tensor p = rnd({1031}, 40), g = rnd({1031}, 41), m = zeros({1031});
                 Tensor v = zeros({1031}), q = rnd({1031}, 42), buf = zeros({1031});
                 // The plain momentum update (its own loop) beside Nesterov with decay.
                 Tensor plain = rnd({1031}, 43), plain_buf = zeros({1031});
                 for (int64_t step = 1; step <= 3; ++step) {
                   adam_step({p}, {g}, {m}, {v}, step, 1e-2, 0.9, 0.999, 1e-8, 0.01, true);
                   sgd_step({q}, {g}, {buf}, 0.1, 0.9, 0.0, true, 0.01, step == 1);
                   sgd_step({plain}, {g}, {plain_buf}, 0.1, 0.9, 0.0, false, 0.0, step == 1);
                 }
                 return std::vector<Tensor>{p, m, v, q, buf, plain, plain_buf};
               },
               0});
  c.push_back({"creation and random",
               [] {
                 Generator gen(7);  // each op draws the next stretch of this one stream
                 std::vector<Tensor> out = {arange(0.5, 1031.0, 0.25), linspace(-2, 3, 1031),
                                            arange(1031, DType::Int64), eye(37, 41)};
                 for (DType dt : {DType::Float32, DType::Float64, DType::Float16}) {
                   out.push_back(rand({1031}, dt, Device(), &gen));
                   out.push_back(randn({1031}, dt, Device(), &gen));
                 }
                 out.push_back(randint(-5, 1000, {1031}, DType::Int64, Device(), &gen));
                 out.push_back(randperm(1031, DType::Int64, Device(), &gen));
                 out.push_back(bernoulli({1031}, 0.3, DType::Float32, Device(), &gen));
                 return out;
               },
               0});
  return c;
}

// got equals want bit for bit (ulps = 0), or each value lies within ulps units of roundoff of the
// largest magnitude in want.
void expect_matches(const Tensor& got, const Tensor& want, double ulps, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  Tensor g = got.contiguous(), w = want.contiguous();
  if (ulps == 0 || !is_floating(got.dtype())) {
    EXPECT_EQ(std::memcmp(g.data_ptr(), w.data_ptr(), size_t(g.nbytes())), 0)
        << what << ": got " << g << " want " << w;
    return;
  }
  const std::vector<double> gv = g.to_vector<double>(), wv = w.to_vector<double>();
  double scale = 0;
  for (double v : wv) scale = std::max(scale, std::fabs(v));
  const double tol = ulps * test::unit_roundoff(got.dtype()) * scale;
  for (size_t i = 0; i < gv.size(); ++i) {
    if (std::isnan(wv[i])) EXPECT_TRUE(std::isnan(gv[i])) << what << " at " << i;
    else EXPECT_NEAR(gv[i], wv[i], tol) << what << " at " << i;
  }
}

TEST_F(CpuIsaTest, EveryCopyMatchesTheBaseline) {
  const std::vector<std::string> isas = available_cpu_isas();
  if (isas.size() == 1) GTEST_SKIP() << "this CPU runs the baseline only";
  for (const Case& c : cases()) {
    set_cpu_isa("baseline");
    const std::vector<Tensor> want = c.run();
    for (size_t k = 1; k < isas.size(); ++k) {
      set_cpu_isa(isas[k]);
      const std::vector<Tensor> got = c.run();
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        expect_matches(got[i], want[i], c.ulps,
                       isas[k] + " " + c.name + " output " + std::to_string(i));
    }
  }
}

}  // namespace
}  // namespace ember
