// Optimizer state: save, load into a new optimizer, continue — bit for bit the uninterrupted run.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "ember/autodiff/optim/adam.h"
#include "ember/autodiff/optim/rmsprop.h"
#include "ember/autodiff/optim/sgd.h"
#include "ember/ops/creation.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/random.h"

namespace ad = ember::autodiff;
namespace optim = ember::autodiff::optim;
using ember::Tensor;

namespace {

using Make = std::function<std::unique_ptr<optim::Optimizer>(const std::vector<ad::Variable>&)>;

// Two groups (the second with its own lr) over float32 parameters of three shapes.
template <class Opt> Make maker(optim::Options options) {
  return [options](const std::vector<ad::Variable>& p) -> std::unique_ptr<optim::Optimizer> {
    auto opt = std::make_unique<Opt>(std::vector<ad::Variable>{p[0], p[1]}, options);
    opt->add_param_group({p[2]}, {{"lr", 0.003}});
    return opt;
  };
}

std::vector<ad::Variable> params(uint64_t seed) {
  ember::Generator gen(seed);
  std::vector<ad::Variable> p;
  for (const ember::Shape& s : {ember::Shape{4, 3}, ember::Shape{3}, ember::Shape{2, 2, 2}})
    p.emplace_back(ember::randn(s, ember::DType::Float32, {}, &gen), true);
  return p;
}

// Step t: grads drawn from a generator seeded by t (the same in every run), p[1] without a grad
// at the first step so that its state starts later.
void steps(optim::Optimizer& opt, const std::vector<ad::Variable>& p, int from, int to) {
  for (int t = from; t < to; ++t) {
    ember::Generator gen(1000 + t);
    for (size_t i = 0; i < p.size(); ++i) {
      Tensor g = ember::randn(p[i].shape(), ember::DType::Float32, {}, &gen);
      p[i].set_grad(t == 0 && i == 1 ? ad::Variable() : ad::Variable(ember::add(g, p[i].data())));
    }
    opt.step();
  }
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  return x.shape() == y.shape() && x.dtype() == y.dtype() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), size_t(x.nbytes())) == 0;
}

void check_round_trip(const Make& make) {
  // The reference: eight steps in one run, with an lr change after the third.
  std::vector<ad::Variable> a = params(7);
  auto reference = make(a);
  steps(*reference, a, 0, 3);
  reference->set_lr(0.02, 0);
  steps(*reference, a, 3, 8);

  // Three steps, the same lr change (options are part of the state), then save parameters and
  // state. Steps after saving must not change what was saved.
  std::vector<ad::Variable> b = params(7);
  auto first = make(b);
  steps(*first, b, 0, 3);
  first->set_lr(0.02, 0);
  const optim::OptimizerState saved = first->state_dict();
  std::vector<Tensor> values;
  for (const ad::Variable& v : b) values.push_back(v.data().clone());
  steps(*first, b, 3, 5);

  // A new optimizer over new parameters, loaded, continues from step 3.
  std::vector<ad::Variable> c = params(99);
  for (size_t i = 0; i < c.size(); ++i) Tensor(c[i].data()).copy_(values[i]);
  auto resumed = make(c);
  resumed->load_state_dict(saved);
  EXPECT_EQ(resumed->lr(0), 0.02);
  EXPECT_EQ(resumed->lr(1), 0.003);
  steps(*resumed, c, 3, 8);

  for (size_t i = 0; i < c.size(); ++i)
    EXPECT_TRUE(same_bytes(c[i].data(), a[i].data())) << resumed->name() << " parameter " << i;
  const optim::OptimizerState x = resumed->state_dict(), y = reference->state_dict();
  ASSERT_EQ(x.state.size(), y.state.size());
  for (const auto& [index, s] : y.state) {
    EXPECT_EQ(x.state.at(index).step, s.step);
    ASSERT_EQ(x.state.at(index).buffers.size(), s.buffers.size());
    for (const auto& [name, buffer] : s.buffers)
      EXPECT_TRUE(same_bytes(x.state.at(index).buffers.at(name), buffer)) << name;
  }
}

}  // namespace

TEST(OptimState, SgdRoundTripIsBitExact) {
  check_round_trip(maker<optim::SGD>({{"lr", 0.05}, {"momentum", 0.9}, {"nesterov", 1}}));
}
TEST(OptimState, AdamRoundTripIsBitExact) {
  check_round_trip(maker<optim::Adam>({{"lr", 0.01}, {"weight_decay", 0.01}}));
}
TEST(OptimState, AdamWRoundTripIsBitExact) { check_round_trip(maker<optim::AdamW>({})); }
TEST(OptimState, RmspropRoundTripIsBitExact) {
  check_round_trip(maker<optim::RMSprop>({{"momentum", 0.5}, {"centered", 1}}));
}

TEST(OptimState, StateDictNamesItsBuffersByParameterNumber) {
  std::vector<ad::Variable> p = params(3);
  auto opt = maker<optim::Adam>({})(p);
  steps(*opt, p, 0, 2);
  const optim::OptimizerState s = opt->state_dict();
  ASSERT_EQ(s.param_groups.size(), 2u);
  EXPECT_EQ(s.param_groups[0].params, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(s.param_groups[1].params, (std::vector<int64_t>{2}));
  EXPECT_EQ(s.param_groups[1].options.at("lr"), 0.003);
  EXPECT_EQ(s.state.at(0).step, 2);
  EXPECT_EQ(s.state.at(1).step, 1);  // no grad at the first step
  EXPECT_EQ(s.state.at(2).buffers.at("exp_avg_sq").shape(), (ember::Shape{2, 2, 2}));
  EXPECT_FALSE(
      s.state.at(0).buffers.at("exp_avg").shares_storage(opt->state(p[0])->buffers.at("exp_avg")));
}

TEST(OptimState, LoadChecksGroupsParametersShapesAndNames) {
  std::vector<ad::Variable> p = params(3);
  auto opt = maker<optim::SGD>({{"momentum", 0.9}})(p);
  steps(*opt, p, 0, 2);
  const optim::OptimizerState saved = opt->state_dict();

  auto expect_error = [&](optim::OptimizerState s, const std::string& part) {
    std::vector<ad::Variable> q = params(3);
    auto other = maker<optim::SGD>({{"momentum", 0.9}})(q);
    try {
      other->load_state_dict(s);
      ADD_FAILURE() << "no error for " << part;
    } catch (const ember::Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
      EXPECT_EQ(other->state(q[0]), nullptr);  // nothing was loaded
    }
  };
  optim::OptimizerState s = saved;
  s.param_groups.pop_back();
  expect_error(s, "has 1 parameter groups but this optimizer has 2");
  s = saved;
  s.param_groups[0].params.pop_back();
  expect_error(s, "group 0 has 2 parameters but the saved group has 1");
  s = saved;
  s.state[0].buffers["momentum_buffer"] = ember::zeros({3, 4});
  expect_error(s, "state 'momentum_buffer' of parameter 0 is [3, 4] float32 cpu");
  s = saved;
  s.state[0].buffers["exp_avg"] = ember::zeros({4, 3});
  expect_error(s, "'exp_avg', which SGD does not keep");
  s = saved;
  s.param_groups[1].options["lr"] = -1;
  expect_error(s, "'lr' is -1");

  std::vector<ad::Variable> q = params(3);
  optim::SGD single({q[0]});
  EXPECT_THROW(single.load_state_dict(saved), ember::ValueError);
}
