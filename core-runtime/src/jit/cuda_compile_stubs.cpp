// cuda_compile_stubs.cpp — the CUDA half of ember/jit.h in a build without CUDA: NVRTC is not
// there, so compile_cuda reports NoCompiler and load_cuda and launch_cuda throw the
// NotSupportedError of a CUDA device. (Built with CUDA, they are in cuda/nvrtc_compile.cu.)
#if !EMBER_WITH_CUDA
#include "ember/backend.h"
#include "ember/error.h"
#include "jit/status.h"

namespace ember::jit {

bool nvrtc_available() { return false; }

CudaCompile compile_cuda(const std::string&, int, bool) {
  return failure<CudaCompile>(Status::NoCompiler,
                              "Ember was built without CUDA, so NVRTC is "
                              "not built in");
}

CudaKernel load_cuda(const std::string&, const std::string&) {
  throw NotSupportedError("jit::load_cuda", "Ember was built without CUDA");
}

void launch_cuda(const CudaKernel&, int device, const CudaPointers&, int64_t) {
  backend_for(Device(DeviceType::CUDA, device), "jit::launch_cuda");  // throws: no CUDA
  throw NotSupportedError("jit::launch_cuda", "Ember was built without CUDA");
}

void forget_loaded_cuda_images() {}

}  // namespace ember::jit
#endif
