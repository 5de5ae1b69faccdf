// indexing.cu — CUDA kernels of the indexing family (contracts in ops/indexing_kernels.h).
// Kernels that only move elements are instantiated per element size. index_add (embedding's
// backward) sorts its indices first and adds each row's sources in index order, so its results are
// the CPU's to the bit and the same from run to run; scatter_add uses atomic adds, so the order of
// repeated indices' additions, and with floats the last bits of its result, may vary.
#include <climits>
#include <cstring>
#include <type_traits>

#include "convert.h"
#include "cuda/launch.cuh"
#include "cuda/loops.cuh"
#include "cuda/sort_pairs.cuh"
#include "kernels.h"
#include "ops/indexing_kernels.h"

namespace ember::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarp = 32;

// ---- atomic adds for every numeric type ----

// *address += v for types narrower than 32 bits, which have no atomicAdd: compare-and-swap the
// aligned 32-bit word holding *address until no other thread changed it in between.
template <class T> __device__ void atomic_add_narrow(T* address, T v) {
  static_assert(sizeof(T) < 4, "for 8- and 16-bit types");
  const uintptr_t addr = reinterpret_cast<uintptr_t>(address);
  unsigned* word = reinterpret_cast<unsigned*>(addr & ~uintptr_t(3));
  const unsigned shift = unsigned(addr & 3) * 8;
  const unsigned mask = ((1u << (8 * sizeof(T))) - 1u) << shift;
  unsigned old = *word, assumed;
  do {
    assumed = old;
    unsigned bits = (assumed & mask) >> shift;
    T current;
    memcpy(&current, &bits, sizeof(T));  // little-endian: the low bytes
    T next = T(compute_t<T>(current) + compute_t<T>(v));
    unsigned next_bits = 0;
    memcpy(&next_bits, &next, sizeof(T));
    old = atomicCAS(word, assumed, (assumed & ~mask) | (next_bits << shift));
  } while (old != assumed);
}

template <class T> __device__ void atomic_add(T* address, T v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> ||
                std::is_same_v<T, int32_t>) {
    atomicAdd(address, v);
  } else if constexpr (std::is_same_v<T, int64_t>) {  // two's complement: unsigned add is the same
    atomicAdd(reinterpret_cast<unsigned long long*>(address), static_cast<unsigned long long>(v));
  } else {
    atomic_add_narrow(address, v);
  }
}

unsigned blocks_for(int64_t n, Device device) { return grid_size(n, kThreads, device.index); }

// ---- index_range ----

// range = {min, max} of idx[0, n), via a per-thread scan, a warp reduction and one atomic per
// warp. range starts as {INT64_MAX, INT64_MIN}.
__global__ void index_minmax(const int64_t* idx, int64_t n, long long* range) {
  long long lo = LLONG_MAX, hi = LLONG_MIN;
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    lo = min(lo, static_cast<long long>(idx[i]));
    hi = max(hi, static_cast<long long>(idx[i]));
  }
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    lo = min(lo, __shfl_xor_sync(0xffffffffu, lo, offset));
    hi = max(hi, __shfl_xor_sync(0xffffffffu, hi, offset));
  }
  if (threadIdx.x % kWarp == 0) {
    atomicMin(&range[0], lo);
    atomicMax(&range[1], hi);
  }
}

IndexRange index_range(const Tensor& index) {
  DeviceGuard guard(index.device());
  Tensor range =
      Tensor::from_vector(std::vector<int64_t>{INT64_MAX, INT64_MIN}, {2}, index.device());
  index_minmax<<<blocks_for(index.numel(), index.device()), kThreads, 0, stream(index.device())>>>(
      index.data<int64_t>(), index.numel(), reinterpret_cast<long long*>(range.data<int64_t>()));
  check_launch("index check", {&index});
  std::vector<int64_t> r = range.to_vector<int64_t>();  // waits for the kernel
  return {r[0], r[1]};
}

// ---- index_select / index_add: [outer, n, inner] layouts ----

// out[o, j, i] = x[o, idx[j], i], one thread per output element; 0 where idx[j] is out of range
// (the front function's check reports it).
template <class E>
__global__ void index_select_rows(const E* x, const int64_t* idx, int64_t n, int64_t k,
                                  int64_t inner, int64_t total, E* out) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
    const int64_t i = e % inner, r = e / inner, j = r % k, o = r / k;
    const int64_t row = idx[j];
    out[e] = row >= 0 && row < n ? x[(o * n + row) * inner + i] : E(0);
  }
}

