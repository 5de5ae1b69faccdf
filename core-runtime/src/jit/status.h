// status.h — helpers shared by the CPU and CUDA halves of run-time compilation (internal header).
#pragma once
#include <string>

#include "ember/jit.h"

namespace ember::jit {

// A CpuCompile or CudaCompile that failed with `status` for `reason`.
template <class Result> Result failure(Status status, std::string reason) {
  Result result;
  result.status = status;
  result.reason = std::move(reason);
  return result;
}

// Drops the CUDA images this process compiled or loaded (cuda/nvrtc_compile.cu, or the stubs).
void forget_loaded_cuda_images();

}  // namespace ember::jit
