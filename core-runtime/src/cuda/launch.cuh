// launch.cuh — what every CUDA kernel file needs around its launches (internal header).
//
//   DeviceGuard guard(out.device());                  // make out's GPU the current one
//   my_kernel<<<blocks, threads, 0, stream(out.device())>>>(...);
//   check_launch("gelu", {&x, &out});                 // after every launch
//
// All of Ember's work on a GPU goes to the calling thread's current stream of the device,
// `stream(device)` (Ember's own unless a StreamGuard made another current; see stream.cu); never
// launch on the legacy default stream (stream 0) nor call synchronous cudaMemcpy/cudaMemset:
// Ember's streams are non-blocking, so work there would not be ordered with them. cuBLAS handles
// are pointed at the current stream with cublasSetStream. Kernels run asynchronously: a fault
// inside one surfaces at a later CUDA call, far from its cause, and a device-side check
// (device_error.cuh) at the next synchronising point. EMBER_CUDA_SYNC=1 (or
// set_cuda_sync_mode(true) in ember/cuda.h) makes check_launch wait for every kernel, so both are
// reported with the op that caused them.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>

#include "ember/device.h"
#include "ember/tensor.h"

namespace ember::cuda {

// Throws the Ember error for a failed CUDA call: OutOfMemoryError for cudaErrorMemoryAllocation,
// DeviceError otherwise, naming `op`, the call that failed and CUDA's own description.
[[noreturn]] void throw_cuda_error(cudaError_t err, const char* op, const char* call);

// EMBER_CUDA_CHECK(cudaMemcpyAsync(...), "copy_") — throws unless the call returned cudaSuccess.
#define EMBER_CUDA_CHECK(expr, op)                                   \
  do {                                                               \
    cudaError_t ember_cuda_err_ = (expr);                            \
    if (ember_cuda_err_ != cudaSuccess)                              \
      ::ember::cuda::throw_cuda_error(ember_cuda_err_, (op), #expr); \
  } while (0)

// Call after every kernel launch: reports a bad launch configuration at once and, in sync mode,
// waits for the kernel and reports any fault it caused, naming the op and its operands' shapes.
void check_launch(const char* op, const Tensor* const* operands, size_t count);
inline void check_launch(const char* op, std::initializer_list<const Tensor*> operands) {
  check_launch(op, operands.begin(), operands.size());
}

// The stream Ember queues the calling thread's work for device `index` on: its current stream.
cudaStream_t stream(int index);
inline cudaStream_t stream(Device device) { return stream(device.index); }

// Throws ValueError naming `op` when GPU `index`'s current stream is being captured into a CUDA
// graph (graph.cu): the caching allocator asks before handing out memory.
void check_not_capturing(int index, size_t nbytes, const char* op);

// Makes `index` the current GPU for this thread while in scope (kernels launch on the current
// GPU, and a stream can only take kernels of its own GPU), then restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index);
  explicit DeviceGuard(Device device) : DeviceGuard(device.index) {}
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  int current_ = 0;
};

// The device's properties (SM count, shared memory per block, ...), read once per device.
const cudaDeviceProp& properties(int index);

// Blocks for a grid-stride loop over `n` work items with `threads` threads per block: enough to
// cover n, but no more than the GPU holds at once (one "wave"); each thread then loops. Launching
// a million tiny blocks for a large tensor costs scheduling; a GPU-sized grid does not.
inline unsigned int grid_size(int64_t n, int threads, int device) {
  const cudaDeviceProp& p = properties(device);
  int64_t per_sm = std::max(1, p.maxThreadsPerMultiProcessor / threads);
  int64_t resident = int64_t(p.multiProcessorCount) * per_sm;
  int64_t needed = (n + threads - 1) / threads;
  return unsigned(std::clamp<int64_t>(needed, 1, resident));
}

}  // namespace ember::cuda
