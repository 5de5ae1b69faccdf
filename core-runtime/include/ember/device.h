// device.h — where a tensor lives: device N of one of the backends listed in ember/backends.def
// (the CPU, CUDA GPU N).
#pragma once
#include <iterator>
#include <string>

namespace ember {

// One enumerator per line of backends.def: CPU = 0, CUDA = 1.
enum class DeviceType : int {
#define EMBER_BACKEND(type, name) type,
#include "ember/backends.def"
#undef EMBER_BACKEND
};

// "cpu", "cuda", ...: each device type's name, indexed by DeviceType.
inline constexpr const char* kDeviceTypeNames[] = {
#define EMBER_BACKEND(type, name) #name,
#include "ember/backends.def"
#undef EMBER_BACKEND
};
constexpr int kNumDeviceTypes = int(std::size(kDeviceTypeNames));

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  Device() = default;
  Device(DeviceType t, int i = 0) : type(t), index(i) {}  // NOLINT: Device d = DeviceType::CPU
  Device(const char* spec);  // NOLINT: "cpu", "cuda", "cuda:1": a backends.def name[:N]
  Device(const std::string& spec) : Device(spec.c_str()) {}  // NOLINT

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  std::string str() const;  // "cpu", "cuda:0"
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

// Whether the backend of `type` was compiled in, and how many devices it reports (0 when it was
// not, or when it finds none: a CUDA build on a machine without a GPU).
bool backend_compiled(DeviceType type);
int device_count(DeviceType type);

// Whether CUDA support was compiled in, and how many GPUs the driver reports (0 without a
// driver or GPU: the library still loads and works on the CPU).
bool cuda_compiled();
int cuda_device_count();
bool cuda_is_available();

// Blocks until all queued work on the device (every stream) has finished, then throws the first
// error a device-side check reported meanwhile (see ember/cuda.h). A no-op on the CPU.
void synchronize(Device device = Device(DeviceType::CUDA, 0));

}  // namespace ember
