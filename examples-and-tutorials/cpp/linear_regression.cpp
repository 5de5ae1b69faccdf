// linear_regression.cpp — fits y = x @ w^T + b by gradient descent using core-runtime's ops
// alone, without autodiff-engine, so the gradients are written out by hand beside the forward
// pass (as llm.c does); mlp.cpp lets autodiff-engine derive them. Runs on a GPU when one is
// present, else on the CPU, and exits with status 1 unless the fit recovers the weights the data
// was made with.
#include <ember/ember.h>

#include <cstdio>

using ember::Device;
using ember::DType;
using ember::Tensor;

int main() {
  const Device device = ember::cuda_is_available() ? Device("cuda") : Device("cpu");
  const int64_t n = 256, features = 3;
  const DType f32 = DType::Float32;
  ember::manual_seed(0);

  // The data: y = x @ true_w^T + true_b + a little noise.
  Tensor true_w = Tensor::from_vector<float>({2.0f, -3.0f, 0.5f}, {1, features}).to(device);
  Tensor true_b = Tensor::from_vector<float>({1.0f}, {1}).to(device);
  Tensor x = ember::randn({n, features}, f32, device);                                     // [n, 3]
  Tensor y = ember::linear(x, true_w, true_b) + ember::randn({n, 1}, f32, device) * 0.01;  // [n, 1]

  // The model, from zero.
  Tensor w = ember::zeros({1, features}, f32, device);  // [1, 3]
  Tensor b = ember::zeros({1}, f32, device);            // [1]
  const double lr = 0.1;
  const Tensor one = ember::scalar_tensor(1.0, f32, device);  // d loss / d loss

  std::printf("fitting y = x @ w^T + b on %s, %lld samples\n", device.str().c_str(),
              static_cast<long long>(n));
  for (int step = 0; step <= 100; ++step) {
    // Forward.
    Tensor pred = ember::linear(x, w, b);  // [n, 1]
    Tensor loss = ember::mse_loss(pred, y);
    // Backward: pred = x @ w^T + b, so dL/dw = dL/dpred^T @ x and dL/db = sum over rows.
    Tensor grad_pred = ember::mse_loss_backward(one, pred, y);  // [n, 1]
    Tensor grad_w = ember::matmul(grad_pred.t(), x);            // [1, 3]
    Tensor grad_b = ember::sum(grad_pred, {0});                 // [1]
    // Update.
    ember::sub_(w, grad_w * lr);
    ember::sub_(b, grad_b * lr);
    if (step % 20 == 0) std::printf("  step %3d  loss %.6f\n", step, loss.item<float>());
  }

  const float w_error = ember::amax(ember::abs(w - true_w)).item<float>();
  const float b_error = ember::amax(ember::abs(b - true_b)).item<float>();
  std::printf("w = %s\nb = %s\n", w.to_string().c_str(), b.to_string().c_str());
  const bool ok = w_error < 0.01f && b_error < 0.01f;
  std::printf("[%s] largest error in w %.5f, in b %.5f (tolerance 0.01)\n", ok ? "ok" : "FAILED",
              w_error, b_error);
  return ok ? 0 : 1;
}
