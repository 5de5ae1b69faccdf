// OneCycleLR and ReduceLROnPlateau: their lr (and momentum) sequences against the formulas of
// torch.optim.lr_scheduler, written out here step by step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ember/autodiff/optim/adam.h"
#include "ember/autodiff/optim/one_cycle_lr.h"
#include "ember/autodiff/optim/plateau.h"
#include "ember/autodiff/optim/sgd.h"
#include "ember/ops/creation.h"

namespace ad = ember::autodiff;
namespace optim = ember::autodiff::optim;
using Vec = std::vector<double>;

namespace {

constexpr double kPi = 3.14159265358979323846;

ad::Variable param() { return ad::Variable(ember::zeros({1}), true); }

double cos_anneal(double start, double end, double pct) {
  return end + (start - end) / 2 * (std::cos(kPi * pct) + 1);
}

void expect_near(double got, double want, const std::string& where) {
  EXPECT_NEAR(got, want, 1e-12 * (1 + std::abs(want))) << where;
}

}  // namespace

TEST(ScheduleOneCycleLR, TwoPhasesCosineWithMomentum) {
  optim::SGD opt({param()}, {{"lr", 0.5}, {"momentum", 0.9}});
  const int total = 20;
  optim::OneCycleLR s(opt, {1.0}, total, 0.3);  // up to step 5, down to step 19
  EXPECT_EQ(opt.param_groups()[0].options.at("initial_lr"), 1.0 / 25);
  for (int step = 0; step <= total; ++step) {
    if (step > 0) s.step();
    const double up_end = 0.3 * total - 1, initial = 1.0 / 25, min = initial / 1e4;
    double lr, momentum;
    if (step <= up_end) {
      lr = cos_anneal(initial, 1.0, step / up_end);
      momentum = cos_anneal(0.95, 0.85, step / up_end);
    } else {
      const double pct = std::min((step - up_end) / (total - 1 - up_end), 1.0);
      lr = cos_anneal(1.0, min, pct);
      momentum = cos_anneal(0.85, 0.95, pct);
    }
    expect_near(opt.lr(), lr, "lr at step " + std::to_string(step));
    expect_near(s.get_last_lr()[0], lr, "last lr at step " + std::to_string(step));
    expect_near(opt.param_groups()[0].options.at("momentum"), momentum,
                "momentum at step " + std::to_string(step));
  }
  EXPECT_THROW(s.step(), ember::ValueError);  // past total_steps
  EXPECT_EQ(s.last_epoch(), total);
}

TEST(ScheduleOneCycleLR, ThreePhasesLinearOverTwoGroupsOfAdam) {
  optim::Adam opt({param()});
  opt.add_param_group({param()});
  const int total = 30;
  optim::OneCycleLR s(opt, {0.1, 0.2}, total, 0.25, "linear", true, {0.8}, {0.9}, 10.0, 100.0,
                      true);
  auto linear = [](double start, double end, double pct) { return (end - start) * pct + start; };
  for (int step = 0; step < total; ++step) {
    if (step > 0) s.step();
    const double e1 = 0.25 * total - 1, e2 = 2 * 0.25 * total - 2, e3 = total - 1;
    for (size_t g = 0; g < 2; ++g) {
      const double max = g == 0 ? 0.1 : 0.2, initial = max / 10, min = initial / 100;
      double lr, beta1;
      if (step <= e1) {
        lr = linear(initial, max, step / e1);
        beta1 = linear(0.9, 0.8, step / e1);
      } else if (step <= e2) {
        lr = linear(max, initial, (step - e1) / (e2 - e1));
        beta1 = linear(0.8, 0.9, (step - e1) / (e2 - e1));
      } else {
        lr = linear(initial, min, (step - e2) / (e3 - e2));
        beta1 = 0.9;
      }
      const std::string where = "group " + std::to_string(g) + " step " + std::to_string(step);
      expect_near(opt.lr(g), lr, where);
      expect_near(opt.param_groups()[g].options.at("beta1"), beta1, where);
    }
  }
}

