// cpu_backend.cpp — the CPU backend: aligned host memory, memcpy, and its kernel registrations.
#include <cstdlib>
#include <cstring>
#include <memory>

#include "ember/backend.h"
#include "ember/error.h"

namespace ember {

void register_cpu_kernels();  // cpu/register_kernels.cpp

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
  CpuBackend() : allocator_(Device(DeviceType::CPU, 0), &raw_) {}
  DeviceType type() const override { return DeviceType::CPU; }
  int device_count() const override { return 1; }
  CachingAllocator& allocator(int) override { return allocator_; }
  void copy_bytes(void* dst, Device, const void* src, Device, size_t n) override {
    std::memcpy(dst, src, n);
  }
  void synchronize(int) override {}
  void register_kernels() override { register_cpu_kernels(); }

 private:
  HostRawAllocator raw_;
  CachingAllocator allocator_;
};
}  // namespace

Backend& cpu_backend() {
  static CpuBackend* backend = [] {
    auto* b = new CpuBackend();  // never destroyed: tensors may outlive static destructors
    b->register_kernels();
    return b;
  }();
  return *backend;
}

}  // namespace ember
