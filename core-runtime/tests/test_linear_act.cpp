// test_linear_act.cpp — linear_act (linear then relu / gelu / gelu_tanh in one call) against a
// brute-force reference in double, on every floating dtype, with and without bias and pre, on
// contiguous, transposed and strided x, batch dims, 0, 1 and odd rows, odd and multiple-of-8
// out_features (cuBLASLt's aux matrix needs the latter); on the CPU bit for bit what linear then
// the library's activation give; the _out forms and the errors; linear's bias (cuBLASLt's BIAS
// epilogue on CUDA) on every dtype and bias layout. The CUDA instances run the cuBLASLt epilogues
// and skip where there is no GPU.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;
using test::random_tensor;

const std::vector<DType> kFloating = {DType::Float16, DType::BFloat16, DType::Float32,
                                      DType::Float64};
const std::vector<std::string> kActivations = {"relu", "gelu", "gelu_tanh"};

double activate(const std::string& activation, double v) {
  if (activation == "relu") return v > 0 ? v : 0.0;
  if (activation == "gelu") return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
  const double k = 0.7978845608028654;  // sqrt(2 / pi)
  return 0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v)));
}

struct Reference {
  std::vector<double> pre, output;
};

// x [*, in] @ weight^T + bias, then the activation, every sum in double over the stored values.
Reference reference(const Tensor& x, const Tensor& weight, const Tensor& bias,
                    const std::string& activation) {
  const int64_t in = weight.size(1), out = weight.size(0);
  const int64_t rows = shape_numel(Shape(x.shape().begin(), x.shape().end() - 1));
  const std::vector<double> xv = x.to_vector<double>(), wv = weight.to_vector<double>();
  const std::vector<double> bv = bias.defined() ? bias.to_vector<double>() : std::vector<double>();
  Reference r;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < out; ++j) {
      double s = bv.empty() ? 0.0 : bv[size_t(j)];
      for (int64_t l = 0; l < in; ++l) s += xv[size_t(i * in + l)] * wv[size_t(j * in + l)];
      r.pre.push_back(s);
      r.output.push_back(activate(activation, s));
    }
  return r;
}

// The GEMM's rounding (half types round the float32 sum once).
double tolerance(DType dtype) {
  switch (dtype) {
    case DType::Float64:
      return 1e-10;
    case DType::Float32:
      return 1e-4;
    case DType::Float16:
      return 4e-3;
    default:
      return 2e-2;
  }
}

// The output's tolerance: the GEMM's, and on CUDA for gelu_tanh that of cuBLASLt's own GELU code
// (its tanh may be a fast approximation, good to about 2^-11 relative).
double output_tolerance(DType dtype, Device device, const std::string& activation) {
  const double tol = tolerance(dtype);
  return device.is_cuda() && activation == "gelu_tanh" ? std::max(tol, 2e-3) : tol;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor x = a.contiguous().to(Device()), y = b.contiguous().to(Device());
  return std::memcmp(x.data_ptr(), y.data_ptr(), size_t(x.nbytes())) == 0;
}

class LinearAct : public test::DeviceTest {
 protected:
  // linear_act(x, weight, bias) with and without pre against the reference.
  void check(const Tensor& x, const Tensor& weight, const Tensor& bias,
             const std::string& activation) {
    SCOPED_TRACE(activation + " x " + x.str() + (bias.defined() ? " with bias" : ""));
    const Reference e = reference(x, weight, bias, activation);
    const double tol = tolerance(x.dtype());
    const double out_tol = output_tolerance(x.dtype(), x.device(), activation);
    Shape shape(x.shape().begin(), x.shape().end() - 1);
    shape.push_back(weight.size(0));
    for (bool keep_pre : {false, true}) {
      LinearActResult r = linear_act(x, weight, bias, activation, keep_pre);
      ASSERT_EQ(r.output.shape(), shape);
      EXPECT_EQ(r.output.dtype(), x.dtype());
      EXPECT_EQ(r.output.device(), x.device());
      expect_close(r.output, e.output, out_tol, out_tol);
      ASSERT_EQ(r.pre.defined(), keep_pre);
      if (keep_pre) expect_close(r.pre, e.pre, tol, tol);
    }
  }
};

