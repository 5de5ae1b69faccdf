// device.cpp — parsing and printing devices; the backend registry.
#include "ember/device.h"

#include <climits>
#include <optional>
#include <string>

#include "core/parse.h"
#include "dispatch.h"
#include "ember/backend.h"
#include "ember/error.h"

namespace ember {

Backend& cpu_backend();  // cpu/cpu_backend.cpp
#ifdef EMBER_WITH_CUDA
Backend& cuda_backend();  // cuda/cuda_backend.cu
#endif

Device::Device(const char* spec) {
  std::string s(spec ? spec : "");
  std::string kind = s.substr(0, s.find(':'));
  if (kind == "cpu") {
    type = DeviceType::CPU;
  } else if (kind == "cuda") {
    type = DeviceType::CUDA;
  } else {
    throw ValueError("device", "unknown device '" + s + "'; expected 'cpu', 'cuda' or 'cuda:N'");
  }
  index = 0;
  if (s.find(':') != std::string::npos) {
    std::optional<int64_t> v = parse_decimal(s.substr(s.find(':') + 1), INT_MAX);
    if (!v)
      throw ValueError("device", "bad device index in '" + s +
                                     "'; expected 'cpu', 'cuda' or 'cuda:N' with N digits from 0 "
                                     "to " +
                                     std::to_string(INT_MAX) + ", e.g. 'cuda:0'");
    index = int(*v);
  }
}

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

bool cuda_compiled() {
#ifdef EMBER_WITH_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_device_count() {
#ifdef EMBER_WITH_CUDA
  return cuda_backend().device_count();
#else
  return 0;
#endif
}

bool cuda_is_available() { return cuda_device_count() > 0; }

Backend& backend_for(Device device, const char* op) {
  Backend* b = nullptr;
  if (device.is_cpu()) {
    b = &cpu_backend();
  } else {
#ifdef EMBER_WITH_CUDA
    b = &cuda_backend();
#else
    throw NotSupportedError(op, "device " + device.str() +
                                    " requested, but Ember was built without CUDA; rebuild "
                                    "where nvcc is found, or use device 'cpu'");
#endif
  }
  if (device.index < 0 || device.index >= b->device_count())
    throw DeviceError(op, "device " + device.str() + " is not available (" +
                              std::to_string(b->device_count()) + " " +
                              (device.is_cpu() ? "cpu" : "cuda") +
                              " device(s) found); use an index below the count, or 'cpu'");
  return *b;
}

void ensure_backend(Device device, const char* op) { backend_for(device, op); }

void synchronize(Device device) {
  if (device.is_cpu()) return;
  Backend& b = backend_for(device, "synchronize");
  b.synchronize(device.index);
  b.check_errors(device.index);
}

}  // namespace ember
