// Eager recording: backward, grad(), accumulation, hooks, retain_grad, no_grad, detach, the
// backward-graph cache, and the errors a user meets (with their messages).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>

#include "ember/autodiff/autodiff.h"
#include "ember/ops/creation.h"

namespace ad = ember::autodiff;
using ember::Tensor;

namespace {
Tensor vec(std::vector<float> v) {
  const int64_t n = int64_t(v.size());
  return Tensor::from_vector<float>(v, {n});
}
std::vector<float> values(const ad::Variable& v) { return v.data().to_vector<float>(); }

// Runs f and returns the message of the ember::Error it throws ("" when none).
template <class F> std::string error_of(F f) {
  try {
    f();
  } catch (const ember::Error& e) {
    return e.what();
  }
  return "";
}
bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}
}  // namespace

TEST(Eager, GradientsAccumulateOverBackwardCalls) {
  ad::Variable x(vec({1, 2}), true);
  ad::sum(x * x).backward();
  ad::sum(x * 3.0).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{2 + 3, 4 + 3}));
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
}

TEST(Eager, EachLeafGetsADenseGradientOfItsOwn) {
  ad::Variable a(vec({1, 2}), true), b(vec({3, 4}), true);
  ad::Variable seed(vec({1, 1}));
  (a + b).backward(seed);  // add hands the seed itself to both inputs
  EXPECT_FALSE(a.grad().data().shares_storage(b.grad().data()));
  EXPECT_FALSE(a.grad().data().shares_storage(seed.data()));
  ad::sum(a).backward();  // a broadcast view of ones
  EXPECT_TRUE(a.grad().data().is_contiguous());
  EXPECT_EQ(values(a.grad()), (std::vector<float>{2, 2}));
}

TEST(Eager, ASecondBackwardNeedsRetainGraph) {
  ad::Variable x(vec({0.5f}), true);
  ad::Variable y = ad::sum(ad::tanh(x));
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  const double t = std::tanh(0.5);
  EXPECT_NEAR(values(x.grad())[0], 2 * (1 - t * t), 1e-6);
  const std::string m = error_of([&] { y.backward(); });
  EXPECT_TRUE(contains(m, "a second backward through the same graph")) << m;
  EXPECT_TRUE(contains(m, "retain_graph=true")) << m;
}

TEST(Eager, ANonScalarNeedsAnOutputGradient) {
  ad::Variable x(vec({1, 2, 3}), true);
  ad::Variable y = x * x;
  const std::string m = error_of([&] { y.backward(); });
  EXPECT_TRUE(contains(m, "not a single element")) << m;
  EXPECT_TRUE(contains(m, "[3]")) << m;
  y.backward(ad::Variable(vec({1, 0, 2})));
  EXPECT_EQ(values(x.grad()), (std::vector<float>{2, 0, 12}));
  const std::string wrong = error_of([&] { (x * x).backward(ad::Variable(vec({1, 2}))); });
  EXPECT_TRUE(contains(wrong, "must have the same shape")) << wrong;
}

TEST(Eager, BackwardOnSomethingWithoutHistoryIsExplained) {
  ad::Variable x(vec({1}), false);
  const std::string m = error_of([&] { ad::sum(x).backward(); });
  EXPECT_TRUE(contains(m, "does not require grad")) << m;
  EXPECT_TRUE(contains(m, "requires_grad=true")) << m;
  ad::Variable w(vec({1}), true);
  ad::Variable y;
  {
    ad::NoGradGuard no_grad;
    y = ad::sum(w * w);
  }
  EXPECT_FALSE(y.requires_grad());
  EXPECT_THROW(y.backward(), ember::ValueError);
}

TEST(Eager, ChangingASavedTensorInPlaceIsCaught) {
  ad::Variable x(vec({1, 2}), false);
  ad::Variable w(vec({3, 4}), true);
  ad::Variable y = ad::sum(x * w);  // mul saves x for d/dw
  x.copy_(ad::Variable(vec({5, 6})));
  const std::string m = error_of([&] { y.backward(); });
  EXPECT_TRUE(contains(m, "saved for the gradient of mul")) << m;
  EXPECT_TRUE(contains(m, "version 0 then, 1 now")) << m;
  EXPECT_TRUE(contains(m, "clone()")) << m;
}

TEST(Eager, ChangingATensorNoRuleReadsIsFine) {
  ad::Variable x(vec({1, 2}), false);
  ad::Variable w(vec({3, 4}), true);
  ad::Variable y = ad::sum(x + w);  // add's rule reads neither input
  x.copy_(ad::Variable(vec({5, 6})));
  y.backward();
  EXPECT_EQ(values(w.grad()), (std::vector<float>{1, 1}));
}

