// softmax_loss.cu — CUDA kernels of the softmax and loss family.
//
// Row-wise kernels give each row ([rows..., C], the softmax / class dim last) to a group of
// threads (reduce.cuh): a warp for short rows, up to a block for long ones.
//   - Register kernels (softmax and its backward, when rows are contiguous and C fits in
//     kItems vectors x 256 threads): each thread loads its share of the row once, 16 bytes at a
//     time, into registers; one group reduction later it writes the result. One read and one
//     write of memory: the minimum. (Groups stop at 256 threads so that a block's registers fit.)
//   - Looped kernels (any stride, any C): threads stride over the row once to reduce and once
//     more to write.
// Softmax statistics are reduced as (max, sum of exp(x - max)) pairs, the LogSumExp reducer of
// ops/reduction_kernels.h, so one group reduction gives both. Cross entropy and its backward are
// each one fused kernel. Target range checks run first and report a bad target to the device's
// error flag (device_error.cuh), never waiting for it; the loss kernels skip such rows.
#include <limits>

#include "cuda/device_error.cuh"
#include "cuda/loops.cuh"
#include "cuda/reduce.cuh"
#include "kernels.h"
#include "ops/softmax_loss_kernels.h"

namespace ember::cuda {
namespace {

constexpr int kItems = 8;      // vectors per thread a register kernel holds
constexpr int kThreads = 256;  // threads per block, and the widest group of a register kernel
constexpr int kMaxGroup = kWarp * kMaxGroupWarps;  // the widest group of a looped kernel

// A [rows..., C] tensor as rows: row r starts at walk.offset(r); its elements are `stride` apart.
struct Rows {
  DeviceWalk walk;
  int64_t stride;
};

// False when the row dims do not fit a DeviceWalk (the caller then copies to contiguous).
bool make_rows(const Tensor& t, Rows& rows) {
  rows.stride = t.stride(t.dim() - 1);
  return to_device(make_walk(t, 0, t.dim() - 1, false), rows.walk);
}

// Like make_rows, copying t to contiguous memory when its row dims do not fit. Only inputs are
// ever copied: outputs are permuted views of fresh tensors, whose row dims merge to at most two.
Rows rows_of(Tensor& t) {
  Rows rows;
  if (!make_rows(t, rows)) {
    t = t.contiguous();
    make_rows(t, rows);
  }
  return rows;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Threads per row: enough for `per_thread` elements each, a multiple of a warp, at most 1024.
int group_size(int64_t n, int64_t per_thread) {
  int64_t g = ceil_div(ceil_div(n, per_thread), kWarp) * kWarp;
  return int(std::min<int64_t>(std::max<int64_t>(g, kWarp), kMaxGroup));
}

// The launch shape for `rows` rows with `group` threads each: rows share a block when short.
struct RowLaunch {
  dim3 grid, block;
  size_t smem;
};
template <class A> RowLaunch row_launch(int64_t rows, int group) {
  const int per_block = group >= kThreads ? 1 : kThreads / group;
  return {dim3{unsigned(ceil_div(rows, per_block))}, dim3{unsigned(group), unsigned(per_block)},
          group_scratch_bytes<A>(per_block)};
}

// Whether rows of t can be read as VEC-element vectors: contiguous, 16-byte aligned rows.
template <int VEC> bool vector_rows(const Tensor& t, const Rows& rows, int64_t n) {
  if (VEC == 1) return true;
  bool ok = rows.stride == 1 && n % VEC == 0 && uintptr_t(t.data_ptr()) % 16 == 0;
  for (int d = 0; d < rows.walk.ndim; ++d) ok = ok && rows.walk.stride[d] % VEC == 0;
  return ok;
}

template <class C> using Stats = reducers::MaxSum<C>;  // (max, sum of exp(x - max)) of a row

template <class T> struct LseCombine {
  __device__ Stats<compute_t<T>> operator()(const Stats<compute_t<T>>& a,
                                            const Stats<compute_t<T>>& b) const {
    return reducers::LogSumExp<T>{}.combine(a, b);
  }
};

template <class C> struct Plus {
  __device__ C operator()(C a, C b) const { return a + b; }
};

template <class C> __device__ __forceinline__ Stats<C> no_stats() {
  return {-std::numeric_limits<C>::infinity(), C(0)};
}

// Loads vector j of a row (VEC elements from element j * VEC) into v, converted to C.
template <int VEC, class T, class C>
__device__ __forceinline__ void load_vec(const T* row, int64_t j, C (&v)[VEC]) {
  Vec<T, VEC> raw = reinterpret_cast<const Vec<T, VEC>*>(row)[j];
#pragma unroll
  for (int e = 0; e < VEC; ++e) v[e] = C(raw.v[e]);
}

template <int VEC, class T, class C>
__device__ __forceinline__ void store_vec(T* row, int64_t j, const C (&v)[VEC]) {
  Vec<T, VEC> raw;
#pragma unroll
  for (int e = 0; e < VEC; ++e) raw.v[e] = T(v[e]);
  reinterpret_cast<Vec<T, VEC>*>(row)[j] = raw;
}

// ---- softmax / log_softmax ----

// x, y: [rows, n], rows contiguous (stride 1) and n <= kItems * VEC * blockDim.x.
template <int VEC, bool Log, class T>
__global__ void __launch_bounds__(kThreads)
    softmax_regs_kernel(const T* x, Rows xr, T* y, Rows yr, int64_t rows, int64_t n) {
  using C = compute_t<T>;
  const int64_t row = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  const bool active = row < rows;
  const T* xp = x + (active ? xr.walk.offset(row) : 0);
  C v[kItems][VEC];
  C m = -std::numeric_limits<C>::infinity();
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int64_t j = int64_t(it) * blockDim.x + threadIdx.x;
    if (active && j * VEC < n) {
      load_vec<VEC>(xp, j, v[it]);
      // A NaN becomes the max and stays it (x > NaN is false), so the row's result is NaN, as
      // on the CPU; `x > m` alone would skip it and give the other elements a finite softmax.
#pragma unroll
      for (int e = 0; e < VEC; ++e) m = (v[it][e] > m || reducers::is_nan(v[it][e])) ? v[it][e] : m;
    }
  }
  // This thread's (max, sum). With no element above -inf it holds nothing: its exps are 0 (not
  // exp(-inf + inf), which is NaN).
  C s = 0;
  const bool any = m != -std::numeric_limits<C>::infinity();
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int64_t j = int64_t(it) * blockDim.x + threadIdx.x;
    if (active && j * VEC < n)
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        C ex = any ? std::exp(v[it][e] - m) : C(0);
        s += ex;
        if (!Log) v[it][e] = ex;  // softmax reuses the exps below
      }
  }
  Stats<C> st = group_allreduce(any ? Stats<C>{m, s} : no_stats<C>(), LseCombine<T>{},
                                no_stats<C>(), group_scratch<Stats<C>>());
  if (!active) return;
  // softmax: exp(x - m) * exp(m - M) / S;  log_softmax: x - M - log(S). A thread with nothing
  // writes 0 / S: 0, or NaN when the whole row is -inf (S = 0), as on the CPU.
  const C scale = any ? std::exp(m - st.max) / st.sum : C(0) / st.sum;
  // (x - M) - log(S), not x - (M + log(S)): with logits near 1000 the sum M + log(S) would
  // round to float32's coarse spacing there (6e-5) and lose digits the result has.
  const C log_sum = std::log(st.sum);
  T* yp = y + yr.walk.offset(row);
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int64_t j = int64_t(it) * blockDim.x + threadIdx.x;
    if (j * VEC < n) {
#pragma unroll
      for (int e = 0; e < VEC; ++e)
        v[it][e] = Log ? (v[it][e] - st.max) - log_sum : v[it][e] * scale;
      store_vec<VEC>(yp, j, v[it]);
    }
  }
}

