// The op linear_act (linear then relu / gelu / gelu_tanh): its gradient against float64 finite
// differences (first and second order, through the kept pre and through linear recomputed when
// pre is not kept), its values against linear then the activation, its shape rule and errors.
#include <gtest/gtest.h>

#include <cstring>

#include "ember/autodiff/autodiff.h"
#include "ember/ops/matmul.h"
#include "expect_error.h"
#include "gradcheck.h"

namespace ad = ember::autodiff;
using ember::Shape;
using ember::Tensor;
using gradcheck::random;
using Vars = std::vector<ad::Variable>;

namespace {

const char* const kActivations[] = {"relu", "gelu", "gelu_tanh"};

// linear_act with the attributes given, as a compiled step's pass writes it.
ad::Variable linear_act_node(const Vars& v, const std::string& activation, bool pre) {
  return ad::apply(ad::op_def("linear_act"), v,
                   {{"activation", activation}, {"pre", int64_t(pre)}})[0];
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), size_t(x.nbytes())) == 0;
}

}  // namespace

TEST(LinearActGrad, EveryActivationWithBias) {
  for (const char* act : kActivations) {
    SCOPED_TRACE(act);
    gradcheck::check_rule([&](const Vars& v) { return ad::linear_act(v[0], v[1], v[2], act); },
                          {random({2, 3, 4}, 1), random({5, 4}, 2), random({5}, 3)});
  }
}

TEST(LinearActGrad, WithoutBiasAndNonContiguous) {
  Tensor x = random({4, 3}, 4).transpose(0, 1);  // [3, 4]
  Tensor w = random({4, 2}, 5).transpose(0, 1);  // [2, 4]
  for (const char* act : kActivations) {
    SCOPED_TRACE(act);
    gradcheck::check_rule(
        [&](const Vars& v) { return ad::linear_act(v[0], v[1], ad::Variable(), act); }, {x, w});
  }
}

// gelu without its pre kept: the rule recomputes linear for gelu_backward.
TEST(LinearActGrad, GeluWithoutPreRecomputesLinear) {
  for (const char* act : {"gelu", "gelu_tanh"}) {
    SCOPED_TRACE(act);
    gradcheck::check_rule([&](const Vars& v) { return linear_act_node(v, act, false); },
                          {random({3, 4}, 6), random({5, 4}, 7), random({5}, 8)});
  }
}

// relu with its pre kept as a second output: a gradient arriving at pre adds in.
TEST(LinearActGrad, AGradientAtPreAddsIn) {
  for (const char* act : kActivations) {
    SCOPED_TRACE(act);
    gradcheck::check_rule(
        [&](const Vars& v) {
          std::vector<ad::Variable> out =
              ad::apply(ad::op_def("linear_act"), v,
                        {{"activation", std::string(act)}, {"pre", int64_t(1)}});
          return out[0] * out[1];
        },
        {random({3, 4}, 9), random({5, 4}, 10), random({5}, 11)});
  }
}

TEST(LinearAct, EqualsLinearThenTheActivationBitForBit) {
  for (ember::DType t : {ember::DType::Float32, ember::DType::Float64, ember::DType::BFloat16}) {
    const Tensor x = random({6, 33}, 12).to(t), w = random({17, 33}, 13).to(t);
    const Tensor b = random({17}, 14).to(t);
    const ad::Variable h = ad::linear(ad::Variable(x), ad::Variable(w), ad::Variable(b));
    EXPECT_TRUE(
        same_bits(ad::linear_act(ad::Variable(x), ad::Variable(w), ad::Variable(b), "relu").data(),
                  ad::relu(h).data()));
    EXPECT_TRUE(
        same_bits(ad::linear_act(ad::Variable(x), ad::Variable(w), ad::Variable(b), "gelu").data(),
                  ad::gelu(h, "none").data()));
    EXPECT_TRUE(same_bits(
        ad::linear_act(ad::Variable(x), ad::Variable(w), ad::Variable(b), "gelu_tanh").data(),
        ad::gelu(h, "tanh").data()));
  }
}

TEST(LinearActInfer, TypesAndErrors) {
  ad::Graph g;
  ad::Val x = g.input({{2, 3, 4}, ember::DType::Float32});
  ad::Val w = g.input({{5, 4}, ember::DType::Float32});
  ad::Val b = g.input({{5}, ember::DType::Float32});
  EXPECT_EQ(ad::linear_act(x, w, b, "relu").shape(), (Shape{2, 3, 5}));
  // gelu keeps pre for its gradient; relu does not.
  EXPECT_EQ(g.node(g.num_nodes() - 1).outputs.size(), 1u);
  ad::linear_act(x, w, b, "gelu");
  EXPECT_EQ(g.node(g.num_nodes() - 1).outputs.size(), 2u);
  const std::string bad = error_of<ember::ValueError>([&] { ad::linear_act(x, w, b, "tanh"); });
  EXPECT_NE(bad.find("linear_act"), std::string::npos) << bad;
  EXPECT_NE(bad.find("activation is \"tanh\""), std::string::npos) << bad;
  ad::Val w_bad = g.input({{5, 3}, ember::DType::Float32});
  const std::string shape =
      error_of<ember::ShapeError>([&] { ad::linear_act(x, w_bad, b, "relu"); });
  EXPECT_NE(shape.find("linear_act"), std::string::npos) << shape;
  EXPECT_NE(shape.find("x.shape[-1] must equal weight.shape[1] (3)"), std::string::npos) << shape;
  ad::Val xi = g.input({{2, 4}, ember::DType::Int64});
  ad::Val wi = g.input({{5, 4}, ember::DType::Int64});
  const std::string dtype =
      error_of<ember::DTypeError>([&] { ad::linear_act(xi, wi, ad::Val(), "relu"); });
  EXPECT_NE(dtype.find("floating dtype"), std::string::npos) << dtype;
  // The graph's type is core-runtime's result type.
  const Tensor xt = random({2, 3, 4}, 15), wt = random({5, 4}, 16);
  ad::Graph g2;
  ad::Val y =
      ad::linear_act(g2.input(ad::type_of(xt)), g2.input(ad::type_of(wt)), ad::Val(), "gelu");
  EXPECT_EQ(y.type(), ad::type_of(ember::linear_act(xt, wt, Tensor(), "gelu").output));
}