TEST_P(LinearAct, MatchesTheReferenceOnEveryDtypeAndShape) {
  const Device d = device();
  for (DType t : kFloating) {
    SCOPED_TRACE(dtype_name(t));
    auto rnd = [&](const Shape& s, uint32_t seed) { return random_tensor(s, seed, t, d); };
    for (const std::string& act : kActivations) {
      // Batch dims, odd out_features (no aux matrix on CUDA) and 16 (the GELU_AUX epilogue).
      for (int64_t out : {9, 16}) {
        const Tensor w = rnd({out, 7}, 2), b = rnd({out}, 3);
        check(rnd({2, 3, 7}, 1), w, b, act);
        check(rnd({2, 3, 7}, 1), w, Tensor(), act);
        check(rnd({1, 7}, 4), w, b, act);                      // one row
        check(rnd({7}, 5), w, b, act);                         // 1-D x
        check(rnd({0, 7}, 6), w, b, act);                      // no rows
        check(rnd({7, 5}, 7).t(), w, b, act);                  // transposed x
        check(rnd({5, 14}, 8).slice(1, 0, 14, 2), w, b, act);  // a step in the last dim
        check(rnd({3, 7}, 9), rnd({7, out}, 10).t(), b, act);  // transposed weight
        // Views whose data pointers are not 16-byte aligned (x, bias): cuBLASLt's heuristic is
        // told each pointer's alignment.
        check(rnd({3, 8}, 14).slice(1, 1, 8), w, b, act);
        check(rnd({3, 7}, 14), w, rnd({out + 1}, 15).slice(0, 1, out + 1), act);
      }
      // No inputs features: the bias alone goes through the activation.
      check(rnd({4, 0}, 11), rnd({6, 0}, 12), rnd({6}, 13), act);
    }
  }
}

// linear adds its bias in the GEMM's epilogue where the backend has one (cuBLASLt's BIAS on
// CUDA), else writes it first and accumulates onto it: both against the reference, over the
// bias layouts the epilogue refuses (a step, an unaligned start) and an output given
// non-contiguous.
TEST_P(LinearAct, LinearWithBiasMatchesTheReferenceOnEveryDtypeAndLayout) {
  const Device d = device();
  for (DType t : kFloating) {
    SCOPED_TRACE(dtype_name(t));
    auto rnd = [&](const Shape& s, uint32_t seed) { return random_tensor(s, seed, t, d); };
    const double tol = tolerance(t);
    for (int64_t out : {1, 9, 16, 67}) {
      const Tensor w = rnd({out, 13}, 2), b = rnd({out}, 3);
      const std::vector<Tensor> biases = {b, rnd({2 * out}, 4).slice(0, 0, 2 * out, 2),
                                          rnd({out + 1}, 5).slice(0, 1, out + 1)};
      for (const Tensor& bias : biases) {
        SCOPED_TRACE("out " + std::to_string(out) + " bias " + bias.str());
        for (const Tensor& x : {rnd({2, 5, 13}, 6), rnd({1, 13}, 7), rnd({13, 4}, 8).t()})
          expect_close(linear(x, w, bias), reference(x, w, bias, "relu").pre, tol, tol);
        const Tensor x = rnd({6, 13}, 9);
        Tensor given = random_tensor({out, 6}, 10, t, d).t();  // [6, out], non-contiguous
        linear_out(given, x, w, bias);
        expect_close(given, reference(x, w, bias, "relu").pre, tol, tol);
      }
    }
    // No input features: the bias alone.
    expect_close(linear(rnd({4, 0}, 11), rnd({6, 0}, 12), rnd({6}, 13)),
                 reference(rnd({4, 0}, 11), rnd({6, 0}, 12), rnd({6}, 13), "relu").pre, tol, tol);
  }
}