// Any strides and any n: one pass for the statistics, one to write.
template <bool Log, class T>
__global__ void __launch_bounds__(kMaxGroup)
    softmax_looped_kernel(const T* x, Rows xr, T* y, Rows yr, int64_t rows, int64_t n) {
  using C = compute_t<T>;
  const reducers::LogSumExp<T> lse;
  const int64_t row = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  const bool active = row < rows;
  const T* xp = x + (active ? xr.walk.offset(row) : 0);
  Stats<C> st = no_stats<C>();
  for (int64_t k = threadIdx.x; active && k < n; k += blockDim.x)
    st = lse.step(st, xp[k * xr.stride], k);
  st = group_allreduce(st, LseCombine<T>{}, no_stats<C>(), group_scratch<Stats<C>>());
  if (!active) return;
  const C log_sum = std::log(st.sum);
  T* yp = y + yr.walk.offset(row);
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    C logp = C(xp[k * xr.stride]) - st.max - log_sum;
    yp[k * yr.stride] = T(Log ? logp : std::exp(logp));
  }
}

template <class T, int VEC> void softmax_typed(const Tensor& x_in, bool log, Tensor& y) {
  using C = compute_t<T>;
  Tensor x = x_in;
  const Rows xr = rows_of(x), yr = rows_of(y);
  const int64_t rows = make_walk(x, 0, x.dim() - 1, false).numel, n = x.size(x.dim() - 1);
  if (rows == 0 || n == 0) return;
  DeviceGuard guard(x.device());
  cudaStream_t s = stream(x.device());
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  const bool vec = vector_rows<VEC>(x, xr, n) && vector_rows<VEC>(y, yr, n);
  const int width = vec ? VEC : 1;
  if (xr.stride == 1 && yr.stride == 1 && n <= int64_t(kItems) * width * kThreads) {
    const RowLaunch L = row_launch<Stats<C>>(rows, group_size(n, int64_t(kItems) * width));
    auto launch = [&](auto kernel) {
      kernel<<<L.grid, L.block, L.smem, s>>>(xp, xr, yp, yr, rows, n);
    };
    if (vec && log) launch(softmax_regs_kernel<VEC, true, T>);
    else if (vec) launch(softmax_regs_kernel<VEC, false, T>);
    else if (log) launch(softmax_regs_kernel<1, true, T>);
    else launch(softmax_regs_kernel<1, false, T>);
  } else {
    const RowLaunch L = row_launch<Stats<C>>(rows, group_size(n, 4));
    auto kernel = log ? softmax_looped_kernel<true, T> : softmax_looped_kernel<false, T>;
    kernel<<<L.grid, L.block, L.smem, s>>>(xp, xr, yp, yr, rows, n);
  }
  check_launch(log ? "log_softmax" : "softmax", {&x, &y});
}

