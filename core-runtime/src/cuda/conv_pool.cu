// conv_pool.cu — CUDA kernels of conv2d (forward, backward-input, backward-weight,
// backward-bias) and of max/avg/adaptive-avg pooling (ops/conv_pool_kernels.h).
//
// Convolution has two implementations, and choose_path() picks one per pass and shape:
//   implicit GEMM (conv_implicit_gemm.cuh): one hand-written kernel per pass, operands gathered
//       from the image inside the kernel, padding included; no extra memory. Best when the GEMM is
//       small in M (a few dozen channels, as in small CNNs), where cuBLAS's big tiles idle and
//       im2col's extra traffic costs as much as the math.
//   im2col + cuBLAS (conv_im2col.cuh): unfold the input, then cuBLAS. Best for wide layers.
// The heuristic, in order (the GEMM's M is the output channels per group for forward and
// backward-weight, the input channels per group for backward-input):
//   1. a GEMM dimension beyond 2^31 - 1 -> im2col (it works in chunks of images);
//   2. EMBER_CONV_ALGO=implicit or =im2col forces one (benchmarks, tests);
//   3. more than 8 groups -> implicit (im2col costs one cuBLAS call per group per chunk);
//   4. a 1x1, stride-1, unpadded forward or backward-input -> im2col (x is already the GEMM
//      operand: plain cuBLAS, nothing to unfold);
//   5. GEMM M > 64 -> im2col (cuBLAS's tiles pay off, the unfold is small next to the math);
//   6. less than half of the implicit kernel's BM x 128 output tiles holding real outputs ->
//      im2col (a 1-channel input's backward-input fills 1 row of 16; a 1-channel 3x3 layer's
//      backward-weight, N = 9 taps, 9 columns of 128);
//   7. backward-input with stride > 1 -> im2col (the implicit GEMM would spend
//      (s_h*s_w - 1)/(s_h*s_w) of its K loop multiplying zeros; col2im gathers only real taps);
//   8. otherwise implicit, tiled by conv::gemm_tiling (forward, backward-input) or
//      conv::weight_tiling (backward-weight); EMBER_CONV_TILING (one of conv::kTilings' names:
//      32, 64, 128, 128/4) forces one (tests, benchmarks).
// The bias is added in the implicit kernel's epilogue, or written first for cuBLAS to add onto.
//
// Pooling: one thread per output (forward) or per input (backward, a gather: each input sums
// the outputs whose windows cover it, so no atomics), except max_pool2d's backwards, which
// scatter each gradient to its argmax with an atomicAdd into a zeroed grad_x: from indices (no
// window geometry to gather by) or from window offsets (a gather would read every covering
// window's offset; the scatter reads each once). With non-overlapping windows (kernel == stride,
// the usual 2x2 pool) no two of those adds hit one address, so they never contend.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

#include "cuda/conv_im2col.cuh"
#include "cuda/conv_implicit_gemm.cuh"
#include "cuda/device_error.cuh"
#include "cuda/launch.cuh"
#include "kernels.h"
#include "ops/checks.h"
#include "ops/conv_pool_kernels.h"

