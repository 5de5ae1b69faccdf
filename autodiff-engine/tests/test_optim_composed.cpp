// Adadelta, Adagrad, Adamax, NAdam and RAdam (composed of elementwise ops) against their update
// formulas written out as plain float64 loops, over several steps; their state round trip.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ember/autodiff/optim.h"
#include "ember/ops/creation.h"
#include "ember/ops/elementwise.h"
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
constexpr int kSteps = 7;

// `steps` steps of `opt` over p, a float64 [2, 3] parameter that is a transposed view (so the
// in-place updates write through strides).
Vec run(const std::function<std::unique_ptr<optim::Optimizer>(std::vector<ad::Variable>)>& make,
        int steps = kSteps) {
  const Tensor base = Tensor::from_vector(kStart, {2, 3}).transpose(0, 1).contiguous();
  ad::Variable p(base.transpose(0, 1), true);
  EXPECT_FALSE(p.data().is_contiguous());
  auto opt = make({p});
  for (int t = 0; t < steps; ++t) {
    opt->zero_grad();
    const Vec now = p.data().contiguous().to_vector<double>();
    p.set_grad(ad::Variable(Tensor::from_vector(grad_at(now, t), {2, 3})));
    opt->step();
  }
  return p.data().contiguous().to_vector<double>();
}

template <class Opt> auto maker(optim::Options options) {
  return [options](std::vector<ad::Variable> p) -> std::unique_ptr<optim::Optimizer> {
    return std::make_unique<Opt>(std::move(p), options);
  };
}

// g as the update uses it: negated when maximizing, plus L2 weight decay.
double effective(double g, double p, double wd, bool maximize) {
  return (maximize ? -g : g) + wd * p;
}

Vec adadelta_reference(double lr, double rho, double eps, double wd, bool maximize) {
  Vec p = kStart, sq(p.size()), acc(p.size());
  for (int t = 0; t < kSteps; ++t) {
    const Vec g0 = grad_at(p, t);
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = effective(g0[i], p[i], wd, maximize);
      sq[i] = rho * sq[i] + (1 - rho) * g * g;
      const double delta = std::sqrt(acc[i] + eps) / std::sqrt(sq[i] + eps) * g;
      acc[i] = rho * acc[i] + (1 - rho) * delta * delta;
      p[i] -= lr * delta;
    }
  }
  return p;
}

Vec adagrad_reference(double lr, double lr_decay, double wd, double init, double eps,
                      bool maximize) {
  Vec p = kStart, sum(p.size(), init);
  for (int t = 0; t < kSteps; ++t) {
    const Vec g0 = grad_at(p, t);
    const double clr = lr / (1 + t * lr_decay);
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = effective(g0[i], p[i], wd, maximize);
      sum[i] += g * g;
      p[i] -= clr * g / (std::sqrt(sum[i]) + eps);
    }
  }
  return p;
}

Vec adamax_reference(double lr, double b1, double b2, double eps, double wd, bool maximize) {
  Vec p = kStart, m(p.size()), u(p.size());
  for (int t = 0; t < kSteps; ++t) {
    const Vec g0 = grad_at(p, t);
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = effective(g0[i], p[i], wd, maximize);
      m[i] = b1 * m[i] + (1 - b1) * g;
      u[i] = std::max(b2 * u[i], std::abs(g) + eps);
      p[i] -= lr / (1 - std::pow(b1, t + 1)) * m[i] / u[i];
    }
  }
  return p;
}

Vec nadam_reference(double lr, double b1, double b2, double eps, double wd, double psi,
                    bool decoupled, bool maximize) {
  Vec p = kStart;
  AdamMoments am{lr, b1, b2, wd, decoupled, maximize, Vec(p.size()), Vec(p.size())};
  double product = 1;
  for (int t = 1; t <= kSteps; ++t) {
    const Vec g0 = grad_at(p, t - 1);
    const double mu = b1 * (1 - 0.5 * std::pow(0.96, t * psi));
    const double mu_next = b1 * (1 - 0.5 * std::pow(0.96, (t + 1) * psi));
    product *= mu;
    for (size_t i = 0; i < p.size(); ++i) {
      const double g = am.update(p, g0, i);
      const double d = std::sqrt(am.v[i] / (1 - std::pow(b2, t))) + eps;
      p[i] -= lr * (1 - mu) / (1 - product) * g / d;
      p[i] -= lr * mu_next / (1 - product * mu_next) * am.m[i] / d;
    }
  }
  return p;
}

