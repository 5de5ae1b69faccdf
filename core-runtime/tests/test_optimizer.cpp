// test_optimizer.cpp — the fused optimizer steps against a scalar re-implementation of the
// torch.optim update formulas, written here in double, over several steps.
#include <cmath>

#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;
using test::random_tensor;
using test::random_values;

class Optimizer : public test::DeviceTest {};

const std::vector<Shape> kShapes{{3, 4}, {5}, {2, 2, 2}, {0}};

// A model's parameters (and matching zero states) as Ember tensors plus double copies.
struct Model {
  TensorList params;
  std::vector<std::vector<double>> ref;  // reference parameter values
};

Model make_model(Device dev, DType dtype, uint32_t seed) {
  Model m;
  for (size_t i = 0; i < kShapes.size(); ++i) {
    m.params.push_back(random_tensor(kShapes[i], seed + uint32_t(i), dtype, dev));
    m.ref.push_back(m.params.back().to_vector<double>());
  }
  return m;
}

TensorList zeros_like(const TensorList& ts) {
  TensorList out;
  for (const Tensor& t : ts) {
    out.push_back(Tensor::empty(t.shape(), t.dtype(), t.device()));
    out.back().zero_();
  }
  return out;
}

std::vector<std::vector<double>> zero_state() {
  std::vector<std::vector<double>> s;
  for (const Shape& shape : kShapes) s.emplace_back(size_t(shape_numel(shape)), 0.0);
  return s;
}

TensorList random_grads(const TensorList& params, uint32_t seed) {
  TensorList g;
  for (size_t i = 0; i < params.size(); ++i)
    g.push_back(random_tensor(params[i].shape(), seed + uint32_t(i), params[i].dtype(),
                              params[i].device()));
  return g;
}

void expect_model(const TensorList& got, const std::vector<std::vector<double>>& want, double tol) {
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], tol, tol);
}

// ---------------- SGD ----------------

struct SgdConfig {
  double lr, momentum, dampening, weight_decay;
  bool nesterov, maximize;
};

void check_sgd(Device dev, DType dtype, const SgdConfig& c, double tol) {
  Model m = make_model(dev, dtype, 100);
  TensorList bufs = zeros_like(m.params);
  auto ref_buf = zero_state();
  for (int step = 1; step <= 4; ++step) {
    TensorList grads = random_grads(m.params, 200 + 10 * uint32_t(step));
    sgd_step(m.params, grads, bufs, c.lr, c.momentum, c.dampening, c.nesterov, c.weight_decay,
             step == 1, c.maximize);
    // torch.optim.SGD, element by element.
    for (size_t i = 0; i < m.ref.size(); ++i) {
      std::vector<double> g = grads[i].to_vector<double>();
      for (size_t j = 0; j < g.size(); ++j) {
        double& p = m.ref[i][j];
        double d = c.maximize ? -g[j] : g[j];
        d += c.weight_decay * p;
        if (c.momentum != 0) {
          double& b = ref_buf[i][j];
          b = step == 1 ? d : c.momentum * b + (1 - c.dampening) * d;
          d = c.nesterov ? d + c.momentum * b : b;
        }
        p -= c.lr * d;
      }
    }
    expect_model(m.params, m.ref, tol);
    if (c.momentum != 0) expect_model(bufs, ref_buf, tol);
  }
}

TEST_P(Optimizer, SgdMatchesTorchFormulas) {
  check_sgd(device(), DType::Float64, {0.1, 0, 0, 0, false, false}, 1e-12);
  check_sgd(device(), DType::Float64, {0.05, 0.9, 0.1, 0, false, false}, 1e-12);
  check_sgd(device(), DType::Float64, {0.05, 0.9, 0, 1e-2, true, false}, 1e-12);
  check_sgd(device(), DType::Float64, {0.02, 0.5, 0, 0.1, false, true}, 1e-12);
  check_sgd(device(), DType::Float32, {0.05, 0.9, 0, 1e-2, true, false}, 1e-5);
  check_sgd(device(), DType::BFloat16, {0.05, 0.9, 0, 0, false, false}, 3e-2);
  // Every combination of the flags: the usual settings (momentum or none, no dampening, decay,
  // Nesterov or maximize) take a loop of their own on the CPU, which must agree with the rest.
  for (double momentum : {0.0, 0.9})
    for (double dampening : {0.0, 0.1})
      for (double weight_decay : {0.0, 0.01})
        for (bool nesterov : {false, true})
          for (bool maximize : {false, true}) {
            if (nesterov && (momentum == 0 || dampening != 0)) continue;  // torch refuses these
            SCOPED_TRACE("momentum " + std::to_string(momentum) + " dampening " +
                         std::to_string(dampening) + " weight_decay " +
                         std::to_string(weight_decay) + (nesterov ? " nesterov" : "") +
                         (maximize ? " maximize" : ""));
            const SgdConfig c{0.05, momentum, dampening, weight_decay, nesterov, maximize};
            check_sgd(device(), DType::Float64, c, 1e-12);
            check_sgd(device(), DType::Float32, c, 1e-5);
          }
}

