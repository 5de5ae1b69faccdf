// Optimizers' first steps against the update formulas written out as plain float64 loops, and a
// few values of torch.optim itself.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ember/autodiff/ops.h"
#include "ember/autodiff/optim/adam.h"
#include "ember/autodiff/optim/rmsprop.h"
#include "ember/autodiff/optim/sgd.h"
#include "ember/ops/creation.h"
#include "optim_problem.h"

namespace ad = ember::autodiff;
namespace optim = ember::autodiff::optim;
using ember::Tensor;
using optim_test::Vec;

namespace {

using optim_test::AdamMoments;
using optim_test::expect_near;
using optim_test::grad_at;
using optim_test::kStart;

// Runs `steps` steps of `opt` over p (float64 [2, 3]), each from grad_at of p's current values.
Vec run(optim::Optimizer& opt, const ad::Variable& p, int steps) {
  for (int t = 0; t < steps; ++t) {
    opt.zero_grad();
    p.set_grad(ad::Variable(Tensor::from_vector(grad_at(p.data().to_vector<double>(), t), {2, 3})));
    opt.step();
  }
  return p.data().to_vector<double>();
}

ad::Variable param() { return ad::Variable(Tensor::from_vector(kStart, {2, 3}), true); }

// ---- the references: torch.optim's update formulas, one element at a time ----

Vec sgd_reference(double lr, double momentum, double dampening, double wd, bool nesterov,
                  bool maximize, int steps) {
  Vec p = kStart, buf(p.size());
  for (int t = 0; t < steps; ++t) {
    const Vec g0 = grad_at(p, t);
    for (size_t i = 0; i < p.size(); ++i) {
      double g = maximize ? -g0[i] : g0[i];
      g += wd * p[i];
      if (momentum != 0) {
        buf[i] = t == 0 ? g : momentum * buf[i] + (1 - dampening) * g;
        g = nesterov ? g + momentum * buf[i] : buf[i];
      }
      p[i] -= lr * g;
    }
  }
  return p;
}

Vec adam_reference(double lr, double b1, double b2, double eps, double wd, bool decoupled,
                   bool maximize, int steps) {
  Vec p = kStart;
  AdamMoments am{lr, b1, b2, wd, decoupled, maximize, Vec(p.size()), Vec(p.size())};
  for (int t = 0; t < steps; ++t) {
    const Vec g0 = grad_at(p, t);
    const double c1 = 1 - std::pow(b1, t + 1), c2 = 1 - std::pow(b2, t + 1);
    for (size_t i = 0; i < p.size(); ++i) {
      am.update(p, g0, i);
      p[i] -= lr / c1 * am.m[i] / (std::sqrt(am.v[i]) / std::sqrt(c2) + eps);
    }
  }
  return p;
}

Vec rmsprop_reference(double lr, double alpha, double eps, double wd, double momentum,
                      bool centered, int steps) {
  Vec p = kStart, sq(p.size()), ga(p.size()), buf(p.size());
  for (int t = 0; t < steps; ++t) {
    const Vec g0 = grad_at(p, t);
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = g0[i] + wd * p[i];
      sq[i] = alpha * sq[i] + (1 - alpha) * g * g;
      double avg;
      if (centered) {
        ga[i] = alpha * ga[i] + (1 - alpha) * g;
        avg = std::sqrt(sq[i] - ga[i] * ga[i]) + eps;
      } else {
        avg = std::sqrt(sq[i]) + eps;
      }
      if (momentum > 0) {
        buf[i] = momentum * buf[i] + g / avg;
        p[i] -= lr * buf[i];
      } else {
        p[i] -= lr * g / avg;
      }
    }
  }
  return p;
}

}  // namespace

TEST(OptimSGD, PlainMomentumDampeningNesterovWeightDecayMaximize) {
  struct Case {
    double momentum, dampening, wd;
    bool nesterov, maximize;
  };
  for (const Case c : {Case{0, 0, 0, false, false}, Case{0.9, 0, 0, false, false},
                       Case{0.9, 0.3, 0.01, false, false}, Case{0.8, 0, 0.05, true, false},
                       Case{0.5, 0, 0.1, false, true}, Case{0, 0, 0.1, false, false}}) {
    ad::Variable p = param();
    optim::SGD opt({p}, {{"lr", 0.1},
                         {"momentum", c.momentum},
                         {"dampening", c.dampening},
                         {"weight_decay", c.wd},
                         {"nesterov", c.nesterov},
                         {"maximize", c.maximize}});
    SCOPED_TRACE("momentum " + std::to_string(c.momentum) + " nesterov " +
                 std::to_string(c.nesterov));
    expect_near(run(opt, p, 5),
                sgd_reference(0.1, c.momentum, c.dampening, c.wd, c.nesterov, c.maximize, 5));
  }
}

