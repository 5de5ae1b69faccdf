// Custom functions (custom_function.h): a forward and backward of the caller's own, recorded as
// one node, against the built-in ops they copy, at first and second order; their errors.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/autodiff/autodiff.h"
#include "ember/autodiff/custom_function.h"
#include "ember/ops/elementwise.h"

namespace ad = ember::autodiff;
using ember::Tensor;
using Vars = std::vector<ad::Variable>;

namespace {

// y = exp(x), saving y: dy/dx = y, written with differentiable ops so it differentiates again.
struct Exp : ad::CustomFunction {
  std::string name() const override { return "Exp"; }
  Vars backward(const Vars& grad_outputs, const Vars& saved) override {
    ++calls;
    return {grad_outputs[0] * saved[0]};
  }
  int calls = 0;
};

ad::Variable custom_exp(const ad::Variable& x, const std::shared_ptr<Exp>& fn) {
  return ad::record_custom_function(fn, {x}, {ember::exp(x.data())}, {}, {0})[0];
}

// Returns whatever gradients it was given to return.
struct Fixed : ad::CustomFunction {
  explicit Fixed(Vars g) : grads(std::move(g)) {}
  std::string name() const override { return "Fixed"; }
  Vars backward(const Vars&, const Vars&) override { return grads; }
  Vars grads;
};

ad::Variable x_of(std::vector<double> v) {
  const int64_t n = int64_t(v.size());
  return ad::Variable(Tensor::from_vector(std::move(v), {n}), true);
}

}  // namespace

TEST(CustomFunction, FirstAndSecondOrderMatchTheBuiltInOp) {
  ad::Variable x = x_of({0.5, -1.0, 2.0});
  auto fn = std::make_shared<Exp>();
  ad::Variable y = custom_exp(x, fn);
  EXPECT_STREQ(y.op_name(), "custom_function");
  EXPECT_NE(y.graph_str().find("custom_function_backward"), std::string::npos) << y.graph_str();
  ad::Variable dx = ad::grad({ad::sum(y * y)}, {x}, {}, false, true)[0];  // 2 exp(2x)
  ad::Variable ddx = ad::grad({ad::sum(dx)}, {x})[0];                     // 4 exp(2x)
  const auto xv = x.data().to_vector<double>();
  const auto d = dx.data().to_vector<double>(), dd = ddx.data().to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) {
    EXPECT_NEAR(d[i], 2 * std::exp(2 * xv[i]), 1e-12 * std::exp(2 * xv[i]));
    EXPECT_NEAR(dd[i], 4 * std::exp(2 * xv[i]), 1e-12 * std::exp(2 * xv[i]));
  }
  EXPECT_EQ(fn->calls, 2);  // once per order: the second passes through y = exp(x) again
}

TEST(CustomFunction, BackwardFreesTheCallUnlessRetained) {
  ad::Variable x = x_of({0.5});
  auto fn = std::make_shared<Exp>();
  ad::Variable y = ad::sum(custom_exp(x, fn));
  std::weak_ptr<Exp> alive = fn;
  fn.reset();
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  EXPECT_NEAR(x.grad().data().to_vector<double>()[0], 2 * std::exp(0.5), 1e-12);
  EXPECT_TRUE(alive.expired());  // the second backward freed it
  EXPECT_THROW(y.backward(), ember::ValueError);
}

TEST(CustomFunction, NoRecordWithoutGradAndNonDifferentiableOutputs) {
  ad::Variable x(Tensor::from_vector<double>({1.0, 2.0}, {2}));  // requires no grad
  ad::Variable y = custom_exp(x, std::make_shared<Exp>());
  EXPECT_TRUE(y.is_leaf());
  EXPECT_FALSE(y.requires_grad());
  ad::Variable z = x_of({1.0, 2.0});
  Vars out = ad::record_custom_function(std::make_shared<Exp>(), {z},
                                        {ember::exp(z.data()), ember::exp(z.data())}, {}, {0}, {1});
  EXPECT_TRUE(out[0].requires_grad());
  EXPECT_FALSE(out[1].requires_grad());
}

TEST(CustomFunction, WrongCountOrShapeOfGradientsIsAnError) {
  ad::Variable x = x_of({1.0, 2.0});
  auto wrong_count = std::make_shared<Fixed>(Vars{});
  ad::Variable y = ad::record_custom_function(wrong_count, {x}, {x.data().clone()})[0];
  try {
    ad::sum(y).backward();
    ADD_FAILURE() << "no error";
  } catch (const ember::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("Fixed.backward: returned 0 gradients for 1 inputs"),
              std::string::npos)
        << e.what();
  }
  auto wrong_shape = std::make_shared<Fixed>(Vars{x_of({1.0, 2.0, 3.0})});
  y = ad::record_custom_function(wrong_shape, {x}, {x.data().clone()})[0];
  try {
    ad::sum(y).backward();
    ADD_FAILURE() << "no error";
  } catch (const ember::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "the gradient of input 0 is f64[3] but the input is f64[2]"),
              std::string::npos)
        << e.what();
  }
  // An undefined gradient counts as zero.
  y = ad::record_custom_function(std::make_shared<Fixed>(Vars{ad::Variable()}), {x},
                                 {x.data().clone()})[0];
  ad::sum(y).backward();
  EXPECT_EQ(x.grad().data().to_vector<double>(), (std::vector<double>{0.0, 0.0}));
}

TEST(CustomFunction, SavedInputChangedInPlaceIsAnError) {
  ad::Variable x = x_of({1.0, 2.0});
  ad::Variable w(Tensor::from_vector<double>({3.0, 4.0}, {2}));
  // y = x * w with w saved: changing w before backward must be caught.
  ad::Variable y = ad::record_custom_function(std::make_shared<Fixed>(Vars{ad::Variable(), {}}),
                                              {x, w}, {ember::mul(x.data(), w.data())}, {1})[0];
  ember::add_(w.data(), 1.0);
  EXPECT_THROW(ad::sum(y).backward(), ember::ValueError);
}
