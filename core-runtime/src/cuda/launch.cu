// launch.cu — CUDA error reporting, launch checks and the device guard.
#include "cuda/launch.cuh"

#include <string>

#include "ember/cuda.h"
#include "ember/error.h"

namespace ember::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* op, const char* call) {
  std::string what = std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) +
                     ") from " + call;
  if (err == cudaErrorMemoryAllocation)
    throw OutOfMemoryError(op, "the GPU is out of memory: " + what +
                                   ". Reduce the batch size, free tensors, or call empty_cache()");
  // Faults inside kernels (illegal address, misaligned access, assert) are "sticky": the CUDA
  // context is unusable afterwards, and they are reported by whatever call comes next.
  std::string hint = cuda_sync_mode()
                         ? ""
                         : ". Kernels run asynchronously, so the fault may come from an earlier "
                           "op: rerun with EMBER_CUDA_SYNC=1 to name it";
  throw Error(op, "CUDA error " + what + hint);
}

void check_launch(const char* op, const Tensor* const* operands, size_t count) {
  cudaError_t err = cudaGetLastError();  // a bad configuration (grid, shared memory) shows here
  if (err == cudaSuccess && cuda_sync_mode() && count > 0)
    err = cudaStreamSynchronize(stream(operands[0]->device()));
  if (err == cudaSuccess) return;
  std::string with;
  for (size_t i = 0; i < count; ++i) with += (i ? ", " : "") + describe(*operands[i]);
  throw_cuda_error(err, op, ("the kernel launched with operands " + with).c_str());
}

DeviceGuard::DeviceGuard(int index) : current_(index) {
  EMBER_CUDA_CHECK(cudaGetDevice(&previous_), "set device");
  if (previous_ != index) EMBER_CUDA_CHECK(cudaSetDevice(index), "set device");
}

DeviceGuard::~DeviceGuard() {
  if (previous_ != current_) cudaSetDevice(previous_);  // cannot fail: it was current before
}

}  // namespace ember::cuda