TEST(OptimAdam, WithAndWithoutWeightDecayAndMaximize) {
  for (const double wd : {0.0, 0.1})
    for (const bool maximize : {false, true}) {
      ad::Variable p = param();
      optim::Adam opt({p},
                      {{"lr", 0.05}, {"beta1", 0.8}, {"weight_decay", wd}, {"maximize", maximize}});
      expect_near(run(opt, p, 6), adam_reference(0.05, 0.8, 0.999, 1e-8, wd, false, maximize, 6));
    }
}

TEST(OptimAdamW, DecoupledWeightDecay) {
  ad::Variable p = param();
  optim::AdamW opt({p}, {{"lr", 0.05}, {"weight_decay", 0.1}});
  expect_near(run(opt, p, 6), adam_reference(0.05, 0.9, 0.999, 1e-8, 0.1, true, false, 6));
  EXPECT_EQ(opt.defaults().at("weight_decay"), 0.1);
  ad::Variable q = param();
  EXPECT_EQ(optim::AdamW({q}).defaults().at("weight_decay"), 1e-2);  // PyTorch's default
}

TEST(OptimRMSprop, PlainCenteredMomentumWeightDecay) {
  for (const bool centered : {false, true})
    for (const double momentum : {0.0, 0.9}) {
      ad::Variable p = param();
      optim::RMSprop opt({p}, {{"lr", 0.01},
                               {"alpha", 0.9},
                               {"weight_decay", 0.05},
                               {"momentum", momentum},
                               {"centered", centered}});
      expect_near(run(opt, p, 5), rmsprop_reference(0.01, 0.9, 1e-8, 0.05, momentum, centered, 5));
    }
}

// torch.optim's own values (torch 2.x, float64, computed once by hand with the same kStart and
// grad_at): the parameter after 3 steps.
TEST(OptimTorchValues, ThreeStepsOfEach) {
  struct Case {
    std::function<std::unique_ptr<optim::Optimizer>(ad::Variable)> make;
    Vec want;
  };
  const std::vector<Case> cases = {
      {[](ad::Variable p) {
         return std::make_unique<optim::SGD>(std::vector<ad::Variable>{p},
                                             optim::Options{{"lr", 0.1},
                                                            {"momentum", 0.9},
                                                            {"nesterov", 1},
                                                            {"weight_decay", 0.01}});
       },
       Vec{0.19326316685099987, -0.0355024735919997, -0.16897547171950006, -0.6516914832370001,
           -0.011644792100250006, -0.21369307964174994}},
      {[](ad::Variable p) {
         return std::make_unique<optim::Adam>(std::vector<ad::Variable>{p},
                                              optim::Options{{"lr", 0.1}});
       },
       Vec{0.7000000027193871, -1.7001683854081675, 0.20137983303588936, 2.700581805694118,
           -0.0033715745396360117, 0.45397863450392895}},
      {[](ad::Variable p) {
         return std::make_unique<optim::AdamW>(std::vector<ad::Variable>{p},
                                               optim::Options{{"lr", 0.1}, {"weight_decay", 0.1}});
       },
       Vec{0.6733761421246589, -1.6438683748772462, 0.1897026120081327, 2.6146258358406946,
           -0.0007903226525972223, 0.43507669933293264}},
      {[](ad::Variable p) {
         return std::make_unique<optim::RMSprop>(std::vector<ad::Variable>{p},
                                                 optim::Options{{"lr", 0.01},
                                                                {"momentum", 0.9},
                                                                {"centered", 1}});
       },
       Vec{0.5349895353816828, -1.5359919092076213, 0.05070682285692441, 2.5398554106542903,
           0.05913421164144339, 0.3145027243697899}},
  };
  for (const Case& c : cases) {
    ad::Variable p = param();
    auto opt = c.make(p);
    SCOPED_TRACE(opt->name());
    expect_near(run(*opt, p, 3), c.want, 1e-12);
  }
}

TEST(OptimGroups, EachGroupItsOwnLearningRate) {
  ad::Variable a = param(), b = param();
  optim::SGD opt({a}, {{"lr", 0.1}, {"momentum", 0.9}});
  opt.add_param_group({b}, {{"lr", 0.01}});
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.lr(0), 0.1);
  EXPECT_EQ(opt.lr(1), 0.01);
  EXPECT_EQ(opt.param_groups()[1].options.at("momentum"), 0.9);  // from the defaults
  for (int t = 0; t < 4; ++t) {
    for (const ad::Variable& v : {a, b})
      v.set_grad(
          ad::Variable(Tensor::from_vector(grad_at(v.data().to_vector<double>(), t), {2, 3})));
    opt.step();
  }
  expect_near(a.data().to_vector<double>(), sgd_reference(0.1, 0.9, 0, 0, false, false, 4));
  expect_near(b.data().to_vector<double>(), sgd_reference(0.01, 0.9, 0, 0, false, false, 4));
  opt.set_lr(0.5, 1);
  EXPECT_EQ(opt.param_groups()[1].lr(), 0.5);
}

