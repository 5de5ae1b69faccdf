// random.cu — CUDA kernels of the random ops. Each thread computes whole Philox blocks and writes
// the kPerBlock elements each one yields, with the distributions the CPU uses
// (ops/random_kernels.h), so both devices produce the same numbers for a seed. randperm sorts
// random keys with CUB's radix sort, on the GPU.
#include "cuda/launch.cuh"
#include "cuda/sort_pairs.cuh"
#include "kernels.h"
#include "ops/random_kernels.h"

namespace ember::cuda {

constexpr int kThreads = 256;

// out[i] = dist(philox.block(i / K), i % K, i) for i < n, K = Dist::kPerBlock; one block b per
// thread and grid-stride iteration.
template <class T, class Dist>
__global__ void random_fill(T* out, int64_t n, PhiloxStream philox, Dist dist) {
  constexpr int K = Dist::kPerBlock;
  const int64_t blocks = (n + K - 1) / K;
  for (int64_t b = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; b < blocks;
       b += int64_t(blockDim.x) * gridDim.x) {
    const Philox4 r = philox.block(uint64_t(b));
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const int64_t i = b * K + j;
      if (i < n) out[i] = dist(r, j, i);
    }
  }
}

// Launches random_fill over out's n elements on out's GPU.
template <class T, class Dist>
void launch_fill(const char* op, const Tensor& out, T* data, int64_t n, PhiloxStream s,
                 const Dist& dist) {
  DeviceGuard guard(out.device());
  const int64_t blocks = (n + Dist::kPerBlock - 1) / Dist::kPerBlock;
  unsigned grid = grid_size(blocks, kThreads, out.device().index);
  random_fill<<<grid, kThreads, 0, stream(out.device())>>>(data, n, s, dist);
  check_launch(op, {&out});
}

// out: [*] contiguous, floating.
static void uniform(Tensor& out, double low, double high, PhiloxStream philox) {
  dispatch_floating(out.dtype(), "uniform", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_fill("uniform", out, out.data<T>(), out.numel(), philox,
                UniformDist<T>{low, high - low});
  });
}

// out: [*] contiguous, floating.
static void normal(Tensor& out, double mean, double std, PhiloxStream philox) {
  dispatch_floating(out.dtype(), "normal", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_fill("normal", out, out.data<T>(), out.numel(), philox, NormalDist<T>{mean, std});
  });
}

// probs: contiguous floating, 1 or out.numel() elements; out: [*] contiguous.
static void bernoulli(const Tensor& probs, Tensor& out, PhiloxStream philox) {
  dispatch_floating(probs.dtype(), "bernoulli", [&](auto ptag) {
    using P = typename decltype(ptag)::type;
    dispatch_all(out.dtype(), "bernoulli", [&](auto tag) {
      using T = typename decltype(tag)::type;
      BernoulliDist<T, P> dist{probs.data<P>(), probs.numel() == 1};
      launch_fill("bernoulli", out, out.data<T>(), out.numel(), philox, dist);
    });
  });
}

// out: [*] contiguous, numeric.
static void randint(Tensor& out, int64_t low, int64_t high, PhiloxStream philox) {
  dispatch_numeric(out.dtype(), "randint", [&](auto tag) {
    using T = typename decltype(tag)::type;
    RandintDist<T> dist{low, uint64_t(high) - uint64_t(low)};
    launch_fill("randint", out, out.data<T>(), out.numel(), philox, dist);
  });
}

// out: [n] int64. Radix-sorts (key, index) pairs by key; the sort is stable, so equal keys stay
// in index order, as on the CPU.
static void randperm(Tensor& out, PhiloxStream philox) {
  const int64_t n = out.numel();
  const Device device = out.device();
  DeviceGuard guard(device);
  // uint64 keys live in int64 tensors, as Ember has no uint64 dtype.
  Tensor keys = Tensor::empty({n}, DType::Int64, device, "randperm");
  Tensor sorted_keys = Tensor::empty({n}, DType::Int64, device, "randperm");
  auto* k_in = static_cast<uint64_t*>(keys.data_ptr());
  auto* k_out = static_cast<uint64_t*>(sorted_keys.data_ptr());
  launch_fill("randperm", out, k_in, n, philox, KeyDist{});
  sort_with_positions(k_in, k_out, out.data<int64_t>(), n, device, "randperm");
  check_launch("randperm", {&out});
}

void register_random(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/random.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cuda