TEST(Eager, InPlaceWritesToAVariableThatRequiresGradAreRefused) {
  ad::Variable w(vec({1}), true);
  const std::string m = error_of([&] { w.copy_(ad::Variable(vec({2}))); });
  EXPECT_TRUE(contains(m, "NoGradGuard")) << m;
  ad::NoGradGuard no_grad;
  w.copy_(ad::Variable(vec({2})));  // an optimizer step
  EXPECT_EQ(values(w), (std::vector<float>{2}));
}

TEST(Eager, HooksSeeAndReplaceGradients) {
  ad::Variable x(vec({1, 2}), true);
  ad::Variable h = x * 2.0;
  std::vector<float> seen;
  h.register_hook([&](const ad::Variable& g) {
    seen = values(g);
    return g * 10.0;  // the replacement flows on to x
  });
  ad::sum(h * h).backward();
  EXPECT_EQ(seen, (std::vector<float>{4, 8}));                 // d/dh = 2h
  EXPECT_EQ(values(x.grad()), (std::vector<float>{80, 160}));  // 10 * 2h * 2
}

TEST(Eager, RemovedHooksNoLongerRun) {
  ad::Variable x(vec({1, 2}), true);
  std::vector<std::string> ran;
  ad::HookHandle first = x.register_hook([&](const ad::Variable& g) {
    ran.push_back("first");
    return g * 2.0;
  });
  x.register_hook([&](const ad::Variable& g) {
    ran.push_back("second");
    return g * 3.0;  // sees the first hook's replacement: hooks run in registration order
  });
  ad::sum(x).backward();
  EXPECT_EQ(ran, (std::vector<std::string>{"first", "second"}));
  EXPECT_EQ(values(x.grad()), (std::vector<float>{6, 6}));

  first.remove();
  first.remove();  // a second remove does nothing
  ran.clear();
  x.zero_grad();
  ad::sum(x).backward();
  EXPECT_EQ(ran, (std::vector<std::string>{"second"}));
  EXPECT_EQ(values(x.grad()), (std::vector<float>{3, 3}));
}

TEST(Eager, AHookHandleDoesNotKeepItsVariableAlive) {
  ad::HookHandle handle;
  std::weak_ptr<ad::VariableImpl> alive;
  {
    ad::Variable x(vec({1}), true);
    handle = x.register_hook([](const ad::Variable& g) { return g; });
    alive = x.impl_ptr();
  }
  EXPECT_TRUE(alive.expired());
  handle.remove();  // the Variable is gone: nothing to do
}

TEST(Eager, RetainGradKeepsAnIntermediatesGradient) {
  ad::Variable x(vec({1, 2}), true);
  ad::Variable h = x * x;
  h.retain_grad();
  ad::Variable other = x * 3.0;  // no retain_grad: no .grad
  ad::sum(h * 3.0 + other).backward();
  EXPECT_EQ(values(h.grad()), (std::vector<float>{3, 3}));
  EXPECT_FALSE(other.grad().defined());
  EXPECT_EQ(values(x.grad()), (std::vector<float>{9, 15}));
}

TEST(Eager, CloneCopiesAndPassesTheGradient) {
  ad::Variable x(vec({1, 2}), true);
  ad::Variable y = ad::clone(x);
  EXPECT_FALSE(y.data().shares_storage(x.data()));
  ad::sum(y * y).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{2, 4}));
}

TEST(Eager, DetachStopsTheGradient) {
  ad::Variable x(vec({2}), true);
  ad::Variable y = ad::sum(x * x.detach());
  y.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{2}));  // d(x * c)/dx = c
}

TEST(Eager, GradReturnsInsteadOfAccumulating) {
  ad::Variable x(vec({1, 2}), true);
  ad::Variable unused(vec({1}), true);
  ad::Variable y = ad::sum(x * x);
  auto g = ad::grad({y}, {x, unused}, {}, true, false, /*allow_unused=*/true);
  EXPECT_EQ(values(g[0]), (std::vector<float>{2, 4}));
  EXPECT_FALSE(g[1].defined());
  EXPECT_FALSE(x.grad().defined());
  const std::string m = error_of([&] { ad::grad({y}, {unused}); });
  EXPECT_TRUE(contains(m, "allow_unused")) << m;
}

TEST(Eager, CreateGraphGivesDifferentiableGradients) {
  ad::Variable x(vec({0.5f, -1.0f}), true);
  ad::Variable y = ad::sum(x * x * x);
  y.backward({}, false, /*create_graph=*/true);
  ad::Variable g = x.grad();  // 3x^2, with history
  ASSERT_TRUE(g.requires_grad());
  x.zero_grad();
  ad::sum(g).backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{3.0f, -6.0f}));  // 6x
}

