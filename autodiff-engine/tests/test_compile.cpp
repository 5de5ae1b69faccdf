// Compiled steps (compile/compile.h): a traced and replayed training step equals the eager one bit
// for bit, guards trace again, state changed between calls is read, capture errors are loud.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ember/allocator.h"
#include "ember/autodiff/autodiff.h"
#include "ember/autodiff/compile/compile.h"
#include "ember/autodiff/compile/passes.h"
#include "ember/autodiff/optim.h"
#include "ember/ops/creation.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/random.h"
#include "expect_error.h"

namespace ad = ember::autodiff;
namespace cc = ember::autodiff::compile;
using ad::Variable;
using ember::Tensor;

namespace {

// Expects `call` to throw E with `part` in its message.
#define EXPECT_ERROR(call, E, part)                                 \
  do {                                                              \
    const std::string message = error_of<E>([&] { (void)(call); }); \
    EXPECT_NE(message.find(part), std::string::npos) << message;    \
  } while (0)

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), size_t(x.nbytes())) == 0;
}

// A two-layer MLP and its optimizer; two copies of it start from the same numbers.
struct Mlp {
  std::vector<Variable> params;
  std::unique_ptr<ad::optim::Optimizer> opt;

  Mlp(uint64_t seed, const std::string& optimizer) {
    ember::manual_seed(seed);
    for (const ember::Shape& s : std::vector<ember::Shape>{{16, 8}, {16}, {4, 16}, {4}})
      params.emplace_back(ember::randn(s) * 0.3, true);
    if (optimizer == "sgd")
      opt = std::make_unique<ad::optim::SGD>(params, ad::optim::Options{{"lr", 0.1},
                                                                        {"momentum", 0.9},
                                                                        {"weight_decay", 1e-3}});
    else opt = std::make_unique<ad::optim::AdamW>(params, ad::optim::Options{{"lr", 0.01}});
  }
  Variable loss(const Variable& x, const Variable& y) const {
    Variable h = ad::relu(ad::linear(x, params[0], params[1]));
    return ad::cross_entropy(ad::linear(h, params[2], params[3]), y);
  }
  std::vector<Variable> step(const std::vector<Variable>& in) {
    opt->zero_grad();
    Variable l = loss(in[0], in[1]);
    l.backward();
    opt->step();
    return {l};
  }
};

std::vector<Variable> batch(int64_t i, int64_t n = 6) {
  ember::manual_seed(100 + uint64_t(i));
  Tensor y = ember::randint(0, 4, {n});
  return {Variable(ember::randn({n, 8})), Variable(y)};
}

void expect_same_state(const Mlp& a, const Mlp& b) {
  for (size_t i = 0; i < a.params.size(); ++i) {
    EXPECT_TRUE(same_bits(a.params[i].data(), b.params[i].data())) << "param " << i;
    ASSERT_TRUE(b.params[i].grad().defined());
    EXPECT_TRUE(same_bits(a.params[i].grad().data(), b.params[i].grad().data())) << "grad " << i;
    const auto* sa = a.opt->state(a.params[i]);
    const auto* sb = b.opt->state(b.params[i]);
    ASSERT_TRUE(sa && sb);
    EXPECT_EQ(sa->step, sb->step);
    for (const auto& [name, buffer] : sa->buffers)
      EXPECT_TRUE(same_bits(buffer, sb->buffers.at(name))) << name << " of " << i;
  }
}

class CompileMlp : public ::testing::TestWithParam<const char*> {};