void index_select(const Tensor& x, const Tensor& index, Tensor& out) {
  DeviceGuard guard(x.device());
  dispatch_by_size(x.itemsize(), "index_select", [&](auto tag) {
    using E = typename decltype(tag)::type;
    index_select_rows<E><<<blocks_for(out.numel(), x.device()), kThreads, 0, stream(x.device())>>>(
        static_cast<const E*>(x.data_ptr()), index.data<int64_t>(), x.size(1), index.size(0),
        x.size(2), out.numel(), static_cast<E*>(out.data_ptr()));
  });
  check_launch("index_select", {&x, &index, &out});
}

// out[o, row, i] += src[o, j, i] for every j with idx[j] = row, in increasing j. rows: idx sorted;
// at: their positions j (a stable sort keeps equal rows in j order). One thread per (o, s, i)
// where s starts a run of equal rows: it adds the run's sources one by one, rounding to T after
// each addition as the CPU kernel does, so both give the same bits. Rows outside [0, n) are
// skipped (the front function's check reports them).
template <class T>
__global__ void index_add_runs(T* out, const int64_t* rows, const int64_t* at, const T* src,
                               int64_t n, int64_t k, int64_t inner, int64_t total) {
  using Acc = compute_t<T>;
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
    const int64_t i = e % inner, r = e / inner, s = r % k, o = r / k;
    const int64_t row = rows[s];
    if ((s > 0 && rows[s - 1] == row) || row < 0 || row >= n) continue;
    T* d = out + (o * n + row) * inner + i;
    T sum = *d;
    for (int64_t t = s; t < k && rows[t] == row; ++t)
      sum = T(Acc(sum) + Acc(src[(o * k + at[t]) * inner + i]));
    *d = sum;
  }
}

// Sorts (index value, position) pairs, then adds each row's run in one thread per column: no
// atomics, so repeated indices add up in a fixed order (PyTorch's embedding backward also sorts).
void index_add(Tensor& out, const Tensor& index, const Tensor& src) {
  const Device device = out.device();
  DeviceGuard guard(device);
  cudaStream_t s = stream(device);
  const int64_t k = index.size(0);
  Tensor rows = Tensor::empty({k}, DType::Int64, device, "index_add_");
  Tensor at = Tensor::empty({k}, DType::Int64, device, "index_add_");
  sort_with_positions(index.data<int64_t>(), rows.data<int64_t>(), at.data<int64_t>(), k, device,
                      "index_add_");
  dispatch_numeric(out.dtype(), "index_add_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    index_add_runs<T>
        <<<blocks_for(src.numel(), device), kThreads, 0, s>>>(out.data<T>(), rows.data<int64_t>(),
                                                              at.data<int64_t>(), src.data<T>(),
                                                              out.size(1), k, out.size(2),
                                                              src.numel());
  });
  check_launch("index_add_", {&out, &index, &src});
}

// ---- gather / scatter_add: any strides, walked over index's shape ----

// Index's shape and, per operand (0: x, 1: index, 2: out or src), strides in elements.
struct IndexWalk {
  int ndim;
  int dim;        // the indexed dim
  int64_t bound;  // x's size there: indices outside [0, bound) are skipped
  int64_t size[kMaxDims];
  int64_t stride[3][kMaxDims];
};

IndexWalk make_walk(const char* op, const Tensor& x, int64_t d, const Tensor& index,
                    const Tensor& other) {
  if (index.dim() > kMaxDims)
    throw NotSupportedError(op, "index is " + describe(index) + "; CUDA handles up to " +
                                    std::to_string(kMaxDims) + " dims, reshape first");
  IndexWalk w{int(index.dim()), int(d), x.size(d), {}, {}};
  for (int i = 0; i < w.ndim; ++i) {
    w.size[i] = index.size(i);
    w.stride[0][i] = x.stride(i);
    w.stride[1][i] = index.stride(i);
    w.stride[2][i] = other.stride(i);
  }
  return w;
}

// Element offsets, in x (without the indexed dim's term), index and the third operand, of the
// e-th (row-major) element of index's shape.
struct Offsets {
  int64_t x, index, other;
};
__device__ Offsets walk(const IndexWalk& w, int64_t e) {
  Offsets off{0, 0, 0};
#pragma unroll
  for (int i = kMaxDims - 1; i >= 0; --i) {
    if (i >= w.ndim) continue;
    const int64_t c = e % w.size[i];
    e /= w.size[i];
    if (i != w.dim) off.x += c * w.stride[0][i];
    off.index += c * w.stride[1][i];
    off.other += c * w.stride[2][i];
  }
  return off;
}

