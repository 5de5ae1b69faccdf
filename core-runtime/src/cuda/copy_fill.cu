// copy_fill.cu — CUDA kernels for Tensor::copy_ (with dtype conversion) and Tensor::fill_.
#include "convert.h"
#include "cuda/loops.cuh"
#include "kernels.h"

namespace ember::cuda {

// Functors rather than lambdas: they are used inside dispatch_all's generic lambdas, where nvcc
// does not allow __device__ lambdas.
template <class Out> struct Convert {
  template <class In> __device__ Out operator()(In x) const { return convert<Out>(x); }
};

template <class T> struct Constant {
  T value;
  __device__ T operator()() const { return value; }
};

static void copy(const Tensor& src, Tensor& dst) {
  if (src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous()) {
    // Same bytes in the same order: one plain device-to-device copy.
    DeviceGuard guard(dst.device());
    EMBER_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr(), src.data_ptr(), size_t(dst.nbytes()),
                                     cudaMemcpyDeviceToDevice, stream(dst.device())),
                     "copy_");
    return;
  }
  dispatch_all(dst.dtype(), "copy_", [&](auto out_tag) {
    using Out = typename decltype(out_tag)::type;
    dispatch_all(src.dtype(), "copy_", [&](auto in_tag) {
      using In = typename decltype(in_tag)::type;
      gpu_map<Out, In>("copy_", dst, {src}, Convert<Out>{});
    });
  });
}

static void fill(Tensor& dst, double value) {
  dispatch_all(dst.dtype(), "fill_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    gpu_map<T>("fill_", dst, {}, Constant<T>{convert<T>(value)});
  });
}

void register_copy_fill(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/copy_fill.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cuda
