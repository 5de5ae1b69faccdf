// cpu_backend.cpp — the CPU backend: aligned host memory, memcpy, and its kernel table.
#include <cstdlib>
#include <cstring>
#include <memory>

#include "ember/backend.h"
#include "ember/error.h"
#include "kernels.h"

namespace ember {

void register_cpu_kernels(KernelTable& table);  // cpu/register_kernels.cpp

namespace {
class HostRawAllocator : public RawAllocator {
 public:
  void* allocate(size_t nbytes) override {
    // 64-byte alignment: a cache line, and enough for every SIMD width.
    return std::aligned_alloc(64, (nbytes + 63) / 64 * 64);
  }
  void deallocate(void* ptr) override { std::free(ptr); }
};

class CpuBackend : public Backend {
 public:
  CpuBackend() : allocator_(Device(DeviceType::CPU, 0), &raw_) { register_cpu_kernels(kernels_); }
  DeviceType type() const override { return DeviceType::CPU; }
  int device_count() const override { return 1; }
  CachingAllocator& allocator(int) override { return allocator_; }
  void copy_bytes(void* dst, Device, const void* src, Device, size_t n) override {
    std::memcpy(dst, src, n);
  }
  void synchronize(int) override {}
  const KernelTable& kernels() const override { return kernels_; }

 private:
  HostRawAllocator raw_;
  CachingAllocator allocator_;
  KernelTable kernels_;
};
}  // namespace

Backend& cpu_backend() {
  static CpuBackend* backend = new CpuBackend();  // never destroyed: tensors may outlive statics
  return *backend;
}

}  // namespace ember
