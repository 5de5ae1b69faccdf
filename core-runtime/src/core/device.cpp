// device.cpp — parsing and printing devices, whose names are those of ember/backends.def.
#include "ember/device.h"

#include <climits>
#include <optional>
#include <string>

#include "core/parse.h"
#include "ember/backend.h"
#include "ember/error.h"

namespace ember {

namespace {
// "'cpu', 'cuda' or 'cuda:N'": every way of writing a device, for error messages.
std::string device_spellings() {
  std::string s;
  for (int t = 0; t < kNumDeviceTypes; ++t) {
    const std::string name = kDeviceTypeNames[t];
    if (!s.empty()) s += ", ";
    s += "'" + name + "'";
    if (DeviceType(t) == DeviceType::CPU) continue;
    s += (t + 1 == kNumDeviceTypes ? " or '" : ", '") + name + ":N'";
  }
  return s;
}
}  // namespace

Device::Device(const char* spec) {
  const std::string s(spec ? spec : "");
  const size_t colon = s.find(':');
  const std::string kind = s.substr(0, colon);
  int t = 0;
  while (t < kNumDeviceTypes && kind != kDeviceTypeNames[t]) ++t;
  if (t == kNumDeviceTypes)
    throw ValueError("device", "unknown device '" + s + "'; expected " + device_spellings());
  type = DeviceType(t);
  index = 0;
  if (colon == std::string::npos) return;
  std::optional<int64_t> v = parse_decimal(s.substr(colon + 1), INT_MAX);
  if (!v)
    throw ValueError("device", "bad device index in '" + s + "'; expected " + device_spellings() +
                                   " with N digits from 0 to " + std::to_string(INT_MAX) +
                                   ", e.g. '" + kind + ":0'");
  index = int(*v);
}

std::string Device::str() const {
  const std::string name = kDeviceTypeNames[int(type)];
  return is_cpu() ? name : name + ":" + std::to_string(index);
}

bool backend_compiled(DeviceType type) { return find_backend(type) != nullptr; }

int device_count(DeviceType type) {
  Backend* b = find_backend(type);
  return b ? b->device_count() : 0;
}

bool cuda_compiled() { return backend_compiled(DeviceType::CUDA); }
int cuda_device_count() { return device_count(DeviceType::CUDA); }
bool cuda_is_available() { return cuda_device_count() > 0; }

}  // namespace ember
