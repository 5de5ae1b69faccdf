// normalization.cu — CUDA kernels of batch norm, layer norm and dropout (layouts in
// ops/normalization_kernels.h).
//
// Statistics are read in one pass: each thread runs Welford's update over its share of the
// values, then the threads' MeanM2 are merged (Chan's combine) with warp shuffles, and across
// warps through shared memory. Batch norm gives each channel a block; layer norm gives each row a
// warp (rows are rarely long enough to need more, and a warp needs no __syncthreads).
#include <algorithm>

#include "cuda/launch.cuh"
#include "cuda/loops.cuh"
#include "kernels.h"
#include "ops/normalization_kernels.h"

namespace ember::cuda {
namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kChannelThreads = 512;  // batch norm: threads per channel block
constexpr int kRowsPerBlock = 8;      // layer norm: one warp per row, 8 rows per block

// ---- warp and block reductions ----

template <class Acc> __device__ MeanM2<Acc> warp_combine(MeanM2<Acc> s) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    MeanM2<Acc> other{__shfl_xor_sync(kFullMask, s.n, offset),
                      __shfl_xor_sync(kFullMask, s.mean, offset),
                      __shfl_xor_sync(kFullMask, s.m2, offset)};
    s.combine(other);
  }
  return s;  // every lane holds the whole warp's statistics
}

template <class Acc> __device__ Acc warp_sum(Acc v) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// The whole block's statistics, returned to every thread. blockDim.x is a multiple of 32.
template <class Acc> __device__ MeanM2<Acc> block_combine(MeanM2<Acc> s) {
  __shared__ Acc n[kWarp], mean[kWarp], m2[kWarp];  // one slot per warp
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  s = warp_combine(s);
  if (lane == 0) n[warp] = s.n, mean[warp] = s.mean, m2[warp] = s.m2;
  __syncthreads();
  if (warp == 0) {
    MeanM2<Acc> t;
    if (lane < int(blockDim.x) / kWarp) t = {n[lane], mean[lane], m2[lane]};
    t = warp_combine(t);
    if (lane == 0) n[0] = t.n, mean[0] = t.mean, m2[0] = t.m2;
  }
  __syncthreads();
  return {n[0], mean[0], m2[0]};
}

// The block's sum, returned to every thread.
template <class Acc> __device__ Acc block_sum(Acc v) {
  __shared__ Acc partial[kWarp];
  const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  __syncthreads();  // a previous call's readers are done with partial[]
  v = warp_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    Acc t = lane < int(blockDim.x) / kWarp ? partial[lane] : Acc(0);
    t = warp_sum(t);
    if (lane == 0) partial[0] = t;
  }
  __syncthreads();
  return partial[0];
}

// Element i of an optional parameter, or `fallback`.
template <class Acc, class T> __device__ Acc param(const T* p, int64_t i, Acc fallback) {
  return p ? Acc(p[i]) : fallback;
}

template <class T> const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

// Index arithmetic in 32 bits when every index fits (a 64-bit division costs far more).
template <class F> void with_index_type(int64_t n, F&& fn) {
  if (n <= INT32_MAX) fn(uint32_t());
  else fn(int64_t());
}

// The batch-norm launchers over x [N, C, S]: on x's device, with T x's dtype, Acc its accumulator
// and Index the narrowest index type that holds x.numel(), launch(TypeTag<T>, TypeTag<Acc>,
// Index) launches the kernel; the launch is then checked against operands.
template <class F>
void launch_batch_norm(const char* op, const Tensor& x,
                       std::initializer_list<const Tensor*> operands, F&& launch) {
  DeviceGuard guard(x.device());
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using Acc = compute_t<typename decltype(tag)::type>;
    with_index_type(x.numel(), [&](auto index) { launch(tag, TypeTag<Acc>{}, index); });
  });
  check_launch(op, operands);
}

// ---- batch norm: x [N, C, S] ----

// Block ch: the statistics of channel ch over its N * S values.
template <class T, class Acc, class Index>
__global__ void __launch_bounds__(kChannelThreads)
    bn_stats(const T* x, Index n, Index c, Index s, Acc eps, Acc* mean, Acc* invstd, Acc* var) {
  const Index ch = blockIdx.x;
  MeanM2<Acc> st;
  for (Index m = threadIdx.x; m < n * s; m += blockDim.x) {
    const Index i = m / s, j = m - i * s;
    st.add(Acc(x[(i * c + ch) * s + j]));
  }
  st = block_combine(st);
  if (threadIdx.x != 0) return;
  mean[ch] = st.mean;
  var[ch] = st.m2 / st.n;
  invstd[ch] = Acc(1) / sqrt(var[ch] + eps);
}

