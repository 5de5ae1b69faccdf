// The CUDA half: gradients of every op family on CUDA tensors, first and second order, checked
// against float64 central differences taken on the GPU itself (an independent check of the CUDA
// kernels' gradients, not a comparison with the CPU backend); eager training on the GPU; the
// backward graph keeping every value on the device. Skipped (visibly) without a GPU.
#include <gtest/gtest.h>

#include "gradcheck.h"

namespace ad = ember::autodiff;
using ad::Variable;
using ember::Device;
using ember::Tensor;

namespace {

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ember::cuda_is_available()) GTEST_SKIP() << "no CUDA device: the CUDA half is skipped";
  }
  const Device gpu{"cuda:0"};
  Tensor rnd(const ember::Shape& shape, uint64_t seed, double low = -1, double high = 1) {
    return gradcheck::random(shape, seed, low, high, gpu);
  }
  void both(const gradcheck::Fn& f, const std::vector<Tensor>& inputs) {
    gradcheck::check_grad(f, inputs);
    gradcheck::check_grad_grad(f, inputs);
  }
};

}  // namespace

TEST_F(Cuda, Elementwise) {
  both(
      [](const std::vector<Variable>& v) {
        return ad::tanh(v[0] * v[1]) + ad::exp(v[0]) / (v[1] * v[1] + 1.0);
      },
      {rnd({3, 4}, 1), rnd({4}, 2)});
  both(
      [](const std::vector<Variable>& v) {
        return ad::where(ad::gt(v[0], 0.0), ad::gelu(v[0]), ad::silu(v[1]));
      },
      {rnd({5}, 3), rnd({5}, 4)});
  both([](const std::vector<Variable>& v) { return ad::pow(ad::sigmoid(v[0]) + 0.5, v[1]); },
       {rnd({2, 3}, 5), rnd({2, 3}, 6)});
}

TEST_F(Cuda, Reductions) {
  both(
      [](const std::vector<Variable>& v) { return ad::logsumexp(v[0], {1}) * ad::mean(v[0], {1}); },
      {rnd({3, 5}, 7)});
  both(
      [](const std::vector<Variable>& v) {
        return ad::var(v[0], {0}) + ad::norm(v[0], 2.0, {1}).data().numel() * 0.0 +
               ad::sum(ad::amax(v[0], {0}));
      },
      {rnd({4, 3}, 8)});
}

TEST_F(Cuda, MovementAndIndexing) {
  const Tensor index = Tensor::from_vector<int64_t>({2, 0, 2, 1}, {4}).to(Device("cuda:0"));
  both(
      [&](const std::vector<Variable>& v) {
        Variable picked = ad::index_select(v[0], 0, Variable(index));  // [4, 3], row 2 twice
        return ad::cat({ad::transpose(picked, 0, 1), ad::flip(v[0], {0})}, 1) * 2.0;
      },
      {rnd({3, 3}, 9)});
  both(
      [&](const std::vector<Variable>& v) {
        return ad::embedding(v[0], Variable(index)) * ad::pad(v[1], {1, 1});
      },
      {rnd({3, 4}, 10), rnd({4, 2}, 11)});
}

TEST_F(Cuda, MatmulAndConvPool) {
  both([](const std::vector<Variable>& v) { return ad::matmul(v[0], v[1]); },
       {rnd({2, 3, 4}, 12), rnd({4, 5}, 13)});
  both(
      [](const std::vector<Variable>& v) {
        Variable y = ad::conv2d(v[0], v[1], v[2], 1, 1);  // [2, 3, 5, 5]
        return ad::max_pool2d(ad::tanh(y), 2) + ad::avg_pool2d(y, 2);
      },
      {rnd({2, 2, 5, 5}, 14), rnd({3, 2, 3, 3}, 15), rnd({3}, 16)});
}

TEST_F(Cuda, NormalizationAndLosses) {
  both(
      [](const std::vector<Variable>& v) {
        return ad::batch_norm(v[0], v[1], v[2], Variable(), Variable(), true);
      },
      {rnd({4, 3, 2, 2}, 17), rnd({3}, 18, 0.5, 1.5), rnd({3}, 19)});
  both([](const std::vector<Variable>& v) { return ad::layer_norm(v[0], {4}, v[1], v[2]); },
       {rnd({3, 4}, 20), rnd({4}, 21), rnd({4}, 22)});
  const Tensor target = Tensor::from_vector<int64_t>({1, 0, 3}, {3}).to(Device("cuda:0"));
  both(
      [&](const std::vector<Variable>& v) {
        return ad::cross_entropy(v[0], Variable(target)) + ad::mse_loss(ad::softmax(v[0], 1), v[1]);
      },
      {rnd({3, 4}, 23), rnd({3, 4}, 24)});
}

TEST_F(Cuda, EagerTrainingStaysOnTheDeviceAndLearns) {
  ember::manual_seed(0);
  Variable x(ember::randn({64, 8}, ember::DType::Float32, gpu));
  Variable y(ember::randn({64, 1}, ember::DType::Float32, gpu));
  Variable w(ember::mul(ember::randn({1, 8}, ember::DType::Float32, gpu), 0.1), true);
  Variable b(ember::zeros({1}, ember::DType::Float32, gpu), true);
  ad::optim::Adam adam({w, b}, {{"lr", 0.05}});
  float first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    Variable loss = ad::mse_loss(ad::linear(x, w, b), y);
    adam.zero_grad();
    loss.backward();
    EXPECT_EQ(w.grad().device(), gpu);
    adam.step();
    last = loss.data().item<float>();
    if (step == 0) first = last;
  }
  // The least-squares fit of pure noise: the loss falls below its start but not to zero.
  EXPECT_LT(last, first);
  const std::string text = ad::sum(ad::tanh(w)).graph_str();
  EXPECT_NE(text.find("f32[1,8]@cuda:0"), std::string::npos) << text;
}