TEST(OptimGroups, ParametersWithoutGradAreSkipped) {
  ad::Variable a = param(), b = param();
  optim::Adam opt({a, b}, {{"lr", 0.1}});
  a.set_grad(ad::Variable(ember::ones({2, 3}, ember::DType::Float64)));
  opt.step();
  EXPECT_EQ(b.data().to_vector<double>(), kStart);
  EXPECT_EQ(opt.state(b), nullptr);
  ASSERT_NE(opt.state(a), nullptr);
  EXPECT_EQ(opt.state(a)->step, 1);
  // b's first step comes while a is on its second: each gets its own bias correction.
  b.set_grad(ad::Variable(ember::ones({2, 3}, ember::DType::Float64)));
  opt.step();
  EXPECT_EQ(opt.state(a)->step, 2);
  EXPECT_EQ(opt.state(b)->step, 1);
  // After one Adam step on a constant gradient each element moves by lr (to ~1e-7).
  const Vec bv = b.data().to_vector<double>();
  for (size_t i = 0; i < bv.size(); ++i) EXPECT_NEAR(bv[i], kStart[i] - 0.1, 1e-6);
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

TEST(OptimGroups, SgdMomentumBufferStartsWhenTheFirstGradArrives) {
  ad::Variable a = param(), b = param();
  optim::SGD opt({a, b}, {{"lr", 0.1}, {"momentum", 0.9}});
  const Tensor g = ember::ones({2, 3}, ember::DType::Float64);
  a.set_grad(ad::Variable(g));
  opt.step();
  b.set_grad(ad::Variable(g));
  opt.step();  // a continues its buffer (0.9 + 1), b starts one (1)
  const Vec av = a.data().to_vector<double>(), bv = b.data().to_vector<double>();
  for (size_t i = 0; i < av.size(); ++i) {
    EXPECT_NEAR(av[i], kStart[i] - 0.1 * (1 + 1.9), 1e-12);
    EXPECT_NEAR(bv[i], kStart[i] - 0.1, 1e-12);
  }
}

TEST(OptimGroups, StepsAfterARealBackward) {
  // loss = sum(tanh(w * x)) for a float32 w: one backward, one step, w -= lr * (1 - tanh^2) x.
  ad::Variable w(Tensor::from_vector<float>({0.5f, -1.0f, 2.0f}, {3}), true);
  const Tensor x = Tensor::from_vector<float>({1.0f, 2.0f, -0.5f}, {3});
  optim::SGD opt({w}, {{"lr", 0.5}});
  ad::sum(ad::tanh(w * ad::Variable(x))).backward();
  opt.step();
  const std::vector<float> wv = w.data().to_vector<float>();
  const float w0[] = {0.5f, -1.0f, 2.0f}, xs[] = {1.0f, 2.0f, -0.5f};
  for (int i = 0; i < 3; ++i) {
    const double t = std::tanh(double(w0[i]) * xs[i]);
    EXPECT_NEAR(wv[i], w0[i] - 0.5 * (1 - t * t) * xs[i], 1e-6);
  }
}

TEST(OptimErrors, OptionsAreChecked) {
  ad::Variable p = param();
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const ember::ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no ValueError");
  };
  const std::string lr = message([&] { optim::SGD({p}, {{"lr", -0.1}}); });
  EXPECT_NE(lr.find("SGD"), std::string::npos) << lr;
  EXPECT_NE(lr.find("'lr'"), std::string::npos) << lr;
  EXPECT_NE(lr.find(">= 0"), std::string::npos) << lr;
  const std::string nesterov = message([&] { optim::SGD({p}, {{"nesterov", 1}}); });
  EXPECT_NE(nesterov.find("momentum > 0"), std::string::npos) << nesterov;
  const std::string beta = message([&] { optim::Adam({p}, {{"beta2", 1.0}}); });
  EXPECT_NE(beta.find("Adam: option 'beta2' is 1; it must lie in [0, 1)"), std::string::npos)
      << beta;
  const std::string unknown = message([&] { optim::RMSprop({p}, {{"momentun", 0.9}}); });
  EXPECT_NE(unknown.find("unknown option 'momentun'"), std::string::npos) << unknown;
  EXPECT_NE(message([&] {
              optim::RMSprop({p}, {{"centered", 2}});
            }).find("flag"),
            std::string::npos);
  EXPECT_NE(message([&] { optim::SGD({}, {}); }).find("empty"), std::string::npos);
  EXPECT_NE(message([&] { optim::SGD({p, p}, {}); }).find("appears twice"), std::string::npos);
  optim::SGD opt({p});
  EXPECT_THROW(opt.set_lr(-1.0), ember::ValueError);
  EXPECT_THROW(opt.add_param_group({p}), ember::ValueError);
  EXPECT_THROW(opt.lr(3), ember::IndexError);
  ad::Variable q = param();
  EXPECT_NE(message([&] { optim::SGD({ad::tanh(q)}); }).find("only leaves"), std::string::npos);
}
