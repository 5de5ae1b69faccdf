// index_check.cpp — the CPU's index range check (contract in kernels.def): raises
// at once, naming the value the CPU path has always named (the smallest when it is negative,
// else the largest).
#include "cpu/isa.h"
#include "kernels.h"

namespace ember::cpu::EMBER_CPU_ISA {
namespace {

void index_check(const Tensor& index, int64_t low, int64_t limit, const DeferredError& error) {
  const IndexRange r = index_range_kernel(index.device())(index);
  if (r.min < low) error.raise(r.min);
  if (r.max >= limit) error.raise(r.max);
}

}  // namespace

void register_index_check(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/index_check.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cpu::EMBER_CPU_ISA
