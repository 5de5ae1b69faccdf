// scan_sort.cu — CUDA kernels of cumsum/cumprod and sort/argsort/topk. Every tensor is rows
// [M, L] with two strides (see ops/scan_sort_kernels.h).
//
// Scans: rows of up to kShortRow elements take one thread each (a short sequential loop,
// neighbouring threads on neighbouring rows); longer rows take one block each, which walks the
// row in tiles of kScanThreads * kScanItems elements: every thread folds kScanItems consecutive
// elements, cub::BlockScan scans the block's tile, and a running prefix carries each tile's total
// into the next. A result thus sums at most kScanItems + log2(kScanThreads) + L / tile partial
// sums in sequence, never more than a sequential loop's L.
//
// Sorts: each element becomes an unsigned radix key that orders like the value (NaN above +inf,
// -0.0 equal to 0.0), paired with its position in the row; CUB sorts the pairs stably, with
// DeviceSegmentedSort (a segment per row) or, for fewer long rows than the GPU has SMs,
// DeviceRadixSort on each row across the whole GPU. Values are then gathered from x by the
// sorted positions, so they are x's elements bit for bit. topk sorts whole rows and keeps the
// first k of each. Everything is queued on the device's stream; nothing synchronises.
#include <algorithm>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <type_traits>

#include "cuda/launch.cuh"
#include "kernels.h"
#include "ops/scan_sort_kernels.h"