TEST(ScheduleOneCycleLR, ArgumentsAreChecked) {
  optim::SGD opt({param()}, {{"momentum", 0.9}});
  EXPECT_THROW(optim::OneCycleLR(opt, {0.1}, 0), ember::ValueError);
  EXPECT_THROW(optim::OneCycleLR(opt, {0.1}, 10, 1.5), ember::ValueError);
  EXPECT_THROW(optim::OneCycleLR(opt, {0.1}, 10, 0.3, "step"), ember::ValueError);
  EXPECT_THROW(optim::OneCycleLR(opt, {0.1, 0.2}, 10), ember::ValueError);
  optim::SGD plain({param()});  // SGD has a momentum option, so cycling it is fine
  EXPECT_NO_THROW(optim::OneCycleLR(plain, {0.1}, 10));
}

TEST(ScheduleReduceLROnPlateau, PatienceCooldownAndMinLr) {
  optim::SGD opt({param()}, {{"lr", 1.0}});
  opt.add_param_group({param()}, {{"lr", 0.5}});
  optim::ReduceLROnPlateau s(opt, "min", 0.5, /*patience=*/2, 1e-4, "rel", /*cooldown=*/1,
                             {0.3, 0.0});
  // The reference, written out: PyTorch's step() for these settings.
  double best = INFINITY, lr0 = 1.0, lr1 = 0.5;
  int bad = 0, cooldown = 0;
  const Vec metrics = {5, 4, 4, 4, 4, 3.9999, 4, 4, 4, 4, 4, 1, 1, 1, 1, 1};
  for (size_t e = 0; e < metrics.size(); ++e) {
    s.step(metrics[e]);
    if (metrics[e] < best * (1 - 1e-4)) {
      best = metrics[e];
      bad = 0;
    } else {
      ++bad;
    }
    if (cooldown > 0) {
      --cooldown;
      bad = 0;
    }
    if (bad > 2) {
      if (lr0 - std::max(lr0 * 0.5, 0.3) > 1e-8) lr0 = std::max(lr0 * 0.5, 0.3);
      if (lr1 - std::max(lr1 * 0.5, 0.0) > 1e-8) lr1 = std::max(lr1 * 0.5, 0.0);
      cooldown = 1;
      bad = 0;
    }
    EXPECT_EQ(opt.lr(0), lr0) << "epoch " << e;
    EXPECT_EQ(opt.lr(1), lr1) << "epoch " << e;
    EXPECT_EQ(s.get_last_lr(), (Vec{lr0, lr1}));
    EXPECT_EQ(s.num_bad_epochs(), bad);
  }
  EXPECT_EQ(opt.lr(0), 0.3);  // reached its floor
  EXPECT_LT(opt.lr(1), 0.1);
  EXPECT_EQ(s.last_epoch(), int64_t(metrics.size()));
}

TEST(ScheduleReduceLROnPlateau, MaxModeAbsoluteThresholdAndState) {
  optim::SGD opt({param()}, {{"lr", 0.1}});
  optim::ReduceLROnPlateau s(opt, "max", 0.1, 0, 0.5, "abs");
  s.step(1.0);  // best 1
  EXPECT_EQ(opt.lr(), 0.1);
  s.step(1.4);  // not better by more than 0.5: reduced at once (patience 0)
  EXPECT_EQ(opt.lr(), 0.1 * 0.1);
  const optim::PlateauState saved = s.state_dict();
  s.step(1.6);  // better than 1 + 0.5
  EXPECT_EQ(s.best(), 1.6);
  s.load_state_dict(saved);
  EXPECT_EQ(s.best(), 1.0);
  EXPECT_EQ(s.last_epoch(), 2);
  EXPECT_THROW(optim::ReduceLROnPlateau(opt, "up"), ember::ValueError);
  EXPECT_THROW(optim::ReduceLROnPlateau(opt, "min", 1.0), ember::ValueError);
  EXPECT_THROW(optim::ReduceLROnPlateau(opt, "min", 0.1, 10, 1e-4, "relative"), ember::ValueError);
  EXPECT_THROW(optim::ReduceLROnPlateau(opt, "min", 0.1, 10, 1e-4, "rel", 0, {0.0, 0.0}),
               ember::ValueError);
}
