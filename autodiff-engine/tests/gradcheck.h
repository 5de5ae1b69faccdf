// gradcheck.h — gradients against float64 central finite differences, first and second order.
//
//   check_grad(f, {x, w});      // d <f(x, w), r> / d x, d w   for a fixed random r
//   check_grad_grad(f, {x, w}); // the gradient of <that gradient, v>: a Hessian-vector product
//
// f maps Variables to one Variable; the inputs are float64 tensors (any layout: a transposed or
// sliced view tests non-contiguous inputs) on any device; the differences are taken in float64
// on the inputs' device too, so on CUDA they check the CUDA kernels' gradients independently.
// Integer inputs (indices, targets) are passed through without a gradient. Every element of every
// floating input is perturbed, so keep them small.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "ember/autodiff/autodiff.h"
#include "ember/ops/creation.h"
#include "ember/ops/elementwise.h"
#include "ember/ops/random.h"
#include "ember/ops/reduction.h"

namespace gradcheck {

namespace ad = ember::autodiff;
using Fn = std::function<ad::Variable(const std::vector<ad::Variable>&)>;

// A float64 input of a graph on the CPU, for the tests of the shape rules.
inline ad::Val f64_input(ad::Graph& g, const ember::Shape& shape) {
  return g.input(ad::TensorType{shape, ember::DType::Float64, ember::Device()});
}

struct Options {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-4;
};

inline std::vector<ad::Variable> leaves(const std::vector<ember::Tensor>& inputs) {
  std::vector<ad::Variable> out;
  for (const ember::Tensor& t : inputs) out.emplace_back(t, ember::is_floating(t.dtype()));
  return out;
}

// <a, b> over all elements, in float64.
inline double dot(const ember::Tensor& a, const ember::Tensor& b) {
  return ember::sum(ember::mul(a.to(ember::DType::Float64), b.to(ember::DType::Float64)))
      .item<double>();
}

// A fixed random tensor of t's shape and dtype (the projection that makes outputs scalar).
inline ember::Tensor probe_like(const ember::Tensor& t, uint64_t seed) {
  ember::Generator gen(seed);
  return ember::uniform(t.shape(), -1.0, 1.0, t.dtype(), t.device(), &gen);
}

// The numerical gradient of scalar(inputs) with respect to inputs[i], one element at a time.
inline std::vector<double> numeric_grad(
    const std::function<double(std::vector<ember::Tensor>&)>& scalar,
    std::vector<ember::Tensor> inputs, size_t i, double eps) {
  // Perturb a contiguous host copy; off the CPU each evaluation gets it copied to the device.
  const ember::Device device = inputs[i].device();
  ember::Tensor host = inputs[i].to(ember::Device()).contiguous().clone();
  double* data = host.data<double>();
  std::vector<double> out(size_t(host.numel()));
  auto at = [&](double value, int64_t j) {
    data[j] = value;
    host.bump_version();
    inputs[i] = device.type == ember::DeviceType::CPU ? host : host.to(device);
    return scalar(inputs);
  };
  for (int64_t j = 0; j < host.numel(); ++j) {
    const double keep = data[j];
    const double plus = at(keep + eps, j), minus = at(keep - eps, j);
    data[j] = keep;
    out[size_t(j)] = (plus - minus) / (2 * eps);
  }
  return out;
}

inline void expect_close(const std::vector<double>& got, const std::vector<double>& want,
                         const Options& o, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t j = 0; j < got.size(); ++j)
    EXPECT_NEAR(got[j], want[j], o.atol + o.rtol * std::abs(want[j])) << what << ", element " << j;
}

inline std::vector<double> values_or_zeros(const ad::Variable& g, const ember::Tensor& like) {
  if (!g.defined()) return std::vector<double>(size_t(like.numel()), 0.0);
  return g.data().to(ember::DType::Float64).contiguous().to_vector<double>();
}