void batch_norm_stats(const Tensor& x, double eps, Tensor& save_mean, Tensor& save_invstd,
                      Tensor& batch_var) {
  launch_batch_norm("batch_norm", x, {&x, &save_mean}, [&](auto tag, auto acc, auto index) {
    using T = typename decltype(tag)::type;
    using Acc = typename decltype(acc)::type;
    using Index = decltype(index);
    bn_stats<T, Acc, Index><<<unsigned(x.size(1)), kChannelThreads, 0, stream(x.device())>>>(
        x.data<T>(), Index(x.size(0)), Index(x.size(1)), Index(x.size(2)), Acc(eps),
        save_mean.data<Acc>(), save_invstd.data<Acc>(), batch_var.data<Acc>());
  });
}

// Thread ch: channel ch's running statistics, updated in place.
template <class T, class Acc>
__global__ void bn_update_stats(const Acc* mean, const Acc* var, int64_t c, Acc momentum,
                                Acc unbias, T* rmean, int64_t rmean_stride, T* rvar,
                                int64_t rvar_stride) {
  const int64_t ch = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  T& rm = rmean[ch * rmean_stride];
  T& rv = rvar[ch * rvar_stride];
  rm = T((Acc(1) - momentum) * Acc(rm) + momentum * mean[ch]);
  rv = T((Acc(1) - momentum) * Acc(rv) + momentum * var[ch] * unbias);
}

// The launchers of one thread per channel of the running statistics [C]: on their device, with T
// their dtype and Acc its accumulator, launch(TypeTag<T>, TypeTag<Acc>, C, blocks, stream)
// launches the kernel; the launch is then checked.
template <class F>
void launch_per_channel(const char* op, const Tensor& running_mean, const Tensor& running_var,
                        F&& launch) {
  DeviceGuard guard(running_mean.device());
  const int64_t c = running_mean.size(0);
  dispatch_floating(running_mean.dtype(), op, [&](auto tag) {
    using Acc = compute_t<typename decltype(tag)::type>;
    launch(tag, TypeTag<Acc>{}, c, unsigned((c + kMapThreads - 1) / kMapThreads),
           stream(running_mean.device()));
  });
  check_launch(op, {&running_mean, &running_var});
}

void batch_norm_update_stats(const Tensor& batch_mean, const Tensor& batch_var, double momentum,
                             double unbias, const Tensor& running_mean, const Tensor& running_var) {
  launch_per_channel("batch_norm_update_stats", running_mean, running_var,
                     [&](auto tag, auto acc, int64_t c, unsigned blocks, cudaStream_t st) {
                       using T = typename decltype(tag)::type;
                       using Acc = typename decltype(acc)::type;
                       bn_update_stats<T, Acc><<<blocks, kMapThreads, 0, st>>>(
                           batch_mean.data<Acc>(), batch_var.data<Acc>(), c, Acc(momentum),
                           Acc(unbias), running_mean.data<T>(), running_mean.stride(0),
                           running_var.data<T>(), running_var.stride(0));
                     });
}

template <class T, class Acc>
__global__ void bn_eval_stats(const T* rmean, int64_t rmean_stride, const T* rvar,
                              int64_t rvar_stride, int64_t c, Acc eps, Acc* mean, Acc* invstd) {
  const int64_t ch = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  mean[ch] = Acc(rmean[ch * rmean_stride]);
  invstd[ch] = Acc(1) / sqrt(Acc(rvar[ch * rvar_stride]) + eps);
}

void batch_norm_eval_stats(const Tensor& running_mean, const Tensor& running_var, double eps,
                           Tensor& save_mean, Tensor& save_invstd) {
  launch_per_channel("batch_norm", running_mean, running_var,
                     [&](auto tag, auto acc, int64_t c, unsigned blocks, cudaStream_t st) {
                       using T = typename decltype(tag)::type;
                       using Acc = typename decltype(acc)::type;
                       bn_eval_stats<T, Acc><<<blocks, kMapThreads, 0, st>>>(
                           running_mean.data<T>(), running_mean.stride(0), running_var.data<T>(),
                           running_var.stride(0), c, Acc(eps), save_mean.data<Acc>(),
                           save_invstd.data<Acc>());
                     });
}

