// reduction.cu — CUDA kernels of the reduction family. One engine, launch_reduce, runs any
// reducer of ops/reduction_kernels.h over x: [kept..., reduced...] (last nreduce dims reduced):
//   - group kernel: a warp or a block per output, its threads striding over the output's elements
//     (16-byte vector loads when they form one contiguous, aligned run): row sums, full sums;
//   - thread kernel: a thread per output, for short reductions and for column reductions, where
//     neighbouring threads read neighbouring outputs' elements, so every load is coalesced.
// When the outputs are too few to fill the GPU, each output's elements are split into chunks
// handled by several blocks (grid.y) that write partial accumulators; a finish kernel combines
// them, so a full sum of 2^24 elements runs on every SM.
#include "cuda/loops.cuh"
#include "cuda/reduce.cuh"
#include "kernels.h"

namespace ember::cuda {
namespace {

namespace rd = reducers;

constexpr int kBlock = 256;  // threads per block
constexpr int kUnroll = 4;   // loads in flight per thread before they are folded in

// The work of one launch: which elements each output folds, and how they are split.
struct Plan {
  DeviceWalk out;     // kept dims: where output o's elements start
  DeviceWalk red;     // reduced dims, relative to that start
  int64_t outer = 0;  // number of outputs
  int64_t n = 0;      // elements per output
  int64_t chunk = 0;  // elements per split
  int splits = 1;     // chunks per output (grid.y); 1 writes results directly
};

template <class R> struct CombineOf {  // a reducer's combine as the functor group_allreduce takes
  R r;
  __device__ typename R::acc_t operator()(const typename R::acc_t& a,
                                          const typename R::acc_t& b) const {
    return r.combine(a, b);
  }
};

// This thread's share of elements [begin, end) of one output: threads of the group take turns,
// kUnroll loads at a time. VEC > 1: the elements are contiguous and base + begin is 16-byte
// aligned, so each load is one 16-byte vector.
template <int VEC, class T, class R>
__device__ typename R::acc_t fold_range(const T* base, const DeviceWalk& red, int64_t begin,
                                        int64_t end, const R& r) {
  typename R::acc_t acc = r.init();
  const int64_t tid = threadIdx.x, nt = blockDim.x;
  int64_t i0 = begin;  // first element the scalar loop below handles
  if constexpr (VEC > 1) {
    const int64_t nvec = (end - begin) / VEC;
    const auto* v = reinterpret_cast<const Vec<T, VEC>*>(base + begin);
    for (int64_t j0 = tid; j0 < nvec; j0 += nt * kUnroll) {
      Vec<T, VEC> buf[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (j0 + u * nt < nvec) buf[u] = v[j0 + u * nt];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (j0 + u * nt < nvec)
#pragma unroll
          for (int e = 0; e < VEC; ++e)
            acc = r.step(acc, buf[u].v[e], begin + (j0 + u * nt) * VEC + e);
    }
    i0 = begin + nvec * VEC;
  }
  for (int64_t i = i0 + tid; i < end; i += nt * kUnroll) {
    T buf[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (i + u * nt < end) buf[u] = base[red.offset(i + u * nt)];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      if (i + u * nt < end) acc = r.step(acc, buf[u], i + u * nt);
  }
  return acc;
}

// Output o (or its chunk blockIdx.y) per group of blockDim.x threads. x: [kept..., reduced...].
template <int VEC, class T, class R, class Store>
__global__ void __launch_bounds__(kBlock)
    reduce_group_kernel(const T* x, Plan p, R r, Store store, typename R::acc_t* partial) {
  using Acc = typename R::acc_t;
  const int64_t o = int64_t(blockIdx.x) * blockDim.y + threadIdx.y;
  const int64_t begin = int64_t(blockIdx.y) * p.chunk;
  const int64_t end = begin + p.chunk < p.n ? begin + p.chunk : p.n;
  Acc acc = r.init();
  if (o < p.outer) acc = fold_range<VEC>(x + p.out.offset(o), p.red, begin, end, r);
  acc = group_allreduce(acc, CombineOf<R>{r}, r.init(), group_scratch<Acc>());
  if (o >= p.outer || threadIdx.x != 0) return;
  if (p.splits == 1) store(o, acc);
  else partial[blockIdx.y * p.outer + o] = acc;
}

// Output o (or its chunk blockIdx.y) per thread.
template <class T, class R, class Store>
__global__ void __launch_bounds__(kBlock)
    reduce_thread_kernel(const T* x, Plan p, R r, Store store, typename R::acc_t* partial) {
  const int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= p.outer) return;
  const T* base = x + p.out.offset(o);
  const int64_t begin = int64_t(blockIdx.y) * p.chunk;
  const int64_t end = begin + p.chunk < p.n ? begin + p.chunk : p.n;
  typename R::acc_t acc = r.init();
#pragma unroll 4
  for (int64_t i = begin; i < end; ++i) acc = r.step(acc, base[p.red.offset(i)], i);
  if (p.splits == 1) store(o, acc);
  else partial[blockIdx.y * p.outer + o] = acc;
}

// Combines each output's `splits` partial accumulators as a pairwise tree, in place and in order
// (left before right, so first-index ties still win). A running sum over a thousand partials
// would lose ~1e-5 of a float32 total; the tree's error grows with log2(splits) instead.
// partial is [splits, outer]: neighbouring threads (outputs) read and write neighbouring words.
// The tree's first three levels stay within aligned runs of 8 partials: each run is loaded at
// once (8 independent loads) and folded in registers, so only the levels above wait on memory.
template <class R, class Store>
__global__ void __launch_bounds__(kBlock)
    reduce_finish_kernel(typename R::acc_t* partial, int64_t outer, int splits, R r, Store store) {
  using Acc = typename R::acc_t;
  constexpr int kRun = 8;
  const int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= outer) return;
  Acc* mine = partial + o;
  for (int base = 0; base < splits; base += kRun) {
    const int n = splits - base < kRun ? splits - base : kRun;
    Acc v[kRun];
#pragma unroll
    for (int i = 0; i < kRun; ++i)
      if (i < n) v[i] = mine[(base + i) * outer];
#pragma unroll
    for (int width = 1; width < kRun; width *= 2)
#pragma unroll
      for (int i = 0; i + width < kRun; i += 2 * width)
        if (i + width < n) v[i] = r.combine(v[i], v[i + width]);
    mine[base * outer] = v[0];
  }
  for (int width = kRun; width < splits; width *= 2)
    for (int s = 0; s + width < splits; s += 2 * width)
      mine[s * outer] = r.combine(mine[s * outer], mine[(s + width) * outer]);
  store(o, mine[0]);
}

// out[o] = r.project(acc, n).
template <class R> struct StoreResult {
  typename R::out_t* out;
  R r;
  int64_t n;
  __device__ void operator()(int64_t o, const typename R::acc_t& a) const {
    out[o] = r.project(a, n);
  }
};

// values[o] (when given) and indices[o] of an arg reduction.
template <class T, class Acc> struct StoreValueIndex {
  T* values;
  int64_t* indices;
  __device__ void operator()(int64_t o, const Acc& a) const {
    if (values) values[o] = T(a.value);
    indices[o] = a.index;
  }
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Runs reducer r over x: [kept..., reduced...] and hands each output's accumulator to store.
template <class T, class R, class Store>
void launch_reduce(const char* op, const Tensor& x_in, int64_t nreduce, const R& r,
                   const Store& store, std::initializer_list<const Tensor*> operands) {
  using Acc = typename R::acc_t;
  Tensor x = x_in;
  const int64_t nkeep = x.dim() - nreduce;
  Plan p;
  DimWalk out = make_walk(x, 0, nkeep, false), red = make_walk(x, nkeep, x.dim(), !R::kOrdered);
  if (!to_device(out, p.out) || !to_device(red, p.red)) {
    x = x.contiguous();  // too many dims left after merging: now one kept and one reduced dim
    out = make_walk(x, 0, nkeep, false);
    red = make_walk(x, nkeep, x.dim(), !R::kOrdered);
    to_device(out, p.out);
    to_device(red, p.red);
  }
  p.outer = out.numel;
  p.n = red.numel;
  if (p.outer == 0) return;

  const int device = x.device().index;
  DeviceGuard guard(device);
  const cudaDeviceProp& prop = properties(device);
  const int64_t fill = int64_t(prop.multiProcessorCount) * prop.maxThreadsPerMultiProcessor;
  const T* data = x.data<T>();

  // Column reductions (outputs side by side, their elements apart) and short ones: a thread per
  // output. Otherwise a group per output, as wide as the elements keep busy (32..256 threads).
  const bool column = out.inner_stride() == 1 && red.inner_stride() != 1 && p.outer >= kWarp;
  const bool per_thread = p.n <= 16 || column;
  constexpr int kVec = int(16 / sizeof(T));
  const bool vectorise =
      !per_thread && kVec > 1 && red.shape.size() == 1 && red.stride[0] == 1 &&
      uintptr_t(data) % 16 == 0 &&
      std::all_of(out.stride.begin(), out.stride.end(), [&](int64_t s) { return s % kVec == 0; });
  const int vec = vectorise ? kVec : 1;
  int group = kWarp;
  while (!per_thread && group < kBlock && int64_t(group) * vec * kUnroll < p.n) group *= 2;
  const int per_block = per_thread ? kBlock : kBlock / group;

  // Split the elements when the outputs alone leave most of the GPU idle.
  const int64_t threads = per_thread ? p.outer : p.outer * group;
  // A column's chunk may be short: its loads are already coalesced across the outputs, and a
  // [8192, 768] bias gradient needs ~100 splits to put a block on every SM.
  const int64_t min_chunk = per_thread ? 64 : int64_t(group) * vec * kUnroll * 4;
  int64_t splits = 1;
  if (threads < fill && p.n >= 2 * min_chunk)
    splits = std::min({ceil_div(fill, threads), p.n / min_chunk, int64_t(65535)});
  p.chunk = ceil_div(p.n, splits);
  if (vectorise) p.chunk = ceil_div(p.chunk, kVec) * kVec;  // every chunk starts aligned
  p.splits = int(std::max<int64_t>(ceil_div(p.n, std::max<int64_t>(p.chunk, 1)), 1));

  Tensor workspace;
  Acc* partial = nullptr;
  if (p.splits > 1) {
    workspace =
        Tensor::empty({p.outer * p.splits * int64_t(sizeof(Acc))}, DType::UInt8, x.device());
    partial = static_cast<Acc*>(workspace.data_ptr());
  }
  cudaStream_t s = stream(device);
  const dim3 grid{unsigned(ceil_div(p.outer, per_block)), unsigned(p.splits)};
  if (per_thread) {
    reduce_thread_kernel<T><<<grid, kBlock, 0, s>>>(data, p, r, store, partial);
  } else {
    const dim3 block{unsigned(group), unsigned(per_block)};
    const size_t smem = group_scratch_bytes<Acc>(per_block);
    if (vectorise) reduce_group_kernel<kVec><<<grid, block, smem, s>>>(data, p, r, store, partial);
    else reduce_group_kernel<1><<<grid, block, smem, s>>>(data, p, r, store, partial);
  }
  check_launch(op, operands);
  if (p.splits > 1) {
    reduce_finish_kernel<<<unsigned(ceil_div(p.outer, kBlock)), kBlock, 0, s>>>(partial, p.outer,
                                                                                p.splits, r, store);
    check_launch(op, operands);
  }
}

int64_t reduced_numel(const Tensor& x, int64_t nreduce) {
  int64_t n = 1;
  for (int64_t d = x.dim() - nreduce; d < x.dim(); ++d) n *= x.size(d);
  return n;
}

// out[o] = r.project(fold of output o's elements).
template <class T, class R>
void reduce_into(const char* op, const Tensor& x, int64_t nreduce, const R& r, Tensor& out) {
  StoreResult<R> store{out.data<typename R::out_t>(), r, reduced_numel(x, nreduce)};
  launch_reduce<T>(op, x, nreduce, r, store, {&x, &out});
}

void reduce(ReduceOp op, const Tensor& x, int64_t nreduce, Tensor& out) {
  const DType dt = x.dtype();
  switch (op) {
    case ReduceOp::Sum:
      return dispatch_all(dt, "sum", [&](auto tag) {
        using T = typename decltype(tag)::type;
        reduce_into<T>("sum", x, nreduce, rd::Sum<T>{}, out);
      });
    case ReduceOp::Prod:
      return dispatch_all(dt, "prod", [&](auto tag) {
        using T = typename decltype(tag)::type;
        reduce_into<T>("prod", x, nreduce, rd::Prod<T>{}, out);
      });
    case ReduceOp::Mean:
      return dispatch_floating(dt, "mean", [&](auto tag) {
        using T = typename decltype(tag)::type;
        reduce_into<T>("mean", x, nreduce, rd::Mean<T>{}, out);
      });
    case ReduceOp::Amax:
      return dispatch_all(dt, "amax", [&](auto tag) {
        using T = typename decltype(tag)::type;
        reduce_into<T>("amax", x, nreduce, rd::Extreme<T, true>{}, out);
      });
    case ReduceOp::Amin:
      return dispatch_all(dt, "amin", [&](auto tag) {
        using T = typename decltype(tag)::type;
        reduce_into<T>("amin", x, nreduce, rd::Extreme<T, false>{}, out);
      });
    case ReduceOp::All:
      return dispatch_all(dt, "all", [&](auto tag) {
        using T = typename decltype(tag)::type;
        reduce_into<T>("all", x, nreduce, rd::Logical<T, true>{}, out);
      });
    case ReduceOp::Any:
      return dispatch_all(dt, "any", [&](auto tag) {
        using T = typename decltype(tag)::type;
        reduce_into<T>("any", x, nreduce, rd::Logical<T, false>{}, out);
      });
    case ReduceOp::LogSumExp:
      return dispatch_floating(dt, "logsumexp", [&](auto tag) {
        using T = typename decltype(tag)::type;
        reduce_into<T>("logsumexp", x, nreduce, rd::LogSumExp<T>{}, out);
      });
  }
}

void norm(const Tensor& x, int64_t nreduce, double p, Tensor& out) {
  dispatch_floating(x.dtype(), "norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    if (p == 2) return reduce_into<T>("norm", x, nreduce, rd::NormSum<T, 2>{C(p)}, out);
    if (p == 1) return reduce_into<T>("norm", x, nreduce, rd::NormSum<T, 1>{C(p)}, out);
    if (p == 0) return reduce_into<T>("norm", x, nreduce, rd::NormSum<T, 0>{C(p)}, out);
    if (std::isinf(p) && p > 0)
      return reduce_into<T>("norm", x, nreduce, rd::NormExtreme<T, true>{}, out);
    if (std::isinf(p)) return reduce_into<T>("norm", x, nreduce, rd::NormExtreme<T, false>{}, out);
    reduce_into<T>("norm", x, nreduce, rd::NormSum<T, -1>{C(p)}, out);
  });
}

void var(const Tensor& x, int64_t nreduce, int64_t correction, bool take_sqrt, Tensor& out) {
  const char* op = take_sqrt ? "std" : "var";
  dispatch_floating(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_into<T>(op, x, nreduce, rd::Variance<T>{correction, take_sqrt}, out);
  });
}

template <class T, bool IsMax>
void arg_reduce_typed(const char* op, const Tensor& x, int64_t nreduce, Tensor& values,
                      Tensor& indices) {
  using R = rd::ArgExtreme<T, IsMax>;
  StoreValueIndex<T, typename R::acc_t> store{values.defined() ? values.data<T>() : nullptr,
                                              indices.data<int64_t>()};
  launch_reduce<T>(op, x, nreduce, R{}, store, {&x, &indices});
}

void arg_reduce(bool is_max, const Tensor& x, int64_t nreduce, Tensor& values, Tensor& indices) {
  const char* op = is_max ? "max" : "min";
  dispatch_all(x.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (is_max) arg_reduce_typed<T, true>(op, x, nreduce, values, indices);
    else arg_reduce_typed<T, false>(op, x, nreduce, values, indices);
  });
}

}  // namespace

void register_reduction(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/reduction.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cuda
