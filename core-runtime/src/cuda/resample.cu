// resample.cu — CUDA kernels of the resample family (contracts in ops/resample_kernels.h).
// One thread per output element in both directions. The backward scatters each output's
// gradient into the inputs it read with atomic adds in the compute type (float32, or float64
// for float64), so the order of the additions, and the last bits of the sums, may vary from run
// to run. float16 and bfloat16 gradients are summed in a float32 buffer and cast at the end.
#include <type_traits>

#include "convert.h"
#include "cuda/launch.cuh"
#include "kernels.h"
#include "ops/resample_kernels.h"

namespace ember::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n, Device device) { return grid_size(n, kThreads, device.index); }

// A 4-d tensor's sizes and element strides, and the offset of [n, c, i, j].
struct Dims4 {
  int64_t size[4], stride[4];
  __device__ int64_t at(int64_t n, int64_t c, int64_t i, int64_t j) const {
    return n * stride[0] + c * stride[1] + i * stride[2] + j * stride[3];
  }
};

Dims4 dims4(const Tensor& t) {
  Dims4 d;
  for (int i = 0; i < 4; ++i) {
    d.size[i] = t.size(i);
    d.stride[i] = t.stride(i);
  }
  return d;
}

// The output element e (row-major over [N, C, H_out, W_out]) as coordinates.
struct Coords {
  int64_t n, c, oh, ow;
};
__device__ inline Coords unravel(int64_t e, const Dims4& out) {
  Coords k;
  k.ow = e % out.size[3];
  e /= out.size[3];
  k.oh = e % out.size[2];
  e /= out.size[2];
  k.c = e % out.size[1];
  k.n = e / out.size[1];
  return k;
}

// x: [N, C, H, W] -> out: [N, C, H_out, W_out].
template <class T, class Acc>
__global__ void interpolate_elements(const T* x, Dims4 xd, T* out, Dims4 od, Resample r, Acc step_h,
                                     Acc step_w, int64_t total) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
    const Coords k = unravel(e, od);
    auto at = [&](int64_t i, int64_t j) { return Acc(compute_t<T>(x[xd.at(k.n, k.c, i, j)])); };
    Acc v;
    if (r.mode == ResampleMode::Nearest) {
      v = at(nearest_source(k.oh, r.h), nearest_source(k.ow, r.w));
    } else {
      const LinearTaps<Acc> h = linear_source<Acc>(k.oh, step_h, r.h.in, r.align_corners);
      const LinearTaps<Acc> w = linear_source<Acc>(k.ow, step_w, r.w.in, r.align_corners);
      const Acc h0 = Acc(1) - h.w1, w0 = Acc(1) - w.w1;
      v = h0 * (w0 * at(h.i0, w.i0) + w.w1 * at(h.i0, w.i1)) +
          h.w1 * (w0 * at(h.i1, w.i0) + w.w1 * at(h.i1, w.i1));
    }
    out[od.at(k.n, k.c, k.oh, k.ow)] = T(v);
  }
}

// grad_in (Acc, zeroed; dims gd) += the adjoint of interpolate applied to grad_out.
template <class T, class Acc>
__global__ void interpolate_adjoint(const T* grad_out, Dims4 od, Acc* grad_in, Dims4 gd, Resample r,
                                    Acc step_h, Acc step_w, int64_t total) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
    const Coords k = unravel(e, od);
    const Acc g = Acc(compute_t<T>(grad_out[od.at(k.n, k.c, k.oh, k.ow)]));
    auto add = [&](int64_t i, int64_t j, Acc weight) {
      atomicAdd(grad_in + gd.at(k.n, k.c, i, j), weight * g);
    };
    if (r.mode == ResampleMode::Nearest) {
      add(nearest_source(k.oh, r.h), nearest_source(k.ow, r.w), Acc(1));
      continue;
    }
    const LinearTaps<Acc> h = linear_source<Acc>(k.oh, step_h, r.h.in, r.align_corners);
    const LinearTaps<Acc> w = linear_source<Acc>(k.ow, step_w, r.w.in, r.align_corners);
    const Acc h0 = Acc(1) - h.w1, w0 = Acc(1) - w.w1;
    add(h.i0, w.i0, h0 * w0);
    add(h.i0, w.i1, h0 * w.w1);
    add(h.i1, w.i0, h.w1 * w0);
    add(h.i1, w.i1, h.w1 * w.w1);
  }
}

template <class T> void interpolate_typed(const Tensor& x, const Resample& r, const Tensor& out) {
  using Acc = compute_t<T>;
  const int64_t total = out.numel();
  interpolate_elements<T, Acc><<<blocks_for(total, x.device()), kThreads, 0, stream(x.device())>>>(
      x.data<T>(), dims4(x), out.data<T>(), dims4(out), r, source_step<Acc>(r.h, r.align_corners),
      source_step<Acc>(r.w, r.align_corners), total);
}

template <class T>
void interpolate_backward_typed(const Tensor& grad_output, const Resample& r,
                                const Tensor& grad_input) {
  using Acc = compute_t<T>;
  // float32 and float64 add straight into grad_input; float16 and bfloat16, which have no
  // atomic add of their own precision, into a float32 buffer.
  constexpr bool direct = std::is_same_v<T, Acc>;
  Tensor target = direct ? grad_input
                         : Tensor::empty(grad_input.shape(), DType::Float32, grad_input.device(),
                                         "interpolate_backward");
  target.zero_();
  const int64_t total = grad_output.numel();
  interpolate_adjoint<T, Acc>
      <<<blocks_for(total, grad_output.device()), kThreads, 0, stream(grad_output.device())>>>(
          grad_output.data<T>(), dims4(grad_output), target.data<Acc>(), dims4(target), r,
          source_step<Acc>(r.h, r.align_corners), source_step<Acc>(r.w, r.align_corners), total);
  check_launch("interpolate_backward", {&grad_output, &grad_input});
  if (!direct) Tensor(grad_input).copy_(target);
}

void interpolate(const Tensor& x, const Resample& r, const Tensor& out) {
  DeviceGuard guard(x.device());
  dispatch_floating(x.dtype(), "interpolate",
                    [&](auto tag) { interpolate_typed<typename decltype(tag)::type>(x, r, out); });
  check_launch("interpolate", {&x, &out});
}

void interpolate_backward(const Tensor& grad_output, const Resample& r, const Tensor& grad_input) {
  DeviceGuard guard(grad_output.device());
  dispatch_floating(grad_output.dtype(), "interpolate_backward", [&](auto tag) {
    interpolate_backward_typed<typename decltype(tag)::type>(grad_output, r, grad_input);
  });
}

}  // namespace

void register_resample(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/resample.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cuda
