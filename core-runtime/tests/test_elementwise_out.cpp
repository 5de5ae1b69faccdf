// test_elementwise_out.cpp — the `_out` forms of the elementwise family: every op written into
// contiguous, transposed and step-sliced outs, into the input itself, and the out= errors.
#include <cmath>
#include <functional>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;
using test::random_tensor;

class ElementwiseOut : public test::DeviceTest {};
EMBER_INSTANTIATE_DEVICE_TEST(ElementwiseOut);

struct OutCase {
  const char* name;
  std::function<Tensor()> fresh;                     // the out-of-place form
  std::function<const Tensor&(const Tensor&)> into;  // the _out form
};

// OUT_CASE(add, a, b) -> {"add", add(a, b), add_out(out, a, b)}
#define OUT_CASE(fn, ...)                                                                         \
  OutCase {                                                                                       \
#fn, [&] { return fn(__VA_ARGS__); },                                                         \
                                       [&](const Tensor& o)                                       \
                                            -> const Tensor& { return fn##_out(o, __VA_ARGS__); } \
  }

// Outs of `shape` in three layouts: contiguous, transposed in memory, every other element.
std::vector<Tensor> out_layouts(const Shape& shape, DType dtype, Device device) {
  return {empty(shape, dtype, device), empty({shape[1], shape[0]}, dtype, device).t(),
          empty({shape[0], 2 * shape[1]}, dtype, device).slice(1, 1, 2 * shape[1], 2)};
}

// Every op of the family: the _out form into every layout equals the out-of-place result (which
// test_elementwise*.cpp check against references), returns out and bumps its version.
TEST_P(ElementwiseOut, EveryOpWritesIntoEveryOutLayout) {
  Tensor a = random_tensor({4, 5}, 1, DType::Float32, device(), 0.5, 2);
  Tensor b = random_tensor({5, 4}, 2, DType::Float32, device(), 0.5, 2).t();  // strided input
  Tensor g = random_tensor({4, 5}, 3, DType::Float32, device(), -1, 1);
  Tensor row = random_tensor({5}, 4, DType::Float32, device(), 0.5, 2);  // broadcast
  Tensor ia = random_tensor({4, 5}, 5, DType::Float32, device(), -50, 50).to(DType::Int32);
  Tensor ib = random_tensor({4, 5}, 6, DType::Float32, device(), 1, 9).to(DType::Int32);
  Tensor cond = gt(g, 0.0);
  const std::vector<OutCase> cases = {OUT_CASE(neg, a),
                                      OUT_CASE(abs, g),
                                      OUT_CASE(sign, g),
                                      OUT_CASE(exp, a),
                                      OUT_CASE(log, a),
                                      OUT_CASE(log1p, a),
                                      OUT_CASE(sqrt, a),
                                      OUT_CASE(rsqrt, a),
                                      OUT_CASE(sin, a),
                                      OUT_CASE(cos, a),
                                      OUT_CASE(tanh, g),
                                      OUT_CASE(sigmoid, g),
                                      OUT_CASE(erf, g),
                                      OUT_CASE(reciprocal, a),
                                      OUT_CASE(floor, g),
                                      OUT_CASE(ceil, g),
                                      OUT_CASE(round, g),
                                      OUT_CASE(trunc, g),
                                      OUT_CASE(isnan, g),
                                      OUT_CASE(isinf, g),
                                      OUT_CASE(isfinite, g),
                                      OUT_CASE(nan_to_num, log(g)),
                                      OUT_CASE(relu, g),
                                      OUT_CASE(leaky_relu, g, 0.2),
                                      OUT_CASE(elu, g, 1.5),
                                      OUT_CASE(gelu, g),
                                      OUT_CASE(gelu, g, "tanh"),
                                      OUT_CASE(silu, g),
                                      OUT_CASE(softplus, g, 2.0, 1.0),
                                      OUT_CASE(relu_backward, a, g),
                                      OUT_CASE(leaky_relu_backward, a, g, 0.3),
                                      OUT_CASE(elu_backward, a, g, 0.5),
                                      OUT_CASE(gelu_backward, a, g),
                                      OUT_CASE(gelu_backward, a, g, "tanh"),
                                      OUT_CASE(silu_backward, a, g),
                                      OUT_CASE(softplus_backward, a, g, 1.0, 20.0),
                                      OUT_CASE(sigmoid_backward, a, g),
                                      OUT_CASE(tanh_backward, a, g),
                                      OUT_CASE(add, a, b),
                                      OUT_CASE(sub, a, row),
                                      OUT_CASE(mul, a, b),
                                      OUT_CASE(div, a, b),
                                      OUT_CASE(pow, a, b),
                                      OUT_CASE(maximum, a, g),
                                      OUT_CASE(minimum, a, g),
                                      OUT_CASE(floor_divide, ia, ib),
                                      OUT_CASE(remainder, g, row),
                                      OUT_CASE(bitwise_and, ia, ib),
                                      OUT_CASE(bitwise_or, ia, ib),
                                      OUT_CASE(bitwise_xor, ia, ib),
                                      OUT_CASE(bitwise_not, ia),
                                      OUT_CASE(add, a, 2.0),
                                      OUT_CASE(add, 2.0, a),
                                      OUT_CASE(sub, a, 0.5),
                                      OUT_CASE(sub, 0.5, a),
                                      OUT_CASE(mul, a, 3.0),
                                      OUT_CASE(mul, 3.0, a),
                                      OUT_CASE(div, a, 4.0),
                                      OUT_CASE(div, 4.0, a),
                                      OUT_CASE(pow, a, 2.5),
                                      OUT_CASE(pow, 2.5, a),
                                      OUT_CASE(maximum, g, 0.1),
                                      OUT_CASE(minimum, g, 0.1),
                                      OUT_CASE(floor_divide, ia, 3.0),
                                      OUT_CASE(floor_divide, 7.0, ib),
                                      OUT_CASE(remainder, g, 0.3),
                                      OUT_CASE(remainder, 5.0, ib),
                                      OUT_CASE(eq, a, b),
                                      OUT_CASE(ne, a, b),
                                      OUT_CASE(lt, a, b),
                                      OUT_CASE(le, a, b),
                                      OUT_CASE(gt, a, b),
                                      OUT_CASE(ge, a, b),
                                      OUT_CASE(eq, ia, 3.0),
                                      OUT_CASE(ne, g, 0.0),
                                      OUT_CASE(lt, g, 0.2),
                                      OUT_CASE(le, g, 0.2),
                                      OUT_CASE(gt, g, 0.2),
                                      OUT_CASE(ge, g, 0.2),
                                      OUT_CASE(logical_and, g, cond),
                                      OUT_CASE(logical_or, ia, cond),
                                      OUT_CASE(logical_xor, cond, g),
                                      OUT_CASE(logical_not, g),
                                      OUT_CASE(where, cond, a, g),
                                      OUT_CASE(clamp, g, -0.5, 0.5),
                                      OUT_CASE(clamp, ia, std::nullopt, 10.0)};
  for (const OutCase& c : cases) {
    Tensor want = c.fresh();
    for (const Tensor& out : out_layouts(want.shape(), want.dtype(), device())) {
      SCOPED_TRACE(std::string(c.name) + " into " + out.str() +
                   (out.is_contiguous() ? "" : " strided"));
      const int64_t version = out.version();
      const Tensor& r = c.into(out);
      EXPECT_EQ(&r, &out);
      EXPECT_GT(out.version(), version);
      expect_close(out, want, 0, 0);
    }
  }
}

// Independent references for a few, into strided outs: results computed here in double.
TEST_P(ElementwiseOut, StridedOutsMatchReferences) {
  Tensor a = random_tensor({30, 17}, 7, DType::Float64, device());
  Tensor b = random_tensor({17}, 8, DType::Float64, device());
  Tensor out = empty({17, 30}, DType::Float64, device()).t();
  add_out(out, a, b);
  std::vector<double> va = a.to_vector<double>(), vb = b.to_vector<double>(), want;
  for (size_t i = 0; i < va.size(); ++i) want.push_back(va[i] + vb[i % 17]);
  expect_close(out, want, 1e-15, 0);
  // A large out (past the CPU threading threshold and the GPU's vector path) of every other
  // element of a wider buffer.
  Tensor big = random_tensor({1000, 300}, 9, DType::Float32, device(), -3, 3);
  Tensor wide = zeros({1000, 600}, DType::Float32, device());
  floor_out(wide.slice(1, 0, 600, 2), big);
  std::vector<double> vbig = big.to_vector<double>(), vw = wide.to_vector<double>();
  for (size_t i = 0; i < vbig.size(); ++i) {
    ASSERT_EQ(vw[2 * i], std::floor(vbig[i])) << i;
    ASSERT_EQ(vw[2 * i + 1], 0.0) << i;  // the elements between are left alone
  }
  Tensor c = Tensor::from_vector<bool>({true, false, true, false, false, true}, {2, 3}, device());
  Tensor bo = empty({3, 2}, DType::Int64, device()).t();
  where_out(bo, c, Tensor::from_vector<int64_t>({1, 2, 3}, {3}, device()),
            Tensor::from_vector<int64_t>({-1}, {}, device()));
  EXPECT_EQ(bo.to_vector<int64_t>(), (std::vector<int64_t>{1, -1, 3, -1, -1, 3}));
}

TEST_P(ElementwiseOut, OutIdenticalToAnInputComputesInPlace) {
  Tensor x = random_tensor({6, 4}, 10, DType::Float32, device(), -2, 2).t();  // [4, 6] strided
  std::vector<double> before = x.to_vector<double>(), want;
  for (double v : before) want.push_back(std::exp(v));
  exp_out(x, x);
  expect_close(x, want, 1e-6, 1e-6);
  Tensor y = random_tensor({4, 6}, 11, DType::Float32, device());
  std::vector<double> vx = x.to_vector<double>(), vy = y.to_vector<double>();
  add_out(y, x, y);  // out identical to the second input
  for (size_t i = 0; i < vx.size(); ++i) want[i] = vx[i] + vy[i];
  expect_close(y, want, 1e-6, 1e-6);
  Tensor n = Tensor::from_vector<int32_t>({-7, 8, 9}, {3}, device());
  remainder_out(n, n, 4.0);
  EXPECT_EQ(n.to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 1}));
  Tensor k = Tensor::from_vector<float>({-2, 0.5, 3}, {3}, device());
  clamp_out(k, k, 0.0, 1.0);
  expect_close(k, {0, 0.5, 1}, 0, 0);
}