TEST_P(CompileMlp, TwentyStepsEqualEagerBitForBit) {
  Mlp eager(1, GetParam()), compiled(1, GetParam());
  cc::CompiledStep step([&](const std::vector<Variable>& in) { return compiled.step(in); });
  for (int64_t i = 0; i < 20; ++i) {
    const auto in = batch(i);
    const Variable want = eager.step(in)[0];
    const Variable got = step(in)[0];
    ASSERT_TRUE(same_bits(want.data(), got.data())) << "loss at step " << i;
    expect_same_state(eager, compiled);
  }
  // The first call traces; the optimizer's state made by it traces once more; then replays.
  EXPECT_EQ(step.traces(), 2);
  EXPECT_EQ(step.replays(), 18);
  EXPECT_NE(step.explain().find("== guards =="), std::string::npos);
  // The per-parameter updates replay as one grouped node (one multi-tensor call), bit for bit.
  EXPECT_NE(step.graph().find("_update_group("), std::string::npos);
  EXPECT_NE(step.explain().find("joined into one"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, CompileMlp, ::testing::Values("sgd", "adamw"));

TEST(CompileGradients, AreComputedInTheirGradTensorsWhoseVersionsMove) {
  // The backward writes each gradient into its .grad (no copy_ node, no copy at the step's end):
  // the .grad stays the same tensor, and its version moves at each call as a write's would.
  Mlp m(3, "sgd");
  cc::CompiledStep step([&](const std::vector<Variable>& in) { return m.step(in); });
  for (int64_t i = 0; i < 3; ++i) step(batch(i));
  const Tensor grad = m.params[0].grad().data();
  const int64_t version = grad.version();
  step(batch(3));
  EXPECT_TRUE(m.params[0].grad().data().shares_storage(grad));
  EXPECT_GT(grad.version(), version);
  EXPECT_NE(step.explain().find("4 copies into state dropped"), std::string::npos)
      << step.explain();
}

TEST(Compile, LearningRateAndStepCountAreReadLive) {
  Mlp eager(2, "adamw"), compiled(2, "adamw");
  cc::CompiledStep step([&](const std::vector<Variable>& in) { return compiled.step(in); });
  for (int64_t i = 0; i < 8; ++i) {
    const double lr = 0.01 / double(i + 1);  // a schedule, set between calls
    eager.opt->set_lr(lr);
    compiled.opt->set_lr(lr);
    const auto in = batch(i);
    ASSERT_TRUE(same_bits(eager.step(in)[0].data(), step(in)[0].data()));
  }
  expect_same_state(eager, compiled);
  EXPECT_EQ(step.traces(), 2);
}

TEST(Compile, StateChangedBetweenCallsIsRead) {
  Mlp eager(3, "sgd"), compiled(3, "sgd");
  cc::CompiledStep step([&](const std::vector<Variable>& in) { return compiled.step(in); });
  for (int64_t i = 0; i < 6; ++i) {
    if (i == 4) {  // as p.data.mul_(0.5): in place, outside the step
      for (Mlp* m : {&eager, &compiled}) {
        ad::NoGradGuard no_grad;
        m->params[0].copy_(Variable(m->params[0].data() * 0.5));
      }
    }
    const auto in = batch(i);
    ASSERT_TRUE(same_bits(eager.step(in)[0].data(), step(in)[0].data())) << "step " << i;
  }
  expect_same_state(eager, compiled);
  EXPECT_EQ(step.traces(), 2);  // an in-place change keeps the tensor: no new trace
}

TEST(Compile, ChangedInputShapeTracesAgainAndWarnsOnce) {
  Mlp m(4, "sgd");
  std::vector<std::string> warnings;
  cc::CompileOptions options;
  options.input_names = {"x", "y"};
  options.warn = [&](const std::string& w) { warnings.push_back(w); };
  cc::CompiledStep step([&](const std::vector<Variable>& in) { return m.step(in); }, options);
  step(batch(0));
  step(batch(1));
  step(batch(2, 5));  // another batch size
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("'input x' changed: f32[6,8] -> f32[5,8]"), std::string::npos)
      << warnings[0];
  step(batch(3, 6));  // back: the first plan is still cached
  step(batch(4, 5));
  EXPECT_EQ(step.traces(), 3);
  EXPECT_EQ(warnings.size(), 1u);
  EXPECT_EQ(step.plans(), 3u);  // the first step's plan, and one per batch size
}

TEST(Compile, GradModeIsAGuard) {
  auto w = std::make_shared<Variable>(ember::ones({3}), true);
  cc::CompiledStep step(
      [&](const std::vector<Variable>& in) { return std::vector<Variable>{ad::sum(in[0] * *w)}; });
  std::vector<std::string> warnings;
  Variable x(ember::ones({3}));
  step({x});
  {
    ad::NoGradGuard no_grad;
    step({x});
  }
  EXPECT_EQ(step.traces(), 2);
  EXPECT_NE(step.explain().find("'grad mode' changed: on -> off"), std::string::npos)
      << step.explain();
}

TEST(Compile, ReturnedTensorsAreFreshEveryCall) {
  Variable w(ember::ones({3}));
  cc::CompiledStep step([&](const std::vector<Variable>& in) {
    return std::vector<Variable>{in[0] + w, w};
  });
  Variable x(ember::ones({3}));
  const auto a = step({x});
  const auto b = step({x});
  const auto c = step({x});
  EXPECT_FALSE(b[0].data().shares_storage(c[0].data()));
  EXPECT_FALSE(c[1].data().shares_storage(w.data()));  // state is copied out, never handed out
  EXPECT_EQ(c[0].data().to_vector<float>(), std::vector<float>({2, 2, 2}));
}

TEST(Compile, ATensorWrittenBehindTheTracersBackIsAnError) {
  Variable w(ember::ones({3}));
  cc::CompiledStep step([&](const std::vector<Variable>& in) {
    Variable y = in[0] * 2.0;
    y.data().fill_(3.0);  // a core-runtime call that is not an op
    return std::vector<Variable>{y + w};
  });
  EXPECT_ERROR(step({Variable(ember::ones({3}))}), cc::CaptureError, "written in place");
}

TEST(Compile, UnsupportedOptimizerIsACaptureError) {
  Variable w(ember::ones({3}), true);
  ad::optim::RMSprop opt({w});
  cc::CompiledStep step([&](const std::vector<Variable>& in) {
    opt.zero_grad();
    ad::sum(in[0] * w).backward();
    opt.step();
    return std::vector<Variable>{};
  });
  EXPECT_ERROR(step({Variable(ember::ones({3}))}), cc::CaptureError, "RMSprop");
}

TEST(Compile, GradientAccumulationEqualsOneStepOnTheWholeBatch) {
  // k = 3 micro-batches of 4 with the mean loss scaled by 1/k, one update, against one step on
  // the 12 rows: the same update to float rounding (the sums are grouped differently).
  Mlp whole(5, "sgd"), micro(5, "sgd");
  cc::CompiledStep step([&](const std::vector<Variable>& in) {
    micro.opt->zero_grad();
    Variable total;
    for (int64_t k = 0; k < 3; ++k) {
      Variable xk = ad::slice(in[0], 0, 4 * k, 4 * k + 4);
      Variable yk = ad::slice(in[1], 0, 4 * k, 4 * k + 4);
      Variable l = micro.loss(xk, yk) * (1.0 / 3.0);
      l.backward();
      total = total.defined() ? total + l : l;
    }
    micro.opt->step();
    return std::vector<Variable>{total};
  });
  for (int64_t i = 0; i < 5; ++i) {
    const auto in = batch(i, 12);
    const float want = whole.step(in)[0].data().item<float>();
    const float got = step(in)[0].data().item<float>();
    EXPECT_NEAR(want, got, 1e-5);
  }
  for (size_t i = 0; i < whole.params.size(); ++i) {
    const auto a = whole.params[i].data().to_vector<float>();
    const auto b = micro.params[i].data().to_vector<float>();
    for (size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], 1e-5);
  }
  EXPECT_GE(step.replays(), 3);
}

