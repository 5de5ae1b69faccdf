// test_version_counter.cpp — the storage's version counter: every in-place write bumps it, every
// view shares it, and out-of-place ops leave their inputs' alone.
#include <functional>
#include <string>
#include <utility>

#include "test_util.h"

namespace ember {
namespace {

using test::random_tensor;

class VersionCounter : public test::DeviceTest {
 protected:
  Tensor floats(const Shape& shape, uint32_t seed = 1) const {
    return random_tensor(shape, seed, DType::Float32, device());
  }
  Tensor indices(const std::vector<int64_t>& v, const Shape& shape) const {
    return Tensor::from_vector(v, shape).to(device());
  }
};

using InPlace = std::pair<std::string, std::function<void(const Tensor&)>>;

TEST_P(VersionCounter, EveryInPlaceOpBumpsIt) {
  Tensor other = floats({2, 3}, 2), row = floats({3}, 3);
  const std::vector<InPlace> ops{
      {"copy_", [&](Tensor t) { t.copy_(other); }},
      {"copy_ from the host", [&](Tensor t) { t.copy_(other.to(Device())); }},
      {"fill_", [](Tensor t) { t.fill_(2.0); }},
      {"zero_", [](Tensor t) { t.zero_(); }},
      {"add_", [&](const Tensor& t) { add_(t, other); }},
      {"add_ broadcast", [&](const Tensor& t) { add_(t, row); }},
      {"add_ float64 (computed apart, then cast)",
       [&](const Tensor& t) { add_(t, other.to(DType::Float64)); }},
      {"sub_", [&](const Tensor& t) { sub_(t, other); }},
      {"mul_", [&](const Tensor& t) { mul_(t, other); }},
      {"div_", [&](const Tensor& t) { div_(t, other); }},
      {"add_ scalar", [](const Tensor& t) { add_(t, 1.0); }},
      {"sub_ scalar", [](const Tensor& t) { sub_(t, 1.0); }},
      {"mul_ scalar", [](const Tensor& t) { mul_(t, 2.0); }},
      {"div_ scalar", [](const Tensor& t) { div_(t, 2.0); }},
      {"+=", [&](const Tensor& t) { t += other; }},
      {"-= scalar", [](const Tensor& t) { t -= 1.0; }},
      {"*=", [&](const Tensor& t) { t *= other; }},
      {"/= scalar", [](const Tensor& t) { t /= 4.0; }},
      {"index_add_",
       [&](Tensor t) {
         index_add_(t, 1, indices({2, 0}, {2}), floats({2, 2}, 4));
       }},
      {"scatter_add_",
       [&](Tensor t) {
         scatter_add_(t, 0, indices({1, 0, 1}, {1, 3}), floats({1, 3}, 5));
       }},
      {"uniform_", [](const Tensor& t) { uniform_(t, -1, 1); }},
      {"normal_", [](const Tensor& t) { normal_(t, 0, 1); }},
  };
  for (const auto& [name, op] : ops) {
    Tensor t = floats({2, 3});
    const int64_t before = t.version();
    op(t);
    EXPECT_GT(t.version(), before) << name;
  }
}

TEST_P(VersionCounter, WritesThroughAStridedViewBumpIt) {
  Tensor base = floats({4, 6});
  Tensor view = base.t().slice(0, 1, 6, 2);  // non-contiguous
  const int64_t before = base.version();
  add_(view, 1.0);
  EXPECT_GT(base.version(), before);
  Tensor index_target = base.t();  // index_add_ on a non-contiguous tensor copies back into it
  const int64_t mid = base.version();
  index_add_(index_target, 0, indices({0}, {1}), floats({1, 4}, 6));
  EXPECT_GT(base.version(), mid);
}

TEST_P(VersionCounter, ViewsShareIt) {
  Tensor base = floats({3, 4});
  Tensor row = base.select(0, 1), col = base.t().select(0, 2), flat = base.view({12});
  const int64_t v0 = base.version();
  EXPECT_EQ(row.version(), v0);
  row.fill_(1.0);
  EXPECT_GT(base.version(), v0);
  EXPECT_EQ(col.version(), base.version());
  EXPECT_EQ(flat.version(), base.version());
  const int64_t v1 = base.version();
  mul_(flat, 2.0);
  EXPECT_GT(row.version(), v1);
  Tensor separate = base.clone();  // a copy has a counter of its own
  const int64_t v2 = base.version();
  separate.zero_();
  EXPECT_EQ(base.version(), v2);
}

TEST_P(VersionCounter, OptimizerStepsBumpParamsAndStateButNotGrads) {
  TensorList params{floats({3}, 1), floats({2, 2}, 2).t()};  // the second non-contiguous
  TensorList grads{floats({3}, 3), floats({2, 2}, 4)};
  auto versions = [](const TensorList& ts) {
    std::vector<int64_t> v;
    for (const Tensor& t : ts) v.push_back(t.version());
    return v;
  };
  auto expect_bumped = [&](const TensorList& ts, const std::vector<int64_t>& before,
                           const char* what) {
    for (size_t i = 0; i < ts.size(); ++i) EXPECT_GT(ts[i].version(), before[i]) << what << i;
  };
  auto zeros_for = [&] {
    TensorList z;
    for (const Tensor& p : params) z.push_back(zeros(p.shape(), p.dtype(), device()));
    return z;
  };
  const std::vector<int64_t> grads_before = versions(grads);

  TensorList bufs = zeros_for();
  std::vector<int64_t> p0 = versions(params), b0 = versions(bufs);
  sgd_step(params, grads, bufs, 0.1, 0.9);
  expect_bumped(params, p0, "sgd params ");
  expect_bumped(bufs, b0, "sgd momentum_buffers ");

  TensorList m = zeros_for(), v = zeros_for();
  std::vector<int64_t> p1 = versions(params), m0 = versions(m), v0 = versions(v);
  adam_step(params, grads, m, v, 1);
  expect_bumped(params, p1, "adam params ");
  expect_bumped(m, m0, "adam exp_avgs ");
  expect_bumped(v, v0, "adam exp_avg_sqs ");

  TensorList sq = zeros_for();
  std::vector<int64_t> p2 = versions(params), sq0 = versions(sq);
  rmsprop_step(params, grads, sq, {}, {});
  expect_bumped(params, p2, "rmsprop params ");
  expect_bumped(sq, sq0, "rmsprop square_avgs ");

  EXPECT_EQ(versions(grads), grads_before);
}

TEST_P(VersionCounter, BatchNormUpdateStatsBumpsTheRunningStats) {
  Tensor x = floats({8, 3}), rm = zeros({3}, DType::Float32, device());
  Tensor rv = ones({3}, DType::Float32, device());
  const int64_t rm0 = rm.version(), rv0 = rv.version();
  BatchNormResult r = batch_norm(x, Tensor(), Tensor(), rm, rv, true);
  EXPECT_EQ(rm.version(), rm0);  // the forward does not write them
  EXPECT_EQ(rv.version(), rv0);
  batch_norm_update_stats(rm, rv, r.save_mean, r.batch_var, 0.1, 8);
  EXPECT_GT(rm.version(), rm0);
  EXPECT_GT(rv.version(), rv0);
}

TEST_P(VersionCounter, OutOfPlaceOpsLeaveTheirInputsAlone) {
  Tensor a = floats({4, 4}, 1), b = floats({4, 4}, 2);
  Tensor idx = indices({3, 0}, {2});
  Tensor mask = gt(a, 0.0);
  const int64_t va = a.version(), vb = b.version();
  add(a, b);
  mul(a, 2.0);
  neg(a);
  relu(a);
  where(mask, a, b);
  clamp(a, -0.5, 0.5);
  sum(a, {0});
  amax(a);
  softmax(a, 1);
  matmul(a, b);
  linear(a, b);
  index_select(a, 0, idx);
  index_add(a, 0, idx, floats({2, 4}, 3));
  gather(a, 1, indices({0, 1, 2, 3}, {4, 1}));
  scatter_add(a, 1, indices({0, 1, 2, 3}, {4, 1}), b);
  masked_fill(a, mask, 0.0);
  batch_norm(a, Tensor(), Tensor(), Tensor(), Tensor(), true);
  layer_norm(a, {4});
  dropout(a, 0.5);
  a.clone();
  a.contiguous();
  a.t().contiguous();
  a.to(DType::Float64);
  a.to(Device());
  a.t().reshape({16});
  EXPECT_EQ(a.version(), va);
  EXPECT_EQ(b.version(), vb);
}

EMBER_INSTANTIATE_DEVICE_TEST(VersionCounter);

TEST(VersionCounterUndefined, IsZero) {
  Tensor undefined;
  EXPECT_EQ(undefined.version(), 0);
  undefined.bump_version();  // a no-op, not a crash
  EXPECT_EQ(undefined.version(), 0);
}

}  // namespace
}  // namespace ember