void softmax(const Tensor& x, bool log, Tensor& y) {
  dispatch_floating(x.dtype(), log ? "log_softmax" : "softmax", [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_typed<T, int(16 / sizeof(T))>(x, log, y);
  });
}

// ---- softmax backward: gx = y * (g - sum(g * y)), or for log_softmax gx = g - exp(y) * sum(g)

template <int VEC, bool Log, class T>
__global__ void __launch_bounds__(kThreads)
    softmax_backward_regs_kernel(const T* g, Rows gr, const T* y, Rows yr, T* gx, Rows gxr,
                                 int64_t rows, int64_t n) {
  using C = compute_t<T>;
  const int64_t row = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  const bool active = row < rows;
  const T* gp = g + (active ? gr.walk.offset(row) : 0);
  const T* yp = y + (active ? yr.walk.offset(row) : 0);
  C gv[kItems][VEC], yv[kItems][VEC];
  C dot = 0;
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int64_t j = int64_t(it) * blockDim.x + threadIdx.x;
    if (active && j * VEC < n) {
      load_vec<VEC>(gp, j, gv[it]);
      load_vec<VEC>(yp, j, yv[it]);
#pragma unroll
      for (int e = 0; e < VEC; ++e) dot += Log ? gv[it][e] : gv[it][e] * yv[it][e];
    }
  }
  dot = group_allreduce(dot, Plus<C>{}, C(0), group_scratch<C>());
  if (!active) return;
  T* out = gx + gxr.walk.offset(row);
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int64_t j = int64_t(it) * blockDim.x + threadIdx.x;
    if (j * VEC < n) {
#pragma unroll
      for (int e = 0; e < VEC; ++e)
        gv[it][e] = Log ? gv[it][e] - std::exp(yv[it][e]) * dot : yv[it][e] * (gv[it][e] - dot);
      store_vec<VEC>(out, j, gv[it]);
    }
  }
}

template <bool Log, class T>
__global__ void __launch_bounds__(kMaxGroup)
    softmax_backward_looped_kernel(const T* g, Rows gr, const T* y, Rows yr, T* gx, Rows gxr,
                                   int64_t rows, int64_t n) {
  using C = compute_t<T>;
  const int64_t row = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  const bool active = row < rows;
  const T* gp = g + (active ? gr.walk.offset(row) : 0);
  const T* yp = y + (active ? yr.walk.offset(row) : 0);
  C dot = 0;
  for (int64_t k = threadIdx.x; active && k < n; k += blockDim.x)
    dot += Log ? C(gp[k * gr.stride]) : C(gp[k * gr.stride]) * C(yp[k * yr.stride]);
  dot = group_allreduce(dot, Plus<C>{}, C(0), group_scratch<C>());
  if (!active) return;
  T* out = gx + gxr.walk.offset(row);
  for (int64_t k = threadIdx.x; k < n; k += blockDim.x) {
    C gk = C(gp[k * gr.stride]), yk = C(yp[k * yr.stride]);
    out[k * gxr.stride] = T(Log ? gk - std::exp(yk) * dot : yk * (gk - dot));
  }
}

