// random.cpp — front functions of the random ops: check the arguments, allocate the output, take
// the call's stream from the generator, run the device's kernel (ops/random_kernels.h).
#include "ember/ops/random.h"

#include <cmath>
#include <limits>
#include <mutex>
#include <string>

#include "kernels.h"
#include "ops/checks.h"
#include "ops/random_kernels.h"

namespace ember {

namespace {

std::mutex default_generator_mutex;

// The stream of one op call; advances the generator so that the next call gets another.
PhiloxStream draw(Generator* gen) {
  if (gen) return {gen->seed, gen->offset++};
  std::lock_guard<std::mutex> lock(default_generator_mutex);
  Generator& g = default_generator();
  return {g.seed, g.offset++};
}

void check_floating_dtype(const char* op, DType dtype) {
  if (!is_floating(dtype))
    throw DTypeError(op, std::string("dtype is ") + dtype_name(dtype) +
                             "; expected a floating dtype (float16, bfloat16, float32, float64); "
                             "for random integers use randint");
}

void check_finite(const char* op, const char* name, double v) {
  if (!std::isfinite(v))
    throw ValueError(op, std::string(name) + " is " + std::to_string(v) + "; it must be finite");
}

// Throws unless every integer in [lo, hi] is representable in dtype (integer dtypes only).
void check_holds(const char* op, DType dtype, int64_t lo, int64_t hi) {
  if (dtype == DType::Bool)
    throw DTypeError(op, "dtype is bool; expected a numeric dtype, e.g. DType::Int64");
  if (!is_integral(dtype)) return;
  dispatch_numeric(dtype, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (lo < int64_t(std::numeric_limits<T>::lowest()) ||
        hi > int64_t(std::numeric_limits<T>::max()))
      throw ValueError(op, "values from " + std::to_string(lo) + " to " + std::to_string(hi) +
                               " do not fit in " + dtype_name(dtype) +
                               "; use a wider dtype such as DType::Int64");
  });
}

}  // namespace

Generator& default_generator() {
  static Generator generator;
  return generator;
}

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(default_generator_mutex);
  default_generator() = Generator(seed);
}

// rand is uniform on [0, 1) and randn normal(0, 1): errors name uniform and normal.
Tensor uniform(const Shape& shape, double low, double high, DType dtype, Device device,
               Generator* gen) {
  check_floating_dtype("uniform", dtype);
  check_finite("uniform", "low", low);
  check_finite("uniform", "high", high);
  if (low > high)
    throw ValueError("uniform", "low (" + std::to_string(low) + ") is greater than high (" +
                                    std::to_string(high) + "); expected low <= high");
  Tensor out = Tensor::empty(shape, dtype, device, "uniform");
  auto kernel = uniform_kernel(device);
  PhiloxStream stream = draw(gen);
  if (out.numel() > 0) kernel(out, low, high, stream);
  return out;
}

Tensor rand(const Shape& shape, DType dtype, Device device, Generator* gen) {
  return uniform(shape, 0.0, 1.0, dtype, device, gen);
}

Tensor normal(const Shape& shape, double mean, double std, DType dtype, Device device,
              Generator* gen) {
  check_floating_dtype("normal", dtype);
  check_finite("normal", "mean", mean);
  check_finite("normal", "std", std);
  if (std < 0) throw ValueError("normal", "std is " + std::to_string(std) + "; it must be >= 0");
  Tensor out = Tensor::empty(shape, dtype, device, "normal");
  auto kernel = normal_kernel(device);
  PhiloxStream stream = draw(gen);
  if (out.numel() > 0) kernel(out, mean, std, stream);
  return out;
}

Tensor randn(const Shape& shape, DType dtype, Device device, Generator* gen) {
  return normal(shape, 0.0, 1.0, dtype, device, gen);
}

Tensor bernoulli(const Tensor& probs, Generator* gen) {
  check_defined("bernoulli", {{"probs", probs}});
  check_floating("bernoulli", {{"probs", probs}});
  Tensor out = Tensor::empty(probs.shape(), probs.dtype(), probs.device(), "bernoulli");
  auto kernel = bernoulli_kernel(probs.device());
  PhiloxStream stream = draw(gen);
  if (out.numel() > 0) kernel(probs.contiguous(), out, stream);
  return out;
}

Tensor bernoulli(const Shape& shape, double p, DType dtype, Device device, Generator* gen) {
  if (!(p >= 0 && p <= 1))
    throw ValueError("bernoulli", "p is " + std::to_string(p) + "; expected 0 <= p <= 1");
  Tensor out = Tensor::empty(shape, dtype, device, "bernoulli");
  Tensor one_p = Tensor::empty({}, DType::Float64, device, "bernoulli").fill_(p);
  auto kernel = bernoulli_kernel(device);
  PhiloxStream stream = draw(gen);
  if (out.numel() > 0) kernel(one_p, out, stream);
  return out;
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype, Device device,
               Generator* gen) {
  if (low >= high)
    throw ValueError("randint", "low (" + std::to_string(low) + ") must be less than high (" +
                                    std::to_string(high) + "): values are drawn from [low, high)");
  check_holds("randint", dtype, low, high - 1);
  Tensor out = Tensor::empty(shape, dtype, device, "randint");
  auto kernel = randint_kernel(device);
  PhiloxStream stream = draw(gen);
  if (out.numel() > 0) kernel(out, low, high, stream);
  return out;
}

Tensor randperm(int64_t n, DType dtype, Device device, Generator* gen) {
  if (n < 0) throw ValueError("randperm", "n is " + std::to_string(n) + "; it must be >= 0");
  check_holds("randperm", dtype, 0, n > 0 ? n - 1 : 0);
  Tensor out = Tensor::empty({n}, DType::Int64, device, "randperm");
  auto kernel = randperm_kernel(device);
  PhiloxStream stream = draw(gen);
  if (n > 0) kernel(out, stream);
  return out.to(dtype);
}

// Draw into a fresh tensor and copy it in, so that t may be any view.
const Tensor& uniform_(const Tensor& t, double low, double high, Generator* gen) {
  check_defined("uniform_", {{"t", t}});
  Tensor values = uniform(t.shape(), low, high, t.dtype(), t.device(), gen);
  Tensor(t).copy_(values);
  return t;
}

const Tensor& normal_(const Tensor& t, double mean, double std, Generator* gen) {
  check_defined("normal_", {{"t", t}});
  Tensor values = normal(t.shape(), mean, std, t.dtype(), t.device(), gen);
  Tensor(t).copy_(values);
  return t;
}

}  // namespace ember
