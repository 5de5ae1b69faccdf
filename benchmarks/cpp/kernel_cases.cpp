// kernel_cases.cpp — one entry per timed op: build the inputs, return the call to time.
// Parameter names follow the shapes in the comments; the harness's family files pass them.
#include <cstdlib>

#include "cases.h"

namespace bench {

using ember::Device;
using ember::Shape;
using ember::Tensor;

Tensor random_input(const Shape& shape, Device device, uint64_t seed) {
  std::vector<float> values(size_t(ember::shape_numel(shape)));
  uint64_t state = seed;
  for (float& v : values) {  // splitmix64: fast, and enough for inputs whose values do not matter
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    v = float(double((z ^ (z >> 31)) >> 40) / double(1ull << 23)) - 1.0f;
  }
  return Tensor::from_vector(values, shape).to(device);
}

namespace {

// ---- elementwise: a, b [n] ----
Call add(const Spec& p, Device d) {
  Tensor a = random_input({p.i("n")}, d, 1), b = random_input({p.i("n")}, d, 2);
  return [=] { ember::add(a, b); };
}
Call mul(const Spec& p, Device d) {
  Tensor a = random_input({p.i("n")}, d, 1), b = random_input({p.i("n")}, d, 2);
  return [=] { ember::mul(a, b); };
}
Call relu(const Spec& p, Device d) {
  Tensor x = random_input({p.i("n")}, d);
  return [=] { ember::relu(x); };
}
Call gelu(const Spec& p, Device d) {
  Tensor x = random_input({p.i("n")}, d);
  std::string approximate = p.s("approximate");
  return [=] { ember::gelu(x, approximate); };
}

// ---- creation and random: a new [n] float32 tensor ----
Call full(const Spec& p, Device d) {
  int64_t n = p.i("n");
  return [=] { ember::full({n}, 1.5, ember::DType::Float32, d); };
}
Call arange(const Spec& p, Device d) {
  double n = double(p.i("n"));
  return [=] { ember::arange(0.0, n, 1.0, ember::DType::Float32, d); };
}
Call rand(const Spec& p, Device d) {
  int64_t n = p.i("n");
  return [=] { ember::rand({n}, ember::DType::Float32, d); };
}
Call randn(const Spec& p, Device d) {
  int64_t n = p.i("n");
  return [=] { ember::randn({n}, ember::DType::Float32, d); };
}

// ---- indexing ----
// weight [vocab, dim], indices [batch] -> [batch, dim]
Call embedding(const Spec& p, Device d) {
  Tensor weight = random_input({p.i("vocab"), p.i("dim")}, d);
  Tensor indices = ember::randint(0, p.i("vocab"), {p.i("batch")}, ember::DType::Int64, d);
  return [=] { ember::embedding(weight, indices); };
}
// x [rows, cols], index [rows, k] along dim 1 -> [rows, k]
Call gather(const Spec& p, Device d) {
  Tensor x = random_input({p.i("rows"), p.i("cols")}, d);
  Tensor index = ember::randint(0, p.i("cols"), {p.i("rows"), p.i("k")}, ember::DType::Int64, d);
  return [=] { ember::gather(x, 1, index); };
}
// x [rows, cols], index [k] along dim 0 -> [k, cols]
Call index_select(const Spec& p, Device d) {
  Tensor x = random_input({p.i("rows"), p.i("cols")}, d);
  Tensor index = ember::randint(0, p.i("rows"), {p.i("k")}, ember::DType::Int64, d);
  return [=] { ember::index_select(x, 0, index); };
}

// ---- reduction: x [rows, cols] reduced over one dim ----
Call sum(const Spec& p, Device d) {
  Tensor x = random_input({p.i("rows"), p.i("cols")}, d);
  int64_t dim = p.i("dim");
  return [=] { ember::sum(x, {dim}); };
}
Call amax(const Spec& p, Device d) {
  Tensor x = random_input({p.i("rows"), p.i("cols")}, d);
  int64_t dim = p.i("dim");
  return [=] { ember::amax(x, {dim}); };
}

// ---- softmax_loss: x [rows, cols] over the last dim; logits [batch, classes], target [batch] ----
Call softmax(const Spec& p, Device d) {
  Tensor x = random_input({p.i("rows"), p.i("cols")}, d);
  return [=] { ember::softmax(x, -1); };
}
Call log_softmax(const Spec& p, Device d) {
  Tensor x = random_input({p.i("rows"), p.i("cols")}, d);
  return [=] { ember::log_softmax(x, -1); };
}
// Mean cross entropy and the gradient of its logits (as one training step's loss).
Call cross_entropy_fwd_bwd(const Spec& p, Device d) {
  Tensor logits = random_input({p.i("batch"), p.i("classes")}, d);
  Tensor target = ember::randint(0, p.i("classes"), {p.i("batch")}, ember::DType::Int64, d);
  Tensor one = ember::ones({}, ember::DType::Float32, d);
  return [=] {
    ember::cross_entropy(logits, target);
    ember::cross_entropy_backward(one, logits, target);
  };
}

// ---- matmul: a [m, k] @ b [k, n]; algo default or tiled, and on CUDA the tiled kernel's
// version (1..5, see src/cuda/gemm_tiled.cuh; absent: the fastest) ----
Call matmul(const Spec& p, Device d) {
  Tensor a = random_input({p.i("m"), p.i("k")}, d, 1), b = random_input({p.i("k"), p.i("n")}, d, 2);
  std::string algo = p.s("algo");
  if (algo != "default" && algo != "tiled")
    throw std::invalid_argument(p.text + ": algo must be default or tiled");
  if (p.params.count("version"))  // read by the CUDA kernel at every call
    setenv("EMBER_GEMM_TILED_VERSION", p.s("version").c_str(), 1);
  auto which = algo == "tiled" ? ember::MatmulAlgo::Tiled : ember::MatmulAlgo::Default;
  return [=] { ember::matmul(a, b, which); };
}

// ---- conv_pool: x [n, c, h, w], weight [o, c, kernel, kernel], stride 1, no padding ----
Call conv2d(const Spec& p, Device d) {
  Tensor x = random_input({p.i("n"), p.i("c"), p.i("h"), p.i("w")}, d, 1);
  Tensor weight = random_input({p.i("o"), p.i("c"), p.i("kernel"), p.i("kernel")}, d, 2);
  Tensor bias = random_input({p.i("o")}, d, 3);
  return [=] { ember::conv2d(x, weight, bias); };
}
// Forward, then the gradients of x, weight and bias for a given grad_out (as one training step).
Call conv2d_fwd_bwd(const Spec& p, Device d) {
  Tensor x = random_input({p.i("n"), p.i("c"), p.i("h"), p.i("w")}, d, 1);
  Tensor weight = random_input({p.i("o"), p.i("c"), p.i("kernel"), p.i("kernel")}, d, 2);
  Tensor bias = random_input({p.i("o")}, d, 3);
  Tensor grad_out = random_input(ember::conv2d(x, weight, bias).shape(), d, 4);
  return [=] {
    ember::conv2d(x, weight, bias);
    ember::conv2d_backward_input(grad_out, weight, x.shape());
    ember::conv2d_backward_weight(grad_out, x, weight.shape());
    ember::conv2d_backward_bias(grad_out);
  };
}
// x [n, c, h, w] -> [n, c, h / kernel, w / kernel], and back.
Call max_pool2d_fwd_bwd(const Spec& p, Device d) {
  Tensor x = random_input({p.i("n"), p.i("c"), p.i("h"), p.i("w")}, d, 1);
  int64_t kernel = p.i("kernel");
  Tensor grad_out = random_input(ember::max_pool2d(x, kernel).values.shape(), d, 2);
  return [=] {
    ember::MaxPoolResult r = ember::max_pool2d(x, kernel);
    ember::max_pool2d_backward(grad_out, r.indices, x.shape());
  };
}

// ---- normalization ----
// x [n, c, h, w], training mode with affine weight/bias and the running statistics' update.
Call batch_norm_fwd_bwd(const Spec& p, Device d) {
  int64_t c = p.i("c");
  Tensor x = random_input({p.i("n"), c, p.i("h"), p.i("w")}, d, 1);
  Tensor weight = random_input({c}, d, 2), bias = random_input({c}, d, 3);
  Tensor running_mean = random_input({c}, d, 4), running_var = ember::abs(random_input({c}, d, 5));
  Tensor grad_out = random_input(x.shape(), d, 6);
  return [=] {
    ember::BatchNormResult r =
        ember::batch_norm(x, weight, bias, running_mean, running_var, /*training=*/true);
    ember::batch_norm_update_stats(running_mean, running_var, r.save_mean, r.batch_var,
                                   /*momentum=*/0.1, x.numel() / c);
    ember::batch_norm_backward(grad_out, x, weight, r.save_mean, r.save_invstd, true);
  };
}
// x [rows, cols] normalised over cols, with affine weight/bias [cols].
Call layer_norm_fwd_bwd(const Spec& p, Device d) {
  int64_t cols = p.i("cols");
  Tensor x = random_input({p.i("rows"), cols}, d, 1);
  Tensor weight = random_input({cols}, d, 2), bias = random_input({cols}, d, 3);
  Tensor grad_out = random_input(x.shape(), d, 4);
  return [=] {
    ember::LayerNormResult r = ember::layer_norm(x, {cols}, weight, bias);
    ember::layer_norm_backward(grad_out, x, {cols}, r.mean, r.rstd, weight);
  };
}

// ---- optimizer: `tensors` parameters of n elements each, updated in place by one call ----
struct ParamLists {
  ember::TensorList params, grads, state1, state2;  // state: Adam's moments, SGD's momentum
};
ParamLists param_lists(const Spec& p, Device d) {
  ParamLists l;
  for (int64_t i = 0; i < p.i("tensors"); ++i) {
    l.params.push_back(random_input({p.i("n")}, d, 2 * uint64_t(i)));
    l.grads.push_back(random_input({p.i("n")}, d, 2 * uint64_t(i) + 1));
    l.state1.push_back(ember::zeros({p.i("n")}, ember::DType::Float32, d));
    l.state2.push_back(ember::zeros({p.i("n")}, ember::DType::Float32, d));
  }
  return l;
}
Call adam_step(const Spec& p, Device d) {
  ParamLists l = param_lists(p, d);
  int64_t step = 0;
  return [=]() mutable { ember::adam_step(l.params, l.grads, l.state1, l.state2, ++step); };
}
Call sgd_step(const Spec& p, Device d) {  // with momentum, as a CNN is usually trained
  ParamLists l = param_lists(p, d);
  return [=] { ember::sgd_step(l.params, l.grads, l.state1, /*lr=*/0.01, /*momentum=*/0.9); };
}

}  // namespace

const std::map<std::string, KernelCase>& kernel_cases() {
  static const std::map<std::string, KernelCase> table = {
      {"add", add},
      {"mul", mul},
      {"relu", relu},
      {"gelu", gelu},
      {"full", full},
      {"arange", arange},
      {"rand", rand},
      {"randn", randn},
      {"embedding", embedding},
      {"gather", gather},
      {"index_select", index_select},
      {"sum", sum},
      {"amax", amax},
      {"softmax", softmax},
      {"log_softmax", log_softmax},
      {"cross_entropy_fwd_bwd", cross_entropy_fwd_bwd},
      {"matmul", matmul},
      {"conv2d", conv2d},
      {"conv2d_fwd_bwd", conv2d_fwd_bwd},
      {"max_pool2d_fwd_bwd", max_pool2d_fwd_bwd},
      {"batch_norm_fwd_bwd", batch_norm_fwd_bwd},
      {"layer_norm_fwd_bwd", layer_norm_fwd_bwd},
      {"adam_step", adam_step},
      {"sgd_step", sgd_step},
  };
  return table;
}

}  // namespace bench