template <class T, int VEC>
void softmax_backward_typed(const Tensor& g_in, const Tensor& y_in, bool log, Tensor& gx) {
  using C = compute_t<T>;
  Tensor g = g_in, y = y_in;
  const Rows gr = rows_of(g), yr = rows_of(y), gxr = rows_of(gx);
  const int64_t rows = make_walk(y, 0, y.dim() - 1, false).numel, n = y.size(y.dim() - 1);
  if (rows == 0 || n == 0) return;
  DeviceGuard guard(y.device());
  cudaStream_t s = stream(y.device());
  const T *gp = g.data<T>(), *yp = y.data<T>();
  T* out = gx.data<T>();
  const bool vec =
      vector_rows<VEC>(g, gr, n) && vector_rows<VEC>(y, yr, n) && vector_rows<VEC>(gx, gxr, n);
  const int width = vec ? VEC : 1;
  const bool contiguous = gr.stride == 1 && yr.stride == 1 && gxr.stride == 1;
  if (contiguous && n <= int64_t(kItems) * width * kThreads) {
    const RowLaunch L = row_launch<C>(rows, group_size(n, int64_t(kItems) * width));
    auto launch = [&](auto kernel) {
      kernel<<<L.grid, L.block, L.smem, s>>>(gp, gr, yp, yr, out, gxr, rows, n);
    };
    if (vec && log) launch(softmax_backward_regs_kernel<VEC, true, T>);
    else if (vec) launch(softmax_backward_regs_kernel<VEC, false, T>);
    else if (log) launch(softmax_backward_regs_kernel<1, true, T>);
    else launch(softmax_backward_regs_kernel<1, false, T>);
  } else {
    const RowLaunch L = row_launch<C>(rows, group_size(n, 4));
    auto kernel =
        log ? softmax_backward_looped_kernel<true, T> : softmax_backward_looped_kernel<false, T>;
    kernel<<<L.grid, L.block, L.smem, s>>>(gp, gr, yp, yr, out, gxr, rows, n);
  }
  check_launch(log ? "log_softmax_backward" : "softmax_backward", {&g, &y, &gx});
}

void softmax_backward(const Tensor& g, const Tensor& y, bool log, Tensor& gx) {
  dispatch_floating(y.dtype(), log ? "log_softmax_backward" : "softmax_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_backward_typed<T, int(16 / sizeof(T))>(g, y, log, gx);
  });
}

// ---- targets: per-sample weights and the range check ----

// A target outside [0, classes) is reported to the sink, and weighs 0.
template <class C>
__global__ void target_check_kernel(const int64_t* target, DeviceWalk tw, const C* weight,
                                    int64_t ignore_index, int64_t classes, int64_t count,
                                    C* sample_weight, DeviceErrorSink sink) {
  const int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= count) return;
  const int64_t t = target[tw.offset(r)];
  C w = C(0);
  if (t != ignore_index && (t < 0 || t >= classes)) sink.report(t);
  else if (t != ignore_index) w = weight ? weight[t] : C(1);
  sample_weight[r] = w;
}

void target_weight(const Tensor& target_in, const Tensor& weight, int64_t ignore_index,
                   int64_t num_classes, Tensor& sample_weight, const DeferredError& error) {
  Tensor target = target_in;
  DeviceWalk tw;
  if (!to_device(make_walk(target, 0, target.dim(), false), tw)) {
    target = target.contiguous();
    to_device(make_walk(target, 0, target.dim(), false), tw);
  }
  const int64_t count = target.numel();
  if (count == 0) return;
  const DeviceErrorSink sink = arm_error(target.device(), error, num_classes);
  DeviceGuard guard(target.device());
  dispatch_floating(sample_weight.dtype(), "cross_entropy", [&](auto tag) {
    using C = typename decltype(tag)::type;
    target_check_kernel<<<unsigned(ceil_div(count, kThreads)), kThreads, 0,
                          stream(target.device())>>>(target.data<int64_t>(), tw,
                                                     weight.defined() ? weight.data<C>() : nullptr,
                                                     ignore_index, num_classes, count,
                                                     sample_weight.data<C>(), sink);
  });
  check_launch(error.op, {&target, &sample_weight});
}

// ---- cross entropy: logits [rows, C], one group per row ----

// Sum over the row of w[k] * x[k] and of w[k], for label smoothing.
template <class C> struct WeightedSums { C wx, w; };
template <class C> struct PlusSums {
  __device__ WeightedSums<C> operator()(const WeightedSums<C>& a, const WeightedSums<C>& b) const {
    return {a.wx + b.wx, a.w + b.w};
  }
};