TEST(Compile, MemoryBudgetIsMetByRecomputingOrRefusedWithTheSmallest) {
  Mlp probe(7, "sgd");
  cc::CompileOptions tight;
  tight.memory_budget = 64;
  cc::CompiledStep too_small([&](const std::vector<Variable>& in) { return probe.step(in); },
                             tight);
  int64_t smallest = 0;
  try {
    too_small(batch(0));
    ADD_FAILURE() << "a 64-byte budget was met";
  } catch (const cc::BudgetError& e) {
    smallest = e.smallest();
  }
  ASSERT_GT(smallest, 64);
  // At the smallest budget the recomputed step still equals eager mode bit for bit: the same
  // kernels on the same values, some of them twice.
  Mlp eager(8, "sgd"), compiled(8, "sgd");
  cc::CompileOptions fits;
  fits.memory_budget = smallest;
  cc::CompiledStep step([&](const std::vector<Variable>& in) { return compiled.step(in); }, fits);
  for (int64_t i = 0; i < 6; ++i) {
    const auto in = batch(i);
    ASSERT_TRUE(same_bits(eager.step(in)[0].data(), step(in)[0].data())) << "step " << i;
  }
  expect_same_state(eager, compiled);
  EXPECT_NE(step.explain().find("== rematerialisation =="), std::string::npos);
}

TEST(Compile, AllocatorCountersDoNotMoveAcrossReplays) {
  Mlp m(6, "adamw");
  cc::CompiledStep step([&](const std::vector<Variable>& in) { return m.step(in); });
  const auto in = batch(0);
  for (int i = 0; i < 3; ++i) step(in);  // trace, trace (state made), replay
  std::vector<Variable> keep;
  const ember::MemoryStats before = ember::memory_stats(ember::Device());
  for (int i = 0; i < 100; ++i) keep.push_back(step(in)[0]);
  const ember::MemoryStats after = ember::memory_stats(ember::Device());
  // Only the returned losses: one allocation of one float each.
  EXPECT_EQ(after.allocations - before.allocations, 100);
  EXPECT_EQ(after.system_allocations, before.system_allocations);
  EXPECT_LE(after.in_use - before.in_use, 100 * 512);
}

// The number after `before` in `text` (0 when absent).
int64_t number_after(const std::string& text, const std::string& before) {
  const size_t at = text.find(before);
  return at == std::string::npos ? 0 : std::stoll(text.substr(at + before.size()));
}

TEST(Compile, PlansOfAStepShareOneArena) {
  Mlp m(7, "sgd");
  cc::CompiledStep step([&](const std::vector<Variable>& in) { return m.step(in); });
  for (int i = 0; i < 3; ++i) step(batch(i));  // trace, trace (momentum made), replay
  const int64_t small_arena = number_after(step.explain(), "arena of ");
  const int64_t before = ember::memory_stats(ember::Device()).in_use;
  step(batch(3, 512));  // a larger batch: a third plan with a larger arena
  const int64_t large_arena = number_after(step.explain(), "arena of ");
  step(batch(4));  // the small plan again, in the large arena
  const int64_t after = ember::memory_stats(ember::Device()).in_use;
  ASSERT_EQ(step.plans(), 3u);
  ASSERT_GT(small_arena, 0);
  ASSERT_GT(large_arena, 4 * small_arena);
  // One arena, grown to the largest plan's: the small plans keep none of their own.
  EXPECT_NE(step.explain().find("shared by all plans (they never replay at once): " +
                                std::to_string(large_arena)),
            std::string::npos)
      << step.explain();
  EXPECT_LE(after - before, large_arena - small_arena + 4096);
}

}  // namespace
