// train_step.cpp — times one eager training step of the seeds' small CNN from C++:
//   conv 1->16 3x3, batch-norm, relu, 2x2 max-pool, conv 16->32 3x3, batch-norm, relu,
//   2x2 max-pool, linear 800->10, cross-entropy, SGD (lr 0.01, momentum 0.9)
// on [batch, 1, 28, 28] inputs. A step is: forward (recorded), backward (the cached backward
// graph after the first step), the fused SGD update. Prints one JSON line:
//   {"ms": median, "iqr": relative spread, "peak_bytes": ..., "built": ..., "reused": ...}
//
//   ember_train_bench --device cpu --batch 32 [--steps 30] [--warmup 5]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ember/autodiff/autodiff.h"
#include "ember/ember.h"

namespace ad = ember::autodiff;
using ad::Variable;

namespace {

struct Model {
  Variable conv1_w, conv1_b, bn1_w, bn1_b, conv2_w, conv2_b, bn2_w, bn2_b, fc_w, fc_b;
  ember::Tensor bn1_mean, bn1_var, bn2_mean, bn2_var;  // running statistics (buffers)

  std::vector<Variable> parameters() const {
    return {conv1_w, conv1_b, bn1_w, bn1_b, conv2_w, conv2_b, bn2_w, bn2_b, fc_w, fc_b};
  }
};

// A parameter of `shape` drawn uniformly from +-1/sqrt(fan_in), as PyTorch's default init.
Variable param(const ember::Shape& shape, int64_t fan_in, ember::Device device) {
  const double bound = 1.0 / std::sqrt(double(fan_in));
  return Variable(ember::uniform(shape, -bound, bound, ember::DType::Float32, device), true);
}

Model make_model(ember::Device device) {
  Model m;
  m.conv1_w = param({16, 1, 3, 3}, 9, device);
  m.conv1_b = param({16}, 9, device);
  m.bn1_w = Variable(ember::ones({16}, ember::DType::Float32, device), true);
  m.bn1_b = Variable(ember::zeros({16}, ember::DType::Float32, device), true);
  m.conv2_w = param({32, 16, 3, 3}, 144, device);
  m.conv2_b = param({32}, 144, device);
  m.bn2_w = Variable(ember::ones({32}, ember::DType::Float32, device), true);
  m.bn2_b = Variable(ember::zeros({32}, ember::DType::Float32, device), true);
  m.fc_w = param({10, 800}, 800, device);
  m.fc_b = param({10}, 800, device);
  m.bn1_mean = ember::zeros({16}, ember::DType::Float32, device);
  m.bn1_var = ember::ones({16}, ember::DType::Float32, device);
  m.bn2_mean = ember::zeros({32}, ember::DType::Float32, device);
  m.bn2_var = ember::ones({32}, ember::DType::Float32, device);
  return m;
}

// x: [B, 1, 28, 28] -> logits [B, 10]
Variable forward(const Model& m, const Variable& x) {
  Variable h = ad::conv2d(x, m.conv1_w, m.conv1_b);  // [B, 16, 26, 26]
  h = ad::batch_norm(h, m.bn1_w, m.bn1_b, Variable(m.bn1_mean), Variable(m.bn1_var), true);
  h = ad::max_pool2d(ad::relu(h), 2);       // [B, 16, 13, 13]
  h = ad::conv2d(h, m.conv2_w, m.conv2_b);  // [B, 32, 11, 11]
  h = ad::batch_norm(h, m.bn2_w, m.bn2_b, Variable(m.bn2_mean), Variable(m.bn2_var), true);
  h = ad::max_pool2d(ad::relu(h), 2);                    // [B, 32, 5, 5]
  return ad::linear(ad::flatten(h, 1), m.fc_w, m.fc_b);  // [B, 10]
}

struct Sgd {
  std::vector<Variable> params;
  ember::TensorList buffers;
  bool first = true;

  void step() {
    ember::TensorList p, g;
    for (const Variable& v : params) {
      p.push_back(v.data());
      g.push_back(v.grad().data());
    }
    if (buffers.empty())
      for (const ember::Tensor& t : p) buffers.push_back(ember::zeros_like(t));
    ember::sgd_step(p, g, buffers, 0.01, 0.9, 0.0, false, 0.0, first);
    first = false;
    for (const Variable& v : params) v.zero_grad();
  }
};

const char* arg(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const ember::Device device(std::string(arg(argc, argv, "--device", "cpu")));
  const int64_t batch = std::stoll(arg(argc, argv, "--batch", "32"));
  const int steps = std::stoi(arg(argc, argv, "--steps", "30"));
  const int warmup = std::stoi(arg(argc, argv, "--warmup", "5"));

  ember::manual_seed(0);
  Model model = make_model(device);
  Sgd sgd{model.parameters()};
  const Variable x(ember::randn({batch, 1, 28, 28}, ember::DType::Float32, device));
  const Variable target(ember::randint(0, 10, {batch}, ember::DType::Int64, device));

  auto step = [&] {
    Variable loss = ad::cross_entropy(forward(model, x), target);
    loss.backward();
    sgd.step();
  };
  for (int i = 0; i < warmup; ++i) step();
  if (device.type == ember::DeviceType::CUDA) ember::synchronize(device);
  ember::reset_peak_memory(device);
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    step();
    if (device.type == ember::DeviceType::CUDA) ember::synchronize(device);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  const double iqr = (ms[ms.size() * 3 / 4] - ms[ms.size() / 4]) / median;
  const ad::BackwardCacheStats cache = ad::backward_cache_stats();
  std::printf(
      "{\"ms\": %.6g, \"iqr\": %.4g, \"peak_bytes\": %lld, \"built\": %lld, "
      "\"reused\": %lld}\n",
      median, iqr, static_cast<long long>(ember::memory_stats(device).peak),
      static_cast<long long>(cache.built), static_cast<long long>(cache.reused));
  return 0;
}