template <class T> struct RowArgs {  // what the cross entropy kernels share
  const T* x;
  Rows xr;
  const int64_t* target;
  DeviceWalk tw;
  const compute_t<T>* weight;  // nullptr: every class weighs 1
  int64_t ignore_index, rows, n;
  compute_t<T> eps;
};

// One row of the cross entropy, as every thread of its group sees it: which row, its target,
// whether it is skipped (ignored, out of range or past the last row), and the row's log-sum-exp
// statistics with, when eps != 0, its weighted sums. Skipped rows still take part in the group
// reductions, so every thread of the block reaches them.
template <class T> struct CeRow {
  int64_t row, target;
  bool active, skip;
  const T* x;
  Stats<compute_t<T>> st;
  WeightedSums<compute_t<T>> ws;
};

// Rows of at least this many adjacent elements are read 16 bytes a load (for_each_adjacent): a
// vocabulary-sized row (GPT-2's 50257 logits) then streams at close to the memory's bandwidth.
// Short rows (a 10-class head) keep one element a load, which measured faster there.
constexpr int64_t kVectorRow = 1024;

// For a row whose elements are adjacent, the group's threads sharing them: calls f(k, x[k]) for
// the elements before the row's first 16-byte boundary and the last few, and f_vec(k, v) for each
// 16-byte vector v between (several loads in flight at once), whose first element is x[k].
template <class T, class F, class FVec>
__device__ __forceinline__ void for_each_adjacent(const T* row, int64_t n, F&& f, FVec&& f_vec) {
  constexpr int VEC = 16 / sizeof(T);
  const int64_t head = min(n, int64_t((16 - uintptr_t(row) % 16) % 16 / sizeof(T)));
  if (threadIdx.x < head) f(int64_t(threadIdx.x), row[threadIdx.x]);
  const int64_t vecs = (n - head) / VEC;
  const auto* body = reinterpret_cast<const Vec<T, VEC>*>(row + head);
#pragma unroll 4
  for (int64_t j = threadIdx.x; j < vecs; j += blockDim.x) f_vec(head + j * VEC, body[j]);
  for (int64_t k = head + vecs * VEC + threadIdx.x; k < n; k += blockDim.x) f(k, row[k]);
}

// The (max, sum of exp(x - max)) statistics of one vector, combined into a row's as one step:
// its max first, then its VEC exps, which depend on nothing but that max. Stepping element by
// element chains every exp behind the previous element's comparison; on a vocabulary-sized row
// that chain, not the memory, set the cross entropy's time. A NaN in the vector makes its max
// and sum NaN, which combine() keeps, as step() does.
template <class T, int VEC>
__device__ __forceinline__ Stats<compute_t<T>> vector_stats(const Vec<T, VEC>& v) {
  using C = compute_t<T>;
  C x[VEC], m = C(v.v[0]);
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    x[e] = C(v.v[e]);
    m = x[e] > m || reducers::is_nan(x[e]) ? x[e] : m;
  }
  if (reducers::is_nan(m)) return {m, m};
  C sum = C(0);
#pragma unroll
  for (int e = 0; e < VEC; ++e) sum += x[e] == m ? C(1) : std::exp(x[e] - m);  // as step()
  return {m, sum};
}

// out[k] = f(k, in[k]) for every k < n of two rows of adjacent elements that stand alike against
// 16-byte boundaries, 16 bytes a load and a store (as for_each_adjacent reads).
template <class T, class F>
__device__ __forceinline__ void map_adjacent(const T* in, T* out, int64_t n, F&& f) {
  constexpr int VEC = 16 / sizeof(T);
  const int64_t head = min(n, int64_t((16 - uintptr_t(in) % 16) % 16 / sizeof(T)));
  if (threadIdx.x < head) out[threadIdx.x] = f(int64_t(threadIdx.x), in[threadIdx.x]);
  const int64_t vecs = (n - head) / VEC;
  const auto* from = reinterpret_cast<const Vec<T, VEC>*>(in + head);
  auto* to = reinterpret_cast<Vec<T, VEC>*>(out + head);
#pragma unroll 4
  for (int64_t j = threadIdx.x; j < vecs; j += blockDim.x) {
    const Vec<T, VEC> v = from[j];
    Vec<T, VEC> r;
#pragma unroll
    for (int e = 0; e < VEC; ++e) r.v[e] = f(head + j * VEC + e, v.v[e]);
    to[j] = r;
  }
  for (int64_t k = head + vecs * VEC + threadIdx.x; k < n; k += blockDim.x) out[k] = f(k, in[k]);
}

