// register_variant.cpp — the kernel families compiled once per instruction set (cpu/isa.h) fill
// their slots. CMake compiles this file with each of them too, so that every instruction set has
// its ember::cpu::<isa>::register_variant_kernels.
#include "cpu/isa.h"
#include "kernels.h"

namespace ember::cpu::EMBER_CPU_ISA {
void register_copy_fill(KernelTable& table);
void register_elementwise(KernelTable& table);
void register_reduction(KernelTable& table);
void register_softmax_loss(KernelTable& table);
void register_conv_pool(KernelTable& table);
void register_normalization(KernelTable& table);
void register_optimizer(KernelTable& table);
void register_creation(KernelTable& table);
void register_attention(KernelTable& table);

void register_variant_kernels(KernelTable& table) {
  register_copy_fill(table);
  register_elementwise(table);
  register_reduction(table);
  register_softmax_loss(table);
  register_conv_pool(table);
  register_normalization(table);
  register_optimizer(table);
  register_creation(table);
  register_attention(table);
}
}  // namespace ember::cpu::EMBER_CPU_ISA