// ---------------- Adam / AdamW ----------------

void check_adam(Device dev, DType dtype, bool decoupled, double weight_decay, bool maximize,
                double tol) {
  const double lr = 1e-2, beta1 = 0.8, beta2 = 0.95, eps = 1e-6;
  Model m = make_model(dev, dtype, 300);
  TensorList exp_avgs = zeros_like(m.params), exp_avg_sqs = zeros_like(m.params);
  auto rm = zero_state(), rv = zero_state();
  for (int step = 1; step <= 5; ++step) {
    TensorList grads = random_grads(m.params, 400 + 10 * uint32_t(step));
    adam_step(m.params, grads, exp_avgs, exp_avg_sqs, step, lr, beta1, beta2, eps, weight_decay,
              decoupled, maximize);
    // torch.optim.Adam / AdamW (single-tensor implementation), element by element.
    const double bc1 = 1 - std::pow(beta1, step), bc2 = 1 - std::pow(beta2, step);
    for (size_t i = 0; i < m.ref.size(); ++i) {
      std::vector<double> g = grads[i].to_vector<double>();
      for (size_t j = 0; j < g.size(); ++j) {
        double& p = m.ref[i][j];
        double d = maximize ? -g[j] : g[j];
        if (decoupled) p *= 1 - lr * weight_decay;
        else d += weight_decay * p;
        rm[i][j] = beta1 * rm[i][j] + (1 - beta1) * d;
        rv[i][j] = beta2 * rv[i][j] + (1 - beta2) * d * d;
        p -= lr / bc1 * rm[i][j] / (std::sqrt(rv[i][j]) / std::sqrt(bc2) + eps);
      }
    }
    expect_model(m.params, m.ref, tol);
    expect_model(exp_avgs, rm, tol);
    expect_model(exp_avg_sqs, rv, tol);
  }
}

TEST_P(Optimizer, AdamAndAdamWMatchTorchFormulas) {
  check_adam(device(), DType::Float64, false, 0.0, false, 1e-12);
  check_adam(device(), DType::Float64, false, 0.1, false, 1e-12);
  check_adam(device(), DType::Float64, true, 0.1, false, 1e-12);
  check_adam(device(), DType::Float64, true, 0.1, true, 1e-12);
  check_adam(device(), DType::Float32, true, 0.01, false, 1e-5);
  check_adam(device(), DType::Float16, false, 0.0, false, 1e-2);
}

// ---------------- RMSprop ----------------

void check_rmsprop(Device dev, DType dtype, double momentum, bool centered, double weight_decay,
                   double tol) {
  const double lr = 1e-2, alpha = 0.9, eps = 1e-6;
  Model m = make_model(dev, dtype, 500);
  TensorList sq = zeros_like(m.params), bufs = zeros_like(m.params), gavg = zeros_like(m.params);
  auto rsq = zero_state(), rbuf = zero_state(), rga = zero_state();
  for (int step = 1; step <= 5; ++step) {
    TensorList grads = random_grads(m.params, 600 + 10 * uint32_t(step));
    rmsprop_step(m.params, grads, sq, bufs, gavg, lr, alpha, eps, weight_decay, momentum, centered);
    // torch.optim.RMSprop, element by element.
    for (size_t i = 0; i < m.ref.size(); ++i) {
      std::vector<double> g = grads[i].to_vector<double>();
      for (size_t j = 0; j < g.size(); ++j) {
        double& p = m.ref[i][j];
        double d = g[j] + weight_decay * p;
        rsq[i][j] = alpha * rsq[i][j] + (1 - alpha) * d * d;
        double avg;
        if (centered) {
          rga[i][j] = alpha * rga[i][j] + (1 - alpha) * d;
          avg = std::sqrt(rsq[i][j] - rga[i][j] * rga[i][j]) + eps;
        } else {
          avg = std::sqrt(rsq[i][j]) + eps;
        }
        if (momentum > 0) {
          rbuf[i][j] = momentum * rbuf[i][j] + d / avg;
          p -= lr * rbuf[i][j];
        } else {
          p -= lr * d / avg;
        }
      }
    }
    expect_model(m.params, m.ref, tol);
    expect_model(sq, rsq, tol);
    if (centered) expect_model(gavg, rga, tol);
    if (momentum > 0) expect_model(bufs, rbuf, tol);
  }
}

TEST_P(Optimizer, RmspropMatchesTorchFormulas) {
  check_rmsprop(device(), DType::Float64, 0.0, false, 0.0, 1e-12);
  check_rmsprop(device(), DType::Float64, 0.9, false, 0.01, 1e-12);
  check_rmsprop(device(), DType::Float64, 0.9, true, 0.0, 1e-12);
  check_rmsprop(device(), DType::Float64, 0.0, true, 0.1, 1e-12);
  check_rmsprop(device(), DType::Float32, 0.5, true, 0.01, 1e-5);
}

// ---------------- lists: mixed dtypes, views, large tensors ----------------