template <class T> __device__ CeRow<T> load_row(const RowArgs<T>& a) {
  using C = compute_t<T>;
  CeRow<T> r;
  r.row = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  r.active = r.row < a.rows;
  r.target = r.active ? a.target[a.tw.offset(r.row)] : a.ignore_index;
  r.skip = r.target == a.ignore_index || r.target < 0 || r.target >= a.n;
  r.x = a.x + (r.active ? a.xr.walk.offset(r.row) : 0);
  const reducers::LogSumExp<T> lse;
  r.st = no_stats<C>();
  r.ws = {C(0), C(0)};
  auto add_weighted = [&](int64_t k, T raw) {  // label smoothing's sums
    const C w = a.weight ? a.weight[k] : C(1);
    r.ws.wx += w * C(raw);
    r.ws.w += w;
  };
  auto add = [&](int64_t k, T raw) {
    r.st = lse.step(r.st, raw, k);
    if (a.eps != C(0)) add_weighted(k, raw);
  };
  constexpr int VEC = 16 / sizeof(T);
  auto add_vec = [&](int64_t k, const Vec<T, VEC>& v) {
    r.st = lse.combine(r.st, vector_stats(v));
    if (a.eps != C(0))
#pragma unroll
      for (int e = 0; e < VEC; ++e) add_weighted(k + e, v.v[e]);
  };
  if (!r.skip && a.xr.stride == 1 && a.n >= kVectorRow) for_each_adjacent(r.x, a.n, add, add_vec);
  else
    for (int64_t k = threadIdx.x; !r.skip && k < a.n; k += blockDim.x) add(k, r.x[k * a.xr.stride]);
  r.st = group_allreduce(r.st, LseCombine<T>{}, no_stats<C>(), group_scratch<Stats<C>>());
  if (a.eps != C(0))
    r.ws = group_allreduce(r.ws, PlusSums<C>{}, WeightedSums<C>{C(0), C(0)},
                           group_scratch<WeightedSums<C>>());
  return r;
}

template <class T>
__global__ void __launch_bounds__(kMaxGroup) ce_forward_kernel(RowArgs<T> a, compute_t<T>* loss) {
  using C = compute_t<T>;
  const CeRow<T> r = load_row(a);
  if (!r.active || threadIdx.x != 0) return;
  if (r.skip) {
    loss[r.row] = C(0);
    return;
  }
  // -log_softmax(x)[k] = (M - x[k]) + log(S)
  const C log_sum = std::log(r.st.sum), w_t = a.weight ? a.weight[r.target] : C(1);
  C l = (C(1) - a.eps) * w_t * (r.st.max - C(r.x[r.target * a.xr.stride]) + log_sum);
  if (a.eps != C(0)) l += a.eps / C(a.n) * (r.ws.w * (r.st.max + log_sum) - r.ws.wx);
  loss[r.row] = l;
}

template <class T>
__global__ void __launch_bounds__(kMaxGroup)
    ce_backward_kernel(RowArgs<T> a, const compute_t<T>* g, DeviceWalk gw, T* grad, Rows gr) {
  using C = compute_t<T>;
  const CeRow<T> r = load_row(a);
  if (!r.active) return;
  T* out = grad + gr.walk.offset(r.row);
  if (r.skip) {
    for (int64_t k = threadIdx.x; k < a.n; k += blockDim.x) out[k * gr.stride] = T(0);
    return;
  }
  // grad[k] = g * ((1 - eps) w[t] (p[k] - [k == t]) + eps / C (p[k] sum(w) - w[k]))
  const C scale = g[gw.offset(r.row)], inv_sum = C(1) / r.st.sum;
  const C hard = (C(1) - a.eps) * (a.weight ? a.weight[r.target] : C(1)), smooth = a.eps / C(a.n);
  auto grad_of = [&](int64_t k, T raw) {
    const C p = std::exp(C(raw) - r.st.max) * inv_sum;
    C d = hard * (p - C(k == r.target));
    if (a.eps != C(0)) d += smooth * (p * r.ws.w - (a.weight ? a.weight[k] : C(1)));
    return T(scale * d);
  };
  if (a.xr.stride == 1 && gr.stride == 1 && a.n >= kVectorRow &&
      (uintptr_t(r.x) - uintptr_t(out)) % 16 == 0)
    map_adjacent(r.x, out, a.n, grad_of);
  else
    for (int64_t k = threadIdx.x; k < a.n; k += blockDim.x)
      out[k * gr.stride] = grad_of(k, r.x[k * a.xr.stride]);
}