Vec radam_reference(double lr, double b1, double b2, double eps, double wd, bool decoupled,
                    bool maximize) {
  Vec p = kStart;
  AdamMoments am{lr, b1, b2, wd, decoupled, maximize, Vec(p.size()), Vec(p.size())};
  const double rho_inf = 2 / (1 - b2) - 1;
  for (int t = 1; t <= kSteps; ++t) {
    const Vec g0 = grad_at(p, t - 1);
    const double c1 = 1 - std::pow(b1, t), c2 = 1 - std::pow(b2, t);
    const double rho = rho_inf - 2 * t * std::pow(b2, t) / c2;
    for (size_t i = 0; i < p.size(); ++i) {
      am.update(p, g0, i);
      const double m_hat = am.m[i] / c1;
      if (rho > 5) {
        const double r =
            std::sqrt((rho - 4) * (rho - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho));
        p[i] -= lr * r * m_hat * std::sqrt(c2) / (std::sqrt(am.v[i]) + eps);
      } else {
        p[i] -= lr * m_hat;
      }
    }
  }
  return p;
}

}  // namespace

TEST(OptimComposed, Adadelta) {
  expect_near(run(maker<optim::Adadelta>({})), adadelta_reference(1.0, 0.9, 1e-6, 0, false));
  expect_near(run(maker<optim::Adadelta>(
                  {{"lr", 0.5}, {"rho", 0.8}, {"eps", 1e-4}, {"weight_decay", 0.1}})),
              adadelta_reference(0.5, 0.8, 1e-4, 0.1, false));
  expect_near(run(maker<optim::Adadelta>({{"maximize", 1}})),
              adadelta_reference(1.0, 0.9, 1e-6, 0, true));
}

TEST(OptimComposed, Adagrad) {
  expect_near(run(maker<optim::Adagrad>({})), adagrad_reference(1e-2, 0, 0, 0, 1e-10, false));
  expect_near(run(maker<optim::Adagrad>({{"lr", 0.1},
                                         {"lr_decay", 0.05},
                                         {"weight_decay", 0.2},
                                         {"initial_accumulator_value", 0.3},
                                         {"maximize", 1}})),
              adagrad_reference(0.1, 0.05, 0.2, 0.3, 1e-10, true));
}

TEST(OptimComposed, Adamax) {
  expect_near(run(maker<optim::Adamax>({})), adamax_reference(2e-3, 0.9, 0.999, 1e-8, 0, false));
  expect_near(
      run(maker<optim::Adamax>(
          {{"lr", 0.05}, {"beta1", 0.8}, {"beta2", 0.9}, {"weight_decay", 0.1}, {"maximize", 1}})),
      adamax_reference(0.05, 0.8, 0.9, 1e-8, 0.1, true));
}

TEST(OptimComposed, NAdam) {
  expect_near(run(maker<optim::NAdam>({})),
              nadam_reference(2e-3, 0.9, 0.999, 1e-8, 0, 4e-3, false, false));
  expect_near(run(maker<optim::NAdam>(
                  {{"lr", 0.05}, {"weight_decay", 0.1}, {"momentum_decay", 0.1}})),
              nadam_reference(0.05, 0.9, 0.999, 1e-8, 0.1, 0.1, false, false));
  expect_near(
      run(maker<optim::NAdam>(
          {{"lr", 0.05}, {"weight_decay", 0.1}, {"decoupled_weight_decay", 1}, {"maximize", 1}})),
      nadam_reference(0.05, 0.9, 0.999, 1e-8, 0.1, 4e-3, true, true));
}

