// test_out.cpp — the `_out` forms of every op family but elementwise: each writes exactly what
// the out-of-place form returns (bit for bit) into a contiguous out and into a strided view of a
// larger buffer (leaving the bytes around the view alone), bumps out's version, allocates nothing
// for its result, and rejects a wrong out (shape, dtype, device, undefined, expanded, overlapping)
// with a typed error that names the op. The out-of-place results are checked against independent
// references in the family's own test file.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "test_util.h"

namespace ember::test {
namespace {

using Outs = std::vector<Tensor>;
using Form = std::function<void(const Outs&)>;

class Out : public DeviceTest {};
EMBER_INSTANTIATE_DEVICE_TEST(Out);

// got and want have one shape and dtype and hold the same bytes (NaNs included). On CUDA a
// floating result may differ in its last bits instead: atomics add in no fixed order (index_add
// under pad_backward), and a kernel picked by the output's layout (softmax into a strided view)
// rounds its sums in another order; there each value must lie within 8 roundoffs of the other.
void expect_same_bits(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  Tensor g = got.to(Device()).contiguous(), w = want.to(Device()).contiguous();
  if (got.device().is_cpu() || !is_floating(got.dtype())) {
    EXPECT_EQ(std::memcmp(g.data_ptr(), w.data_ptr(), size_t(g.nbytes())), 0)
        << what << ": got " << g << " want " << w;
    return;
  }
  const std::vector<double> gv = g.to_vector<double>(), wv = w.to_vector<double>();
  const double u = test::unit_roundoff(got.dtype());
  for (size_t i = 0; i < gv.size(); ++i) {
    if (std::isnan(wv[i])) {
      EXPECT_TRUE(std::isnan(gv[i])) << what << " at " << i;
      continue;
    }
    EXPECT_LE(std::abs(gv[i] - wv[i]), 8 * u * std::max(1.0, std::abs(wv[i])))
        << what << " at " << i << ": got " << gv[i] << " want " << wv[i];
  }
}

Tensor like(const Tensor& t) { return Tensor::empty(t.shape(), t.dtype(), t.device()); }

// A view of t's shape into a buffer of 2 * numel + 1 elements filled with 3: element i (row-major)
// lives at buffer position 1 + 2 * i, every other position must stay 3.
struct StepView {
  Tensor buffer, view;
};
StepView step_view(const Tensor& t) {
  StepView s;
  s.buffer = full({2 * t.numel() + 1}, 3.0, t.dtype(), t.device());
  Strides strides(t.shape().size());
  int64_t stride = 2;
  for (size_t d = strides.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= std::max<int64_t>(t.shape()[d], 1);
  }
  s.view = s.buffer.as_strided(t.shape(), strides, 1);
  return s;
}

void expect_untouched_outside(const StepView& s, const std::string& what) {
  std::vector<double> b = s.buffer.to_vector<double>();
  const double sentinel = s.buffer.dtype() == DType::Bool ? 1.0 : 3.0;
  for (size_t p = 0; p < b.size(); p += 2) EXPECT_EQ(b[p], sentinel) << what << " position " << p;
}

// Another dtype than t's, for the wrong-dtype case.
DType other_dtype(DType t) { return t == DType::Float64 ? DType::Float32 : DType::Float64; }

template <class E>
void expect_named(const std::string& op, const Form& form, const Outs& outs,
                  const std::string& what) {
  SCOPED_TRACE(op + ": " + what);
  expect_error<E>([&] { form(outs); }, {op});
}

// The whole contract for one op whose result is `refs` (one tensor per output) and whose _out
// form is `form`.
void check_out_form(const std::string& op, const Outs& refs, const Form& form) {
  SCOPED_TRACE(op);
  // Contiguous outs: the same bits, versions bumped, nothing allocated for the result.
  Outs outs;
  for (const Tensor& r : refs) outs.push_back(like(r));
  std::vector<int64_t> versions;
  for (const Tensor& o : outs) versions.push_back(o.version());
  const Device dev = refs[0].device();
  const int64_t in_use = memory_stats(dev).in_use;
  form(outs);
  EXPECT_EQ(memory_stats(dev).in_use, in_use) << "the _out form kept memory beyond its outputs";
  for (size_t k = 0; k < refs.size(); ++k) {
    expect_same_bits(outs[k], refs[k], "contiguous out " + std::to_string(k));
    EXPECT_GT(outs[k].version(), versions[k]) << "out " << k << "'s version";
  }
  // Strided outs: step views of larger buffers, and transposed views for 2+ dims.
  std::vector<StepView> steps;
  Outs views, transposed;
  for (const Tensor& r : refs) {
    steps.push_back(step_view(r));
    views.push_back(steps.back().view);
    transposed.push_back(
        r.dim() >= 2 ? Tensor::empty(r.transpose(0, r.dim() - 1).shape(), r.dtype(), r.device())
                           .transpose(0, r.dim() - 1)
                     : like(r));
  }
  form(views);
  form(transposed);
  for (size_t k = 0; k < refs.size(); ++k) {
    expect_same_bits(views[k], refs[k], "step view " + std::to_string(k));
    expect_untouched_outside(steps[k], "step view " + std::to_string(k));
    expect_same_bits(transposed[k], refs[k], "transposed view " + std::to_string(k));
  }
  // Wrong outs, one output at a time.
  for (size_t k = 0; k < refs.size(); ++k) {
    const Tensor& r = refs[k];
    auto with = [&](const Tensor& bad) {
      Outs o;
      for (const Tensor& t : refs) o.push_back(like(t));
      o[k] = bad;
      return o;
    };
    Shape bigger = r.shape();
    if (bigger.empty()) bigger.push_back(2);
    else bigger[0] += 1;
    expect_named<ShapeError>(op, form, with(Tensor::empty(bigger, r.dtype(), dev)), "shape");
    expect_named<DTypeError>(op, form, with(Tensor::empty(r.shape(), other_dtype(r.dtype()), dev)),
                             "dtype");
    expect_named<ValueError>(op, form, with(Tensor()), "undefined");
    if (r.dim() > 0 && r.size(-1) > 1) {
      Shape one = r.shape();
      one.back() = 1;
      expect_named<ValueError>(op, form, with(Tensor::empty(one, r.dtype(), dev).expand(r.shape())),
                               "expanded");
    }
    if (cuda_is_available()) {
      const Device other = dev.is_cpu() ? Device("cuda:0") : Device();
      expect_named<DeviceError>(op, form, with(Tensor::empty(r.shape(), r.dtype(), other)),
                                "device");
    }
  }
}

void check_out_form(const std::string& op, const Tensor& ref,
                    const std::function<void(const Tensor&)>& form) {
  check_out_form(op, Outs{ref}, [&](const Outs& o) { form(o[0]); });
}

// An out that overlaps an input is a ValueError naming the op.
void expect_overlap_error(const std::string& op, const std::function<void()>& call) {
  SCOPED_TRACE(op + ": overlapping out");
  expect_error<ValueError>(call, {op, "overlaps"});
}

Tensor rnd(const Shape& s, uint32_t seed, Device d, DType t = DType::Float32) {
  return random_tensor(s, seed, t, d);
}

// ---- creation and random ----

TEST_P(Out, Creation) {
  const Device d = device();
  check_out_form("zeros", zeros({3, 4}, DType::Float32, d), [&](const Tensor& o) {
    zeros_out(o, {3, 4}, DType::Float32, d);
  });
  check_out_form("ones", ones({5}, DType::Int32, d),
                 [&](const Tensor& o) { ones_out(o, {5}, DType::Int32, d); });
  check_out_form("full", full({2, 3}, 2.5, DType::Float64, d), [&](const Tensor& o) {
    full_out(o, {2, 3}, 2.5, DType::Float64, d);
  });
  check_out_form("scalar_tensor", scalar_tensor(4.0, DType::Float32, d),
                 [&](const Tensor& o) { scalar_tensor_out(o, 4.0, DType::Float32, d); });
  check_out_form("arange", arange(7, std::nullopt, d),
                 [&](const Tensor& o) { arange_out(o, 7, std::nullopt, d); });
  check_out_form("arange", arange(0.5, 3.0, 0.25, DType::Float32, d),
                 [&](const Tensor& o) { arange_out(o, 0.5, 3.0, 0.25, DType::Float32, d); });
  check_out_form("linspace", linspace(-1, 1, 9, DType::Float32, d),
                 [&](const Tensor& o) { linspace_out(o, -1, 1, 9, DType::Float32, d); });
  check_out_form("eye", eye(3, 4, DType::Float32, d),
                 [&](const Tensor& o) { eye_out(o, 3, 4, DType::Float32, d); });
}

TEST_P(Out, Random) {
  const Device d = device();
  // The same generator state gives the same stream, so both forms draw the same values.
  auto same = [&](auto draw, auto draw_out, const std::string& op) {
    Generator g(42);
    Tensor ref = draw(&g);
    check_out_form(op, ref, [&](const Tensor& o) {
      Generator h(42);
      draw_out(o, &h);
    });
  };
  same(
      [&](Generator* g) {
        return rand({4, 5}, DType::Float32, d, g);
      },
      [&](const Tensor& o, Generator* g) {
        rand_out(o, {4, 5}, DType::Float32, d, g);
      },
      "uniform");
  same([&](Generator* g) { return uniform({6}, -2, 3, DType::Float64, d, g); },
       [&](const Tensor& o, Generator* g) { uniform_out(o, {6}, -2, 3, DType::Float64, d, g); },
       "uniform");
  same(
      [&](Generator* g) {
        return randn({3, 7}, DType::Float32, d, g);
      },
      [&](const Tensor& o, Generator* g) {
        randn_out(o, {3, 7}, DType::Float32, d, g);
      },
      "normal");
  same([&](Generator* g) { return normal({5}, 1, 2, DType::Float32, d, g); },
       [&](const Tensor& o, Generator* g) { normal_out(o, {5}, 1, 2, DType::Float32, d, g); },
       "normal");
  same(
      [&](Generator* g) {
        return bernoulli({4, 4}, 0.3, DType::Float32, d, g);
      },
      [&](const Tensor& o, Generator* g) {
        bernoulli_out(o, {4, 4}, 0.3, DType::Float32, d, g);
      },
      "bernoulli");
  Tensor probs = abs(rnd({3, 4}, 1, d, DType::Float32));
  same([&](Generator* g) { return bernoulli(probs, g); },
       [&](const Tensor& o, Generator* g) { bernoulli_out(o, probs, g); }, "bernoulli");
  same(
      [&](Generator* g) {
        return randint(-5, 9, {2, 6}, DType::Int32, d, g);
      },
      [&](const Tensor& o, Generator* g) {
        randint_out(o, -5, 9, {2, 6}, DType::Int32, d, g);
      },
      "randint");
  same([&](Generator* g) { return randperm(11, DType::Int64, d, g); },
       [&](const Tensor& o, Generator* g) { randperm_out(o, 11, DType::Int64, d, g); }, "randperm");
  same([&](Generator* g) { return randperm(11, DType::Int16, d, g); },
       [&](const Tensor& o, Generator* g) { randperm_out(o, 11, DType::Int16, d, g); }, "randperm");
  expect_overlap_error("bernoulli", [&] { bernoulli_out(probs, probs); });
}

// ---- reductions ----

TEST_P(Out, Reductions) {
  const Device d = device();
  Tensor x = rnd({4, 5, 3}, 2, d);
  Tensor xi = mul(rnd({4, 5}, 3, d), 10.0).to(DType::Int32);
  using R = std::function<Tensor(const Tensor&)>;
  using RO = std::function<void(const Tensor&, const Tensor&)>;
  auto both = [&](const std::string& op, const Tensor& in, R f, RO f_out) {
    check_out_form(op, f(in), [&](const Tensor& o) { f_out(o, in); });
  };
  for (bool keep : {false, true}) {
    SCOPED_TRACE(keep ? "keepdim" : "no keepdim");
    both(
        "sum", x, [&](auto& t) { return sum(t, {1}, keep); },
        [&](auto& o, auto& t) { sum_out(o, t, {1}, keep); });
    both(
        "sum", xi, [&](auto& t) { return sum(t, {}, keep); },
        [&](auto& o, auto& t) { sum_out(o, t, {}, keep); });
    both(
        "prod", x,
        [&](auto& t) {
          return prod(t, {0, 2}, keep);
        },
        [&](auto& o, auto& t) {
          prod_out(o, t, {0, 2}, keep);
        });
    both(
        "mean", x, [&](auto& t) { return mean(t, {-1}, keep); },
        [&](auto& o, auto& t) { mean_out(o, t, {-1}, keep); });
    both(
        "var", x, [&](auto& t) { return var(t, {0}, 1, keep); },
        [&](auto& o, auto& t) { var_out(o, t, {0}, 1, keep); });
    both(
        "std", x,
        [&](auto& t) {
          return ember::std(t, {1, 2}, 0, keep);
        },
        [&](auto& o, auto& t) {
          std_out(o, t, {1, 2}, 0, keep);
        });
    both(
        "amax", x, [&](auto& t) { return amax(t, {1}, keep); },
        [&](auto& o, auto& t) { amax_out(o, t, {1}, keep); });
    both(
        "amin", x, [&](auto& t) { return amin(t, {2}, keep); },
        [&](auto& o, auto& t) { amin_out(o, t, {2}, keep); });
    both(
        "argmax", x, [&](auto& t) { return argmax(t, 1, keep); },
        [&](auto& o, auto& t) { argmax_out(o, t, 1, keep); });
    both(
        "argmin", x, [&](auto& t) { return argmin(t, std::nullopt, keep); },
        [&](auto& o, auto& t) { argmin_out(o, t, std::nullopt, keep); });
    both(
        "logsumexp", x, [&](auto& t) { return logsumexp(t, {0}, keep); },
        [&](auto& o, auto& t) { logsumexp_out(o, t, {0}, keep); });
    both(
        "all", xi, [&](auto& t) { return all(t, {1}, keep); },
        [&](auto& o, auto& t) { all_out(o, t, {1}, keep); });
    both(
        "any", xi, [&](auto& t) { return any(t, {0}, keep); },
        [&](auto& o, auto& t) { any_out(o, t, {0}, keep); });
    both(
        "norm", x, [&](auto& t) { return norm(t, 3.0, {1}, keep); },
        [&](auto& o, auto& t) { norm_out(o, t, 3.0, {1}, keep); });
    ValuesIndices mx = max(x, 1, keep), mn = min(x, 2, keep);
    check_out_form("max", {mx.values, mx.indices},
                   [&](const Outs& o) { max_out(o[0], o[1], x, 1, keep); });
    check_out_form("min", {mn.values, mn.indices},
                   [&](const Outs& o) { min_out(o[0], o[1], x, 2, keep); });
  }
  Tensor buf = rnd({4, 5}, 4, d);
  expect_overlap_error("sum", [&] { sum_out(buf.select(1, 0), buf, {1}); });
  expect_overlap_error("max", [&] {
    max_out(buf.select(1, 0), Tensor::empty({4}, DType::Int64, d), buf, 1);
  });
}

// ---- shape ops and indexing ----

TEST_P(Out, ShapeOpsAndIndexing) {
  const Device d = device();
  Tensor a = rnd({2, 3}, 6, d), b = rnd({4, 3}, 7, d), c = rnd({2, 3}, 8, d);
  check_out_form("cat", cat({a, b}, 0), [&](const Tensor& o) { cat_out(o, {a, b}, 0); });
  check_out_form("stack", stack({a, c}, 1), [&](const Tensor& o) { stack_out(o, {a, c}, 1); });
  Tensor x = rnd({5, 4}, 9, d);
  Tensor index = Tensor::from_vector<int64_t>({4, 0, 2, 2}, {4}, d);
  check_out_form("index_select", index_select(x, 0, index),
                 [&](const Tensor& o) { index_select_out(o, x, 0, index); });
  check_out_form("index_select", index_select(x.t(), 1, index),
                 [&](const Tensor& o) { index_select_out(o, x.t(), 1, index); });
  Tensor src = rnd({4, 4}, 10, d);
  check_out_form("index_add", index_add(x, 0, index, src),
                 [&](const Tensor& o) { index_add_out(o, x, 0, index, src); });
  Tensor gi = Tensor::from_vector<int64_t>({0, 4, 1, 3, 2, 2}, {3, 2}, d);
  check_out_form("gather", gather(x, 0, gi), [&](const Tensor& o) { gather_out(o, x, 0, gi); });
  Tensor gsrc = rnd({3, 2}, 11, d);
  check_out_form("scatter_add", scatter_add(x, 0, gi, gsrc),
                 [&](const Tensor& o) { scatter_add_out(o, x, 0, gi, gsrc); });
  Tensor weight = rnd({6, 3}, 12, d);
  Tensor ids = Tensor::from_vector<int64_t>({5, 0, 1, 1, 3, 2}, {2, 3}, d);
  check_out_form("embedding", embedding(weight, ids),
                 [&](const Tensor& o) { embedding_out(o, weight, ids); });
  Tensor grad = rnd({2, 3, 3}, 13, d);
  check_out_form("embedding_backward", embedding_backward(grad, ids, 6, 1),
                 [&](const Tensor& o) { embedding_backward_out(o, grad, ids, 6, 1); });
  Tensor mask = gt(rnd({1, 4}, 14, d), 0.0);
  check_out_form("masked_fill", masked_fill(x, mask, -7),
                 [&](const Tensor& o) { masked_fill_out(o, x, mask, -7); });
  check_out_form("one_hot", one_hot(ids, 7), [&](const Tensor& o) { one_hot_out(o, ids, 7); });
  Tensor img = rnd({2, 3, 4}, 15, d);
  for (const char* mode : {"constant", "reflect", "replicate"}) {
    SCOPED_TRACE(mode);
    std::vector<int64_t> pads{2, 1, 1, 2};
    Tensor padded = pad(img, pads, mode, 0.5);
    check_out_form("pad", padded, [&](const Tensor& o) { pad_out(o, img, pads, mode, 0.5); });
    Tensor g = rnd(padded.shape(), 16, d);
    check_out_form("pad_backward", pad_backward(g, img.shape(), pads, mode),
                   [&](const Tensor& o) { pad_backward_out(o, g, img.shape(), pads, mode); });
  }
  // masked_fill alone may write into x itself (an in-place masked fill).
  Tensor y = x.clone();
  Tensor expected = masked_fill(y, mask, 2);
  masked_fill_out(y, y, mask, 2);
  expect_same_bits(y, expected, "masked_fill into x");
  expect_overlap_error("cat", [&] { cat_out(b, {b.narrow(0, 0, 2), a}, 0); });
  expect_overlap_error("index_select", [&] { index_select_out(x.narrow(0, 0, 4), x, 0, index); });
  expect_overlap_error("gather", [&] { gather_out(x.narrow(0, 0, 3).narrow(1, 0, 2), x, 0, gi); });
}

TEST_P(Out, InPlaceIndexOpsReturnSelfAndBumpTheVersion) {
  const Device d = device();
  Tensor x = rnd({5, 4}, 17, d);
  Tensor index = Tensor::from_vector<int64_t>({1, 3}, {2}, d);
  Tensor src = rnd({2, 4}, 18, d);
  Tensor expected = index_add(x, 0, index, src);
  const Tensor& view = x;
  int64_t v = x.version();
  const Tensor& r = index_add_(view, 0, index, src);
  EXPECT_EQ(&r, &view);
  EXPECT_GT(x.version(), v);
  expect_same_bits(x, expected, "index_add_");
  Tensor gi = Tensor::from_vector<int64_t>({0, 4, 1, 3}, {2, 2}, d);
  Tensor gsrc = rnd({2, 2}, 19, d);
  expected = scatter_add(x, 0, gi, gsrc);
  v = x.version();
  const Tensor& r2 = scatter_add_(view, 0, gi, gsrc);
  EXPECT_EQ(&r2, &view);
  EXPECT_GT(x.version(), v);
  expect_same_bits(x, expected, "scatter_add_");
  const Tensor& r3 = view.fill_(1.5);
  EXPECT_EQ(&r3, &view);
  const Tensor& r4 = view.copy_(sum(src).expand({5, 4}));
  EXPECT_EQ(&r4, &view);
}

// ---- matmul ----

TEST_P(Out, Matmul) {
  const Device d = device();
  Tensor a = rnd({3, 4, 5}, 20, d), b = rnd({5, 6}, 21, d), bb = rnd({3, 5, 2}, 22, d);
  Tensor v = rnd({5}, 23, d);
  check_out_form("matmul", matmul(a, b), [&](const Tensor& o) { matmul_out(o, a, b); });
  check_out_form("matmul", matmul(a, bb), [&](const Tensor& o) { matmul_out(o, a, bb); });
  check_out_form("matmul", matmul(a, v), [&](const Tensor& o) { matmul_out(o, a, v); });
  check_out_form("matmul", matmul(v, v), [&](const Tensor& o) { matmul_out(o, v, v); });
  Tensor x = rnd({7, 5}, 24, d), w = rnd({3, 5}, 25, d), bias = rnd({3}, 26, d);
  check_out_form("linear", linear(x, w, bias), [&](const Tensor& o) { linear_out(o, x, w, bias); });
  check_out_form("linear", linear(x, w), [&](const Tensor& o) { linear_out(o, x, w); });
  Tensor sq = rnd({4, 4}, 27, d);
  expect_overlap_error("matmul", [&] { matmul_out(sq, sq, rnd({4, 4}, 28, d)); });
  expect_overlap_error("linear", [&] { linear_out(sq.narrow(1, 0, 3), sq, w.narrow(1, 0, 4)); });
}

// ---- convolution and pooling ----

TEST_P(Out, ConvPool) {
  const Device d = device();
  Tensor x = rnd({2, 4, 7, 6}, 29, d), w = rnd({6, 2, 3, 3}, 30, d), bias = rnd({6}, 31, d);
  Tensor y = conv2d(x, w, bias, 2, 1, 1, 2);
  check_out_form("conv2d", y, [&](const Tensor& o) { conv2d_out(o, x, w, bias, 2, 1, 1, 2); });
  Tensor gy = rnd(y.shape(), 32, d);
  check_out_form("conv2d_backward_input", conv2d_backward_input(gy, w, x.shape(), 2, 1, 1, 2),
                 [&](const Tensor& o) {
                   conv2d_backward_input_out(o, gy, w, x.shape(), 2, 1, 1, 2);
                 });
  check_out_form("conv2d_backward_weight", conv2d_backward_weight(gy, x, w.shape(), 2, 1, 1, 2),
                 [&](const Tensor& o) {
                   conv2d_backward_weight_out(o, gy, x, w.shape(), 2, 1, 1, 2);
                 });
  check_out_form("conv2d_backward_bias", conv2d_backward_bias(gy),
                 [&](const Tensor& o) { conv2d_backward_bias_out(o, gy); });
  MaxPoolResult mp = max_pool2d(x, 3, 2, 1);
  check_out_form("max_pool2d", {mp.values, mp.indices},
                 [&](const Outs& o) { max_pool2d_out(o[0], o[1], x, 3, 2, 1); });
  Tensor gp = rnd(mp.values.shape(), 33, d);
  check_out_form("max_pool2d_backward", max_pool2d_backward(gp, mp.indices, x.shape()),
                 [&](const Tensor& o) { max_pool2d_backward_out(o, gp, mp.indices, x.shape()); });
  Tensor ap = avg_pool2d(x, 3, 2, 1, true, false);
  check_out_form("avg_pool2d", ap,
                 [&](const Tensor& o) { avg_pool2d_out(o, x, 3, 2, 1, true, false); });
  Tensor ga = rnd(ap.shape(), 34, d);
  check_out_form("avg_pool2d_backward", avg_pool2d_backward(ga, x.shape(), 3, 2, 1, true, false),
                 [&](const Tensor& o) {
                   avg_pool2d_backward_out(o, ga, x.shape(), 3, 2, 1, true, false);
                 });
  check_out_form("adaptive_avg_pool2d", adaptive_avg_pool2d(x, {3, 4}), [&](const Tensor& o) {
    adaptive_avg_pool2d_out(o, x, {3, 4});
  });
  Tensor gad = rnd({2, 4, 3, 4}, 35, d);
  check_out_form("adaptive_avg_pool2d_backward", adaptive_avg_pool2d_backward(gad, x.shape()),
                 [&](const Tensor& o) { adaptive_avg_pool2d_backward_out(o, gad, x.shape()); });
  expect_overlap_error("conv2d", [&] {
    Tensor big = rnd({2, 6, 7, 6}, 36, d);
    conv2d_out(big.narrow(2, 0, 5).narrow(3, 0, 4), big.narrow(1, 0, 4), w, bias, 1, 0, 1, 2);
  });
  expect_overlap_error("max_pool2d", [&] {
    max_pool2d_out(x.narrow(2, 0, 4).narrow(3, 0, 3), like(mp.indices), x, 3, 2, 1);
  });
}

// ---- normalization ----

TEST_P(Out, Normalization) {
  const Device d = device();
  Tensor x = rnd({4, 3, 5}, 37, d), w = rnd({3}, 38, d), b = rnd({3}, 39, d);
  Tensor rm = rnd({3}, 40, d), rv = abs(rnd({3}, 41, d));
  BatchNormResult t = batch_norm(x, w, b, rm, rv, true);
  check_out_form("batch_norm", {t.output, t.save_mean, t.save_invstd, t.batch_var},
                 [&](const Outs& o) {
                   batch_norm_out(o[0], o[1], o[2], o[3], x, w, b, rm, rv, true);
                 });
  BatchNormResult e = batch_norm(x, w, b, rm, rv, false);
  check_out_form("batch_norm", {e.output, e.save_mean, e.save_invstd}, [&](const Outs& o) {
    batch_norm_out(o[0], o[1], o[2], Tensor(), x, w, b, rm, rv, false);
  });
  Tensor gy = rnd(x.shape(), 42, d);
  NormGrads bg = batch_norm_backward(gy, x, w, t.save_mean, t.save_invstd, true);
  check_out_form("batch_norm_backward", {bg.grad_input, bg.grad_weight, bg.grad_bias},
                 [&](const Outs& o) {
                   batch_norm_backward_out(o[0], o[1], o[2], gy, x, w, t.save_mean, t.save_invstd,
                                           true);
                 });
  // float16: the per-channel gradients are computed in float32 and cast into out.
  Tensor xh = x.to(DType::Float16), wh = w.to(DType::Float16), gh = gy.to(DType::Float16);
  BatchNormResult th = batch_norm(xh, wh, Tensor(), Tensor(), Tensor(), true);
  NormGrads bgh = batch_norm_backward(gh, xh, wh, th.save_mean, th.save_invstd, true);
  check_out_form("batch_norm_backward", {bgh.grad_input, bgh.grad_weight, bgh.grad_bias},
                 [&](const Outs& o) {
                   batch_norm_backward_out(o[0], o[1], o[2], gh, xh, wh, th.save_mean,
                                           th.save_invstd, true);
                 });
  Tensor lw = rnd({5}, 43, d), lb = rnd({5}, 44, d);
  LayerNormResult ln = layer_norm(x, {5}, lw, lb);
  check_out_form("layer_norm", {ln.output, ln.mean, ln.rstd},
                 [&](const Outs& o) { layer_norm_out(o[0], o[1], o[2], x, {5}, lw, lb); });
  NormGrads lg = layer_norm_backward(gy, x, {5}, ln.mean, ln.rstd, lw);
  check_out_form("layer_norm_backward", {lg.grad_input, lg.grad_weight, lg.grad_bias},
                 [&](const Outs& o) {
                   layer_norm_backward_out(o[0], o[1], o[2], gy, x, {5}, ln.mean, ln.rstd, lw);
                 });
  Generator g0(7);
  DropoutResult dr = dropout(x, 0.4, true, &g0);
  check_out_form("dropout", {dr.output, dr.mask}, [&](const Outs& o) {
    Generator g(7);
    dropout_out(o[0], o[1], x, 0.4, true, &g);
  });
  check_out_form("dropout_backward", dropout_backward(gy, dr.mask, 0.4),
                 [&](const Tensor& o) { dropout_backward_out(o, gy, dr.mask, 0.4); });
  // Eval: output receives a copy of x and there is no mask.
  Tensor copy = like(x);
  DropoutResult ev = dropout_out(copy, Tensor(), x, 0.4, false);
  EXPECT_FALSE(ev.mask.defined());
  expect_same_bits(copy, x, "dropout eval");
  expect_error<ValueError>(
      [&] { batch_norm_out(like(x), like(rm), like(rm), like(rm), x, w, b, rm, rv, false); },
      {"batch_norm", "batch_var"});
  expect_overlap_error("layer_norm", [&] {
    Tensor stats = Tensor::empty({4, 3, 1}, DType::Float32, d);
    layer_norm_out(like(x), stats, stats, x, {5}, lw, lb);
  });
}

// ---- softmax and losses ----

TEST_P(Out, SoftmaxAndLosses) {
  const Device d = device();
  Tensor x = rnd({4, 6}, 45, d);
  check_out_form("softmax", softmax(x, 1), [&](const Tensor& o) { softmax_out(o, x, 1); });
  check_out_form("log_softmax", log_softmax(x, 0),
                 [&](const Tensor& o) { log_softmax_out(o, x, 0); });
  Tensor y = softmax(x, 1), ly = log_softmax(x, 1), gy = rnd({4, 6}, 46, d);
  check_out_form("softmax_backward", softmax_backward(gy, y, 1),
                 [&](const Tensor& o) { softmax_backward_out(o, gy, y, 1); });
  check_out_form("log_softmax_backward", log_softmax_backward(gy, ly, 1),
                 [&](const Tensor& o) { log_softmax_backward_out(o, gy, ly, 1); });
  Tensor target = Tensor::from_vector<int64_t>({5, 0, 2, 3}, {4}, d);
  Tensor cw = abs(rnd({6}, 47, d));
  for (LossReduction r : {LossReduction::None, LossReduction::Mean, LossReduction::Sum}) {
    SCOPED_TRACE(int(r));
    check_out_form("cross_entropy", cross_entropy(x, target, cw, 2, r, 0.1),
                   [&](const Tensor& o) { cross_entropy_out(o, x, target, cw, 2, r, 0.1); });
    Tensor gl = r == LossReduction::None ? rnd({4}, 48, d) : rnd({}, 48, d);
    check_out_form("cross_entropy_backward", cross_entropy_backward(gl, x, target, cw, 2, r, 0.1),
                   [&](const Tensor& o) {
                     cross_entropy_backward_out(o, gl, x, target, cw, 2, r, 0.1);
                   });
    check_out_form("nll_loss", nll_loss(ly, target, cw, -100, r),
                   [&](const Tensor& o) { nll_loss_out(o, ly, target, cw, -100, r); });
    check_out_form("nll_loss_backward", nll_loss_backward(gl, ly, target, cw, -100, r),
                   [&](const Tensor& o) { nll_loss_backward_out(o, gl, ly, target, cw, -100, r); });
    Tensor t2 = rnd({4, 6}, 49, d), p = abs(rnd({6}, 50, d));
    Tensor ge = r == LossReduction::None ? rnd({4, 6}, 51, d) : rnd({}, 51, d);
    check_out_form("mse_loss", mse_loss(x, t2, r),
                   [&](const Tensor& o) { mse_loss_out(o, x, t2, r); });
    check_out_form("mse_loss_backward", mse_loss_backward(ge, x, t2, r),
                   [&](const Tensor& o) { mse_loss_backward_out(o, ge, x, t2, r); });
    check_out_form("l1_loss", l1_loss(x, t2, r),
                   [&](const Tensor& o) { l1_loss_out(o, x, t2, r); });
    check_out_form("l1_loss_backward", l1_loss_backward(ge, x, t2, r),
                   [&](const Tensor& o) { l1_loss_backward_out(o, ge, x, t2, r); });
    Tensor prob = abs(rnd({4, 6}, 52, d));
    check_out_form("binary_cross_entropy_with_logits",
                   binary_cross_entropy_with_logits(x, prob, p, r), [&](const Tensor& o) {
                     binary_cross_entropy_with_logits_out(o, x, prob, p, r);
                   });
    check_out_form("binary_cross_entropy_with_logits_backward",
                   binary_cross_entropy_with_logits_backward(ge, x, prob, p, r),
                   [&](const Tensor& o) {
                     binary_cross_entropy_with_logits_backward_out(o, ge, x, prob, p, r);
                   });
  }
  // float16 logits: per-sample losses are float32 and cast into out.
  Tensor xh = x.to(DType::Float16);
  check_out_form("cross_entropy", cross_entropy(xh, target, Tensor(), -100, LossReduction::None),
                 [&](const Tensor& o) {
                   cross_entropy_out(o, xh, target, Tensor(), -100, LossReduction::None);
                 });
  // float16/bfloat16 logits also take a float32 out: the losses as computed, unrounded (what
  // autocast's cross entropy asks for), those of the logits' values in float32. Other dtypes are
  // still refused.
  for (DType low : {DType::Float16, DType::BFloat16}) {
    SCOPED_TRACE(dtype_name(low));
    const Tensor xl = x.to(low), wl = cw.to(low);
    for (LossReduction r : {LossReduction::None, LossReduction::Mean, LossReduction::Sum}) {
      const Tensor want =
          cross_entropy(xl.to(DType::Float32), target, wl.to(DType::Float32), 2, r, 0.1);
      Tensor out = Tensor::empty(want.shape(), DType::Float32, d);
      cross_entropy_out(out, xl, target, wl, 2, r, 0.1);
      expect_close(out, want, 1e-6, 1e-6);
    }
    Tensor wide = Tensor::empty({}, DType::Float64, d);
    expect_error<DTypeError>([&] { cross_entropy_out(wide, xl, target); },
                             {"cross_entropy", "float64", "never cast"});
  }
  expect_overlap_error("softmax", [&] { softmax_out(x, x, 1); });
  expect_overlap_error("mse_loss", [&] {
    mse_loss_out(x, x, rnd({4, 6}, 53, d), LossReduction::None);
  });
}

}  // namespace
}  // namespace ember::test