// y = (x - mean[c]) * invstd[c] * w[c] + b[c], grid-stride over all N * C * S values.
template <class T, class Acc, class Index>
__global__ void bn_apply(const T* x, Index total, Index c, Index s, const Acc* mean,
                         const Acc* invstd, const T* w, const T* b, T* y) {
  const Index step = Index(blockDim.x) * gridDim.x;
  for (Index k = Index(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += step) {
    const Index ch = (k / s) % c;
    const Acc scale = invstd[ch] * param(w, ch, Acc(1));
    y[k] = T((Acc(x[k]) - mean[ch]) * scale + param(b, ch, Acc(0)));
  }
}

void batch_norm_apply(const Tensor& x, const Tensor& save_mean, const Tensor& save_invstd,
                      const Tensor& weight, const Tensor& bias, Tensor& y) {
  const int dev = x.device().index;
  launch_batch_norm("batch_norm", x, {&x, &y}, [&](auto tag, auto acc, auto index) {
    using T = typename decltype(tag)::type;
    using Acc = typename decltype(acc)::type;
    using Index = decltype(index);
    bn_apply<T, Acc, Index>
        <<<grid_size(x.numel(), kMapThreads, dev), kMapThreads, 0, stream(dev)>>>(
            x.data<T>(), Index(x.numel()), Index(x.size(1)), Index(x.size(2)),
            save_mean.data<Acc>(), save_invstd.data<Acc>(), data_or_null<T>(weight),
            data_or_null<T>(bias), y.data<T>());
  });
}

// Block ch: sum_dy[ch] = sum dy, sum_dy_xhat[ch] = invstd * sum dy * (x - mean).
template <class T, class Acc, class Index>
__global__ void __launch_bounds__(kChannelThreads)
    bn_backward_reduce(const T* dy, const T* x, Index n, Index c, Index s, const Acc* mean,
                       const Acc* invstd, Acc* sum_dy, Acc* sum_dy_xhat) {
  const Index ch = blockIdx.x;
  const Acc mu = mean[ch];
  Acc a = 0, b = 0;
  for (Index m = threadIdx.x; m < n * s; m += blockDim.x) {
    const Index i = m / s, j = m - i * s;
    const Index k = (i * c + ch) * s + j;
    a += Acc(dy[k]);
    b += Acc(dy[k]) * (Acc(x[k]) - mu);
  }
  a = block_sum(a);
  b = block_sum(b);
  if (threadIdx.x == 0) {
    sum_dy[ch] = a;
    sum_dy_xhat[ch] = b * invstd[ch];
  }
}

void batch_norm_backward_reduce(const Tensor& dy, const Tensor& x, const Tensor& save_mean,
                                const Tensor& save_invstd, Tensor& sum_dy, Tensor& sum_dy_xhat) {
  launch_batch_norm("batch_norm_backward", x, {&dy, &x}, [&](auto tag, auto acc, auto index) {
    using T = typename decltype(tag)::type;
    using Acc = typename decltype(acc)::type;
    using Index = decltype(index);
    bn_backward_reduce<T, Acc, Index>
        <<<unsigned(x.size(1)), kChannelThreads, 0, stream(x.device())>>>(
            dy.data<T>(), x.data<T>(), Index(x.size(0)), Index(x.size(1)), Index(x.size(2)),
            save_mean.data<Acc>(), save_invstd.data<Acc>(), sum_dy.data<Acc>(),
            sum_dy_xhat.data<Acc>());
  });
}

// dx = a * dy - b - g * (x - mean) with a = w * invstd, b = a * sum_dy / M,
// g = a * invstd * sum_dy_xhat / M (b = g = 0 in eval).
template <class T, class Acc, class Index>
__global__ void bn_backward_input(const T* dy, const T* x, Index total, Index c, Index s, Acc m,
                                  const Acc* mean, const Acc* invstd, const T* w, const Acc* sum_dy,
                                  const Acc* sum_dy_xhat, bool training, T* dx) {
  const Index step = Index(blockDim.x) * gridDim.x;
  for (Index k = Index(blockIdx.x) * blockDim.x + threadIdx.x; k < total; k += step) {
    const Index ch = (k / s) % c;
    const Acc a = param(w, ch, Acc(1)) * invstd[ch];
    Acc v = a * Acc(dy[k]);
    if (training)
      v -= a * sum_dy[ch] / m + a * invstd[ch] * sum_dy_xhat[ch] / m * (Acc(x[k]) - mean[ch]);
    dx[k] = T(v);
  }
}

void batch_norm_backward_input(const Tensor& dy, const Tensor& x, const Tensor& save_mean,
                               const Tensor& save_invstd, const Tensor& weight,
                               const Tensor& sum_dy, const Tensor& sum_dy_xhat, bool training,
                               Tensor& dx) {
  const int dev = x.device().index;
  launch_batch_norm("batch_norm_backward", x, {&dy, &x, &dx}, [&](auto tag, auto acc, auto index) {
    using T = typename decltype(tag)::type;
    using Acc = typename decltype(acc)::type;
    using Index = decltype(index);
    bn_backward_input<T, Acc, Index>
        <<<grid_size(x.numel(), kMapThreads, dev), kMapThreads, 0, stream(dev)>>>(
            dy.data<T>(), x.data<T>(), Index(x.numel()), Index(x.size(1)), Index(x.size(2)),
            Acc(x.size(0) * x.size(2)), save_mean.data<Acc>(), save_invstd.data<Acc>(),
            data_or_null<T>(weight), sum_dy.data<Acc>(), sum_dy_xhat.data<Acc>(), training,
            dx.data<T>());
  });
}

// ---- layer norm: x [M, D], a warp per row (blockDim = 32 x kRowsPerBlock) ----

unsigned row_blocks(int64_t m) { return unsigned((m + kRowsPerBlock - 1) / kRowsPerBlock); }

template <class T, class Acc>
__global__ void ln_forward(const T* x, const T* w, const T* b, int64_t m, int64_t d, Acc eps, T* y,
                           Acc* mean, Acc* rstd) {
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.y;
  if (row >= m) return;  // the whole warp leaves together
  const T* xr = x + row * d;
  MeanM2<Acc> st;
  for (int64_t j = threadIdx.x; j < d; j += kWarp) st.add(Acc(xr[j]));
  st = warp_combine(st);
  const Acc mu = st.mean, r = Acc(1) / sqrt(st.m2 / st.n + eps);
  if (threadIdx.x == 0) mean[row] = mu, rstd[row] = r;
  T* yr = y + row * d;
  for (int64_t j = threadIdx.x; j < d; j += kWarp)
    yr[j] = T((Acc(xr[j]) - mu) * r * param(w, j, Acc(1)) + param(b, j, Acc(0)));
}

void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& y,
                Tensor& mean, Tensor& rstd) {
  DeviceGuard guard(x.device());
  dispatch_floating(x.dtype(), "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = compute_t<T>;
    ln_forward<T, Acc>
        <<<row_blocks(x.size(0)), dim3(kWarp, kRowsPerBlock), 0, stream(x.device())>>>(
            x.data<T>(), data_or_null<T>(weight), data_or_null<T>(bias), x.size(0), x.size(1),
            Acc(eps), y.data<T>(), mean.data<Acc>(), rstd.data<Acc>());
  });
  check_launch("layer_norm", {&x, &y});
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * w, per row.
template <class T, class Acc>
__global__ void ln_backward_input(const T* dy, const T* x, const Acc* mean, const Acc* rstd,
                                  const T* w, int64_t m, int64_t d, T* dx) {
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.y;
  if (row >= m) return;
  const T* xr = x + row * d;
  const T* dr = dy + row * d;
  const Acc mu = mean[row], r = rstd[row];
  Acc sum_g = 0, sum_g_xhat = 0;
  for (int64_t j = threadIdx.x; j < d; j += kWarp) {
    const Acc g = Acc(dr[j]) * param(w, j, Acc(1));
    sum_g += g;
    sum_g_xhat += g * (Acc(xr[j]) - mu) * r;
  }
  const Acc mean_g = warp_sum(sum_g) / Acc(d), mean_g_xhat = warp_sum(sum_g_xhat) / Acc(d);
  T* out = dx + row * d;
  for (int64_t j = threadIdx.x; j < d; j += kWarp) {
    const Acc g = Acc(dr[j]) * param(w, j, Acc(1));
    out[j] = T(r * (g - mean_g - (Acc(xr[j]) - mu) * r * mean_g_xhat));
  }
}

