// backend.cpp — the registry of backends (one per line of ember/backends.def), the lookup every
// op goes through, and byte copies between any two devices.
#include "ember/backend.h"

#include <string>

#include "ember/error.h"
#include "ember/tensor.h"
#include "kernels.h"

namespace ember {

// Each backend's entry point, defined in its folder: Backend& cpu_backend(), ...
#define EMBER_BACKEND(type, name) Backend& name##_backend();
#include "ember/backends.def"
#undef EMBER_BACKEND

namespace {
// "CPU", "CUDA": the enumerators of backends.def, for messages about the build.
constexpr const char* kBackendNames[] = {
#define EMBER_BACKEND(type, name) #type,
#include "ember/backends.def"
#undef EMBER_BACKEND
};
}  // namespace

Backend* find_backend(DeviceType type) {
  // CMakeLists.txt's ember_backend() entries define EMBER_WITH_<Type>: 1 for a backend compiled
  // in, 0 for one left out. A function named only in a discarded `if constexpr` branch needs no
  // definition, so a left-out backend's entry point is never linked.
  switch (type) {
#define EMBER_BACKEND(type, name)                              \
  case DeviceType::type:                                       \
    if constexpr (EMBER_WITH_##type) return &name##_backend(); \
    else return nullptr;
#include "ember/backends.def"
#undef EMBER_BACKEND
  }
  return nullptr;  // not a DeviceType of backends.def
}

Backend& backend_for(Device device, const char* op) {
  Backend* b = find_backend(device.type);
  const int t = int(device.type);
  if (!b)
    throw NotSupportedError(op, "device " + device.str() +
                                    " requested, but Ember was built "
                                    "without " +
                                    kBackendNames[t] + "; rebuild with -DEMBER_ENABLE_" +
                                    kBackendNames[t] +
                                    "=ON where its toolchain is found, or use "
                                    "device 'cpu'");
  if (device.index < 0 || device.index >= b->device_count())
    throw DeviceError(op, "device " + device.str() + " is not available (" +
                              std::to_string(b->device_count()) + " " + kDeviceTypeNames[t] +
                              " device(s) found); use an index below the count, or 'cpu'");
  return *b;
}

void throw_no_kernel(const char* name, Device device) {
  throw NotSupportedError(name, "no kernel for device " + device.str() +
                                    "; move the operands to a device that supports it");
}

void copy_bytes_between(Backend& dst_backend, void* dst, Device dst_device, Backend& src_backend,
                        const void* src, Device src_device, size_t n, const char* op) {
  if (&dst_backend == &src_backend || src_device.is_cpu()) {
    dst_backend.copy_bytes(dst, dst_device, src, src_device, n);
  } else if (dst_device.is_cpu()) {
    src_backend.copy_bytes(dst, dst_device, src, src_device, n);
  } else {
    // Devices of two backends know nothing of each other's memory: stage in host memory, which
    // each backend copies to and from. copy_bytes returns once its src may be freed.
    Tensor host = Tensor::empty({int64_t(n)}, DType::UInt8, Device(), op);
    src_backend.copy_bytes(host.data_ptr(), host.device(), src, src_device, n);
    dst_backend.copy_bytes(dst, dst_device, host.data_ptr(), host.device(), n);
  }
}

void synchronize(Device device) {
  if (device.is_cpu()) return;
  Backend& b = backend_for(device, "synchronize");
  b.synchronize(device.index);
  b.check_errors(device.index);
}

}  // namespace ember