namespace ember::cuda {
namespace {

using conv::ConvShape;

// ---- convolution ------------------------------------------------------------------------------

// x: [N, C, H, W], w: [O, C/G, kh, kw], out: [N, O, Ho, Wo] (shapes only).
ConvShape conv_shape(const Shape& x, const Shape& w, const Shape& out, const Conv2dParams& p,
                     const char* op) {
  for (int64_t v : {x[0], x[1], x[2], x[3], w[0], w[2], w[3], out[2], out[3], x[2] * x[3],
                    out[2] * out[3], w[1] * w[2] * w[3], w[0] * w[2] * w[3], p.groups})
    if (v > INT_MAX)
      throw NotSupportedError(op, "a convolution size above 2^31 - 1 is not supported on CUDA");
  ConvShape s;
  s.N = int(x[0]), s.C = int(x[1]), s.H = int(x[2]), s.W = int(x[3]);
  s.O = int(w[0]), s.kh = int(w[2]), s.kw = int(w[3]), s.Ho = int(out[2]), s.Wo = int(out[3]);
  s.G = int(p.groups);
  s.sh = int(p.stride_h), s.sw = int(p.stride_w), s.ph = int(p.pad_h), s.pw = int(p.pad_w);
  s.dh = int(p.dilation_h), s.dw = int(p.dilation_w);
  conv::derive_sizes(s);
  return s;
}

enum class Pass { Forward, BackwardInput, BackwardWeight };

// Which implementation runs `pass` on shape s (the heuristic in the header comment).
bool use_implicit(const ConvShape& s, Pass pass) {
  const int64_t images = s.N;
  const int gemm_m = pass == Pass::BackwardInput ? s.Cg : s.Og;
  // The implicit GEMM's N and K (see conv_implicit_gemm.cuh); N, or K, runs over every pixel.
  const int64_t n = pass == Pass::Forward         ? images * s.P
                    : pass == Pass::BackwardInput ? images * s.HW
                                                  : s.R;
  const int64_t k = pass == Pass::Forward         ? s.R
                    : pass == Pass::BackwardInput ? int64_t(s.Og) * s.khw
                                                  : images * s.P;
  if (n > INT_MAX || k > INT_MAX) return false;
  if (const char* v = std::getenv("EMBER_CONV_ALGO"); v && *v) {
    if (std::strcmp(v, "implicit") == 0) return true;
    if (std::strcmp(v, "im2col") == 0) return false;
    throw ValueError("conv2d", std::string("EMBER_CONV_ALGO='") + v +
                                   "'; expected 'implicit', 'im2col', or unset for automatic");
  }
  if (s.G > 8) return true;
  if (conv::is_pointwise(s) && pass != Pass::BackwardWeight) return false;
  if (gemm_m > 64) return false;
  const int64_t bm = conv::tile_rows(gemm_m), bn = conv::kBN;
  const double used = double(gemm_m) / double((gemm_m + bm - 1) / bm * bm) * double(n) /
                      double((n + bn - 1) / bn * bn);
  if (used < 0.5) return false;
  if (pass == Pass::BackwardInput && (s.sh > 1 || s.sw > 1)) return false;
  return true;
}

// The implicit GEMM's tiling: EMBER_CONV_TILING (tests run every tiling through it), or, unset,
// `chosen` (conv::gemm_tiling, conv::weight_tiling).
conv::Tiling tiling(conv::Tiling chosen) {
  const char* v = std::getenv("EMBER_CONV_TILING");
  if (!v || !*v) return chosen;
  for (conv::Tiling t : conv::kTilings)
    if (conv::tiling_name(t) == v) return t;
  std::string names;
  for (conv::Tiling t : conv::kTilings) names += (names.empty() ? "" : ", ") + conv::tiling_name(t);
  throw ValueError("conv2d", std::string("EMBER_CONV_TILING='") + v + "'; expected one of " +
                                 names +
                                 " (columns a tile, then /R: its 8 warps in R rows), or unset "
                                 "for automatic");
}

// Calls f with the gather of image x for the forward and backward-weight: one that skips the
// edge tests where the conv has no padding (its taps never leave the image).
template <class T, class F> void with_image_gather(const ConvShape& s, const T* x, F f) {
  if (s.ph == 0 && s.pw == 0) f(conv::PlaneGather<T, false>{x, s.H, s.W});
  else f(conv::PlaneGather<T, true>{x, s.H, s.W});
}

template <class T>
void forward_implicit(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& out,
                      const ConvShape& s) {
  const int dev = x.device().index;
  const int n = s.N * s.P;
  const conv::Tiling t =
      tiling(conv::gemm_tiling(s.Og, n, s.G, properties(dev).multiProcessorCount));
  with_image_gather<T>(s, x.data<T>(), [&](auto image) {
    conv::Forward<T, decltype(image)> pass{
        s, {w.data<T>()}, image, bias.defined() ? bias.data<T>() : nullptr, out.data<T>()};
    conv::launch_conv_gemm(pass, s.Og, n, s.R, s.G, 1, s.R, t, stream(dev));
  });
  check_launch("conv2d", {&x, &w, &out});
}

// Calls f with the gather of grad_out for backward-input: as an image at unit stride; a strided
// conv's tests each position against the stride, which costs instructions per element.
template <class T, class F> void with_grad_out_gather(const ConvShape& s, const T* go, F f) {
  if (s.sh == 1 && s.sw == 1) f(conv::PlaneGather<T, true>{go, s.Ho, s.Wo});
  else f(conv::StridedPlaneGather<T>{go, s.Ho, s.Wo, s.sh, s.sw});
}

template <class T>
void backward_input_implicit(const Tensor& go, const Tensor& w, Tensor& grad_x,
                             const ConvShape& s) {
  const int k = s.Og * s.khw;
  const int dev = go.device().index;
  const int n = s.N * s.HW;
  const conv::Tiling t =
      tiling(conv::gemm_tiling(s.Cg, n, s.G, properties(dev).multiProcessorCount));
  with_grad_out_gather<T>(s, go.data<T>(), [&](auto grad_out) {
    conv::BackwardInput<T, decltype(grad_out)> pass{s, {w.data<T>()}, grad_out, grad_x.data<T>()};
    conv::launch_conv_gemm(pass, s.Cg, n, k, s.G, 1, k, t, stream(dev));
  });
  check_launch("conv2d_backward_input", {&go, &w, &grad_x});
}

// K = N * Ho * Wo is long and the output [Og, R] small, so K is split over enough blocks to fill
// the GPU (conv::weight_k_split); partial sums, then one kernel adds them.
template <class T>
void backward_weight_implicit(const Tensor& go, const Tensor& x, Tensor& grad_w,
                              const ConvShape& s) {
  using Acc = compute_t<T>;
  const char* op = "conv2d_backward_weight";
  const int dev = x.device().index;
  const int k = s.N * s.P;
  const int bm = conv::tile_rows(s.Og);
  const conv::Tiling t = tiling(conv::weight_tiling(s.R));
  const int64_t tiles = int64_t((s.Og + bm - 1) / bm) * ((s.R + t.cols - 1) / t.cols) * s.G;
  const int sms = properties(dev).multiProcessorCount;
  const conv::KSplit split = conv::weight_k_split<Acc>(k, tiles, sms);
  const int64_t count = int64_t(s.O) * s.R;
  Tensor partial = Tensor::empty({split.splits * count}, dtype_of_v<Acc>, x.device(), op);
  with_image_gather<T>(s, x.data<T>(), [&](auto image) {
    conv::BackwardWeight<T, decltype(image)> pass{s, {go.data<T>()}, image, partial.data<Acc>()};
    conv::launch_conv_gemm(pass, s.Og, s.R, k, s.G, split.splits, split.chunk, t, stream(dev));
  });
  check_launch(op, {&go, &x, &grad_w});
  conv::sum_splits<T, Acc><<<grid_size(count, 256, dev), 256, 0, stream(dev)>>>(partial.data<Acc>(),
                                                                                split.splits, count,
                                                                                grad_w.data<T>());
  check_launch(op, {&go, &x, &grad_w});
}

void conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& out,
            const Conv2dParams& p) {
  if (out.numel() == 0) return;
  if (w.numel() == 0) {  // no input channels: an empty sum, plus the bias
    if (bias.defined()) out.copy_(bias.view({1, out.size(1), 1, 1}));
    else out.zero_();
    return;
  }
  const ConvShape s = conv_shape(x.shape(), w.shape(), out.shape(), p, "conv2d");
  DeviceGuard guard(x.device());
  dispatch_floating(x.dtype(), "conv2d", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (use_implicit(s, Pass::Forward)) forward_implicit<T>(x, w, bias, out, s);
    else conv::forward_im2col<T>(x, w, bias, out, s);
  });
}

