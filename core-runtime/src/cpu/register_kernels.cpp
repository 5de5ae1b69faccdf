// register_kernels.cpp — the CPU backend's kernel list: each family fills its slots of the
// backend's KernelTable (kernels.h), which tests/test_backend_contract.cpp checks complete. The
// hot families come in one copy per instruction set (cpu/isa.h); the rest, bound by memory
// access or by BLAS, in one.
#include "cpu/cpu_isa.h"
#include "kernels.h"

namespace ember::cpu {
namespace baseline {
void register_variant_kernels(KernelTable& table);  // cpu/register_variant.cpp, once per ISA
void register_matmul(KernelTable& table);
void register_indexing(KernelTable& table);
void register_masking(KernelTable& table);
void register_resample(KernelTable& table);
void register_scan_sort(KernelTable& table);
void register_index_check(KernelTable& table);
}  // namespace baseline
#if EMBER_CPU_WITH_AVX2
namespace avx2 {
void register_variant_kernels(KernelTable& table);
}
#endif
#if EMBER_CPU_WITH_AVX512
namespace avx512 {
void register_variant_kernels(KernelTable& table);
}
#endif

void register_kernels(CpuIsa isa, KernelTable& table) {
  baseline::register_matmul(table);
  baseline::register_indexing(table);
  baseline::register_masking(table);
  baseline::register_resample(table);
  baseline::register_scan_sort(table);
  baseline::register_index_check(table);
  switch (isa) {
#if EMBER_CPU_WITH_AVX512
    case CpuIsa::avx512:
      avx512::register_variant_kernels(table);
      return;
#endif
#if EMBER_CPU_WITH_AVX2
    case CpuIsa::avx2:
      avx2::register_variant_kernels(table);
      return;
#endif
    default:
      baseline::register_variant_kernels(table);
  }
}

}  // namespace ember::cpu