template <class E>
__global__ void gather_elements(const E* x, const int64_t* idx, E* out, IndexWalk w,
                                int64_t total) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
    const Offsets off = walk(w, e);
    const int64_t at = idx[off.index];
    out[off.other] = at >= 0 && at < w.bound ? x[off.x + at * w.stride[0][w.dim]] : E(0);
  }
}

void gather(const Tensor& x, int64_t d, const Tensor& index, Tensor& out) {
  DeviceGuard guard(x.device());
  const IndexWalk w = make_walk("gather", x, d, index, out);
  dispatch_by_size(x.itemsize(), "gather", [&](auto tag) {
    using E = typename decltype(tag)::type;
    gather_elements<E><<<blocks_for(index.numel(), x.device()), kThreads, 0, stream(x.device())>>>(
        static_cast<const E*>(x.data_ptr()), index.data<int64_t>(), static_cast<E*>(out.data_ptr()),
        w, index.numel());
  });
  check_launch("gather", {&x, &index, &out});
}

template <class T>
__global__ void scatter_add_elements(T* x, const int64_t* idx, const T* src, IndexWalk w,
                                     int64_t total) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
    const Offsets off = walk(w, e);
    const int64_t at = idx[off.index];
    if (at >= 0 && at < w.bound) atomic_add(x + off.x + at * w.stride[0][w.dim], src[off.other]);
  }
}

void scatter_add(Tensor& x, int64_t d, const Tensor& index, const Tensor& src) {
  DeviceGuard guard(x.device());
  const IndexWalk w = make_walk("scatter_add_", x, d, index, src);
  dispatch_numeric(x.dtype(), "scatter_add_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    scatter_add_elements<T>
        <<<blocks_for(index.numel(), x.device()), kThreads, 0, stream(x.device())>>>(
            x.data<T>(), index.data<int64_t>(), src.data<T>(), w, index.numel());
  });
  check_launch("scatter_add_", {&x, &index, &src});
}

// ---- masked_fill: an elementwise map ----

template <class T>
struct MaskedFill {  // a functor: gpu_map runs it inside dispatch_all's generic lambda
  T value;
  __device__ T operator()(T a, bool m) const { return m ? value : a; }
};

void masked_fill(const Tensor& x, const Tensor& mask, double value, Tensor& out) {
  dispatch_all(x.dtype(), "masked_fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    gpu_map<T, T, bool>("masked_fill", out, {x, mask}, MaskedFill<T>{convert<T>(value)});
  });
}

// ---- pad (reflect, replicate) ----

struct PadShape {  // contiguous x and out, at most kMaxDims dims
  int ndim;
  int64_t in_size[kMaxDims], out_size[kMaxDims], left[kMaxDims];
  PadMode mode;
};

// One thread per output element: its coordinates, each mapped back through pad_source.
template <class E> __global__ void pad_elements(const E* x, E* out, PadShape p, int64_t total) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += step) {
    int64_t rest = e, src = 0, in_stride = 1;
#pragma unroll
    for (int i = kMaxDims - 1; i >= 0; --i) {
      if (i >= p.ndim) continue;
      const int64_t c = rest % p.out_size[i];
      rest /= p.out_size[i];
      src += pad_source(c, p.left[i], p.in_size[i], p.mode) * in_stride;
      in_stride *= p.in_size[i];
    }
    out[e] = x[src];
  }
}

void pad(const Tensor& x, const std::vector<int64_t>& left, PadMode mode, Tensor& out) {
  DeviceGuard guard(x.device());
  PadShape p{int(x.dim()), {}, {}, {}, mode};  // the front merges x to at most 8 dims
  for (int i = 0; i < p.ndim; ++i) {
    p.in_size[i] = x.size(i);
    p.out_size[i] = out.size(i);
    p.left[i] = left[size_t(i)];
  }
  dispatch_by_size(x.itemsize(), "pad", [&](auto tag) {
    using E = typename decltype(tag)::type;
    pad_elements<E><<<blocks_for(out.numel(), x.device()), kThreads, 0, stream(x.device())>>>(
        static_cast<const E*>(x.data_ptr()), static_cast<E*>(out.data_ptr()), p, out.numel());
  });
  check_launch("pad", {&x, &out});
}

}  // namespace

void register_indexing(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/indexing.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cuda