void conv2d_backward_input(const Tensor& go, const Tensor& w, Tensor& grad_x,
                           const Conv2dParams& p) {
  if (grad_x.numel() == 0) return;
  if (go.numel() == 0 || w.numel() == 0) {  // no output positions or channels: an empty sum
    grad_x.zero_();
    return;
  }
  const ConvShape s = conv_shape(grad_x.shape(), w.shape(), go.shape(), p, "conv2d_backward_input");
  DeviceGuard guard(go.device());
  dispatch_floating(go.dtype(), "conv2d_backward_input", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (use_implicit(s, Pass::BackwardInput)) backward_input_implicit<T>(go, w, grad_x, s);
    else conv::backward_input_im2col<T>(go, w, grad_x, s);
  });
}

void conv2d_backward_weight(const Tensor& go, const Tensor& x, Tensor& grad_w,
                            const Conv2dParams& p) {
  if (grad_w.numel() == 0) return;
  if (go.numel() == 0 || x.numel() == 0) {  // no positions: an empty sum
    grad_w.zero_();
    return;
  }
  const ConvShape s =
      conv_shape(x.shape(), grad_w.shape(), go.shape(), p, "conv2d_backward_weight");
  DeviceGuard guard(x.device());
  dispatch_floating(x.dtype(), "conv2d_backward_weight", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (use_implicit(s, Pass::BackwardWeight)) backward_weight_implicit<T>(go, x, grad_w, s);
    else conv::backward_weight_im2col<T>(go, x, grad_w, s);
  });
}

