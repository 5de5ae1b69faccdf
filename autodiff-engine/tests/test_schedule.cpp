// Learning-rate schedules: their sequences against the closed forms and against torch's own.
#include <gtest/gtest.h>

#include <cmath>

#include "ember/autodiff/optim/composite_lr.h"
#include "ember/autodiff/optim/schedules.h"
#include "ember/autodiff/optim/sgd.h"
#include "ember/ops/creation.h"

namespace ad = ember::autodiff;
namespace optim = ember::autodiff::optim;
using Vec = std::vector<double>;

namespace {

constexpr double kPi = 3.14159265358979323846;

// An SGD with one group per lr, over parameters of no interest.
std::unique_ptr<optim::SGD> sgd(const Vec& lrs) {
  auto opt =
      std::make_unique<optim::SGD>(std::vector<ad::Variable>{ad::Variable(ember::zeros({1}), true)},
                                   optim::Options{{"lr", lrs[0]}});
  for (size_t i = 1; i < lrs.size(); ++i)
    opt->add_param_group({ad::Variable(ember::zeros({1}), true)}, {{"lr", lrs[i]}});
  return opt;
}

// Each group's lr after construction and after each of n steps.
std::vector<Vec> sequences(optim::LRScheduler& s, int n) {
  std::vector<Vec> lrs(s.get_last_lr().size());
  for (int i = 0; i <= n; ++i) {
    if (i > 0) s.step();
    for (size_t g = 0; g < lrs.size(); ++g) {
      lrs[g].push_back(s.get_last_lr()[g]);
      EXPECT_EQ(s.optimizer().lr(g), lrs[g].back());
    }
  }
  return lrs;
}

void expect_closed_form(const Vec& got, const std::function<double(int)>& want) {
  for (size_t e = 0; e < got.size(); ++e)
    EXPECT_NEAR(got[e], want(int(e)), 1e-12 * (1 + std::abs(want(int(e))))) << "epoch " << e;
}

// torch's numbers may differ from ours in the last bits where libm's cos does.
void expect_torch(const Vec& got, const Vec& torch) {
  ASSERT_EQ(got.size(), torch.size());
  for (size_t e = 0; e < got.size(); ++e) EXPECT_DOUBLE_EQ(got[e], torch[e]) << "epoch " << e;
}

}  // namespace

// The Vec literals below are torch.optim.lr_scheduler's get_last_lr() (torch 2.x), after
// construction and after each step, for the same arguments.

TEST(ScheduleStepLR, DecaysEveryStepSize) {
  auto opt = sgd({0.1});
  optim::StepLR s(*opt, 3, 0.5);
  const Vec lrs = sequences(s, 10)[0];
  expect_closed_form(lrs, [](int e) { return 0.1 * std::pow(0.5, e / 3); });
  expect_torch(lrs, Vec{0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125, 0.0125});
}

TEST(ScheduleMultiStepLR, DecaysAtMilestonesCountingRepeats) {
  auto opt = sgd({0.1});
  optim::MultiStepLR s(*opt, {2, 5, 5, 8}, 0.1);
  const Vec lrs = sequences(s, 10)[0];
  expect_closed_form(lrs, [](int e) {
    int passed = 0;
    for (int m : {2, 5, 5, 8}) passed += m <= e;
    return 0.1 * std::pow(0.1, passed);
  });
  expect_torch(lrs, Vec{0.1, 0.1, 0.010000000000000002, 0.010000000000000002, 0.010000000000000002,
                        0.00010000000000000005, 0.00010000000000000005, 0.00010000000000000005,
                        1.0000000000000006e-05, 1.0000000000000006e-05, 1.0000000000000006e-05});
}

TEST(ScheduleExponentialLR, DecaysEveryEpoch) {
  auto opt = sgd({0.1});
  optim::ExponentialLR s(*opt, 0.9);
  const Vec lrs = sequences(s, 6)[0];
  expect_closed_form(lrs, [](int e) { return 0.1 * std::pow(0.9, e); });
  expect_torch(lrs, Vec{0.1, 0.09000000000000001, 0.08100000000000002, 0.07290000000000002,
                        0.06561000000000002, 0.05904900000000002, 0.05314410000000002});
}

