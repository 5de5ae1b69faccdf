// device.h — where a tensor lives: the CPU or CUDA device N.
#pragma once
#include <string>

namespace ember {

enum class DeviceType : int { CPU = 0, CUDA = 1 };
constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  Device() = default;
  Device(DeviceType t, int i = 0) : type(t), index(i) {}     // NOLINT: Device d = DeviceType::CPU
  Device(const char* spec);                                  // NOLINT: "cpu", "cuda", "cuda:1"
  Device(const std::string& spec) : Device(spec.c_str()) {}  // NOLINT

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  std::string str() const;  // "cpu", "cuda:0"
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

// Whether CUDA support was compiled in, and how many GPUs the driver reports (0 without a
// driver or GPU: the library still loads and works on the CPU).
bool cuda_compiled();
int cuda_device_count();
bool cuda_is_available();

// Blocks until all queued work on the device (every stream) has finished, then throws the first
// error a device-side check reported meanwhile (see ember/cuda.h). A no-op on the CPU.
void synchronize(Device device = Device(DeviceType::CUDA, 0));

}  // namespace ember