// Sum of v over the block (blockDim.x a multiple of 32, at most 1024); the result is valid in
// thread 0.
template <class Acc> __device__ Acc block_sum(Acc v) {
  __shared__ Acc warp_sums[32];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = int(threadIdx.x) % 32, warp = int(threadIdx.x) / 32;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  v = int(threadIdx.x) < int(blockDim.x) / 32 ? warp_sums[lane] : Acc(0);
  if (warp == 0)
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

// Block (o, split) sums channel o of images split, split + splits, ...:
//   partial[o * splits + split] = sum_{n, p} grad_out[n][o][p]
template <class T, class Acc>
__global__ void bias_grad_partial(const T* go, int N, int O, int P, int splits, Acc* partial) {
  const int o = int(blockIdx.x), split = int(blockIdx.y);
  Acc sum = 0;
  for (int n = split; n < N; n += splits) {
    const T* plane = go + (int64_t(n) * O + o) * P;
    for (int p = int(threadIdx.x); p < P; p += int(blockDim.x)) sum += Acc(plane[p]);
  }
  sum = block_sum(sum);
  if (threadIdx.x == 0) partial[int64_t(o) * splits + split] = sum;
}

template <class T, class Acc>
__global__ void bias_grad_finish(const Acc* partial, int O, int splits, T* grad_b) {
  const int o = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (o >= O) return;
  Acc sum = 0;
  for (int s = 0; s < splits; ++s) sum += partial[int64_t(o) * splits + s];
  grad_b[o] = T(sum);
}

// grad_b[o] = sum over n, oh, ow of grad_out[n][o][oh][ow], in two deterministic passes: blocks
// (channel, split of the images) write partial sums, then one thread per channel adds them.
void conv2d_backward_bias(const Tensor& go, Tensor& grad_b) {
  const char* op = "conv2d_backward_bias";
  if (grad_b.numel() == 0) return;
  if (go.numel() == 0) {
    grad_b.zero_();
    return;
  }
  const int64_t N = go.size(0), O = go.size(1), P = go.size(2) * go.size(3);
  if (N > INT_MAX || O > INT_MAX || P > INT_MAX)
    throw NotSupportedError(op, "sizes above 2^31 - 1 are not supported on CUDA");
  DeviceGuard guard(go.device());
  const int dev = go.device().index;
  // Threads per block: the plane size rounded up to a warp multiple, at most 256.
  const int threads = int(std::min<int64_t>(256, (P + 31) / 32 * 32));
  const int64_t wanted = 4 * int64_t(properties(dev).multiProcessorCount);
  const int splits = int(std::clamp<int64_t>(wanted / O, 1, std::min<int64_t>(N, 65535)));
  dispatch_floating(go.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = compute_t<T>;
    Tensor partial = Tensor::empty({O * splits}, dtype_of_v<Acc>, go.device(), op);
    bias_grad_partial<T, Acc>
        <<<dim3(unsigned(O), unsigned(splits)), threads, 0, stream(dev)>>>(go.data<T>(), int(N),
                                                                           int(O), int(P), splits,
                                                                           partial.data<Acc>());
    check_launch(op, {&go, &grad_b});
    bias_grad_finish<T, Acc>
        <<<unsigned((O + 255) / 256), 256, 0, stream(dev)>>>(partial.data<Acc>(), int(O), splits,
                                                             grad_b.data<T>());
    check_launch(op, {&go, &grad_b});
  });
}

// ---- pooling ----------------------------------------------------------------------------------

// Sizes of a pooling x: [N, C, H, W] -> out: [N, C, Ho, Wo]; planes = N * C.
struct PoolShape {
  int64_t planes;
  int H, W, Ho, Wo;
  int kh, kw, sh, sw, ph, pw, dh, dw;
  bool count_include_pad;
};

PoolShape pool_shape(const Shape& in, const Shape& out, const Pool2dParams& p, const char* op) {
  for (int64_t v : {in[2], in[3], out[2], out[3], in[2] * in[3]})
    if (v > INT_MAX) throw NotSupportedError(op, "an image above 2^31 - 1 pixels");
  return {in[0] * in[1],   int(in[2]),        int(in[3]),        int(out[2]),        int(out[3]),
          int(p.kernel_h), int(p.kernel_w),   int(p.stride_h),   int(p.stride_w),    int(p.pad_h),
          int(p.pad_w),    int(p.dilation_h), int(p.dilation_w), p.count_include_pad};
}

#define EMBER_GRID_STRIDE(e, total)                                             \
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < (total); \
       e += int64_t(gridDim.x) * blockDim.x)

// Where window (oh, ow)'s tap `tap` (i * kw + j) reads its plane: ih * W + iw, or -1 where it
// lies in the padding.
__device__ __forceinline__ int64_t tap_position(const PoolShape& s, int oh, int ow, int64_t tap) {
  const int ih = oh * s.sh - s.ph + int(tap / s.kw) * s.dh;
  const int iw = ow * s.sw - s.pw + int(tap % s.kw) * s.dw;
  if (unsigned(ih) >= unsigned(s.H) || unsigned(iw) >= unsigned(s.W)) return -1;
  return int64_t(ih) * s.W + iw;
}