TEST(ScheduleCosineAnnealingLR, HalfCosineAndBackUp) {
  auto opt = sgd({0.1});
  optim::CosineAnnealingLR s(*opt, 10, 0.001);
  const Vec lrs = sequences(s, 25)[0];  // past t_max: through the bottom and up again
  expect_closed_form(lrs, [](int e) { return 0.001 + 0.099 * (1 + std::cos(kPi * e / 10)) / 2; });
  expect_torch(lrs, Vec{0.1,
                        0.09757729755661011,
                        0.0905463412215599,
                        0.07959536998847742,
                        0.0657963412215599,
                        0.0505,
                        0.03520365877844011,
                        0.02140463001152259,
                        0.010453658778440109,
                        0.0034227024433899004,
                        0.001,
                        0.0034227024433899004,
                        0.01045365877844014,
                        0.02140463001152267,
                        0.035203658778440255,
                        0.05050000000000022,
                        0.06579634122156018,
                        0.07959536998847777,
                        0.09054634122156031,
                        0.09757729755661054,
                        0.10000000000000045,
                        0.09757729755661054,
                        0.09054634122156033,
                        0.07959536998847778,
                        0.0657963412215602,
                        0.050500000000000225});
}

TEST(ScheduleLinearLR, WarmUpThenConstant) {
  auto opt = sgd({0.1});
  optim::LinearLR s(*opt, 0.1, 1.0, 4);
  const Vec lrs = sequences(s, 7)[0];
  expect_closed_form(lrs, [](int e) { return 0.1 * (0.1 + 0.9 * std::min(e, 4) / 4); });
  expect_torch(lrs, Vec{0.010000000000000002, 0.03250000000000001, 0.055000000000000014,
                        0.07750000000000003, 0.10000000000000003, 0.10000000000000003,
                        0.10000000000000003, 0.10000000000000003});
}

TEST(ScheduleSequentialLR, LinearWarmUpThenCosineOverTwoGroups) {
  auto opt = sgd({0.1, 0.01});
  auto warmup = std::make_shared<optim::LinearLR>(*opt, 0.1, 1.0, 5);
  auto cosine = std::make_shared<optim::CosineAnnealingLR>(*opt, 10);
  optim::SequentialLR s(*opt, {warmup, cosine}, {5});
  EXPECT_EQ(s.get_last_lr(), (Vec{0.1 * 0.1, 0.01 * 0.1}));
  const std::vector<Vec> lrs = sequences(s, 20);
  for (size_t g = 0; g < 2; ++g) {
    const double base = g == 0 ? 0.1 : 0.01;
    expect_closed_form(lrs[g], [base](int e) {
      return e < 5 ? base * (0.1 + 0.9 * e / 5) : base * (1 + std::cos(kPi * (e - 5) / 10)) / 2;
    });
  }
  expect_torch(lrs[0], Vec{0.010000000000000002,
                           0.028000000000000004,
                           0.046000000000000006,
                           0.064,
                           0.082,
                           0.1,
                           0.09755282581475769,
                           0.09045084971874738,
                           0.07938926261462367,
                           0.06545084971874739,
                           0.05000000000000001,
                           0.03454915028125264,
                           0.020610737385376353,
                           0.009549150281252635,
                           0.002447174185242324,
                           0.0,
                           0.0024471741852423235,
                           0.009549150281252666,
                           0.020610737385376433,
                           0.034549150281252786,
                           0.050000000000000225});
  expect_torch(lrs[1], Vec{0.001,
                           0.0028,
                           0.0046,
                           0.0063999999999999994,
                           0.008199999999999999,
                           0.01,
                           0.009755282581475769,
                           0.009045084971874737,
                           0.007938926261462366,
                           0.006545084971874737,
                           0.005,
                           0.003454915028125263,
                           0.0020610737385376348,
                           0.0009549150281252633,
                           0.00024471741852423234,
                           0.0,
                           0.00024471741852423234,
                           0.0009549150281252665,
                           0.002061073738537643,
                           0.003454915028125278,
                           0.005000000000000022});
}

