// cpu_backend.cpp — the CPU backend: aligned host memory, memcpy, and its kernel tables, one per
// instruction set this CPU runs (cpu/cpu_isa.h), of which one is in use.
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "cpu/cpu_isa.h"
#include "ember/backend.h"
#include "ember/cpu.h"
#include "ember/error.h"
#include "kernels.h"

namespace ember {

using cpu::CpuIsa;

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
  CpuBackend() : allocator_(Device(DeviceType::CPU, 0), &raw_) {
    for (CpuIsa isa : cpu::kAllCpuIsas)
      if (cpu::cpu_isa_supported(isa)) cpu::register_kernels(isa, tables_[size_t(isa)]);
    use(cpu::initial_cpu_isa());
  }
  DeviceType type() const override { return DeviceType::CPU; }
  int device_count() const override { return 1; }
  CachingAllocator& allocator(int) override { return allocator_; }
  void copy_bytes(void* dst, Device, const void* src, Device, size_t n) override {
    std::memcpy(dst, src, n);
  }
  void synchronize(int) override {}
  const KernelTable& kernels() const override {
    return tables_[size_t(isa_.load(std::memory_order_relaxed))];
  }

  CpuIsa isa() const { return isa_.load(std::memory_order_relaxed); }
  // Every table is filled before the backend is first returned, so switching is one store.
  void use(CpuIsa isa) { isa_.store(isa, std::memory_order_relaxed); }

 private:
  HostRawAllocator raw_;
  CachingAllocator allocator_;
  std::array<KernelTable, std::size(cpu::kAllCpuIsas)> tables_;
  std::atomic<CpuIsa> isa_{CpuIsa::baseline};
};

CpuBackend& the_cpu_backend() {
  static CpuBackend* backend = new CpuBackend();  // never destroyed: tensors may outlive statics
  return *backend;
}
}  // namespace

Backend& cpu_backend() { return the_cpu_backend(); }

std::string cpu_isa() { return cpu::cpu_isa_name(the_cpu_backend().isa()); }

std::vector<std::string> available_cpu_isas() {
  std::vector<std::string> names;
  for (CpuIsa isa : cpu::kAllCpuIsas)
    if (cpu::cpu_isa_supported(isa)) names.push_back(cpu::cpu_isa_name(isa));
  return names;
}

void set_cpu_isa(const std::string& name) {
  the_cpu_backend().use(cpu::parse_cpu_isa(name, "set_cpu_isa"));
}

}  // namespace ember
