// test_compile_mask_before_scatter.cpp — relu's mask moved before max-pool's backward scatter: the
// same gradients bit for bit (signed zeros and NaN included) over pools that overlap, pad, dilate
// and round up; the full-size activation is no longer read by the backward pass; no rewrite where
// the scattered gradient is read elsewhere or the mask is of another value.
#include <cstring>

#include "compile_programs.h"

namespace ember::autodiff::compile::test {
namespace {

struct Pool {
  Size2 kernel, stride, padding, dilation;
  bool ceil_mode;
};

// loss = sum(max_pool2d(relu(x)) * c); returns d loss / d x (and the value of y = relu(x)).
Program relu_pool_step(const Shape& shape, const Pool& pool, ValueId* y_out = nullptr) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32(shape), "x");
  Val y = relu(x);
  Val pooled = max_pool2d(y, pool.kernel, pool.stride, pool.padding, pool.dilation, pool.ceil_mode);
  Val c = g.input(pooled.type(), "c");
  Val loss = sum(mul(pooled, c));
  p.returned = {grad({loss}, {x})[0].id};
  if (y_out) *y_out = y.id;
  return p;
}

void expect_same_bits(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  const std::vector<float> x = a.contiguous().to_vector<float>();
  const std::vector<float> y = b.contiguous().to_vector<float>();
  ASSERT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0);
}

// The last node that reads `value` (-1: none).
int32_t last_reader(const Graph& g, ValueId value) {
  int32_t last = -1;
  for (int32_t k = 0; k < g.num_nodes(); ++k)
    for (ValueId in : g.node(k).inputs)
      if (in == value) last = k;
  return last;
}

class MaskBeforeScatter : public ::testing::TestWithParam<Pool> {};

TEST_P(MaskBeforeScatter, SameGradientsBitForBitAndTheActivationDiesInTheForward) {
  const Shape shape{2, 3, 7, 9};  // odd sizes
  ValueId y = -1;
  Program p = relu_pool_step(shape, GetParam(), &y);
  Explain e;
  Program q = mask_before_scatter(p, e);
  ASSERT_NE(e.str().find("1 relu masks moved"), std::string::npos) << e.str();
  // y's only reader now is the forward max-pool (its value id is kept: no node before it moved).
  EXPECT_EQ(q.graph->node(last_reader(*q.graph, y)).op->name, "max_pool2d");

  ember::manual_seed(3);
  // Whole numbers in [-2, 2]: many ties inside a window, many zeros (relu's kink), negative
  // gradients (a masked -g must come out +0 as relu_backward makes it).
  Tensor x = ember::round(ember::randn(shape));
  const std::vector<float> special = {NAN, -0.0f, INFINITY, -INFINITY};
  float* px = x.data<float>();
  for (size_t i = 0; i < special.size(); ++i) px[7 * i + 1] = special[i];
  Shape c_shape;  // the pooled shape: the second input's
  for (ValueId v = 0; v < p.graph->num_values(); ++v)
    if (p.graph->value(v).name == "c") c_shape = p.graph->value(v).type.shape;
  Tensor c = ember::randn(c_shape) - 0.5;
  std::vector<Tensor> want = run_program(p, {x, c}, {});
  std::vector<Tensor> got = run_program(q, {x, c}, {});
  expect_same_bits(want[0], got[0]);
  // And on a strided input.
  Tensor xt = ember::randn({shape[0], shape[1], shape[3], shape[2]}).transpose(2, 3);
  expect_same_bits(run_program(p, {xt, c}, {})[0], run_program(q, {xt, c}, {})[0]);
}

INSTANTIATE_TEST_SUITE_P(
    Pools, MaskBeforeScatter,
    ::testing::Values(Pool{{2, 2}, {2, 2}, {0, 0}, {1, 1}, false},   // the CNN's
                      Pool{{3, 3}, {1, 1}, {1, 1}, {1, 1}, false},   // overlapping, padded
                      Pool{{3, 2}, {2, 1}, {1, 0}, {2, 1}, true},    // dilated, rounded up
                      Pool{{2, 2}, {2, 2}, {0, 0}, {1, 1}, true}));  // a partial last window

// relu_backward(scatter, y) of a 2x2 pool, the scatter also summed and returned when read_twice.
Program pool_mask_program(bool read_twice) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({1, 2, 4, 4}), "x");
  Val y = relu(x);
  auto [pooled, at] = max_pool2d_with_offsets(y, {2, 2});
  Val scattered = max_pool2d_offsets_backward(pooled, at, y.type().shape, {2, 2});
  p.returned = {sum(relu_backward(scattered, y)).id};
  if (read_twice) p.returned.push_back(sum(scattered).id);
  return p;
}

TEST(MaskBeforeScatter, NotWhenTheScatteredGradientIsReadElsewhere) {
  Explain twice, once;
  Program p = pool_mask_program(/*read_twice=*/true);
  Program q = mask_before_scatter(p, twice);
  EXPECT_NE(twice.str().find("0 relu masks moved"), std::string::npos) << twice.str();
  EXPECT_EQ(q.graph->num_nodes(), p.graph->num_nodes());
  // Read once, the same program is rewritten: the check above is not vacuous.
  mask_before_scatter(pool_mask_program(/*read_twice=*/false), once);
  EXPECT_NE(once.str().find("1 relu masks moved"), std::string::npos) << once.str();
}

TEST(MaskBeforeScatter, NotWhenTheMaskIsOfAnotherValueThanThePoolsInput) {
  Program p = program_with_graph();
  Graph& g = *p.graph;
  Val x = g.input(f32({1, 2, 4, 4}), "x");
  Val other = g.input(f32({1, 2, 4, 4}), "other");
  auto [pooled, at] = max_pool2d_with_offsets(relu(x), {2, 2});
  Val masked =
      relu_backward(max_pool2d_offsets_backward(pooled, at, x.type().shape, {2, 2}), other);
  p.returned = {sum(masked).id};
  Explain e;
  mask_before_scatter(p, e);
  EXPECT_NE(e.str().find("0 relu masks moved"), std::string::npos) << e.str();
}

}  // namespace
}  // namespace ember::autodiff::compile::test