TEST(OptimComposed, RAdamBothBranchesOfTheRectification) {
  // beta2 = 0.999: rho_t <= 5 for the first steps (the momentum branch); beta2 = 0.5: rho_inf
  // = 3, never above 5; beta2 = 0.9: rho_inf = 19, rectified from step 6 on.
  for (const double b2 : {0.999, 0.5, 0.9}) {
    SCOPED_TRACE("beta2 " + std::to_string(b2));
    expect_near(run(maker<optim::RAdam>({{"lr", 0.05}, {"beta2", b2}})),
                radam_reference(0.05, 0.9, b2, 1e-8, 0, false, false));
  }
  expect_near(run(maker<optim::RAdam>({{"lr", 0.05}, {"beta2", 0.9}, {"weight_decay", 0.1}})),
              radam_reference(0.05, 0.9, 0.9, 1e-8, 0.1, false, false));
  expect_near(run(maker<optim::RAdam>({{"lr", 0.05},
                                       {"beta2", 0.9},
                                       {"weight_decay", 0.1},
                                       {"decoupled_weight_decay", 1},
                                       {"maximize", 1}})),
              radam_reference(0.05, 0.9, 0.9, 1e-8, 0.1, true, true));
}

TEST(OptimComposed, StateRoundTripContinuesBitForBit) {
  auto check = [](auto make) {
    auto steps = [](optim::Optimizer& opt, ad::Variable& p, int from, int to) {
      for (int t = from; t < to; ++t) {
        const Vec now = p.data().to_vector<double>();
        p.set_grad(ad::Variable(Tensor::from_vector(grad_at(now, t), {2, 3})));
        opt.step();
      }
    };
    ad::Variable a(Tensor::from_vector(kStart, {2, 3}), true);
    auto reference = make({a});
    steps(*reference, a, 0, 6);
    ad::Variable b(Tensor::from_vector(kStart, {2, 3}), true);
    auto first = make({b});
    steps(*first, b, 0, 3);
    const optim::OptimizerState saved = first->state_dict();
    ad::Variable c(b.data().clone(), true);
    auto resumed = make({c});
    resumed->load_state_dict(saved);
    steps(*resumed, c, 3, 6);
    const Vec x = c.data().to_vector<double>(), y = a.data().to_vector<double>();
    EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(double)), 0) << reference->name();
  };
  check(maker<optim::Adadelta>({{"weight_decay", 0.1}}));
  check(maker<optim::Adagrad>({{"initial_accumulator_value", 0.1}, {"lr_decay", 0.01}}));
  check(maker<optim::Adamax>({}));
  check(maker<optim::NAdam>({}));  // mu_product is part of the state
  check(maker<optim::RAdam>({{"beta2", 0.9}}));
}

TEST(OptimComposed, NAdamKeepsMuProductAsANumber) {
  ad::Variable p(Tensor::from_vector(kStart, {2, 3}), true);
  optim::NAdam opt({p});
  for (int t = 0; t < 2; ++t) {
    p.set_grad(ad::Variable(ember::ones({2, 3}, ember::DType::Float64)));
    opt.step();
  }
  const double mu1 = 0.9 * (1 - 0.5 * std::pow(0.96, 4e-3)),
               mu2 = 0.9 * (1 - 0.5 * std::pow(0.96, 8e-3));
  EXPECT_DOUBLE_EQ(opt.state_dict().state.at(0).scalars.at("mu_product"), mu1 * mu2);
}

TEST(OptimComposed, OptionsAreChecked) {
  ad::Variable p(ember::zeros({2}), true);
  EXPECT_THROW(optim::Adadelta({p}, {{"rho", 1.5}}), ember::ValueError);
  EXPECT_THROW(optim::Adagrad({p}, {{"lr_decay", -1}}), ember::ValueError);
  EXPECT_THROW(optim::Adagrad({p}, {{"initial_accumulator_value", -1}}), ember::ValueError);
  EXPECT_THROW(optim::Adamax({p}, {{"beta2", 1.0}}), ember::ValueError);
  EXPECT_THROW(optim::NAdam({p}, {{"momentum_decay", -0.1}}), ember::ValueError);
  EXPECT_THROW(optim::NAdam({p}, {{"decoupled_weight_decay", 2}}), ember::ValueError);
  EXPECT_THROW(optim::RAdam({p}, {{"amsgrad", 1}}), ember::ValueError);
  try {
    optim::Adagrad({p}, {{"eps", -1}});
    ADD_FAILURE() << "no error";
  } catch (const ember::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("option 'eps' is -1"), std::string::npos) << e.what();
  }
}

