// copy_fill.cpp — CPU kernels for Tensor::copy_ (with dtype conversion) and Tensor::fill_.
#include "convert.h"
#include "cpu/loops.h"
#include "kernels.h"

namespace ember::cpu {

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
  table.copy_kernel = &copy;
  table.fill_kernel = &fill;
}

}  // namespace ember::cpu
