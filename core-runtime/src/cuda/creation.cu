// creation.cu — CUDA kernels of the creation family: arange, linspace and eye fill a fresh
// contiguous output on the GPU, one element per thread in a grid-stride loop, with the formulas
// the CPU uses (ops/creation_kernels.h).
#include "cuda/launch.cuh"
#include "kernels.h"
#include "ops/creation_kernels.h"

namespace ember::cuda {

constexpr int kThreads = 256;

// out: [n].
template <class T>
__global__ void arange_fill(T* out, int64_t n, double start, double step, bool integral) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    out[i] = arange_value<T>(i, start, step, integral);
}

// out: [n], n >= 2.
template <class T> __global__ void linspace_fill(T* out, int64_t n, double start, double end) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x)
    out[i] = convert<T>(linspace_value(i, n, start, end));
}

// out: [n, m], already zero; writes the k = min(n, m) ones of the diagonal.
template <class T> __global__ void eye_diagonal(T* out, int64_t k, int64_t m) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < k;
       i += int64_t(blockDim.x) * gridDim.x)
    out[i * m + i] = convert<T>(1);
}

static void arange(Tensor& out, double start, double step, bool integral) {
  const int64_t n = out.numel();
  DeviceGuard guard(out.device());
  dispatch_numeric(out.dtype(), "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    unsigned grid = grid_size(n, kThreads, out.device().index);
    arange_fill<<<grid, kThreads, 0, stream(out.device())>>>(static_cast<T*>(out.data_ptr()), n,
                                                             start, step, integral);
  });
  check_launch("arange", {&out});
}

static void linspace(Tensor& out, double start, double end) {
  const int64_t n = out.numel();
  DeviceGuard guard(out.device());
  dispatch_numeric(out.dtype(), "linspace", [&](auto tag) {
    using T = typename decltype(tag)::type;
    unsigned grid = grid_size(n, kThreads, out.device().index);
    linspace_fill<<<grid, kThreads, 0, stream(out.device())>>>(static_cast<T*>(out.data_ptr()), n,
                                                               start, end);
  });
  check_launch("linspace", {&out});
}

static void eye(Tensor& out) {
  const int64_t n = out.size(0), m = out.size(1), k = std::min(n, m);
  DeviceGuard guard(out.device());
  // All-zero bytes are 0 in every dtype (false, 0, +0.0), so a memset clears any eye.
  EMBER_CUDA_CHECK(cudaMemsetAsync(out.data_ptr(), 0, size_t(out.nbytes()), stream(out.device())),
                   "eye");
  dispatch_all(out.dtype(), "eye", [&](auto tag) {
    using T = typename decltype(tag)::type;
    unsigned grid = grid_size(k, kThreads, out.device().index);
    eye_diagonal<<<grid, kThreads, 0, stream(out.device())>>>(static_cast<T*>(out.data_ptr()), k,
                                                              m);
  });
  check_launch("eye", {&out});
}

void register_creation(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/creation.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cuda