// out[e] = max of the window of output e (NaN wins, ties keep the first position); idx[e] = its
// ih * W + iw (-1 for a window with no input element) or, with `offsets`, its tap i * kw + j (0
// for such a window). I: int64 for indices; uint8, int32 or int64 for offsets.
template <class T, class I>
__global__ void max_pool_forward(const T* x, PoolShape s, bool offsets, T* out, I* idx) {
  using Acc = compute_t<T>;
  const int64_t total = s.planes * s.Ho * s.Wo;
  EMBER_GRID_STRIDE(e, total) {
    const int ow = int(e % s.Wo), oh = int(e / s.Wo % s.Ho);
    const T* plane = x + e / (int64_t(s.Ho) * s.Wo) * s.H * s.W;
    const int hs = oh * s.sh - s.ph, ws = ow * s.sw - s.pw;
    Acc best = -INFINITY;
    int64_t tap = -1;
    for (int i = 0; i < s.kh; ++i) {
      const int ih = hs + i * s.dh;
      if (unsigned(ih) >= unsigned(s.H)) continue;
      for (int j = 0; j < s.kw; ++j) {
        const int iw = ws + j * s.dw;
        if (unsigned(iw) >= unsigned(s.W)) continue;
        const Acc v = Acc(plane[int64_t(ih) * s.W + iw]);
        if (tap < 0 || (!isnan(best) && (isnan(v) || v > best))) {
          best = v;
          tap = int64_t(i) * s.kw + j;
        }
      }
    }
    out[e] = T(best);
    if (offsets) idx[e] = I(tap < 0 ? 0 : tap);
    else idx[e] = I(tap < 0 ? -1 : tap_position(s, oh, ow, tap));
  }
}

__device__ __forceinline__ void atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(Half* p, float v) {
  atomicAdd(reinterpret_cast<__half*>(p), __float2half_rn(v));
}
__device__ __forceinline__ void atomic_add(BFloat16* p, float v) {
  atomicAdd(reinterpret_cast<__nv_bfloat16*>(p), __float2bfloat16_rn(v));
}

// grad_x (zeroed) [plane][idx[e]] += grad_out[e].
template <class T>
__global__ void max_pool_backward(const T* go, const int64_t* idx, int64_t total, int64_t out_hw,
                                  int64_t in_hw, T* grad_x, DeviceErrorSink sink) {
  EMBER_GRID_STRIDE(e, total) {
    const int64_t at = idx[e];
    if (at == -1) continue;  // a window wholly in the padding: nothing to route back
    if (at < 0 || at >= in_hw) sink.report(at);
    else atomic_add(grad_x + e / out_hw * in_hw + at, compute_t<T>(go[e]));
  }
}

// The tap off[e] of window e; where it lies outside the window's taps, reported to sink and -1.
template <class I>
__device__ __forceinline__ int64_t checked_tap(const I* off, int64_t e, int64_t taps,
                                               const DeviceErrorSink& sink) {
  const int64_t tap = int64_t(off[e]);
  if (tap >= 0 && tap < taps) return tap;
  sink.report(tap);
  return -1;
}

// The same from window offsets: grad_x (zeroed) at the position of tap off[e] of window e +=
// grad_out[e]; nothing where the tap lies in the padding.
template <class T, class I>
__global__ void max_pool_offsets_backward(const T* go, const I* off, PoolShape s, T* grad_x,
                                          DeviceErrorSink sink) {
  const int64_t total = s.planes * s.Ho * s.Wo, taps = int64_t(s.kh) * s.kw;
  EMBER_GRID_STRIDE(e, total) {
    const int64_t tap = checked_tap(off, e, taps, sink);
    if (tap < 0) continue;
    const int64_t at = tap_position(s, int(e / s.Wo % s.Ho), int(e % s.Wo), tap);
    if (at >= 0)
      atomic_add(grad_x + e / (int64_t(s.Ho) * s.Wo) * s.H * s.W + at, compute_t<T>(go[e]));
  }
}

// idx[e] = the plane position of tap off[e] of window e, -1 where it lies in the padding.
template <class I>
__global__ void max_pool_offsets_to_indices(const I* off, PoolShape s, int64_t* idx,
                                            DeviceErrorSink sink) {
  const int64_t total = s.planes * s.Ho * s.Wo, taps = int64_t(s.kh) * s.kw;
  EMBER_GRID_STRIDE(e, total) {
    const int64_t tap = checked_tap(off, e, taps, sink);
    if (tap < 0) continue;
    idx[e] = tap_position(s, int(e / s.Wo % s.Ho), int(e % s.Wo), tap);
  }
}

