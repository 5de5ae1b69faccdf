// copy_fill.cpp — CPU kernels for Tensor::copy_ (with dtype conversion) and Tensor::fill_.
#include "convert.h"
#include "kernels.h"

// From here on compiled for this file's instruction set; cpu/isa_begin.h says why the CPU
// backend's own headers come after it.
#include "cpu/isa_begin.h"
// The CPU backend's headers.
#include "cpu/loops.h"

namespace ember::cpu::EMBER_CPU_ISA {

static void copy(const Tensor& src, Tensor& dst) {
  dispatch_all(dst.dtype(), "copy_", [&](auto out_tag) {
    using Out = typename decltype(out_tag)::type;
    dispatch_all(src.dtype(), "copy_", [&](auto in_tag) {
      using In = typename decltype(in_tag)::type;
      cpu_map<Out, In>(dst, {src}, [](In x) { return convert<Out>(x); });
    });
  });
}

static void fill(Tensor& dst, double value) {
  dispatch_all(dst.dtype(), "fill_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = convert<T>(value);
    cpu_map<T>(dst, {}, [v]() { return v; });
  });
}

void register_copy_fill(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/copy_fill.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cpu::EMBER_CPU_ISA

#include "cpu/isa_end.h"