TEST_P(ElementwiseOut, OutOfZeroDimsAndEmpty) {
  Tensor s = Tensor::from_vector<double>({2.5}, {}, device());
  Tensor o = empty({}, DType::Float64, device());
  mul_out(o, s, 2.0);
  EXPECT_EQ(o.item<double>(), 5.0);
  round_out(o, s);
  EXPECT_EQ(o.item<double>(), 2.0);
  Tensor e = empty({0, 3}, DType::Float32, device());
  Tensor eo = empty({0, 3}, DType::Bool, device());
  EXPECT_EQ(&isnan_out(eo, e), &eo);
  EXPECT_EQ(sub_out(e, e, e).numel(), 0);
}

TEST_P(ElementwiseOut, OutErrorsNameTheOpAndOperands) {
  Tensor a = zeros({2, 3}, DType::Float32, device());
  Tensor b = zeros({3}, DType::Float32, device());
  expect_error<ShapeError>(
      [&] {
        add_out(zeros({3, 2}, DType::Float32, device()), a, b);
      },
      {"add", "out is [3, 2] float32", "the result is [2, 3] float32", "never resized"});
  expect_error<DTypeError>(
      [&] {
        exp_out(zeros({2, 3}, DType::Float64, device()), a);
      },
      {"exp", "out is [2, 3] float64", "never cast"});
  expect_error<DTypeError>(
      [&] {
        eq_out(zeros({2, 3}, DType::Float32, device()), a, b);
      },
      {"eq", "the result is [2, 3] bool"});
  expect_error<DTypeError>(
      [&] {
        add_out(zeros({2, 3}, DType::Int64, device()), a, 1.0);
      },
      {"add", "out is [2, 3] int64"});
  expect_error<ValueError>([&] { relu_out(Tensor(), a); }, {"relu", "out is an undefined tensor"});
  expect_error<ValueError>([&] { where_out(Tensor(), gt(a, 0.0), a, b); },
                           {"where", "out is an undefined"});
  Tensor expanded = zeros({3}, DType::Float32, device()).expand({2, 3});
  expect_error<ValueError>([&] { sigmoid_out(expanded, a); }, {"sigmoid", "expanded"});
  // Overlapping but not identical: a shifted window of the input's own storage.
  Tensor buf = zeros({3, 3}, DType::Float32, device());
  expect_error<ValueError>([&] { neg_out(buf.narrow(0, 1, 2), buf.narrow(0, 0, 2)); },
                           {"neg", "out overlaps x", "x is [2, 3] float32"});
  expect_error<ValueError>([&] { mul_out(buf.narrow(0, 0, 2), a, buf.narrow(0, 1, 2)); },
                           {"mul", "out overlaps b"});
  expect_error<ValueError>([&] { tanh_backward_out(buf.narrow(0, 1, 2), a, buf.narrow(0, 0, 2)); },
                           {"tanh_backward", "out overlaps y"});
  Tensor bools = zeros({3, 3}, DType::Bool, device());
  expect_error<ValueError>([&] { logical_not_out(bools.narrow(0, 1, 2), bools.narrow(0, 0, 2)); },
                           {"logical_not", "overlaps"});
  expect_error<ValueError>([&] { nan_to_num_out(buf.t(), buf); },
                           {"nan_to_num", "overlaps"});  // same memory, other view
  expect_error<ValueError>([&] { clamp_out(a, a, std::nullopt, std::nullopt); },
                           {"clamp", "at least one"});
  if (device().is_cuda()) {
    Tensor cpu_out = zeros({2, 3}, DType::Float32, Device("cpu"));
    expect_error<DeviceError>([&] { add_out(cpu_out, a, b); },
                              {"add", "out is [2, 3] float32 cpu", "cuda"});
  }
}

}  // namespace
}  // namespace ember
