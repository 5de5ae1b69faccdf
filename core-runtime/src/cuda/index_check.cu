// index_check.cu — the CUDA index range check (contract in kernels/index_check.def): one pass
// over the index that reports a bad value to the device's error flag and never waits for it.
#include "cuda/device_error.cuh"
#include "cuda/launch.cuh"
#include "kernels.h"

namespace ember::cuda {
namespace {

constexpr int kThreads = 256;

// idx: [n]. Reports the first value found outside [low, limit).
__global__ void index_check_elements(const int64_t* idx, int64_t n, int64_t low, int64_t limit,
                                     DeviceErrorSink sink) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t v = idx[i];
    if (v < low || v >= limit) sink.report(v);
  }
}

void index_check(const Tensor& index, int64_t low, int64_t limit, const DeferredError& error) {
  const Device device = index.device();
  const DeviceErrorSink sink = arm_error(device, error, limit);
  DeviceGuard guard(device);
  index_check_elements<<<grid_size(index.numel(), kThreads, device.index), kThreads, 0,
                         stream(device)>>>(index.data<int64_t>(), index.numel(), low, limit, sink);
  check_launch(error.op, {&index});
}

}  // namespace

void register_index_check(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/index_check.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cuda
