// Autocast: the dtype each class of op runs in, nested and disabled regions, the casts as
// recorded nodes, backward in the dtypes forward chose, and the state being per thread.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "ember/autodiff/autodiff.h"
#include "ember/ops/random.h"
#include "ember/ops/softmax_loss.h"
#include "expect_error.h"

namespace ad = ember::autodiff;
using ember::DeviceType;
using ember::DType;
using ember::Tensor;

namespace {
ad::Variable param(const ember::Shape& shape, DType dtype = DType::Float32) {
  return ad::Variable(ember::randn(shape).to(dtype), true);
}
}  // namespace

TEST(Autocast, MatrixProductsRunInTheLowDtype) {
  ad::Variable x = param({4, 8}), w = param({5, 8}), b = param({5}), m = param({8, 3});
  const ad::AutocastGuard low(DeviceType::CPU, DType::BFloat16);
  EXPECT_EQ(ad::linear(x, w, b).dtype(), DType::BFloat16);
  EXPECT_EQ(ad::matmul(x, m).dtype(), DType::BFloat16);
  ad::Variable img = param({2, 3, 6, 6}), k = param({4, 3, 3, 3});
  EXPECT_EQ(ad::conv2d(img, k).dtype(), DType::BFloat16);
}

TEST(Autocast, SoftmaxReductionsNormsAndLossesRunInFloat32) {
  ad::Variable x = param({4, 6}, DType::BFloat16);
  ad::Variable g = param({6}), beta = param({6});
  ad::Variable target(ember::randint(0, 6, {4}));
  const ad::AutocastGuard low(DeviceType::CPU, DType::BFloat16);
  EXPECT_EQ(ad::softmax(x, -1).dtype(), DType::Float32);
  EXPECT_EQ(ad::log_softmax(x, -1).dtype(), DType::Float32);
  EXPECT_EQ(ad::sum(x).dtype(), DType::Float32);
  EXPECT_EQ(ad::mean(x, {1}).dtype(), DType::Float32);
  EXPECT_EQ(ad::exp(x).dtype(), DType::Float32);
  EXPECT_EQ(ad::layer_norm(x, {6}, g, beta).dtype(), DType::Float32);
  EXPECT_EQ(ad::cross_entropy(x, target).dtype(), DType::Float32);
  EXPECT_EQ(ad::mse_loss(x, ad::Variable(ember::randn({4, 6}))).dtype(), DType::Float32);
}

TEST(Autocast, CrossEntropyReadsLowPrecisionLogitsAndReturnsAFloat32Loss) {
  ad::Variable x = param({5, 9}, DType::BFloat16);
  ad::Variable target(ember::randint(0, 9, {5}));
  ad::Variable loss;
  {
    const ad::AutocastGuard low(DeviceType::CPU, DType::BFloat16);
    loss = ad::cross_entropy(x, target);
  }
  EXPECT_EQ(loss.dtype(), DType::Float32);
  EXPECT_EQ(loss.graph_str().find("to_dtype"), std::string::npos) << loss.graph_str();
  // the value of the float32 path, unrounded
  const Tensor want = ember::cross_entropy(x.data().to(DType::Float32), target.data());
  EXPECT_EQ(loss.data().item<float>(), want.item<float>());
  loss.backward();
  EXPECT_EQ(x.grad().dtype(), DType::BFloat16);
}

TEST(Autocast, OtherOpsKeepOrPromoteAndCatTakesTheWidest) {
  ad::Variable low = param({3, 4}, DType::BFloat16), full = param({3, 4});
  const ad::AutocastGuard guard(DeviceType::CPU, DType::BFloat16);
  EXPECT_EQ(ad::relu(low).dtype(), DType::BFloat16);  // keep
  EXPECT_EQ(ad::tanh(full).dtype(), DType::Float32);  // keep
  EXPECT_EQ((low + full).dtype(), DType::Float32);    // the usual promotion
  EXPECT_EQ(ad::cat({low, full}, 0).dtype(), DType::Float32);
  EXPECT_EQ(ad::cat({low, low}, 0).dtype(), DType::BFloat16);
}

TEST(Autocast, Float64AndIntegersAreNeverCast) {
  ad::Variable a = param({3, 4}, DType::Float64), b = param({4, 2}, DType::Float64);
  const ad::AutocastGuard low(DeviceType::CPU, DType::BFloat16);
  EXPECT_EQ(ad::matmul(a, b).dtype(), DType::Float64);
  ad::Variable i(ember::randint(0, 5, {3, 4}, DType::Int64));
  EXPECT_EQ(ad::sum(i).dtype(), DType::Int64);
}

TEST(Autocast, NestedRegionsAndEnabledFalseInside) {
  ad::Variable x = param({4, 8}), w = param({5, 8});
  EXPECT_EQ(ad::linear(x, w).dtype(), DType::Float32);  // off by default
  {
    const ad::AutocastGuard outer(DeviceType::CPU, DType::BFloat16);
    EXPECT_EQ(ad::linear(x, w).dtype(), DType::BFloat16);
    {
      const ad::AutocastGuard inner(DeviceType::CPU, DType::Float16);
      EXPECT_EQ(ad::linear(x, w).dtype(), DType::Float16);
      {
        const ad::AutocastGuard off(DeviceType::CPU, DType::BFloat16, false);
        EXPECT_EQ(ad::linear(x, w).dtype(), DType::Float32);
        EXPECT_FALSE(ad::autocast_any_enabled());
      }
      EXPECT_EQ(ad::linear(x, w).dtype(), DType::Float16);
    }
    EXPECT_EQ(ad::linear(x, w).dtype(), DType::BFloat16);
    EXPECT_EQ(ad::autocast_state(DeviceType::CPU).dtype, DType::BFloat16);
  }
  EXPECT_FALSE(ad::autocast_state(DeviceType::CPU).enabled);
  EXPECT_FALSE(ad::autocast_any_enabled());
  EXPECT_EQ(ad::linear(x, w).dtype(), DType::Float32);
}