TEST_P(Optimizer, MixedDtypesNonContiguousAndLargeTensors) {
  // A float64 param, a float32 param that is a transposed view of a buffer, and one large
  // enough to span several chunks; all in one call.
  Tensor a = random_tensor({3, 2}, 1, DType::Float64, device());
  Tensor base = random_tensor({4, 3}, 2, DType::Float32, device());
  Tensor b = base.t();  // [3, 4], non-contiguous
  Tensor c = random_tensor({70000}, 3, DType::Float32, device());
  TensorList params{a, b, c};
  TensorList grads = random_grads(params, 4);
  grads[1] = random_tensor({4, 3}, 5, DType::Float32, device()).t();  // a non-contiguous grad
  std::vector<std::vector<double>> want;
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<double> p = params[i].to_vector<double>(), g = grads[i].to_vector<double>();
    for (size_t j = 0; j < p.size(); ++j) p[j] -= 0.5 * (g[j] + 0.1 * p[j]);
    want.push_back(p);
  }
  sgd_step(params, grads, {}, 0.5, 0.0, 0.0, false, 0.1);
  expect_model(params, want, 1e-6);
  expect_close(base.t(), want[1], 1e-6, 1e-6);  // the view's buffer was written
  sgd_step({}, {}, {}, 0.1);                    // nothing to do
}

// More tensors than one CUDA launch's table holds (24) and a tensor of more chunks than it holds
// (160 of 65536 elements), with empty tensors between: the group takes several launches there,
// and every element is updated once.
TEST_P(Optimizer, ManyTensorsAndChunksAcrossLaunches) {
  TensorList params, bufs;
  for (int i = 0; i < 61; ++i) {
    const int64_t n = i % 7 == 3 ? 0 : i == 40 ? 160 * 65536 + 1001 : 1 + (i * 37) % 300;
    params.push_back(random_tensor({n}, 10 + uint32_t(i), DType::Float32, device()));
    bufs.push_back(random_tensor({n}, 100 + uint32_t(i), DType::Float32, device()));
  }
  TensorList grads = random_grads(params, 500);
  std::vector<std::vector<double>> want_p, want_b;
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<double> p = params[i].to_vector<double>(), b = bufs[i].to_vector<double>();
    const std::vector<double> g = grads[i].to_vector<double>();
    for (size_t j = 0; j < p.size(); ++j) {
      b[j] = 0.9 * b[j] + g[j];
      p[j] -= 0.25 * b[j];
    }
    want_p.push_back(p);
    want_b.push_back(b);
  }
  sgd_step(params, grads, bufs, 0.25, 0.9, 0.0, false, 0.0, /*first_step=*/false);
  expect_model(params, want_p, 1e-5);
  expect_model(bufs, want_b, 1e-5);
}

TEST_P(Optimizer, Errors) {
  Tensor p = Tensor::empty({3}, DType::Float32, device());
  Tensor q = Tensor::empty({2, 2}, DType::Float32, device());
  expect_error<ValueError>(
      [&] {
        sgd_step({p, q}, {p}, {}, 0.1);
      },
      {"sgd_step", "params has 2 tensors but grads has 1"});
  expect_error<ShapeError>(
      [&] {
        sgd_step({p, q}, {p, p}, {}, 0.1);
      },
      {"sgd_step", "params[1] is [2, 2] float32", "grads[1] is [3] float32", "must match"});
  expect_error<DTypeError>([&] { adam_step({p}, {p}, {p.to(DType::Float64)}, {p}, 1); },
                           {"adam_step", "exp_avgs[0] is [3] float64", "params[0] is [3] float32"});
  expect_error<ValueError>([&] { sgd_step({p}, {p}, {}, 0.1, 0.9); },
                           {"sgd_step", "momentum_buffers"});
  expect_error<ValueError>([&] { sgd_step({p}, {p}, {p}, 0.1, 0.0, 0.0, true); },
                           {"sgd_step", "nesterov", "momentum > 0"});
  expect_error<ValueError>([&] { adam_step({p}, {p}, {p}, {p}, 0); }, {"adam_step", "step"});
  expect_error<ValueError>([&] { adam_step({p}, {p}, {p}, {p}, 1, 1e-3, 1.0); },
                           {"adam_step", "beta1", "[0, 1)"});
  expect_error<ValueError>(
      [&] { adam_step({p}, {p}, {p}, {p}, 1, -1.0, 0.9, 0.9, 0.0, 0.0, true); },
      {"adamw_step", "lr"});
  expect_error<ValueError>(
      [&] { rmsprop_step({p}, {p}, {p}, {}, {}, 0.01, 0.99, 1e-8, 0, 0, true); },
      {"rmsprop_step", "grad_avgs"});
  expect_error<DTypeError>(
      [&] {
        Tensor i = Tensor::empty({3}, DType::Int64, device());
        sgd_step({i}, {i}, {}, 0.1);
      },
      {"sgd_step", "params[0] is [3] int64", "floating"});
}

EMBER_INSTANTIATE_DEVICE_TEST(Optimizer);

}  // namespace
}  // namespace ember
