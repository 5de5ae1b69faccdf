// random.cpp — front functions of the random ops: check the arguments, allocate the output, take
// the call's stream from the generator, run the device's kernel (ops/random_kernels.h).
#include "ember/ops/random.h"

#include <cmath>
#include <limits>
#include <mutex>
#include <string>

#include "kernels.h"
#include "ops/checks.h"
#include "ops/out.h"
#include "ops/random_kernels.h"
#include "ops/random_stream.h"

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

// Every op: check the arguments, take the output (given: the _out form's out; null: allocate),
// draw the call's stream, run the kernel (it writes contiguous outputs, see write_contiguous).
Tensor run_uniform(const Shape& shape, double low, double high, DType dtype, Device device,
                   Generator* gen, const Tensor* given) {
  check_floating_dtype("uniform", dtype);
  check_finite("uniform", "low", low);
  check_finite("uniform", "high", high);
  if (low > high)
    throw ValueError("uniform", "low (" + std::to_string(low) + ") is greater than high (" +
                                    std::to_string(high) + "); expected low <= high");
  Tensor out = output("uniform", given, shape, dtype, device, {});
  auto kernel = uniform_kernel(device);
  PhiloxStream stream = draw(gen);
  write_contiguous("uniform", out, [&](Tensor& dst) {
    if (dst.numel() > 0) kernel(dst, low, high, stream);
  });
  return out;
}

Tensor run_normal(const Shape& shape, double mean, double std, DType dtype, Device device,
                  Generator* gen, const Tensor* given) {
  check_floating_dtype("normal", dtype);
  check_finite("normal", "mean", mean);
  check_finite("normal", "std", std);
  if (std < 0) throw ValueError("normal", "std is " + std::to_string(std) + "; it must be >= 0");
  Tensor out = output("normal", given, shape, dtype, device, {});
  auto kernel = normal_kernel(device);
  PhiloxStream stream = draw(gen);
  write_contiguous("normal", out, [&](Tensor& dst) {
    if (dst.numel() > 0) kernel(dst, mean, std, stream);
  });
  return out;
}

Tensor run_bernoulli(const Tensor& probs, Generator* gen, const Tensor* given) {
  check_defined("bernoulli", {{"probs", probs}});
  check_floating("bernoulli", {{"probs", probs}});
  Tensor out =
      output("bernoulli", given, probs.shape(), probs.dtype(), probs.device(), {{"probs", probs}});
  auto kernel = bernoulli_kernel(probs.device());
  PhiloxStream stream = draw(gen);
  write_contiguous("bernoulli", out, [&](Tensor& dst) {
    if (dst.numel() > 0) kernel(probs.contiguous(), dst, stream);
  });
  return out;
}

Tensor run_bernoulli_p(const Shape& shape, double p, DType dtype, Device device, Generator* gen,
                       const Tensor* given) {
  if (!(p >= 0 && p <= 1))
    throw ValueError("bernoulli", "p is " + std::to_string(p) + "; expected 0 <= p <= 1");
  Tensor out = output("bernoulli", given, shape, dtype, device, {});
  Tensor one_p = Tensor::empty({}, DType::Float64, device, "bernoulli");
  one_p.fill_(p);
  auto kernel = bernoulli_kernel(device);
  PhiloxStream stream = draw(gen);
  write_contiguous("bernoulli", out, [&](Tensor& dst) {
    if (dst.numel() > 0) kernel(one_p, dst, stream);
  });
  return out;
}

Tensor run_randint(int64_t low, int64_t high, const Shape& shape, DType dtype, Device device,
                   Generator* gen, const Tensor* given) {
  if (low >= high)
    throw ValueError("randint", "low (" + std::to_string(low) + ") must be less than high (" +
                                    std::to_string(high) + "): values are drawn from [low, high)");
  check_holds("randint", dtype, low, high - 1);
  Tensor out = output("randint", given, shape, dtype, device, {});
  auto kernel = randint_kernel(device);
  PhiloxStream stream = draw(gen);
  write_contiguous("randint", out, [&](Tensor& dst) {
    if (dst.numel() > 0) kernel(dst, low, high, stream);
  });
  return out;
}

