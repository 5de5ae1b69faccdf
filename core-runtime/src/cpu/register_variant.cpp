// register_variant.cpp — the kernel families compiled once per instruction set (cpu/isa.h, the
// PerIsa lines of kernels.def) fill their slots. CMake compiles this file with each of them too,
// so that every instruction set has its ember::cpu::<isa>::register_variant_kernels.
#include "cpu/isa.h"
#include "kernels.h"

namespace ember::cpu::EMBER_CPU_ISA {
// register_<family>, defined in cpu/<family>.cpp, for the PerIsa families.
#define EMBER_CPU_DECLARE_PerIsa(family) void register_##family(KernelTable& table);
#define EMBER_CPU_DECLARE_Once(family)
#define EMBER_KERNEL_FAMILY(family, cpu_copies) EMBER_CPU_DECLARE_##cpu_copies(family)
#include "kernels.def"
#undef EMBER_KERNEL_FAMILY

void register_variant_kernels(KernelTable& table) {
#define EMBER_CPU_REGISTER_PerIsa(family) register_##family(table);
#define EMBER_CPU_REGISTER_Once(family)
#define EMBER_KERNEL_FAMILY(family, cpu_copies) EMBER_CPU_REGISTER_##cpu_copies(family)
#include "kernels.def"
#undef EMBER_KERNEL_FAMILY
}
}  // namespace ember::cpu::EMBER_CPU_ISA