namespace ember::cuda {
namespace {

constexpr int kThreads = 256;      // threads per block of the elementwise-style kernels
constexpr int kScanThreads = 256;  // threads per block of the long-row scan
constexpr int kScanItems = 4;      // consecutive elements each scan thread folds per tile
constexpr int64_t kShortRow = 16;  // rows up to this long are scanned by one thread
constexpr int64_t kMaxRowBlocks = 1 << 16;

// ---- cumsum, cumprod ----

// x, out: [M, L], L <= kShortRow: a thread per row, in a grid-stride loop over rows.
template <class T, class Op>
__global__ void scan_short_rows(Rows<const T> x, Rows<T> out, int64_t M, int64_t L, Op op) {
  using A = scan::acc_t<T>;
  for (int64_t m = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; m < M;
       m += int64_t(blockDim.x) * gridDim.x) {
    A acc = op.identity();
    for (int64_t i = 0; i < L; ++i) {
      acc = op(acc, A(compute_t<T>(x(m, i))));
      out(m, i) = T(acc);
    }
  }
}

// cub's block prefix callback: warp 0 calls it with each tile's total and gets back the total of
// the tiles before it, which BlockScan then adds to every element of the tile.
template <class A, class Op> struct RunningPrefix {
  Op op;
  A total;
  __device__ A operator()(A tile_total) {
    A before = total;
    total = op(total, tile_total);
    return before;
  }
};

// x, out: [M, L]: a block per row, in a grid-stride loop over rows. Each tile is loaded whole
// before any of it is stored, so out may be x.
template <class T, class Op>
__global__ void __launch_bounds__(kScanThreads)
    scan_long_rows(Rows<const T> x, Rows<T> out, int64_t M, int64_t L, Op op) {
  using A = scan::acc_t<T>;
  using BlockScan = cub::BlockScan<A, kScanThreads>;
  __shared__ typename BlockScan::TempStorage temp;
  constexpr int64_t kTile = int64_t(kScanThreads) * kScanItems;
  for (int64_t m = blockIdx.x; m < M; m += gridDim.x) {
    RunningPrefix<A, Op> prefix{op, op.identity()};
    for (int64_t tile = 0; tile < L; tile += kTile) {
      const int64_t first = tile + int64_t(threadIdx.x) * kScanItems;
      A items[kScanItems];
#pragma unroll
      for (int j = 0; j < kScanItems; ++j)
        items[j] = first + j < L ? A(compute_t<T>(x(m, first + j))) : op.identity();
      BlockScan(temp).InclusiveScan(items, items, op, prefix);
      __syncthreads();  // temp is reused by the next tile
#pragma unroll
      for (int j = 0; j < kScanItems; ++j)
        if (first + j < L) out(m, first + j) = T(items[j]);
    }
  }
}

template <class T, class Op>
void launch_scan(const char* name, const Tensor& x, Tensor& out, Op op) {
  const int64_t M = x.size(0), L = x.size(1);
  const Device device = x.device();
  DeviceGuard guard(device);
  cudaStream_t s = stream(device);
  const Rows<const T> in = rows_of<const T>(x);
  const Rows<T> res = rows_of<T>(out);
  if (L <= kShortRow) {
    scan_short_rows<<<grid_size(M, kThreads, device.index), kThreads, 0, s>>>(in, res, M, L, op);
  } else {
    const unsigned grid = unsigned(std::min(M, kMaxRowBlocks));
    scan_long_rows<<<grid, kScanThreads, 0, s>>>(in, res, M, L, op);
  }
  check_launch(name, {&x, &out});
}

// x, out: [M, L], out's numeric dtype.
void scan(ScanOp kind, const Tensor& x, Tensor& out) {
  const char* name = kind == ScanOp::Sum ? "cumsum" : "cumprod";
  scan::dispatch_scan(kind, out.dtype(), name, [&](auto tag, auto op) {
    launch_scan<typename decltype(tag)::type>(name, x, out, op);
  });
}

// ---- sort, argsort, topk ----

// The unsigned type of T's width: radix keys.
template <class T>
struct KeyType
    : std::conditional<sizeof(T) == 1, uint8_t,
                       std::conditional_t<sizeof(T) == 2, uint16_t,
                                          std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>> {
};
template <class T> using key_t = typename KeyType<T>::type;

// An IEEE value's bits as a key that orders like the value: negative values flipped whole,
// positive ones with the sign bit set. Any NaN (either sign; inf_bits are +inf's bits) becomes
// the largest key, and -0.0 the key of 0.0.
template <class U> __device__ U float_key(U bits, U inf_bits) {
  constexpr U sign = U(U(1) << (sizeof(U) * 8 - 1));
  const U abs = U(bits & U(~sign));
  if (abs > inf_bits) return U(~U(0));
  if (abs == 0) return sign;
  return (bits & sign) ? U(~bits) : U(bits | sign);
}

template <class T> __device__ key_t<T> sort_key(T v) {
  using K = key_t<T>;
  if constexpr (std::is_same_v<T, Half>) return float_key<K>(v.bits, 0x7c00u);
  else if constexpr (std::is_same_v<T, BFloat16>) return float_key<K>(v.bits, 0x7f80u);
  else if constexpr (std::is_same_v<T, float>) return float_key<K>(__float_as_uint(v), 0x7f800000u);
  else if constexpr (std::is_same_v<T, double>)
    return float_key<K>(K(__double_as_longlong(v)), 0x7ff0000000000000ull);
  else if constexpr (std::is_signed_v<T>) return K(K(v) ^ K(K(1) << (sizeof(T) * 8 - 1)));
  else return K(v);  // bool, uint8
}

// x: [M, L] -> keys, positions: [M * L] contiguous, row-major.
template <class T>
__global__ void make_keys(Rows<const T> x, int64_t L, int64_t n, key_t<T>* keys, int64_t* pos) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t m = i / L, j = i - m * L;
    keys[i] = sort_key(x(m, j));
    pos[i] = j;
  }
}

// offsets: [M + 1], offsets[m] = m * L, where row m begins.
__global__ void row_offsets(int64_t* offsets, int64_t M, int64_t L) {
  for (int64_t m = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; m <= M;
       m += int64_t(blockDim.x) * gridDim.x)
    offsets[m] = m * L;
}

// order: [M * L] sorted positions, row-major -> values (when it has a base), indices: [M, k].
template <class T>
__global__ void write_sorted(Rows<const T> x, const int64_t* order, int64_t L, int64_t k, int64_t M,
                             Rows<T> values, Rows<int64_t> indices) {
  const int64_t n = M * k;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(blockDim.x) * gridDim.x) {
    const int64_t m = i / k, j = i - m * k;
    const int64_t src = order[m * L + j];
    if (values.base) values(m, j) = x(m, src);
    indices(m, j) = src;
  }
}