void layer_norm_backward_input(const Tensor& dy, const Tensor& x, const Tensor& mean,
                               const Tensor& rstd, const Tensor& weight, Tensor& dx) {
  DeviceGuard guard(x.device());
  dispatch_floating(x.dtype(), "layer_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = compute_t<T>;
    ln_backward_input<T, Acc>
        <<<row_blocks(x.size(0)), dim3(kWarp, kRowsPerBlock), 0, stream(x.device())>>>(
            dy.data<T>(), x.data<T>(), mean.data<Acc>(), rstd.data<Acc>(), data_or_null<T>(weight),
            x.size(0), x.size(1), dx.data<T>());
  });
  check_launch("layer_norm_backward", {&dy, &x, &dx});
}

// Column sums in two deterministic stages. Stage 1: block (bx, gy) of 32 x kRowsPerBlock threads
// sums 32 columns over row group gy (rows [m * gy / G, m * (gy + 1) / G)) into partial[gy, :].
template <class T, class Acc>
__global__ void ln_params_partial(const T* dy, const T* x, const Acc* mean, const Acc* rstd,
                                  int64_t m, int64_t d, Acc* partial_w, Acc* partial_b) {
  __shared__ Acc sw[kRowsPerBlock][kWarp + 1], sb[kRowsPerBlock][kWarp + 1];  // +1: no conflicts
  const int64_t j = int64_t(blockIdx.x) * kWarp + threadIdx.x;
  const int64_t groups = gridDim.y;
  const int64_t r0 = m * blockIdx.y / groups, r1 = m * (blockIdx.y + 1) / groups;
  Acc aw = 0, ab = 0;
  if (j < d) {
    for (int64_t i = r0 + threadIdx.y; i < r1; i += kRowsPerBlock) {
      const Acc g = Acc(dy[i * d + j]);
      aw += g * (Acc(x[i * d + j]) - mean[i]) * rstd[i];
      ab += g;
    }
  }
  sw[threadIdx.y][threadIdx.x] = aw;
  sb[threadIdx.y][threadIdx.x] = ab;
  __syncthreads();
  if (threadIdx.y != 0 || j >= d) return;
  for (int k = 1; k < kRowsPerBlock; ++k) aw += sw[k][threadIdx.x], ab += sb[k][threadIdx.x];
  partial_w[blockIdx.y * d + j] = aw;
  partial_b[blockIdx.y * d + j] = ab;
}

