// workspace.h — scratch memory of CPU kernels, taken from the CPU's caching allocator so that the
// memory cap and the statistics see it (a std::vector would bypass both).
#pragma once
#include <cstdint>
#include <type_traits>

#include "cpu/isa.h"
#include "ember/tensor.h"

namespace ember::cpu::EMBER_CPU_ISA {

// `count` uninitialised elements of a trivial type T; an out-of-memory error names `op`.
template <class T> class Workspace {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  Workspace(int64_t count, const char* op)
      : bytes_(
            Tensor::empty({checked_size_mul(count, int64_t(sizeof(T)), op, "a workspace's bytes")},
                          DType::UInt8, Device(), op)) {}
  T* data() const { return static_cast<T*>(bytes_.data_ptr()); }  // 64-byte aligned
  T& operator[](int64_t i) const { return data()[i]; }

 private:
  Tensor bytes_;
};

}  // namespace ember::cpu::EMBER_CPU_ISA