// The pairs (keys, pos) of every row sorted stably into (sorted_keys, order), on stream s.
template <class K>
void sort_pairs(const char* name, Device device, cudaStream_t s, const K* keys, K* sorted_keys,
                const int64_t* pos, int64_t* order, int64_t M, int64_t L, bool descending) {
  size_t temp_bytes = 0;
  if (M < properties(device.index).multiProcessorCount && L >= 4096) {
    // Few long rows: a block per row would leave most SMs idle, so each row gets the whole GPU.
    const int bits = int(sizeof(K) * 8);
    auto run = [&](void* temp, int64_t m) {
      const int64_t o = m * L;
      return descending
                 ? cub::DeviceRadixSort::SortPairsDescending(temp, temp_bytes, keys + o,
                                                             sorted_keys + o, pos + o, order + o, L,
                                                             0, bits, s)
                 : cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys + o, sorted_keys + o,
                                                   pos + o, order + o, L, 0, bits, s);
    };
    EMBER_CUDA_CHECK(run(nullptr, 0), name);
    Tensor temp = Tensor::empty({int64_t(temp_bytes) + 1}, DType::UInt8, device, name);
    for (int64_t m = 0; m < M; ++m) EMBER_CUDA_CHECK(run(temp.data_ptr(), m), name);
    return;
  }
  Tensor offsets = Tensor::empty({M + 1}, DType::Int64, device, name);
  int64_t* off = offsets.data<int64_t>();
  row_offsets<<<grid_size(M + 1, kThreads, device.index), kThreads, 0, s>>>(off, M, L);
  check_launch(name, {&offsets});
  auto run = [&](void* temp) {
    return descending
               ? cub::DeviceSegmentedSort::StableSortPairsDescending(temp, temp_bytes, keys,
                                                                     sorted_keys, pos, order, M * L,
                                                                     M, off, off + 1, s)
               : cub::DeviceSegmentedSort::StableSortPairs(temp, temp_bytes, keys, sorted_keys, pos,
                                                           order, M * L, M, off, off + 1, s);
  };
  EMBER_CUDA_CHECK(run(nullptr), name);
  Tensor temp = Tensor::empty({int64_t(temp_bytes) + 1}, DType::UInt8, device, name);
  EMBER_CUDA_CHECK(run(temp.data_ptr()), name);
}

// x: [M, L] -> values (may be undefined), indices: [M, k], the first k of each row's stable order.
template <class T>
void sort_rows(const char* name, const Tensor& x, int64_t k, bool descending, Tensor& values,
               Tensor& indices) {
  using K = key_t<T>;
  const int64_t M = x.size(0), L = x.size(1), n = M * L;
  const Device device = x.device();
  DeviceGuard guard(device);
  cudaStream_t s = stream(device);
  // Scratch from Ember's allocator; keys live in tensors of x's dtype, which has K's width.
  Tensor keys = Tensor::empty({n}, x.dtype(), device, name);
  Tensor sorted_keys = Tensor::empty({n}, x.dtype(), device, name);
  Tensor pos = Tensor::empty({n}, DType::Int64, device, name);
  Tensor order = Tensor::empty({n}, DType::Int64, device, name);
  auto* k_in = static_cast<K*>(keys.data_ptr());
  auto* k_out = static_cast<K*>(sorted_keys.data_ptr());
  const Rows<const T> in = rows_of<const T>(x);
  make_keys<<<grid_size(n, kThreads, device.index), kThreads, 0, s>>>(in, L, n, k_in,
                                                                      pos.data<int64_t>());
  check_launch(name, {&x});
  sort_pairs(name, device, s, k_in, k_out, pos.data<int64_t>(), order.data<int64_t>(), M, L,
             descending);
  check_launch(name, {&x});
  write_sorted<<<grid_size(M * k, kThreads, device.index), kThreads, 0, s>>>(
      in, order.data<int64_t>(), L, k, M, rows_of<T>(values), rows_of<int64_t>(indices));
  check_launch(name, {&x, &indices});
}

void sort(const Tensor& x, bool descending, Tensor& values, Tensor& indices) {
  dispatch_all(x.dtype(), "sort", [&](auto tag) {
    sort_rows<typename decltype(tag)::type>("sort", x, x.size(1), descending, values, indices);
  });
}

void topk(const Tensor& x, int64_t k, bool largest, Tensor& values, Tensor& indices) {
  dispatch_all(x.dtype(), "topk", [&](auto tag) {
    sort_rows<typename decltype(tag)::type>("topk", x, k, largest, values, indices);
  });
}

}  // namespace

void register_scan_sort(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/scan_sort.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cuda
