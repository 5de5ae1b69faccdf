// backend.h — the contract a device backend fulfils: device count, an allocator per device, byte
// copies to/from the host, synchronisation, and filling the op kernel tables. CPU and CUDA are two
// implementations; another (say, Metal) would be a third, with nothing above this line changing.
#pragma once
#include <cstddef>

#include "ember/allocator.h"
#include "ember/device.h"

namespace ember {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceType type() const = 0;
  virtual int device_count() const = 0;
  virtual CachingAllocator& allocator(int index) = 0;
  // Copies n bytes between two buffers, each on this backend's device or on the CPU.
  virtual void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device,
                          size_t n) = 0;
  virtual void synchronize(int index) = 0;
  // Throws the first error a device-side check has reported since the last call (an index out of
  // range found by a kernel), then clears it; see ember/cuda.h. The CPU checks at once: no-op.
  virtual void check_errors(int index) {}
  // Fills this backend's slots of every op's kernel table; called once, on first use.
  virtual void register_kernels() = 0;
};

// The backend of a device type; throws NotSupportedError when it was not compiled in and
// DeviceError when the device index is not present.
Backend& backend_for(Device device, const char* op = "");

}  // namespace ember