TEST(Eager, TheBackwardGraphIsBuiltOncePerStructure) {
  ad::Variable w(vec({1, 2}), true);
  const ad::BackwardCacheStats before = ad::backward_cache_stats();
  for (int step = 0; step < 5; ++step) {
    ad::Variable x(vec({float(step), 1}), false);
    ad::sum(ad::tanh(x * w)).backward();
  }
  ad::sum(ad::tanh(w) * w * w).backward();  // another structure, new to this thread
  const ad::BackwardCacheStats after = ad::backward_cache_stats();
  EXPECT_EQ(after.built - before.built, 2);
  EXPECT_EQ(after.reused - before.reused, 4);
}

TEST(Eager, PrintsTheRecordedForwardAndItsBackward) {
  ad::Variable x(vec({1, 2}), true);
  ad::Variable y = ad::sum(ad::tanh(x));
  const std::string text = y.graph_str();
  EXPECT_TRUE(contains(text, "param %0:f32[2]")) << text;
  EXPECT_TRUE(contains(text, "= tanh(%0)")) << text;
  EXPECT_TRUE(contains(text, "tanh_backward")) << text;
  EXPECT_TRUE(contains(text, "# grad of %0 via tanh")) << text;
  EXPECT_TRUE(contains(ad::Variable(vec({1}), false).graph_str(), "no recorded history"));
  const std::string of_vector = ad::tanh(x).graph_str();  // its gradient is an input
  EXPECT_TRUE(contains(of_vector, "input %2:f32[2]  grad_output")) << of_vector;
  const std::string dot = y.graph_dot();
  EXPECT_TRUE(contains(dot, "digraph ember {")) << dot;
  EXPECT_TRUE(contains(dot, "label=\"tanh_backward")) << dot;
}

TEST(Eager, OnlyLeavesCanChangeRequiresGrad) {
  ad::Variable x(vec({1}), true);
  ad::Variable y = x * 2.0;
  EXPECT_THROW(y.set_requires_grad(false), ember::ValueError);
  EXPECT_THROW(ad::Variable(Tensor::from_vector<int64_t>({1}, {1}), true), ember::DTypeError);
}

TEST(EagerDeathTest, EmberDebugLogsEachOpWithShapesDeviceAndTime) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process reads EMBER_DEBUG anew
  EXPECT_EXIT(
      {
        setenv("EMBER_DEBUG", "1", 1);
        ad::Variable x(vec({1, 2}), true);
        ad::sum(ad::tanh(x)).backward();  // eager ops, then the backward graph's nodes
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      R"(\[ember\] tanh\(f32\[2\]\) -> f32\[2\] on cpu: [0-9.e-]+ ms(.|\n)*)"
      R"(\[ember\] tanh_backward\(f32\[2\], f32\[2\]\) -> f32\[2\] on cpu)");
}

TEST(Executor, ProfilesEachNodeAndFreesAfterLastUse) {
  ad::Graph g;
  ad::Val x = g.input(ad::TensorType{{256, 256}, ember::DType::Float32, {}});
  ad::Val y = ad::tanh(ad::tanh(x) * 2.0);
  g.mark_output(y);
  std::vector<ad::NodeProfile> profile;
  ad::RunOptions options;
  options.profile = &profile;
  std::vector<Tensor> env{ember::ones({256, 256})};
  auto out = ad::run(g, env, {y.id}, options);
  ASSERT_EQ(profile.size(), 3u);
  EXPECT_EQ(profile[0].op, "tanh");
  EXPECT_EQ(profile[1].op, "mul_scalar");
  const int64_t bytes = 256 * 256 * 4;
  EXPECT_EQ(profile[0].bytes_allocated, bytes);
  EXPECT_EQ(profile[1].bytes_freed, bytes);  // tanh(x) dies after mul reads it
  EXPECT_NEAR(out[0].to_vector<float>()[0], std::tanh(2 * std::tanh(1.0)), 1e-6);
}

TEST(Executor, ChecksWhatIsBound) {
  ad::Graph g;
  ad::Val x = g.input(ad::TensorType{{2}, ember::DType::Float32, {}}, "x");
  g.mark_output(ad::tanh(x));
  EXPECT_THROW(ad::run(g, {ember::ones({3})}), ember::ShapeError);
  EXPECT_THROW(ad::run(g, std::vector<Tensor>{}), ember::ValueError);
}
