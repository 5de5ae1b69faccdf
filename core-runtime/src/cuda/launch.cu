// launch.cu — CUDA error reporting, launch checks and the device guard.
#include <string>

#include "cuda/device_error.cuh"
#include "cuda/launch.cuh"
#include "ember/cuda.h"
#include "ember/error.h"

namespace ember::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* op, const char* call) {
  std::string what =
      std::string(cudaGetErrorName(err)) + " (" + cudaGetErrorString(err) + ") from " + call;
  if (err == cudaErrorMemoryAllocation)
    throw OutOfMemoryError(op, "the GPU is out of memory: " + what +
                                   ". Reduce the batch size, free tensors, or call empty_cache()");
  // A fault inside a kernel (bad address, failed device assert) surfaces at whatever CUDA call
  // comes next, and leaves the CUDA context unusable: the process has to restart.
  bool kernel_fault = err == cudaErrorIllegalAddress || err == cudaErrorMisalignedAddress ||
                      err == cudaErrorLaunchFailure || err == cudaErrorAssert ||
                      err == cudaErrorIllegalInstruction || err == cudaErrorLaunchTimeout;
  std::string hint;
  if (kernel_fault) {
    hint = ". The CUDA context is now unusable: restart the process";
    if (!cuda_sync_mode())
      hint +=
          ". Kernels run asynchronously, so an earlier op may have caused this: rerun with "
          "EMBER_CUDA_SYNC=1 to name it";
  }
  throw DeviceError(op, "CUDA error " + what + hint);
}

void check_launch(const char* op, const Tensor* const* operands, size_t count) {
  cudaError_t err = cudaGetLastError();  // a bad configuration (grid, shared memory) shows here
  if (err == cudaSuccess && cuda_sync_mode() && count > 0) {
    err = cudaStreamSynchronize(stream(operands[0]->device()));
    // A deferred error (an index out of range) is then reported at the op that found it.
    if (err == cudaSuccess) check_device_errors(operands[0]->device().index);
  }
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
