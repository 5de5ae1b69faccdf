// backend.h — the contract a device backend fulfils: device count, an allocator per device, byte
// copies to and from the host, synchronisation, and its table of op kernels. CPU and CUDA are two
// implementations. A third (say, Metal) adds, and changes nothing above it:
//   - a folder src/metal/: a Backend subclass, `Backend& metal_backend()` returning the one
//     instance, and a kernel per slot of src/kernels.def, filled into the backend's KernelTable
//     by its register functions (`table.unary_kernel = &unary;`);
//   - one registration line, `EMBER_BACKEND(Metal, metal)`, at the end of ember/backends.def: the
//     DeviceType enumerator, the device name "metal:N" and the tests' device list follow from it;
//   - one entry in CMakeLists.txt, `ember_backend(metal ...)`, which compiles the folder.
// Front functions, device parsing, Tensor::copy_ (between two backends through host memory) and
// the tests need no edit; tests/test_backend_contract.cpp checks that every slot is filled.
#pragma once
#include <cstddef>

#include "ember/allocator.h"
#include "ember/device.h"

namespace ember {

struct KernelTable;  // src/kernels.h: one function pointer per line of src/kernels.def

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceType type() const = 0;
  virtual int device_count() const = 0;
  virtual CachingAllocator& allocator(int index) = 0;
  // Copies n bytes between two buffers, each on one of this backend's devices or on the CPU. On
  // return src may be overwritten or freed, and a dst on the CPU holds the bytes; a copy to one
  // of the backend's devices may still be running there, ahead of that device's later work.
  virtual void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device,
                          size_t n) = 0;
  // Page-locked ("pinned") host memory, which this backend's devices copy from directly and
  // asynchronously (Tensor::pin_memory); null where the backend has none, or no device here.
  virtual CachingAllocator* pinned_allocator() { return nullptr; }
  // Queues a copy of n bytes from src, in pinned_allocator()'s memory, to dst on one of this
  // backend's devices, on that device's current stream, and returns without waiting for it. The
  // caller leaves src unchanged until the copy has run (later work on that stream sees dst); the
  // block src lies in is not handed out again before then, even if freed. By default: copy_bytes.
  virtual void copy_from_pinned_async(void* dst, Device dst_device, const void* src, size_t n) {
    copy_bytes(dst, dst_device, src, Device(), n);
  }
  virtual void synchronize(int index) = 0;
  // This backend's kernels, every slot filled before the backend is first returned.
  virtual const KernelTable& kernels() const = 0;
  // Throws the first error a device-side check has reported since the last call (an index out of
  // range found by a kernel), then clears it; see ember/cuda.h. The CPU checks at once: no-op.
  virtual void check_errors(int index) {}
};

// The backend of a device type; throws NotSupportedError when it was not compiled in and
// DeviceError when the device index is not present.
Backend& backend_for(Device device, const char* op = "");

// The backend of a device type, or null when it was not compiled in.
Backend* find_backend(DeviceType type);

// Copies n bytes from src on src_device (held by src_backend) to dst on dst_device (dst_backend):
// one backend's copy_bytes when both devices belong to it or one side is the CPU, else through
// host memory (src's backend copies to the host, dst's from it), allocated in the name of `op`.
void copy_bytes_between(Backend& dst_backend, void* dst, Device dst_device, Backend& src_backend,
                        const void* src, Device src_device, size_t n, const char* op);

}  // namespace ember
