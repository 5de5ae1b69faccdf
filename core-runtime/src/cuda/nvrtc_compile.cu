// nvrtc_compile.cu — the CUDA half of ember/jit.h: NVRTC compiles generated CUDA source to a
// cubin (or PTX) for one compute capability, the disk cache keeps it, and the CUDA runtime's
// library API (cudaLibraryLoadData) loads it for a launch on Ember's current stream. NVRTC needs
// no GPU to compile for a named architecture; only sm = 0 (the current device's) asks the driver.
#include <nvrtc.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/launch.cuh"
#include "ember/error.h"
#include "jit/disk_cache.h"
#include "jit/status.h"

namespace ember::jit {
namespace {

std::mutex g_mutex;
std::map<std::string, CudaCompile> g_compiled;  // key -> image or failure
std::map<std::string, const void*> g_kernels;   // hash of image + entry -> cudaKernel_t
std::vector<cudaLibrary_t> g_libraries;         // kept loaded for the process

int current_capability() {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess)
    return 0;
  return major * 10 + minor;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

CudaCompile run_nvrtc(const std::string& source, const std::vector<std::string>& options,
                      bool ptx) {
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, source.c_str(), "ember_fused.cu", 0, nullptr, nullptr) !=
      NVRTC_SUCCESS)
    return failure<CudaCompile>(Status::CompileFailed, "NVRTC could not create a program");
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  const nvrtcResult compiled = nvrtcCompileProgram(program, int(argv.size()), argv.data());
  CudaCompile result;
  if (compiled != NVRTC_SUCCESS) {
    size_t size = 0;
    nvrtcGetProgramLogSize(program, &size);
    std::string log(size, '\0');
    nvrtcGetProgramLog(program, log.data());
    result = failure<CudaCompile>(Status::CompileFailed, std::string("NVRTC failed (") +
                                                             nvrtcGetErrorString(compiled) +
                                                             "): " + log.substr(0, 2000));
  } else {
    size_t size = 0;
    if (ptx) {
      nvrtcGetPTXSize(program, &size);
      result.image.resize(size);
      nvrtcGetPTX(program, result.image.data());
    } else {
      nvrtcGetCUBINSize(program, &size);
      result.image.resize(size);
      nvrtcGetCUBIN(program, result.image.data());
    }
  }
  nvrtcDestroyProgram(&program);
  return result;
}

}  // namespace

bool nvrtc_available() { return true; }

CudaCompile compile_cuda(const std::string& source, int sm, bool ptx) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!enabled()) return failure<CudaCompile>(Status::Disabled, "EMBER_FUSION=0 turns it off");
  if (sm == 0) sm = current_capability();
  if (sm == 0) return failure<CudaCompile>(Status::NoCompiler, "no CUDA device to compile for");
  // Real architecture for a cubin, virtual for PTX. -default-device: every function without a
  // qualifier is a device function, so the renderer's helpers need none.
  const std::vector<std::string> options{(ptx ? "--gpu-architecture=compute_"
                                              : "--gpu-architecture=sm_") +
                                             std::to_string(sm),
                                         "-std=c++17", "-default-device", "-w"};
  std::string key = "cuda\nnvrtc " + nvrtc_version() + "\n";
  for (const std::string& o : options) key += o + " ";
  key += "\n" + source;
  if (auto found = g_compiled.find(key); found != g_compiled.end()) {
    CudaCompile hit = found->second;
    hit.from_cache = hit.status == Status::Ok;
    return hit;
  }
  const char* kind = ptx ? "ptx" : "cubin";
  const CacheFolder cache = open_cache_folder();
  CudaCompile result;
  if (std::optional<std::string> stored =
          cache.path.empty() ? std::nullopt : cache_load(cache.path, key, kind)) {
    result.image = std::move(*stored);
    result.from_cache = true;
  } else {
    result = run_nvrtc(source, options, ptx);
    if (result.status == Status::Ok && !cache.path.empty())
      cache_store(cache.path, key, kind, result.image);
  }
  g_compiled[key] = result;
  return result;
}

CudaKernel load_cuda(const std::string& image, const std::string& entry) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const std::string id = hex64(fnv1a64(image)) + "/" + std::to_string(image.size()) + "/" + entry;
  if (auto found = g_kernels.find(id); found != g_kernels.end()) return {found->second};
  cudaLibrary_t library = nullptr;
  EMBER_CUDA_CHECK(cudaLibraryLoadData(&library, image.data(), nullptr, nullptr, 0, nullptr,
                                       nullptr, 0),
                   "fused kernel");
  g_libraries.push_back(library);
  cudaKernel_t kernel = nullptr;
  EMBER_CUDA_CHECK(cudaLibraryGetKernel(&kernel, library, entry.c_str()), "fused kernel");
  g_kernels[id] = kernel;
  return {kernel};
}

void launch_cuda(const CudaKernel& kernel, int device, const CudaPointers& pointers,
                 int64_t items) {
  if (items <= 0) return;
  if (!kernel.handle)
    throw ValueError("jit::launch_cuda", "the kernel was not loaded; call jit::load_cuda first");
  cuda::DeviceGuard guard(device);
  constexpr int kThreads = 256;
  CudaPointers arguments = pointers;
  int64_t count = items;
  void* parameters[] = {&arguments, &count};
  EMBER_CUDA_CHECK(cudaLaunchKernel(kernel.handle, dim3(cuda::grid_size(items, kThreads, device)),
                                    dim3(kThreads), parameters, 0, cuda::stream(device)),
                   "fused kernel");
  cuda::check_launch("fused kernel", {});
}

void forget_loaded_cuda_images() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_compiled.clear();
}

}  // namespace ember::jit
