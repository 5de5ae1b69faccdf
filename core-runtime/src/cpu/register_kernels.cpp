// register_kernels.cpp — the CPU backend's kernel list: each family of kernels.def fills its slots
// of the backend's KernelTable (kernels.h), which tests/test_backend_contract.cpp checks complete.
// The hot families (PerIsa) come in one copy per instruction set (cpu/isa.h,
// cpu/register_variant.cpp); the rest (Once), bound by memory access or by BLAS, in one.
#include "cpu/cpu_isa.h"
#include "kernels.h"

namespace ember::cpu {
namespace baseline {
void register_variant_kernels(KernelTable& table);  // cpu/register_variant.cpp, once per ISA
// register_<family>, defined in cpu/<family>.cpp, for the Once families.
#define EMBER_CPU_DECLARE_PerIsa(family)
#define EMBER_CPU_DECLARE_Once(family) void register_##family(KernelTable& table);
#define EMBER_KERNEL_FAMILY(family, cpu_copies) EMBER_CPU_DECLARE_##cpu_copies(family)
#include "kernels.def"
#undef EMBER_KERNEL_FAMILY
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
#define EMBER_CPU_REGISTER_PerIsa(family)
#define EMBER_CPU_REGISTER_Once(family) baseline::register_##family(table);
#define EMBER_KERNEL_FAMILY(family, cpu_copies) EMBER_CPU_REGISTER_##cpu_copies(family)
#include "kernels.def"
#undef EMBER_KERNEL_FAMILY
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
