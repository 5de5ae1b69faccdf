// creation.cpp — CPU kernels of the creation family: arange, linspace and eye write a fresh
// contiguous output, so each is a plain loop over it, split between threads.
#include "kernels.h"
#include "ops/creation_kernels.h"

// From here on compiled for this file's instruction set; cpu/isa_begin.h says why the CPU
// backend's own headers come after it.
#include "cpu/isa_begin.h"
// The CPU backend's headers.
#include "cpu/parallel.h"

namespace ember::cpu::EMBER_CPU_ISA {

// out: [n] contiguous.
static void arange(Tensor& out, double start, double step, bool integral) {
  dispatch_numeric(out.dtype(), "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.data_ptr());
    parallel_for(out.numel(), 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) p[i] = arange_value<T>(i, start, step, integral);
    });
  });
}

// out: [n] contiguous, n >= 2.
static void linspace(Tensor& out, double start, double end) {
  dispatch_numeric(out.dtype(), "linspace", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.data_ptr());
    const int64_t n = out.numel();
    parallel_for(n, 1, [&](int64_t begin, int64_t stop) {
      for (int64_t i = begin; i < stop; ++i) p[i] = convert<T>(linspace_value(i, n, start, end));
    });
  });
}

// out: [n, m] contiguous.
static void eye(Tensor& out) {
  dispatch_all(out.dtype(), "eye", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = static_cast<T*>(out.data_ptr());
    const int64_t m = out.size(1);
    const T zero = convert<T>(0), one = convert<T>(1);
    parallel_for(out.size(0), m, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        for (int64_t j = 0; j < m; ++j) p[i * m + j] = i == j ? one : zero;
    });
  });
}

void register_creation(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/creation.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cpu::EMBER_CPU_ISA

#include "cpu/isa_end.h"
