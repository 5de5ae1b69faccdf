// The data-parallel reducer: the bucket plan, the gradient order the backward graph gives the
// observers, and a Reducer over a group of one rank (gloo, in this process) that must leave
// the gradients of one process as they are, reduce only with sync on, and log its buckets.
// Several ranks (real processes) are python-bindings' test_distributed.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "ember/autodiff/autodiff.h"
#include "ember/autodiff/reducer.h"
#include "ember/ops/creation.h"
#include "ember/tcp_store.h"

namespace ad = ember::autodiff;
using ember::DType;
using ember::Tensor;

namespace {

ad::TensorType f32(ember::Shape s) { return {s, DType::Float32, ember::Device()}; }

TEST(PlanBuckets, CutsAtTheCapsInGradientOrder) {
  // 4 bytes per element: sizes 400, 400, 800, 4000, 40 bytes
  std::vector<ad::TensorType> types{f32({100}), f32({100}), f32({200}), f32({1000}), f32({10})};
  auto plan = ad::plan_buckets({4, 3, 2, 1, 0}, types, /*cap=*/1000, /*first_cap=*/100);
  ASSERT_EQ(plan.size(), 4u);
  EXPECT_EQ(plan[0].params, (std::vector<int32_t>{4}));     // the first: small
  EXPECT_EQ(plan[1].params, (std::vector<int32_t>{3}));     // larger than the cap: alone
  EXPECT_EQ(plan[2].params, (std::vector<int32_t>{2}));     // 800 + 400 > 1000
  EXPECT_EQ(plan[3].params, (std::vector<int32_t>{1, 0}));  // 800 <= 1000
  EXPECT_EQ(plan[3].bytes, 800);
  // A change of dtype starts a bucket (a bucket is one flat tensor).
  types[1].dtype = DType::Float64;
  plan = ad::plan_buckets({0, 1}, types, 1 << 20, 1 << 20);
  EXPECT_EQ(plan.size(), 2u);
}

// Records what the observers are told.
struct Recorder : ad::BackwardObserver {
  std::vector<std::vector<const ad::VariableImpl*>> begun;
  int ended = 0;
  void backward_begins(const std::vector<const ad::VariableImpl*>& leaves) override {
    begun.push_back(leaves);
  }
  void backward_ends() override { ++ended; }
};

TEST(BackwardObserver, LeavesInTheOrderTheirGradientsAreComputed) {
  ad::Variable w1(Tensor::from_vector<float>({1, 2}, {2}), true);
  ad::Variable w2(Tensor::from_vector<float>({3, 4}, {2}), true);
  ad::Variable unused(Tensor::from_vector<float>({5}, {1}), true);
  Recorder rec;
  ad::add_backward_observer(&rec);
  // layer 1 then layer 2: backward reaches w2's gradient first.
  ad::Variable h = ad::tanh(w1 * 2.0);
  ad::sum(h * w2).backward();
  ad::remove_backward_observer(&rec);
  ASSERT_EQ(rec.begun.size(), 1u);
  EXPECT_EQ(rec.begun[0], (std::vector<const ad::VariableImpl*>{w2.impl(), w1.impl()}));
  EXPECT_EQ(rec.ended, 1);
  EXPECT_FALSE(unused.grad().defined());
}

class ReducerOfOne : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ember::distributed::backend_available("gloo"))
      GTEST_SKIP() << "this build has no gloo backend (Gloo was not found at build time)";
    auto store = std::make_shared<ember::distributed::TCPStore>("127.0.0.1", 0, true,
                                                                std::chrono::milliseconds(5000));
    group =
        ember::distributed::new_process_group("gloo", store, 0, 1, std::chrono::milliseconds(5000));
  }
  std::shared_ptr<ember::distributed::ProcessGroup> group;
};

TEST_F(ReducerOfOne, KeepsOneProcesssGradientsAndAccumulatesWithoutSync) {
  ad::Variable a(Tensor::from_vector<float>({1, 2, 3}, {3}), true);
  ad::Variable b(Tensor::from_vector<float>({4, 5}, {2}), true);
  ad::Variable unused(Tensor::from_vector<float>({6}, {1}), true);
  // Caps of 8 bytes: each parameter gets a bucket of its own.
  ad::Reducer reducer({a, b, unused}, group, 8, 8);
  auto loss = [&] { return ad::sum(a * a) + ad::sum(ad::tanh(b)); };
  loss().backward();
  EXPECT_EQ(a.grad().data().to_vector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_FALSE(unused.grad().defined());  // no rank had a gradient for it
  ASSERT_EQ(reducer.buckets().size(), 3u);
  std::vector<std::string> events;
  for (const auto& e : reducer.events()) events.push_back(e.what);
  EXPECT_EQ(events.front(), "backward begins");
  // The first bucket starts as soon as its gradient is in, before backward has ended.
  const auto starts = std::find(events.begin(), events.end(), "bucket 0 all_reduce starts");
  const auto ends = std::find(events.begin(), events.end(), "backward ends");
  EXPECT_LT(starts - events.begin(), ends - events.begin());

  // Without sync, gradients accumulate locally; the next synced backward reduces the sum.
  reducer.set_sync(false);
  loss().backward();
  reducer.set_sync(true);
  loss().backward();
  EXPECT_EQ(a.grad().data().to_vector<float>(), (std::vector<float>{6, 12, 18}));
}

TEST_F(ReducerOfOne, RefusesWhatIsNotATrainableLeaf) {
  ad::Variable frozen(Tensor::from_vector<float>({1}, {1}), false);
  EXPECT_THROW(ad::Reducer({frozen}, group), ember::ValueError);
  ad::Variable p(Tensor::from_vector<float>({1}, {1}), true);
  EXPECT_THROW(ad::Reducer({p, p}, group), ember::ValueError);
  EXPECT_THROW(ad::Reducer({p}, nullptr), ember::ValueError);
}

}  // namespace