TEST(OptimComposed, Float32ParametersAndGroups) {
  // Each group's own options; float32 math agrees with the float64 reference to float32 accuracy.
  ad::Variable p(Tensor::from_vector(kStart, {2, 3}).to(ember::DType::Float32), true);
  ad::Variable q(Tensor::from_vector(kStart, {2, 3}).to(ember::DType::Float32), true);
  optim::Adagrad opt({p}, {{"lr", 0.1}});
  opt.add_param_group({q}, {{"lr", 0.0}});
  for (int t = 0; t < kSteps; ++t) {
    for (ad::Variable* v : {&p, &q}) {
      const Vec now = v->data().to(ember::DType::Float64).to_vector<double>();
      v->set_grad(
          ad::Variable(Tensor::from_vector(grad_at(now, t), {2, 3}).to(ember::DType::Float32)));
    }
    opt.step();
  }
  const Vec got = p.data().to(ember::DType::Float64).to_vector<double>();
  const Vec want = adagrad_reference(0.1, 0, 0, 0, 1e-10, false);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5);
  EXPECT_EQ(q.data().to(ember::DType::Float64).to_vector<double>(), kStart);  // lr 0
}

// An optimizer of one's own, as the composed ones are made: a name, defaults and an
// OptimizerRule. Its options are checked as the rule says, its state holds the rule's buffers.
namespace {

class PlainDescent : public optim::Optimizer {
 public:
  explicit PlainDescent(std::vector<ad::Variable> params, const optim::Options& options = {},
                        bool with_update = true)
      : Optimizer("PlainDescent", {{"lr", 0.1}, {"decay", 0.5}, {"halve", 0.0}}, options,
                  {{"halve"}, {"decay"}, {"steps_seen"}, with_update ? update_fn : nullptr}) {
    add_param_group(std::move(params));
  }

 private:
  static void update_fn(const optim::Options& o, const ember::TensorList& params,
                        const ember::TensorList& grads,
                        const std::vector<optim::ParamState*>& states) {
    const double lr = o.at("lr") * (o.at("halve") != 0.0 ? 0.5 : 1.0);
    for (size_t i = 0; i < params.size(); ++i) {
      ember::sub_(params[i], ember::mul(grads[i], lr));
      states[i]->scalars["steps_seen"] += 1.0;
    }
  }
};

}  // namespace

TEST(OptimComposed, AnOptimizerMadeOfARule) {
  ad::Variable p(Tensor::from_vector(Vec{1.0, -2.0}, {2}), true);
  PlainDescent opt({p}, {{"halve", 1.0}});
  for (int t = 0; t < 2; ++t) {
    p.set_grad(ad::Variable(Tensor::from_vector(Vec{4.0, 8.0}, {2})));
    opt.step();
  }
  expect_near(p.data().to_vector<double>(), Vec{1.0 - 2 * 0.2, -2.0 - 2 * 0.4}, 1e-15);
  EXPECT_EQ(opt.state(p)->scalars.at("steps_seen"), 2.0);
  EXPECT_EQ(opt.state_dict().state.at(0).scalars.at("steps_seen"), 2.0);
  // lr >= 0 (no rule names it), "decay" a fraction, "halve" a flag.
  EXPECT_THROW(PlainDescent({p}, {{"lr", -1.0}}), ember::ValueError);
  EXPECT_THROW(PlainDescent({p}, {{"decay", 1.0}}), ember::ValueError);
  EXPECT_THROW(PlainDescent({p}, {{"halve", 0.5}}), ember::ValueError);
  EXPECT_NO_THROW(PlainDescent({p}, {{"decay", 0.0}, {"halve", 0.0}}));
  // A rule without an update, and no override of update(): step() says so.
  PlainDescent none({p}, {}, false);
  EXPECT_THROW(none.step(), ember::NotSupportedError);
}