// Stage 2: grad[j] = sum over the G groups of partial[g, j], in group order.
template <class T, class Acc>
__global__ void ln_params_final(const Acc* partial_w, const Acc* partial_b, int64_t groups,
                                int64_t d, T* grad_w, T* grad_b) {
  const int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= d) return;
  Acc aw = 0, ab = 0;
  for (int64_t g = 0; g < groups; ++g) aw += partial_w[g * d + j], ab += partial_b[g * d + j];
  grad_w[j] = T(aw);
  grad_b[j] = T(ab);
}

void layer_norm_backward_params(const Tensor& dy, const Tensor& x, const Tensor& mean,
                                const Tensor& rstd, Tensor& grad_weight, Tensor& grad_bias) {
  DeviceGuard guard(x.device());
  const int64_t m = x.size(0), d = x.size(1);
  // Enough row groups to fill the GPU when there are few columns; a function of the shape only,
  // so results are reproducible.
  const int64_t groups = std::max<int64_t>(1, std::min<int64_t>(64, m / 32));
  const DType acc = mean.dtype();
  Tensor partial_w = Tensor::empty({groups, d}, acc, x.device(), "layer_norm_backward");
  Tensor partial_b = Tensor::empty({groups, d}, acc, x.device(), "layer_norm_backward");
  dispatch_floating(x.dtype(), "layer_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = compute_t<T>;
    dim3 grid(unsigned((d + kWarp - 1) / kWarp), unsigned(groups));
    ln_params_partial<T, Acc><<<grid, dim3(kWarp, kRowsPerBlock), 0, stream(x.device())>>>(
        dy.data<T>(), x.data<T>(), mean.data<Acc>(), rstd.data<Acc>(), m, d, partial_w.data<Acc>(),
        partial_b.data<Acc>());
    ln_params_final<T, Acc>
        <<<unsigned((d + kMapThreads - 1) / kMapThreads), kMapThreads, 0, stream(x.device())>>>(
            partial_w.data<Acc>(), partial_b.data<Acc>(), groups, d, grad_weight.data<T>(),
            grad_bias.data<T>());
  });
  check_launch("layer_norm_backward", {&dy, &x, &grad_weight});
}

// ---- dropout: an elementwise map ----

template <class T>
struct DropoutApply {  // a functor: gpu_map runs it inside dispatch_floating's generic lambda
  compute_t<T> scale;
  __device__ T operator()(T v, bool keep) const { return keep ? T(compute_t<T>(v) * scale) : T(0); }
};

void dropout_apply(const Tensor& x, const Tensor& mask, double scale, Tensor& out) {
  dispatch_floating(x.dtype(), "dropout", [&](auto tag) {
    using T = typename decltype(tag)::type;
    gpu_map<T, T, bool>("dropout", out, {x, mask}, DropoutApply<T>{compute_t<T>(scale)});
  });
}

}  // namespace

void register_normalization(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/normalization.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cuda