// On the CPU linear_act is linear, then the library's relu/gelu kernel: the same bits, on sizes
// that take the threaded GEMM and the vectorised activation with a tail.
TEST_P(LinearAct, OnTheCpuEqualsLinearThenTheActivationBitForBit) {
  if (!device().is_cpu()) GTEST_SKIP() << "the CPU's promise";
  for (DType t : kFloating) {
    SCOPED_TRACE(dtype_name(t));
    for (const Shape& xs : {Shape{3, 5}, Shape{67, 70}, Shape{2, 33, 129}}) {
      const int64_t in = xs.back();
      const Tensor x = random_tensor(xs, 1, t, Device(), -3, 3);
      const Tensor w = random_tensor({45, in}, 2, t), b = random_tensor({45}, 3, t);
      const Tensor h = linear(x, w, b);
      for (const std::string& act : kActivations) {
        SCOPED_TRACE(act);
        const Tensor want = act == "relu"   ? relu(h)
                            : act == "gelu" ? gelu(h, "none")
                                            : gelu(h, "tanh");
        const LinearActResult r = linear_act(x, w, b, act, /*keep_pre=*/true);
        EXPECT_TRUE(same_bits(r.output, want));
        EXPECT_TRUE(same_bits(r.pre, h));
        EXPECT_TRUE(same_bits(linear_act(x, w, b, act).output, want));
      }
    }
  }
}

TEST_P(LinearAct, OutFormsWriteTheGivenTensors) {
  const Device d = device();
  const Tensor x = random_tensor({6, 8}, 1, DType::Float32, d);
  const Tensor w = random_tensor({16, 8}, 2, DType::Float32, d);
  const Tensor b = random_tensor({16}, 3, DType::Float32, d);
  const Reference e = reference(x, w, b, "gelu_tanh");
  // A contiguous output and pre, then a transposed (non-contiguous) output and no pre.
  Tensor out = Tensor::empty({6, 16}, DType::Float32, d),
         pre = Tensor::empty({6, 16}, DType::Float32, d);
  LinearActResult r = linear_act_out(out, pre, x, w, b, "gelu_tanh");
  EXPECT_TRUE(r.output.shares_storage(out));
  EXPECT_TRUE(r.pre.shares_storage(pre));
  const double out_tol = output_tolerance(DType::Float32, d, "gelu_tanh");
  expect_close(out, e.output, out_tol, out_tol);
  expect_close(pre, e.pre, 1e-4, 1e-4);
  Tensor out_t = Tensor::empty({16, 6}, DType::Float32, d).t();
  r = linear_act_out(out_t, Tensor(), x, w, b, "relu");
  EXPECT_FALSE(r.pre.defined());
  expect_close(out_t, reference(x, w, b, "relu").output, 1e-4, 1e-4);
  // Outputs that overlap each other or an input, and one of the wrong shape.
  expect_error<ValueError>([&] { linear_act_out(out, out, x, w, b, "gelu"); }, {"linear_act"});
  Tensor xw = random_tensor({6, 16}, 4, DType::Float32, d);
  expect_error<ValueError>([&] { linear_act_out(xw, Tensor(), xw.slice(1, 0, 8), w, b, "relu"); },
                           {"linear_act"});
  expect_error<ShapeError>(
      [&] {
        linear_act_out(Tensor::empty({6, 15}, DType::Float32, d), Tensor(), x, w, b, "relu");
      },
      {"linear_act"});
}

TEST_P(LinearAct, Errors) {
  const Device d = device();
  const Tensor x = random_tensor({2, 4}, 1, DType::Float32, d);
  const Tensor w = random_tensor({5, 4}, 2, DType::Float32, d);
  expect_error<ValueError>([&] { linear_act(x, w, Tensor(), "tanh"); },
                           {"linear_act", "activation is \"tanh\"", "\"relu\", \"gelu\""});
  expect_error<ShapeError>(
      [&] {
        linear_act(x, random_tensor({5, 3}, 3, DType::Float32, d), Tensor(), "relu");
      },
      {"linear_act", "x.shape[-1] must equal weight.shape[1] (3)"});
  expect_error<ShapeError>(
      [&] { linear_act(x, w, random_tensor({4}, 3, DType::Float32, d), "relu"); },
      {"linear_act", "bias must be [5]"});
  expect_error<DTypeError>(
      [&] { linear_act(x.to(DType::Int64), w.to(DType::Int64), Tensor(), "relu"); },
      {"linear_act", "floating dtype"});
  expect_error<DTypeError>([&] { linear_act(x, w.to(DType::Float64), Tensor(), "relu"); },
                           {"linear_act", "one dtype"});
}

EMBER_INSTANTIATE_DEVICE_TEST(LinearAct);

}  // namespace
}  // namespace ember
