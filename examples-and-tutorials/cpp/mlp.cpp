// mlp.cpp — a small MLP trained with autodiff-engine: Variables record the forward pass,
// backward() runs the backward graph built from the gradient rules, Adam updates the weights.
// Then it prints the forward and backward graph of the loss, and takes a second derivative (a
// Hessian-vector product of the network with respect to its input) checked against finite
// differences. Exits with status 1 unless the loss falls and both checks hold.
//
// The task: points in [-1, 1]^2, class 1 where x0 * x1 > 0 (two opposite quadrants), which no
// linear model separates.
#include <ember/autodiff/autodiff.h>
#include <ember/autodiff/optim/adam.h>
#include <ember/ember.h>

#include <cmath>
#include <cstdio>

namespace ad = ember::autodiff;
using ad::Variable;
using ember::DType;
using ember::Tensor;

struct Mlp {
  Variable w1, b1, w2, b2, w3, b3;

  // A layer's weight [out, in] and bias [out], uniform in +-1/sqrt(in) (PyTorch's default).
  static std::pair<Variable, Variable> layer(int64_t in, int64_t out) {
    const double bound = 1.0 / std::sqrt(double(in));
    return {Variable(ember::uniform({out, in}, -bound, bound), true),
            Variable(ember::uniform({out}, -bound, bound), true)};
  }
  Mlp() {
    std::tie(w1, b1) = layer(2, 32);
    std::tie(w2, b2) = layer(32, 32);
    std::tie(w3, b3) = layer(32, 2);
  }
  std::vector<Variable> parameters() const { return {w1, b1, w2, b2, w3, b3}; }

  // x: [n, 2] -> logits [n, 2]
  Variable operator()(const Variable& x) const {
    Variable h = ad::tanh(ad::linear(x, w1, b1));  // [n, 32]
    h = ad::tanh(ad::linear(h, w2, b2));           // [n, 32]
    return ad::linear(h, w3, b3);                  // [n, 2]
  }
};

int main() {
  ember::manual_seed(0);
  const int64_t n = 512;
  const Tensor points = ember::uniform({n, 2}, -1.0, 1.0);                      // [n, 2]
  const Tensor product = ember::mul(points.select(1, 0), points.select(1, 1));  // [n]
  const Variable x(points);
  const Variable labels(ember::gt(product, 0.0).to(DType::Int64));  // [n] in {0, 1}

  Mlp model;
  ad::optim::Adam adam(model.parameters(), {{"lr", 0.02}});
  double first_loss = 0, loss_value = 0;
  for (int step = 0; step < 300; ++step) {
    Variable loss = ad::cross_entropy(model(x), labels);
    if (step == 0) {
      first_loss = loss.data().item<float>();
      std::printf("The loss's forward graph and its backward graph, as recorded:\n%s\n",
                  loss.graph_str().c_str());
    }
    adam.zero_grad();
    loss.backward();
    adam.step();
    loss_value = loss.data().item<float>();
    if (step % 50 == 0) std::printf("step %3d  loss %.4f\n", step, loss_value);
  }
  Tensor predicted;
  {
    ad::NoGradGuard no_grad;
    predicted = ember::argmax(model(x).data(), 1);
  }
  const double accuracy =
      ember::mean(ember::eq(predicted, labels.data()).to(DType::Float32)).item<float>();
  std::printf("loss %.4f -> %.4f, training accuracy %.1f %%\n", first_loss, loss_value,
              100 * accuracy);

  // Second order: with f(p) = sum(model(p)) at one point p, the gradient g(p) = df/dp is itself
  // recorded (create_graph), so d<g, v>/dp is the Hessian-vector product H v.
  const Tensor p0 = Tensor::from_vector<float>({0.3f, -0.4f}, {1, 2});
  const Tensor v = Tensor::from_vector<float>({1.0f, 0.5f}, {1, 2});
  auto gradient_at = [&](const Tensor& at, bool create_graph) {
    Variable p(at, true);
    return std::make_pair(p, ad::grad({ad::sum(model(p))}, {p}, {}, create_graph, create_graph)[0]);
  };
  auto [p, g] = gradient_at(p0, true);
  const Tensor hv = ad::grad({ad::sum(g * Variable(v))}, {p})[0].data();  // [1, 2]
  const double eps = 1e-2;
  const Tensor g_plus = gradient_at(ember::add(p0, ember::mul(v, eps)), false).second.data();
  const Tensor g_minus = gradient_at(ember::sub(p0, ember::mul(v, eps)), false).second.data();
  const Tensor fd = ember::div(ember::sub(g_plus, g_minus), 2 * eps);  // (g(p+ev) - g(p-ev)) / 2e
  const double hv_error = ember::amax(ember::abs(ember::sub(hv, fd))).item<float>();
  std::printf("Hessian-vector product %s, by finite differences %s (max difference %.2e)\n",
              hv.to_string().c_str(), fd.to_string().c_str(), hv_error);

  const bool ok = loss_value < 0.5 * first_loss && accuracy > 0.9 && hv_error < 1e-2;
  std::printf(ok ? "ok\n" : "FAILED\n");
  return ok ? 0 : 1;
}
