// random.h — seeded random tensors from a counter-based generator (Philox4x32-10).
//
// Every op draws from a Generator: the one passed in, or the global default one (seeded with
// manual_seed). A Generator is a seed and an offset. Each op call draws the stream
// (seed, offset) and then increments the offset, and element i of its result is a pure function
// of (seed, offset, i). Hence:
// - the same seed gives the same tensors, call after call, however many threads compute them;
// - the CPU and CUDA kernels give bit-identical results for uniform/rand, bernoulli, randint and
//   randperm; normal/randn values agree to a few units in the last place (log, sin and cos
//   differ slightly between the host's and the GPU's math libraries);
// - streams depend on the dtype: float64 uses 53 random bits per uniform, 32- and 16-bit floats
//   use 24.
// A Generator is a plain value (copy it to replay a stream); it is not itself thread-safe. The
// default generator is guarded by a mutex.
#pragma once
#include <cstdint>

#include "ember/tensor.h"

namespace ember {

struct Generator {
  static constexpr uint64_t kDefaultSeed = 67280421310721ull;
  uint64_t seed = kDefaultSeed;
  uint64_t offset = 0;  // op calls drawn so far

  Generator() = default;
  explicit Generator(uint64_t seed) : seed(seed) {}
};

Generator& default_generator();
// Reseeds the default generator (offset back to 0).
void manual_seed(uint64_t seed);

// [shape] uniform on [low, high) (float16/bfloat16 may round up to high); floating dtypes.
Tensor uniform(const Shape& shape, double low, double high, DType dtype = DType::Float32,
               Device device = Device(), Generator* gen = nullptr);
Tensor rand(const Shape& shape, DType dtype = DType::Float32, Device device = Device(),
            Generator* gen = nullptr);  // uniform on [0, 1)
// [shape] normal with mean and standard deviation std (Box-Muller); floating dtypes.
Tensor normal(const Shape& shape, double mean, double std, DType dtype = DType::Float32,
              Device device = Device(), Generator* gen = nullptr);
Tensor randn(const Shape& shape, DType dtype = DType::Float32, Device device = Device(),
             Generator* gen = nullptr);  // normal(0, 1)
// probs [*] floating -> [*] of probs' dtype: 1 with probability probs[i], else 0.
// (Probabilities outside [0, 1] act as clamped to it.)
Tensor bernoulli(const Tensor& probs, Generator* gen = nullptr);
// [shape] of 1 with probability p (in [0, 1]) and 0 otherwise; any dtype.
Tensor bernoulli(const Shape& shape, double p, DType dtype = DType::Float32,
                 Device device = Device(), Generator* gen = nullptr);
// [shape] integers uniform on [low, high); any numeric dtype that holds high - 1.
Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype = DType::Int64,
               Device device = Device(), Generator* gen = nullptr);
// [n]: a uniformly random permutation of 0 .. n-1 (sorts n random 64-bit keys on the device).
Tensor randperm(int64_t n, DType dtype = DType::Int64, Device device = Device(),
                Generator* gen = nullptr);

// In place (for parameter initialisation): fill t with uniform / normal values; returns t.
const Tensor& uniform_(const Tensor& t, double low, double high, Generator* gen = nullptr);
const Tensor& normal_(const Tensor& t, double mean, double std, Generator* gen = nullptr);

// ---- outputs the caller provides ----
// Each op above has a form that draws into `out` and returns it, with the same arguments (and the
// same stream: the values equal the out-of-place form's). out must have exactly the result's
// shape, dtype and device (ShapeError, DTypeError, DeviceError; never resized or cast) and may be
// any strided view; bernoulli's out must not overlap probs (ValueError).
const Tensor& uniform_out(const Tensor& out, const Shape& shape, double low, double high,
                          DType dtype = DType::Float32, Device device = Device(),
                          Generator* gen = nullptr);
const Tensor& rand_out(const Tensor& out, const Shape& shape, DType dtype = DType::Float32,
                       Device device = Device(), Generator* gen = nullptr);
const Tensor& normal_out(const Tensor& out, const Shape& shape, double mean, double std,
                         DType dtype = DType::Float32, Device device = Device(),
                         Generator* gen = nullptr);
const Tensor& randn_out(const Tensor& out, const Shape& shape, DType dtype = DType::Float32,
                        Device device = Device(), Generator* gen = nullptr);
const Tensor& bernoulli_out(const Tensor& out, const Tensor& probs, Generator* gen = nullptr);
const Tensor& bernoulli_out(const Tensor& out, const Shape& shape, double p,
                            DType dtype = DType::Float32, Device device = Device(),
                            Generator* gen = nullptr);
const Tensor& randint_out(const Tensor& out, int64_t low, int64_t high, const Shape& shape,
                          DType dtype = DType::Int64, Device device = Device(),
                          Generator* gen = nullptr);
const Tensor& randperm_out(const Tensor& out, int64_t n, DType dtype = DType::Int64,
                           Device device = Device(), Generator* gen = nullptr);

}  // namespace ember