// First order: the analytic gradient of <f(inputs), r> against central differences.
inline void check_grad(const Fn& f, const std::vector<ember::Tensor>& inputs,
                       const Options& o = {}) {
  std::vector<ad::Variable> xs = leaves(inputs);
  ad::Variable y = f(xs);
  const ember::Tensor r = probe_like(y.data(), 1234);
  std::vector<ad::Variable> wrt;
  for (const ad::Variable& x : xs)
    if (x.requires_grad()) wrt.push_back(x);
  std::vector<ad::Variable> grads = ad::grad({y}, wrt, {ad::Variable(r)}, false, false, true);
  auto scalar = [&](std::vector<ember::Tensor>& in) {
    ad::NoGradGuard no_grad;
    return dot(f(leaves(in)).data(), r);
  };
  size_t k = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!ember::is_floating(inputs[i].dtype())) continue;
    expect_close(values_or_zeros(grads[k++], inputs[i]), numeric_grad(scalar, inputs, i, o.eps), o,
                 "d/d input " + std::to_string(i));
  }
}

// Second order: with g = d<f, r>/dx (built with create_graph), the gradient of <g, v> against
// central differences of <g, v> itself (a Hessian-vector product, every input at once).
inline void check_grad_grad(const Fn& f, const std::vector<ember::Tensor>& inputs,
                            const Options& o = {}) {
  auto first = [&](const std::vector<ad::Variable>& xs, const ember::Tensor* r_in,
                   std::vector<ember::Tensor>* vs, bool create) {
    ad::Variable y = f(xs);
    const ember::Tensor r = r_in ? *r_in : probe_like(y.data(), 1234);
    std::vector<ad::Variable> wrt;
    for (const ad::Variable& x : xs)
      if (x.requires_grad()) wrt.push_back(x);
    std::vector<ad::Variable> g = ad::grad({y}, wrt, {ad::Variable(r)}, create, create, true);
    if (vs->empty())
      for (size_t k = 0; k < wrt.size(); ++k) vs->push_back(probe_like(wrt[k].data(), 99 + k));
    return std::make_pair(g, wrt);
  };
  std::vector<ember::Tensor> vs;
  std::vector<ad::Variable> xs = leaves(inputs);
  const ember::Tensor r = probe_like(f(xs).data(), 1234);
  auto [g, wrt] = first(xs, &r, &vs, true);
  // s = sum_k <g_k, v_k>, differentiated again.
  ad::Variable s;
  for (size_t k = 0; k < g.size(); ++k) {
    if (!g[k].defined() || !g[k].requires_grad()) continue;
    ad::Variable term = ad::sum(g[k] * ad::Variable(vs[k]));
    s = s.defined() ? s + term : term;
  }
  std::vector<ad::Variable> hv(wrt.size());
  if (s.defined()) hv = ad::grad({s}, wrt, {}, false, false, true);
  auto scalar = [&](std::vector<ember::Tensor>& in) {
    std::vector<ember::Tensor> v = vs;
    auto [gi, unused] = first(leaves(in), &r, &v, false);
    double total = 0;
    for (size_t k = 0; k < gi.size(); ++k)
      if (gi[k].defined()) total += dot(gi[k].data(), vs[k]);
    return total;
  };
  size_t k = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!ember::is_floating(inputs[i].dtype())) continue;
    expect_close(values_or_zeros(hv[k++], inputs[i]), numeric_grad(scalar, inputs, i, o.eps), o,
                 "second order, d/d input " + std::to_string(i));
  }
}

// What every rule is held to: first order, second order, and second order through a tanh, so
// that the incoming gradient depends on the inputs (for a linear op the second order of f alone
// is zero whatever its rules do) and each rule's use of it is differentiated too.
inline void check_rule(const Fn& f, const std::vector<ember::Tensor>& inputs,
                       const Options& o = {}) {
  check_grad(f, inputs, o);
  check_grad_grad(f, inputs, o);
  check_grad_grad([&](const std::vector<ad::Variable>& v) { return ad::tanh(f(v)); }, inputs, o);
}

// A float64 tensor of shape with values in [low, high), from a fixed seed.
inline ember::Tensor random(const ember::Shape& shape, uint64_t seed, double low = -1.0,
                            double high = 1.0, ember::Device device = ember::Device()) {
  ember::Generator gen(seed);
  return ember::uniform(shape, low, high, ember::DType::Float64, device, &gen);
}

}  // namespace gradcheck