// Window of output (oh, ow) for avg pooling: rows [h0, h1) and columns [w0, w1) inside the image,
// and the divisor the header's rule gives.
struct AvgWindow {
  int h0, h1, w0, w1, divisor;
};
__device__ __forceinline__ AvgWindow avg_window(const PoolShape& s, int oh, int ow) {
  const int hs = oh * s.sh - s.ph, ws = ow * s.sw - s.pw;
  const int he = min(hs + s.kh, s.H + s.ph), we = min(ws + s.kw, s.W + s.pw);
  AvgWindow a{max(hs, 0), min(he, s.H), max(ws, 0), min(we, s.W), 0};
  a.divisor = s.count_include_pad ? (he - hs) * (we - ws) : (a.h1 - a.h0) * (a.w1 - a.w0);
  return a;
}

template <class T> __global__ void avg_pool_forward(const T* x, PoolShape s, T* out) {
  using Acc = compute_t<T>;
  const int64_t total = s.planes * s.Ho * s.Wo;
  EMBER_GRID_STRIDE(e, total) {
    const int ow = int(e % s.Wo), oh = int(e / s.Wo % s.Ho);
    const T* plane = x + e / (int64_t(s.Ho) * s.Wo) * s.H * s.W;
    const AvgWindow a = avg_window(s, oh, ow);
    Acc sum = 0;
    for (int ih = a.h0; ih < a.h1; ++ih)
      for (int iw = a.w0; iw < a.w1; ++iw) sum += Acc(plane[int64_t(ih) * s.W + iw]);
    out[e] = T(sum / Acc(a.divisor));
  }
}

// grad_x[ih][iw] = sum over the outputs whose window covers (ih, iw) of grad_out / divisor.
// Output row oh covers ih when oh*sh - ph <= ih < oh*sh - ph + kh.
template <class T> __global__ void avg_pool_backward(const T* go, PoolShape s, T* grad_x) {
  using Acc = compute_t<T>;
  const int64_t total = s.planes * s.H * s.W;
  EMBER_GRID_STRIDE(e, total) {
    const int iw = int(e % s.W), ih = int(e / s.W % s.H);
    const T* plane = go + e / (int64_t(s.H) * s.W) * s.Ho * s.Wo;
    const int oh0 = ih + s.ph < s.kh ? 0 : (ih + s.ph - s.kh) / s.sh + 1;
    const int oh1 = min((ih + s.ph) / s.sh + 1, s.Ho);
    const int ow0 = iw + s.pw < s.kw ? 0 : (iw + s.pw - s.kw) / s.sw + 1;
    const int ow1 = min((iw + s.pw) / s.sw + 1, s.Wo);
    Acc sum = 0;
    for (int oh = oh0; oh < oh1; ++oh)
      for (int ow = ow0; ow < ow1; ++ow)
        sum += Acc(plane[int64_t(oh) * s.Wo + ow]) / Acc(avg_window(s, oh, ow).divisor);
    grad_x[e] = T(sum);
  }
}

// Adaptive window of output index o over an input of n: [floor(o*n/no), ceil((o+1)*n/no)).
__device__ __forceinline__ int adaptive_start(int o, int n, int no) {
  return int(int64_t(o) * n / no);
}
__device__ __forceinline__ int adaptive_end(int o, int n, int no) {
  return int((int64_t(o + 1) * n + no - 1) / no);
}

template <class T> __global__ void adaptive_avg_forward(const T* x, PoolShape s, T* out) {
  using Acc = compute_t<T>;
  const int64_t total = s.planes * s.Ho * s.Wo;
  EMBER_GRID_STRIDE(e, total) {
    const int ow = int(e % s.Wo), oh = int(e / s.Wo % s.Ho);
    const T* plane = x + e / (int64_t(s.Ho) * s.Wo) * s.H * s.W;
    const int h0 = adaptive_start(oh, s.H, s.Ho), h1 = adaptive_end(oh, s.H, s.Ho);
    const int w0 = adaptive_start(ow, s.W, s.Wo), w1 = adaptive_end(ow, s.W, s.Wo);
    Acc sum = 0;
    for (int ih = h0; ih < h1; ++ih)
      for (int iw = w0; iw < w1; ++iw) sum += Acc(plane[int64_t(ih) * s.W + iw]);
    out[e] = T(sum / Acc((h1 - h0) * (w1 - w0)));
  }
}

