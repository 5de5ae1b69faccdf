// cuda.cpp — the public CUDA controls of ember/cuda.h, in CUDA and CPU-only builds alike.
#include "ember/cuda.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "ember/backend.h"

namespace ember {

#if EMBER_WITH_CUDA
namespace cuda {
void* stream_handle(int index);  // cuda/cuda_backend.cu
}
#endif

namespace {
std::atomic<bool>& sync_mode_flag() {
  static std::atomic<bool> flag{[] {
    const char* env = std::getenv("EMBER_CUDA_SYNC");
    return env && std::strcmp(env, "0") != 0 && *env != '\0';
  }()};
  return flag;
}
std::atomic<bool>& tf32_flag() {
  static std::atomic<bool> flag{[] {
    const char* env = std::getenv("EMBER_ALLOW_TF32");
    return env && std::strcmp(env, "1") == 0;
  }()};
  return flag;
}
}  // namespace

void* cuda_current_stream(int index) {
  // Throws the usual NotSupportedError / DeviceError when there is no such device.
  backend_for(Device(DeviceType::CUDA, index), "cuda_current_stream");
#if EMBER_WITH_CUDA
  return cuda::stream_handle(index);
#else
  return nullptr;  // not reached: backend_for has thrown
#endif
}

void set_cuda_sync_mode(bool on) { sync_mode_flag().store(on, std::memory_order_relaxed); }
bool cuda_sync_mode() { return sync_mode_flag().load(std::memory_order_relaxed); }
void set_allow_tf32(bool on) { tf32_flag().store(on, std::memory_order_relaxed); }
bool allow_tf32() { return tf32_flag().load(std::memory_order_relaxed); }

}  // namespace ember