// The shared arguments of the cross entropy kernels (tensors copied when their dims do not fit).
template <class T>
RowArgs<T> row_args(Tensor& x, Tensor& target, const Tensor& weight, int64_t ignore_index,
                    double eps) {
  RowArgs<T> a;
  a.xr = rows_of(x);
  if (!to_device(make_walk(target, 0, target.dim(), false), a.tw)) {
    target = target.contiguous();
    to_device(make_walk(target, 0, target.dim(), false), a.tw);
  }
  a.x = x.data<T>();
  a.target = target.data<int64_t>();
  a.weight = weight.defined() ? weight.data<compute_t<T>>() : nullptr;
  a.ignore_index = ignore_index;
  a.rows = target.numel();
  a.n = x.size(x.dim() - 1);
  a.eps = compute_t<T>(eps);
  return a;
}

size_t ce_scratch(int per_block) {  // both accumulator types of load_row share the scratch
  return std::max(group_scratch_bytes<Stats<double>>(per_block),
                  group_scratch_bytes<WeightedSums<double>>(per_block));
}

void cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight,
                   int64_t ignore_index, double label_smoothing, Tensor& loss) {
  dispatch_floating(logits.dtype(), "cross_entropy", [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor x = logits, t = target;
    const RowArgs<T> a = row_args<T>(x, t, weight, ignore_index, label_smoothing);
    if (a.rows == 0) return;
    DeviceGuard guard(x.device());
    const int group = group_size(a.n, 8);
    const RowLaunch L = row_launch<Stats<double>>(a.rows, group);
    ce_forward_kernel<<<L.grid, L.block, ce_scratch(int(L.block.y)), stream(x.device())>>>(
        a, loss.data<compute_t<T>>());
    check_launch("cross_entropy", {&x, &t, &loss});
  });
}

void cross_entropy_backward(const Tensor& g_in, const Tensor& logits, const Tensor& target,
                            const Tensor& weight, int64_t ignore_index, double label_smoothing,
                            Tensor& grad_logits) {
  dispatch_floating(logits.dtype(), "cross_entropy_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor x = logits, t = target, g = g_in;
    const RowArgs<T> a = row_args<T>(x, t, weight, ignore_index, label_smoothing);
    if (a.rows == 0 || a.n == 0) return;
    DeviceWalk gw;
    if (!to_device(make_walk(g, 0, g.dim(), false), gw)) {
      g = g.contiguous();
      to_device(make_walk(g, 0, g.dim(), false), gw);
    }
    const Rows gr = rows_of(grad_logits);
    DeviceGuard guard(x.device());
    const RowLaunch L = row_launch<Stats<double>>(a.rows, group_size(a.n, 8));
    ce_backward_kernel<<<L.grid, L.block, ce_scratch(int(L.block.y)), stream(x.device())>>>(
        a, g.data<compute_t<T>>(), gw, grad_logits.data<T>(), gr);
    check_launch("cross_entropy_backward", {&x, &t, &grad_logits});
  });
}

// ---- nll: a thread per row ----

template <class T>
__global__ void nll_forward_kernel(const T* lp, Rows lr, const int64_t* target, DeviceWalk tw,
                                   const compute_t<T>* weight, int64_t ignore_index, int64_t rows,
                                   int64_t classes, compute_t<T>* loss) {
  using C = compute_t<T>;
  const int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const int64_t t = target[tw.offset(r)];
  const bool skip = t == ignore_index || t < 0 || t >= classes;  // out of range: reported already
  loss[r] = skip ? C(0) : -(weight ? weight[t] : C(1)) * C(lp[lr.walk.offset(r) + t * lr.stride]);
}

// grad[r, t] = -g[r] * w[t]; the rest of grad is already zero.
template <class T>
__global__ void nll_backward_kernel(const compute_t<T>* g, DeviceWalk gw, const int64_t* target,
                                    DeviceWalk tw, const compute_t<T>* weight, int64_t ignore_index,
                                    int64_t rows, int64_t classes, T* grad, Rows gr) {
  using C = compute_t<T>;
  const int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const int64_t t = target[tw.offset(r)];
  if (t != ignore_index && t >= 0 && t < classes)  // out of range: reported already
    grad[gr.walk.offset(r) + t * gr.stride] = T(-g[gw.offset(r)] * (weight ? weight[t] : C(1)));
}

DeviceWalk walk_of(Tensor& t) {  // all of t's dims, copied to contiguous when they do not fit
  DeviceWalk w;
  if (!to_device(make_walk(t, 0, t.dim(), false), w)) {
    t = t.contiguous();
    to_device(make_walk(t, 0, t.dim(), false), w);
  }
  return w;
}

void nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight,
              int64_t ignore_index, Tensor& loss) {
  dispatch_floating(log_probs.dtype(), "nll_loss", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    Tensor lp = log_probs, t = target;
    const Rows lr = rows_of(lp);
    const DeviceWalk tw = walk_of(t);
    const int64_t rows = t.numel();
    if (rows == 0) return;
    DeviceGuard guard(lp.device());
    nll_forward_kernel<<<unsigned(ceil_div(rows, kThreads)), kThreads, 0, stream(lp.device())>>>(
        lp.data<T>(), lr, t.data<int64_t>(), tw, weight.defined() ? weight.data<C>() : nullptr,
        ignore_index, rows, lp.size(-1), loss.data<C>());
    check_launch("nll_loss", {&lp, &t, &loss});
  });
}

template <class T> struct Zero {
  __device__ T operator()() const { return T(0); }
};

void nll_loss_backward(const Tensor& g_in, const Tensor& target, const Tensor& weight,
                       int64_t ignore_index, Tensor& grad) {
  dispatch_floating(grad.dtype(), "nll_loss_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    gpu_map<T>("nll_loss_backward", grad, {}, Zero<T>{});
    Tensor g = g_in, t = target;
    const DeviceWalk gw = walk_of(g), tw = walk_of(t);
    const Rows gr = rows_of(grad);
    const int64_t rows = t.numel();
    if (rows == 0) return;
    DeviceGuard guard(grad.device());
    nll_backward_kernel<<<unsigned(ceil_div(rows, kThreads)), kThreads, 0, stream(grad.device())>>>(
        g.data<C>(), gw, t.data<int64_t>(), tw, weight.defined() ? weight.data<C>() : nullptr,
        ignore_index, rows, grad.size(-1), grad.data<T>(), gr);
    check_launch("nll_loss_backward", {&g, &t, &grad});
  });
}

// ---- pointwise losses on the elementwise engine ----

template <class T, class F> struct LossValue {  // loss = f(x, y[, pos_weight])
  F f;
  __device__ T operator()(T x, T y) const {
    using C = compute_t<T>;
    return T(f.value(C(x), C(y), C(1)));
  }
  __device__ T operator()(T x, T y, T w) const {
    using C = compute_t<T>;
    return T(f.value(C(x), C(y), C(w)));
  }
};

template <class T, class F> struct LossGrad {  // grad_x = scale * g * df/dx(x, y[, pos_weight])
  F f;
  compute_t<T> scale;
  __device__ T operator()(T g, T x, T y) const {
    using C = compute_t<T>;
    return T(scale * C(g) * f.grad(C(x), C(y), C(1)));
  }
  __device__ T operator()(T g, T x, T y, T w) const {
    using C = compute_t<T>;
    return T(scale * C(g) * f.grad(C(x), C(y), C(w)));
  }
};

template <class T, class F>
void pointwise_typed(const F& f, const Tensor& x, const Tensor& y, const Tensor& pw, Tensor& loss) {
  if (pw.defined()) gpu_map<T, T, T, T>("loss", loss, {x, y, pw}, LossValue<T, F>{f});
  else gpu_map<T, T, T>("loss", loss, {x, y}, LossValue<T, F>{f});
}

void pointwise_loss(PointwiseLoss kind, const Tensor& x, const Tensor& y, const Tensor& pw,
                    Tensor& loss) {
  dispatch_floating(x.dtype(), "loss", [&](auto tag) {
    using T = typename decltype(tag)::type;
    losses::visit<compute_t<T>>(kind, [&](auto f) { pointwise_typed<T>(f, x, y, pw, loss); });
  });
}

template <class T, class F>
void pointwise_backward_typed(const F& f, const Tensor& g, double scale, const Tensor& x,
                              const Tensor& y, const Tensor& pw, Tensor& grad) {
  const LossGrad<T, F> fn{f, compute_t<T>(scale)};
  if (pw.defined()) gpu_map<T, T, T, T, T>("loss_backward", grad, {g, x, y, pw}, fn);
  else gpu_map<T, T, T, T>("loss_backward", grad, {g, x, y}, fn);
}

void pointwise_loss_backward(PointwiseLoss kind, const Tensor& g, double scale, const Tensor& x,
                             const Tensor& y, const Tensor& pw, Tensor& grad) {
  dispatch_floating(x.dtype(), "loss_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    losses::visit<compute_t<T>>(kind, [&](auto f) {
      pointwise_backward_typed<T>(f, g, scale, x, y, pw, grad);
    });
  });
}

}  // namespace

void register_softmax_loss(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/softmax_loss.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cuda