// grad_x[ih][iw] = sum over the outputs whose window covers (ih, iw) of grad_out / window size.
// Those are among rows [floor(ih*Ho/H), ceil((ih+1)*Ho/H)); each is checked exactly.
template <class T> __global__ void adaptive_avg_backward(const T* go, PoolShape s, T* grad_x) {
  using Acc = compute_t<T>;
  const int64_t total = s.planes * s.H * s.W;
  EMBER_GRID_STRIDE(e, total) {
    const int iw = int(e % s.W), ih = int(e / s.W % s.H);
    const T* plane = go + e / (int64_t(s.H) * s.W) * s.Ho * s.Wo;
    const int oh0 = adaptive_start(ih, s.Ho, s.H), oh1 = min(adaptive_end(ih, s.Ho, s.H), s.Ho);
    const int ow0 = adaptive_start(iw, s.Wo, s.W), ow1 = min(adaptive_end(iw, s.Wo, s.W), s.Wo);
    Acc sum = 0;
    for (int oh = oh0; oh < oh1; ++oh) {
      const int h0 = adaptive_start(oh, s.H, s.Ho), h1 = adaptive_end(oh, s.H, s.Ho);
      if (ih < h0 || ih >= h1) continue;
      for (int ow = ow0; ow < ow1; ++ow) {
        const int w0 = adaptive_start(ow, s.W, s.Wo), w1 = adaptive_end(ow, s.W, s.Wo);
        if (iw < w0 || iw >= w1) continue;
        sum += Acc(plane[int64_t(oh) * s.Wo + ow]) / Acc((h1 - h0) * (w1 - w0));
      }
    }
    grad_x[e] = T(sum);
  }
}
#undef EMBER_GRID_STRIDE

// Launches kernel<T> over `total` elements on the device of `t`, then checks it.
template <class F>
void launch_pool(const char* op, const Tensor& t, int64_t total,
                 std::initializer_list<const Tensor*> operands, F&& launch) {
  if (total == 0) return;
  const int dev = t.device().index;
  launch(grid_size(total, 256, dev), stream(dev));
  check_launch(op, operands);
}

void max_pool2d(const Tensor& x, Tensor& out, Tensor& indices, const Pool2dParams& p) {
  const char* op = "max_pool2d";
  const PoolShape s = pool_shape(x.shape(), out.shape(), p, op);
  DeviceGuard guard(x.device());
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_window_offsets(indices.dtype(), op, [&](auto offset_tag) {
      using I = typename decltype(offset_tag)::type;
      launch_pool(op, x, out.numel(), {&x, &out}, [&](unsigned blocks, cudaStream_t st) {
        max_pool_forward<T, I><<<blocks, 256, 0, st>>>(x.data<T>(), s, p.window_offsets,
                                                       out.data<T>(), indices.data<I>());
      });
    });
  });
}

// t = 0 on its device's stream: the max-pool backwards scatter-add into a zeroed grad_x.
void zero_on_stream(Tensor& t, const char* op) {
  EMBER_CUDA_CHECK(cudaMemsetAsync(t.data_ptr(), 0, size_t(t.nbytes()), stream(t.device())), op);
}

// The CPU's IndexError for offsets outside the window, naming the first bad value, at the next
// synchronising point.
DeviceErrorSink arm_offsets_error(const char* op, Device device, const Pool2dParams& p) {
  const int64_t taps = p.kernel_h * p.kernel_w;
  const DeferredError error{DeferredError::Kind::Index, op, "offsets hold ",
                            ", outside [0, kernel_h * kernel_w) = [0, " + std::to_string(taps) +
                                ") for a " + std::to_string(p.kernel_h) + " x " +
                                std::to_string(p.kernel_w) +
                                " window; pass the offsets max_pool2d_with_offsets returned"};
  return arm_error(device, error, taps);
}

void max_pool2d_offsets_backward(const Tensor& go, const Tensor& offsets, Tensor& grad_x,
                                 const Pool2dParams& p) {
  const char* op = "max_pool2d_offsets_backward";
  if (grad_x.numel() == 0) return;
  const PoolShape s = pool_shape(grad_x.shape(), go.shape(), p, op);
  DeviceGuard guard(grad_x.device());
  zero_on_stream(grad_x, op);
  const DeviceErrorSink sink = arm_offsets_error(op, grad_x.device(), p);
  dispatch_floating(go.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_window_offsets(offsets.dtype(), op, [&](auto offset_tag) {
      using I = typename decltype(offset_tag)::type;
      launch_pool(op, go, go.numel(), {&go, &offsets, &grad_x},
                  [&](unsigned blocks, cudaStream_t st) {
                    max_pool_offsets_backward<T, I><<<blocks, 256, 0, st>>>(go.data<T>(),
                                                                            offsets.data<I>(), s,
                                                                            grad_x.data<T>(), sink);
                  });
    });
  });
}