TEST(Autocast, OnlyTheDeviceTypeAskedFor) {
  ad::Variable x = param({4, 8}), w = param({5, 8});
  const ad::AutocastGuard cuda_only(DeviceType::CUDA, DType::Float16);
  EXPECT_EQ(ad::linear(x, w).dtype(), DType::Float32);  // a CPU op
}

TEST(Autocast, TheCastsAreRecordedNodesAndBackwardRunsInForwardsDtypes) {
  ad::Variable x = param({4, 8}), w = param({5, 8});
  ad::Variable y, loss;
  {
    const ad::AutocastGuard low(DeviceType::CPU, DType::BFloat16);
    y = ad::linear(x, w);  // bf16
    y.retain_grad();
    loss = ad::sum(y);  // float32
  }
  const std::string text = loss.graph_str();
  EXPECT_NE(text.find("bf16[4,8] = to_dtype("), std::string::npos) << text;
  EXPECT_NE(text.find("bf16[5,8] = to_dtype("), std::string::npos) << text;
  EXPECT_NE(text.find("f32[4,5] = to_dtype("), std::string::npos) << text;
  loss.backward();
  EXPECT_EQ(y.grad().dtype(), DType::BFloat16);  // the product's backward ran in bf16
  EXPECT_EQ(w.grad().dtype(), DType::Float32);   // converted back at the cast
  EXPECT_EQ(x.grad().dtype(), DType::Float32);

  // d sum(x w^T) / d w = column sums of x (each row of w sees every row of x), in bf16 products.
  const auto xv = x.data().to_vector<float>();
  const auto gw = w.grad().data().to_vector<float>();
  for (int j = 0; j < 5; ++j)
    for (int c = 0; c < 8; ++c) {
      double want = 0;
      for (int r = 0; r < 4; ++r) want += xv[size_t(r * 8 + c)];
      EXPECT_NEAR(gw[size_t(j * 8 + c)], want, 0.02 * (1 + std::fabs(want)));
    }
}

TEST(Autocast, BackwardInsideARegionIsNotCastAgain) {
  ad::Variable x = param({3, 4}), w = param({2, 4});
  const ad::AutocastGuard low(DeviceType::CPU, DType::BFloat16);
  ad::Variable loss = ad::sum(ad::tanh(ad::linear(x, w)));
  // create_graph runs the backward ops on Variables: they must keep forward's dtypes.
  ad::Variable gw = ad::grad({loss}, {w}, {}, true, true)[0];
  EXPECT_EQ(gw.dtype(), DType::Float32);
  EXPECT_NE(gw.graph_str().find("bf16"), std::string::npos);
  EXPECT_TRUE(ad::autocast_state(DeviceType::CPU).enabled);  // restored after backward
}

TEST(Autocast, TheStateIsPerThread) {
  const ad::AutocastGuard low(DeviceType::CPU, DType::BFloat16);
  bool other_enabled = true;
  DType other_dtype = DType::Float64;
  std::thread t([&] {
    ad::Variable x = param({2, 3}), w = param({4, 3});
    other_enabled = ad::autocast_any_enabled();
    other_dtype = ad::linear(x, w).dtype();
  });
  t.join();
  EXPECT_FALSE(other_enabled);
  EXPECT_EQ(other_dtype, DType::Float32);
}

TEST(Autocast, PolicyTable) {
  EXPECT_EQ(ad::autocast_policy("linear"), ad::CastPolicy::Lower);
  EXPECT_EQ(ad::autocast_policy("scaled_dot_product_attention"), ad::CastPolicy::Lower);
  EXPECT_EQ(ad::autocast_policy("softmax"), ad::CastPolicy::Float32);
  EXPECT_EQ(ad::autocast_policy("cat"), ad::CastPolicy::Widest);
  EXPECT_EQ(ad::autocast_policy("relu"), ad::CastPolicy::Keep);
  EXPECT_STREQ(ad::cast_policy_name(ad::CastPolicy::Float32), "float32");
  EXPECT_EQ(ad::autocast_policy("cross_entropy"), ad::CastPolicy::Float32Math);
  EXPECT_STREQ(ad::cast_policy_name(ad::CastPolicy::Float32Math), "float32_math");
}

TEST(Autocast, OnlyLowPrecisionDtypesAreAccepted) {
  const std::string message =
      error_of<ember::DTypeError>([] { ad::AutocastGuard bad(DeviceType::CPU, DType::Float32); });
  EXPECT_NE(message.find("autocast"), std::string::npos) << message;
  EXPECT_NE(message.find("float32"), std::string::npos) << message;
  EXPECT_NE(message.find("bfloat16 or float16"), std::string::npos) << message;
  EXPECT_FALSE(ad::autocast_any_enabled());
}
