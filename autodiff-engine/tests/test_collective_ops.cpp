// The all-reduce op pair (ember/autodiff/collective.h) on a Gloo world of 2 ranks as threads,
// against sums computed here; and a compiled step with a Reducer (group of one) whose plan holds
// the pair: traced once, replayed, the same parameters as eager mode. Real processes:
// python-bindings' test_distributed_compile.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <thread>

#include "ember/autodiff/autodiff.h"
#include "ember/autodiff/collective.h"
#include "ember/autodiff/compile/compile.h"
#include "ember/autodiff/optim.h"
#include "ember/autodiff/reducer.h"
#include "ember/ops/creation.h"
#include "ember/tcp_store.h"

namespace ad = ember::autodiff;
namespace cc = ember::autodiff::compile;
namespace dist = ember::distributed;
using ad::Variable;
using ember::Tensor;

namespace {

using Group = std::shared_ptr<dist::ProcessGroup>;

// body(rank, group) on `world` threads; what each threw ("" when nothing).
std::vector<std::string> run_ranks(int world, const std::function<void(int, Group)>& body) {
  const dist::Milliseconds timeout{5000};
  auto server = std::make_shared<dist::TCPStore>("127.0.0.1", 0, true, timeout);
  std::vector<std::string> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        auto store =
            r == 0 ? server
                   : std::make_shared<dist::TCPStore>("127.0.0.1", server->port(), false, timeout);
        body(r, dist::new_process_group("gloo", store, r, world, timeout));
      } catch (const std::exception& e) {
        errors[size_t(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

class CollectiveOps : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!dist::backend_available("gloo"))
      GTEST_SKIP() << "this build has no gloo backend (Gloo was not found at build time)";
  }
};

Tensor f64(std::vector<double> v, ember::Shape shape) {
  return Tensor::from_vector<double>(v, shape);
}

TEST_F(CollectiveOps, StartThenWaitAveragesEveryPartOverTwoRanks) {
  // Parameters: p0 [2,2] (its gradient), p1 [3] (.grad before + gradient), p2 [2] (a gradient
  // on rank 1 only: rank 0 sends zeros), p3 [1] (no rank has one).
  std::vector<std::vector<double>> means(2);
  auto errors = run_ranks(2, [&](int rank, Group group) {
    const double r = rank + 1;  // 1, 2
    std::vector<Tensor> in{f64({1 * r, 2 * r, 3 * r, 4 * r}, {2, 2}), f64({10, 20, 30}, {3}),
                           f64({r, r, r}, {3})};
    std::vector<int64_t> parts{ad::collective::kGrad, ad::collective::kBoth,
                               rank == 1 ? ad::collective::kGrad : ad::collective::kNone,
                               ad::collective::kNone};
    if (rank == 1) in.push_back(f64({5, 7}, {2}));
    const ad::Attrs start_attrs{{"group", ad::collective::group_id(group)},
                                {"bucket", int64_t(0)},
                                {"parts", parts},
                                {"numels", std::vector<int64_t>{4, 3, 2, 1}},
                                {"dtype", int64_t(ember::DType::Float64)},
                                {"device", std::string("cpu")}};
    const ad::OpDef& start = ad::op_def("all_reduce_start");
    const ad::OpDef& wait = ad::op_def("all_reduce_wait");
    EXPECT_TRUE(start.collective && wait.collective && !start.in_place && !wait.in_place);
    Tensor flat = start.run(in, start_attrs)[0];
    EXPECT_EQ(flat.shape(), (ember::Shape{14}));  // 10 elements and 4 used-flags
    const ad::Attrs wait_attrs{{"bucket", int64_t(0)},
                               {"numels", std::vector<int64_t>{4, 3, 2, 1}},
                               {"ndims", std::vector<int64_t>{2, 1, 1, 1}},
                               {"dims", std::vector<int64_t>{2, 2, 3, 2, 1}}};
    std::vector<Tensor> out = wait.run({flat}, wait_attrs);
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(out[0].shape(), (ember::Shape{2, 2}));
    std::vector<double>& got = means[size_t(rank)];
    for (const Tensor& t : out)
      for (double v : t.to_vector<double>()) got.push_back(v);
    for (double v : flat.narrow(0, 10, 4).to_vector<double>()) got.push_back(v);
    // A wait without its start is an error naming the op.
    EXPECT_THROW(wait.run({flat}, wait_attrs), ember::ValueError);
  });
  EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
  // Averages: p0 (1r..4r) -> 1.5 * (1..4); p1 (10,20,30) + r -> 11.5, 21.5, 31.5; p2 (0 and 5,7)
  // -> 2.5, 3.5; p3 -> 0; the flags averaged: 1, 1, 0.5, 0.
  const std::vector<double> want{1.5, 3, 4.5, 6, 11.5, 21.5, 31.5, 2.5, 3.5, 0, 1, 1, 0.5, 0};
  EXPECT_EQ(means[0], want);
  EXPECT_EQ(means[1], want);
}

TEST_F(CollectiveOps, ShapeRuleChecksTheBucket) {
  const ad::OpDef& start = ad::op_def("all_reduce_start");
  const ad::Attrs attrs{{"group", int64_t(0)},
                        {"bucket", int64_t(0)},
                        {"parts", std::vector<int64_t>{ad::collective::kGrad}},
                        {"numels", std::vector<int64_t>{4}},
                        {"dtype", int64_t(ember::DType::Float32)},
                        {"device", std::string("cpu")}};
  ad::TensorType ok{{2, 2}, ember::DType::Float32, ember::Device()};
  EXPECT_EQ(start.infer({ok}, attrs)[0].shape, (ember::Shape{5}));
  ad::TensorType wrong{{3}, ember::DType::Float32, ember::Device()};
  EXPECT_THROW(start.infer({wrong}, attrs), ember::ShapeError);
  EXPECT_THROW(start.infer({ok, ok}, attrs), ember::ValueError);
}

// A small model trained with SGD momentum, eagerly or as a compiled step, under a Reducer over a
// group of one rank (averaging over one rank leaves the gradients as they are).
struct Model {
  Variable w1, w2, unused;
  std::unique_ptr<ad::optim::SGD> opt;
  explicit Model() {
    w1 = Variable(Tensor::from_vector<double>({0.1, -0.2, 0.3, 0.4, -0.5, 0.6}, {3, 2}), true);
    w2 = Variable(Tensor::from_vector<double>({0.7, -0.8, 0.9}, {1, 3}), true);
    unused = Variable(Tensor::from_vector<double>({1, 2}, {2}), true);
    opt = std::make_unique<ad::optim::SGD>(std::vector<Variable>{w1, w2, unused},
                                           ad::optim::Options{{"lr", 0.1}, {"momentum", 0.9}});
  }
  std::vector<Variable> step(const std::vector<Variable>& in) {
    opt->zero_grad();
    Variable h = ad::tanh(ad::matmul(in[0], ad::transpose(w1, 0, 1)));
    Variable loss = ad::mean(ad::matmul(h, ad::transpose(w2, 0, 1)) * in[1]);
    loss.backward();
    opt->step();
    return {loss};
  }
};

TEST_F(CollectiveOps, CompiledStepWithAReducerReplaysItsAllReduces) {
  auto errors = run_ranks(1, [&](int, Group group) {
    Model eager, compiled;
    // Caps of one parameter each: three buckets (w2's, w1's, unused's).
    ad::Reducer eager_reducer({eager.w1, eager.w2, eager.unused}, group, 8, 8);
    ad::Reducer reducer({compiled.w1, compiled.w2, compiled.unused}, group, 8, 8);
    cc::CompiledStep step([&](const std::vector<Variable>& in) { return compiled.step(in); });
    for (int s = 0; s < 5; ++s) {
      const Variable x(Tensor::from_vector<double>({1.0 * s, 2, -1, 0.5, 3, -2}, {3, 2}));
      const Variable y(Tensor::from_vector<double>({1, -1, 2}, {3, 1}));
      eager.step({x, y});
      step({x, y});
    }
    // The first call traces, the momentum buffers it made trace once more, then replays.
    EXPECT_EQ(step.traces(), 2) << step.explain();
    EXPECT_EQ(step.replays(), 3);
    EXPECT_EQ(compiled.w1.data().to_vector<double>(), eager.w1.data().to_vector<double>());
    EXPECT_EQ(compiled.w2.data().to_vector<double>(), eager.w2.data().to_vector<double>());
    EXPECT_FALSE(compiled.unused.grad().defined());
    // The plan: 3 starts, each before its wait, in bucket order; the first start comes before
    // w1's gradient is computed (it overlaps the rest of backward).
    const ad::Graph& g = *step.program().graph;
    std::vector<int64_t> starts, waits;
    for (int32_t k = 0; k < g.num_nodes(); ++k) {
      if (g.node(k).op->name == "all_reduce_start") starts.push_back(g.node(k).attrs.i("bucket"));
      if (g.node(k).op->name == "all_reduce_wait") waits.push_back(k);
    }
    EXPECT_EQ(starts, (std::vector<int64_t>{0, 1, 2}));
    EXPECT_EQ(waits.size(), 3u);
    const std::string explain = step.explain();
    EXPECT_NE(explain.find("== data parallel =="), std::string::npos) << explain;
    EXPECT_NE(explain.find("bucket 0: 1 parameter(s) (1 with a gradient here)"), std::string::npos)
        << explain;
    EXPECT_NE(explain.find("bucket 2: 1 parameter(s) (0 with a gradient here)"), std::string::npos)
        << explain;

    // A call under no_sync does not replay the plan with all-reduces: it traces its own.
    reducer.set_sync(false);
    const Variable x(Tensor::from_vector<double>({1, 2, -1, 0.5, 3, -2}, {3, 2}));
    const Variable y(Tensor::from_vector<double>({1, -1, 2}, {3, 1}));
    step({x, y});
    EXPECT_EQ(step.traces(), 3);
    EXPECT_EQ(step.explain().find("== data parallel =="), std::string::npos);
    reducer.set_sync(true);
    step({x, y});
    EXPECT_EQ(step.traces(), 3);  // the plan with all-reduces again
    EXPECT_TRUE(step.last_call_replayed());
  });
  EXPECT_EQ(errors, (std::vector<std::string>{""}));
}

}  // namespace