void max_pool2d_offsets_to_indices(const Tensor& offsets, Tensor& indices, int64_t H, int64_t W,
                                   const Pool2dParams& p) {
  const char* op = "max_pool2d_offsets_to_indices";
  const PoolShape s = pool_shape({offsets.size(0), offsets.size(1), H, W}, offsets.shape(), p, op);
  DeviceGuard guard(offsets.device());
  const DeviceErrorSink sink = arm_offsets_error(op, offsets.device(), p);
  dispatch_window_offsets(offsets.dtype(), op, [&](auto offset_tag) {
    using I = typename decltype(offset_tag)::type;
    launch_pool(op, offsets, offsets.numel(), {&offsets, &indices},
                [&](unsigned blocks, cudaStream_t st) {
                  max_pool_offsets_to_indices<I>
                      <<<blocks, 256, 0, st>>>(offsets.data<I>(), s, indices.data<int64_t>(), sink);
                });
  });
}

void max_pool2d_backward(const Tensor& go, const Tensor& indices, Tensor& grad_x) {
  const char* op = "max_pool2d_backward";
  if (grad_x.numel() == 0) return;
  DeviceGuard guard(grad_x.device());
  zero_on_stream(grad_x, op);
  const int64_t out_hw = go.size(2) * go.size(3), in_hw = grad_x.size(2) * grad_x.size(3);
  // The CPU's IndexError, naming the first bad value, at the next synchronising point.
  const DeferredError error{DeferredError::Kind::Index, op, "indices hold ",
                            ", outside [0, H * W) = [0, " + std::to_string(in_hw) +
                                ") for input planes of " + std::to_string(grad_x.size(2)) + " x " +
                                std::to_string(grad_x.size(3)) +
                                "; pass the indices max_pool2d returned"};
  const DeviceErrorSink sink = arm_error(grad_x.device(), error, in_hw);
  dispatch_floating(go.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch_pool(op, go, go.numel(), {&go, &indices, &grad_x},
                [&](unsigned blocks, cudaStream_t st) {
                  max_pool_backward<T>
                      <<<blocks, 256, 0, st>>>(go.data<T>(), indices.data<int64_t>(), go.numel(),
                                               out_hw, in_hw, grad_x.data<T>(), sink);
                });
  });
}

// The average pools, forward and backward, fixed and adaptive windows: one thread per element
// of dst, reading src, on the device of in (x for a forward, grad_x for a backward). They differ
// only in the kernel, which kernel_for(tag) picks for the element type.
template <class KernelFor>
void launch_avg_pool(const char* op, const Tensor& src, Tensor& dst, const Tensor& in,
                     const Tensor& out, const Pool2dParams& p, KernelFor kernel_for) {
  const PoolShape s = pool_shape(in.shape(), out.shape(), p, op);
  DeviceGuard guard(in.device());
  dispatch_floating(src.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto kernel = kernel_for(tag);
    launch_pool(op, src, dst.numel(), {&src, &dst}, [&](unsigned blocks, cudaStream_t st) {
      kernel<<<blocks, 256, 0, st>>>(src.data<T>(), s, dst.data<T>());
    });
  });
}

void avg_pool2d(const Tensor& x, Tensor& out, const Pool2dParams& p) {
  launch_avg_pool("avg_pool2d", x, out, x, out, p,
                  [](auto tag) { return &avg_pool_forward<typename decltype(tag)::type>; });
}

void avg_pool2d_backward(const Tensor& go, Tensor& grad_x, const Pool2dParams& p) {
  launch_avg_pool("avg_pool2d_backward", go, grad_x, grad_x, go, p,
                  [](auto tag) { return &avg_pool_backward<typename decltype(tag)::type>; });
}

void adaptive_avg_pool2d(const Tensor& x, Tensor& out) {
  launch_avg_pool("adaptive_avg_pool2d", x, out, x, out, Pool2dParams{},
                  [](auto tag) { return &adaptive_avg_forward<typename decltype(tag)::type>; });
}

void adaptive_avg_pool2d_backward(const Tensor& go, Tensor& grad_x) {
  launch_avg_pool("adaptive_avg_pool2d_backward", go, grad_x, grad_x, go, Pool2dParams{},
                  [](auto tag) { return &adaptive_avg_backward<typename decltype(tag)::type>; });
}

}  // namespace

void register_conv_pool(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/conv_pool.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cuda