TEST(ScheduleChainedScheduler, FactorsMultiply) {
  auto opt = sgd({0.1, 0.01});
  optim::ChainedScheduler s(*opt, {std::make_shared<optim::ExponentialLR>(*opt, 0.9),
                                   std::make_shared<optim::StepLR>(*opt, 3, 0.5)});
  const std::vector<Vec> lrs = sequences(s, 8);
  expect_closed_form(lrs[0], [](int e) { return 0.1 * std::pow(0.9, e) * std::pow(0.5, e / 3); });
  expect_torch(lrs[0], Vec{0.1, 0.09000000000000001, 0.08100000000000002, 0.03645000000000001,
                           0.03280500000000001, 0.02952450000000001, 0.013286025000000005,
                           0.011957422500000005, 0.010761680250000006});
  expect_torch(lrs[1], Vec{0.01, 0.009000000000000001, 0.008100000000000001, 0.0036450000000000007,
                           0.003280500000000001, 0.002952450000000001, 0.0013286025000000005,
                           0.0011957422500000006, 0.0010761680250000005});
}

TEST(ScheduleState, SaveAndRestoreContinueTheSameSequence) {
  auto make = [](optim::Optimizer& opt) {
    return std::make_unique<optim::SequentialLR>(
        opt,
        std::vector<std::shared_ptr<optim::LRScheduler>>{
            std::make_shared<optim::LinearLR>(opt, 0.1, 1.0, 5),
            std::make_shared<optim::CosineAnnealingLR>(opt, 10)},
        std::vector<int64_t>{5});
  };
  auto reference_opt = sgd({0.1, 0.01});
  auto reference = make(*reference_opt);
  const Vec want = sequences(*reference, 15)[1];

  auto opt = sgd({0.1, 0.01});
  auto s = make(*opt);
  sequences(*s, 7);
  const optim::SchedulerState saved = s->state_dict();
  const optim::OptimizerState saved_opt = opt->state_dict();
  ASSERT_EQ(saved.children.size(), 2u);

  // As in PyTorch: make the schedule first (it sets lr), then load both.
  auto opt2 = sgd({0.1, 0.01});
  auto s2 = make(*opt2);
  s2->load_state_dict(saved);
  opt2->load_state_dict(saved_opt);
  EXPECT_EQ(s2->last_epoch(), 7);
  Vec got = sequences(*s2, 8)[1];
  EXPECT_EQ(got, Vec(want.begin() + 7, want.end()));

  optim::StepLR other(*opt2, 2);
  EXPECT_THROW(other.load_state_dict(saved), ember::ValueError);  // no sub-schedules
}

TEST(ScheduleErrors, ArgumentsAreChecked) {
  auto opt = sgd({0.1});
  EXPECT_THROW(optim::StepLR(*opt, 0), ember::ValueError);
  EXPECT_THROW(optim::CosineAnnealingLR(*opt, 0), ember::ValueError);
  EXPECT_THROW(optim::LinearLR(*opt, 0.0), ember::ValueError);
  EXPECT_THROW(optim::LinearLR(*opt, 0.5, 1.5), ember::ValueError);
  auto a = std::make_shared<optim::ExponentialLR>(*opt, 0.9);
  EXPECT_THROW(optim::SequentialLR(*opt, {a}, {3}), ember::ValueError);
  auto other = sgd({0.1});
  EXPECT_THROW(optim::ChainedScheduler(*other, {a}), ember::ValueError);
  optim::StepLR s(*opt, 2);
  opt->add_param_group({ad::Variable(ember::zeros({1}), true)});
  EXPECT_THROW(s.step(), ember::ValueError);  // a group added after the schedule was made
}
