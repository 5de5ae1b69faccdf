// scaled_dot_product_attention's rules against float64 finite differences, first and second
// order (check_rule also differentiates tanh of the output, so the backward op's own rule is
// exercised): masks of both kinds, causal with L != S, broadcast batch dims, non-contiguous
// inputs, dropout with a fixed stream, and a gradient reaching an additive mask.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ember/autodiff/autodiff.h"
#include "ember/autodiff/ops/attention.h"
#include "ember/ops/attention.h"
#include "gradcheck.h"

namespace ad = ember::autodiff;
using ember::Tensor;
using gradcheck::random;
using Vars = std::vector<ad::Variable>;

TEST(Attention, PlainHeads) {
  gradcheck::check_rule(
      [](const Vars& v) { return ad::scaled_dot_product_attention(v[0], v[1], v[2]); },
      {random({2, 3, 4}, 1), random({2, 5, 4}, 2), random({2, 5, 3}, 3)});
}

TEST(Attention, CausalWithFewerAndMoreKeys) {
  for (auto [L, S] : {std::pair<int64_t, int64_t>{4, 6}, {6, 3}})
    gradcheck::check_rule(
        [](const Vars& v) {
          return ad::scaled_dot_product_attention(v[0], v[1], v[2], {}, 0.0, true, 0.7);
        },
        {random({1, L, 3}, 4), random({1, S, 3}, 5), random({1, S, 2}, 6)});
}

TEST(Attention, BoolMaskBroadcastAndBroadcastBatch) {
  // mask [L, S] for every head; k and v shared by the two heads of q.
  const Tensor mask = Tensor::from_vector<double>({1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0}, {3, 4})
                          .to(ember::DType::Bool);
  gradcheck::check_rule(
      [&](const Vars& v) {
        return ad::scaled_dot_product_attention(v[0], v[1], v[2], ad::Variable(mask));
      },
      {random({2, 3, 2}, 7), random({1, 4, 2}, 8), random({4, 3}, 9)});
}

TEST(Attention, AdditiveMaskGetsItsGradientToo) {
  gradcheck::check_rule(
      [](const Vars& v) { return ad::scaled_dot_product_attention(v[0], v[1], v[2], v[3]); },
      {random({2, 3, 2}, 10), random({2, 4, 2}, 11), random({2, 4, 2}, 12), random({1, 3, 4}, 13)});
}

TEST(Attention, NonContiguousInputsFromTransposedHeads) {
  // [B, T, H, D] transposed to [B, H, T, D], as a multi-head layer makes them.
  const Tensor q = random({1, 3, 2, 2}, 14).transpose(1, 2);
  const Tensor k = random({1, 4, 2, 2}, 15).transpose(1, 2);
  const Tensor v = random({1, 4, 2, 3}, 16).transpose(1, 2);
  ASSERT_FALSE(q.is_contiguous());
  gradcheck::check_rule(
      [](const Vars& v) { return ad::scaled_dot_product_attention(v[0], v[1], v[2]); }, {q, k, v});
}

TEST(Attention, DropoutWithAFixedStream) {
  // Every evaluation reseeds the generator, so the finite differences see one mask.
  gradcheck::check_rule(
      [](const Vars& v) {
        ember::Generator gen(42);
        return ad::scaled_dot_product_attention(v[0], v[1], v[2], {}, 0.4, false, std::nullopt,
                                                &gen);
      },
      {random({2, 3, 2}, 17), random({2, 5, 2}, 18), random({2, 5, 2}, 19)});
}

TEST(Attention, SameSeedSameOutputAndTheGeneratorAdvances) {
  const Tensor q = random({2, 6, 4}, 20), k = random({2, 7, 4}, 21), v = random({2, 7, 4}, 22);
  ember::Generator a(5), b(5);
  ad::Variable x = ad::scaled_dot_product_attention(ad::Variable(q), ad::Variable(k),
                                                    ad::Variable(v), {}, 0.5, false, {}, &a);
  ad::Variable y = ad::scaled_dot_product_attention(ad::Variable(q), ad::Variable(k),
                                                    ad::Variable(v), {}, 0.5, false, {}, &b);
  EXPECT_EQ(x.data().to_vector<double>(), y.data().to_vector<double>());
  ad::Variable z = ad::scaled_dot_product_attention(ad::Variable(q), ad::Variable(k),
                                                    ad::Variable(v), {}, 0.5, false, {}, &a);
  EXPECT_NE(x.data().to_vector<double>(), z.data().to_vector<double>());
}

TEST(Attention, GraphShapesAndErrors) {
  ad::Graph g;
  ad::Val q = g.input({{2, 3, 5, 8}, ember::DType::Float32, {}}, "q");
  ad::Val k = g.input({{2, 3, 7, 8}, ember::DType::Float32, {}}, "k");
  ad::Val v = g.input({{7, 4}, ember::DType::Float32, {}}, "v");
  ad::Val out = ad::scaled_dot_product_attention(q, k, v);
  EXPECT_EQ(out.shape(), ember::Shape({2, 3, 5, 4}));
  ad::Val bad = g.input({{2, 3, 7, 6}, ember::DType::Float32, {}}, "bad");
  EXPECT_THROW(ad::scaled_dot_product_attention(q, bad, v), ember::ShapeError);
  ad::Val mask = g.input({{5, 7}, ember::DType::Bool, {}}, "mask");
  EXPECT_THROW(ad::scaled_dot_product_attention(q, k, v, mask, 0.0, true), ember::ValueError);
}