// The kernel permutes int64: another dtype, or a strided out, gets the int64 result copied in.
Tensor run_randperm(int64_t n, DType dtype, Device device, Generator* gen, const Tensor* given) {
  if (n < 0) throw ValueError("randperm", "n is " + std::to_string(n) + "; it must be >= 0");
  check_holds("randperm", dtype, 0, n > 0 ? n - 1 : 0);
  Tensor out = output("randperm", given, {n}, dtype, device, {});
  auto kernel = randperm_kernel(device);
  PhiloxStream stream = draw(gen);
  const bool direct = dtype == DType::Int64 && out.is_contiguous();
  Tensor perm = direct ? out : Tensor::empty({n}, DType::Int64, device, "randperm");
  if (n > 0) kernel(perm, stream);
  if (direct) out.bump_version();
  else out.copy_(perm);
  return out;
}

}  // namespace

PhiloxStream draw_stream(Generator* gen) { return draw(gen); }

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
  return run_uniform(shape, low, high, dtype, device, gen, nullptr);
}
const Tensor& uniform_out(const Tensor& out, const Shape& shape, double low, double high,
                          DType dtype, Device device, Generator* gen) {
  run_uniform(shape, low, high, dtype, device, gen, &out);
  return out;
}

Tensor rand(const Shape& shape, DType dtype, Device device, Generator* gen) {
  return run_uniform(shape, 0.0, 1.0, dtype, device, gen, nullptr);
}
const Tensor& rand_out(const Tensor& out, const Shape& shape, DType dtype, Device device,
                       Generator* gen) {
  run_uniform(shape, 0.0, 1.0, dtype, device, gen, &out);
  return out;
}

Tensor normal(const Shape& shape, double mean, double std, DType dtype, Device device,
              Generator* gen) {
  return run_normal(shape, mean, std, dtype, device, gen, nullptr);
}
const Tensor& normal_out(const Tensor& out, const Shape& shape, double mean, double std,
                         DType dtype, Device device, Generator* gen) {
  run_normal(shape, mean, std, dtype, device, gen, &out);
  return out;
}

Tensor randn(const Shape& shape, DType dtype, Device device, Generator* gen) {
  return run_normal(shape, 0.0, 1.0, dtype, device, gen, nullptr);
}
const Tensor& randn_out(const Tensor& out, const Shape& shape, DType dtype, Device device,
                        Generator* gen) {
  run_normal(shape, 0.0, 1.0, dtype, device, gen, &out);
  return out;
}

Tensor bernoulli(const Tensor& probs, Generator* gen) { return run_bernoulli(probs, gen, nullptr); }
const Tensor& bernoulli_out(const Tensor& out, const Tensor& probs, Generator* gen) {
  run_bernoulli(probs, gen, &out);
  return out;
}

Tensor bernoulli(const Shape& shape, double p, DType dtype, Device device, Generator* gen) {
  return run_bernoulli_p(shape, p, dtype, device, gen, nullptr);
}
const Tensor& bernoulli_out(const Tensor& out, const Shape& shape, double p, DType dtype,
                            Device device, Generator* gen) {
  run_bernoulli_p(shape, p, dtype, device, gen, &out);
  return out;
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype, Device device,
               Generator* gen) {
  return run_randint(low, high, shape, dtype, device, gen, nullptr);
}
const Tensor& randint_out(const Tensor& out, int64_t low, int64_t high, const Shape& shape,
                          DType dtype, Device device, Generator* gen) {
  run_randint(low, high, shape, dtype, device, gen, &out);
  return out;
}

Tensor randperm(int64_t n, DType dtype, Device device, Generator* gen) {
  return run_randperm(n, dtype, device, gen, nullptr);
}
const Tensor& randperm_out(const Tensor& out, int64_t n, DType dtype, Device device,
                           Generator* gen) {
  run_randperm(n, dtype, device, gen, &out);
  return out;
}

// In place: the _out forms with t as the output (any view; a strided one through a temporary).
const Tensor& uniform_(const Tensor& t, double low, double high, Generator* gen) {
  check_defined("uniform_", {{"t", t}});
  return uniform_out(t, t.shape(), low, high, t.dtype(), t.device(), gen);
}

const Tensor& normal_(const Tensor& t, double mean, double std, Generator* gen) {
  check_defined("normal_", {{"t", t}});
  return normal_out(t, t.shape(), mean, std, t.dtype(), t.device(), gen);
}

}  // namespace ember
