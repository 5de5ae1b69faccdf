// reduce.cuh — building blocks of the CUDA reductions and row-wise kernels (internal header):
// warp and group reductions over any accumulator type, and a DimWalk a kernel can use.
//
// A "group" is the set of threads that cooperate on one row or one output: threadIdx.x runs over
// the group (blockDim.x threads, a multiple of 32), threadIdx.y picks the group within the block.
// Small rows get a warp each (blockDim = 32 x 8: eight rows per block), long rows a whole block.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

#include "ops/reduction_kernels.h"

namespace ember::cuda {

constexpr int kWarp = 32;
constexpr int kMaxGroupWarps = 32;  // 1024 threads

// __shfl_xor_sync for any trivially copyable value, moved as 32-bit words (accumulators are
// structs such as {max, sum} or {value, index}).
template <class A> __device__ __forceinline__ A shfl_xor(const A& v, int mask) {
  constexpr int kWords = int((sizeof(A) + 3) / 4);
  int w[kWords] = {};
  memcpy(w, &v, sizeof(A));
#pragma unroll
  for (int k = 0; k < kWords; ++k) w[k] = __shfl_xor_sync(0xffffffffu, w[k], mask);
  A out;
  memcpy(&out, w, sizeof(A));
  return out;
}

// Butterfly: after log2(32) exchanges every lane holds combine() of all 32 lanes' values.
template <class A, class Combine>
__device__ __forceinline__ A warp_allreduce(A a, const Combine& combine) {
#pragma unroll
  for (int mask = kWarp / 2; mask > 0; mask /= 2) a = combine(a, shfl_xor(a, mask));
  return a;
}

// Every thread of the group gets combine() over the group's values. `identity` pads the lanes of
// the second stage beyond the number of warps. smem: kMaxGroupWarps * blockDim.y accumulators of
// shared memory. Must be reached by every thread of the block (it synchronises when a group is
// wider than a warp).
template <class A, class Combine>
__device__ __forceinline__ A group_allreduce(A a, const Combine& combine, A identity, A* smem) {
  a = warp_allreduce(a, combine);
  if (blockDim.x == kWarp) return a;
  const int warp = int(threadIdx.x) / kWarp, lane = int(threadIdx.x) % kWarp;
  const int warps = int(blockDim.x) / kWarp;
  A* s = smem + threadIdx.y * kMaxGroupWarps;
  __syncthreads();  // the previous call's readers are done with smem
  if (lane == 0) s[warp] = a;
  __syncthreads();
  return warp_allreduce(lane < warps ? s[lane] : identity, combine);
}

// Shared memory for group_allreduce, typed without a constructor (accumulators may not be
// default-constructible in __shared__ memory).
template <class A> __device__ __forceinline__ A* group_scratch() {
  extern __shared__ __align__(16) unsigned char scratch[];
  return reinterpret_cast<A*>(scratch);
}
template <class A> inline size_t group_scratch_bytes(int groups_per_block) {
  return sizeof(A) * kMaxGroupWarps * size_t(groups_per_block);
}

// A DimWalk passed to a kernel by value: up to 8 dims (Tensor dims left after merging; more
// happen only for exotic views, and the callers copy those to contiguous memory first).
constexpr int kMaxWalkDims = 8;
struct DeviceWalk {
  int ndim;
  int64_t size[kMaxWalkDims];
  int64_t stride[kMaxWalkDims];

  // Element offset of flat (row-major) index i. The loop has a constant trip count so that the
  // arrays stay in registers / kernel parameters instead of local memory.
  __device__ __forceinline__ int64_t offset(int64_t i) const {
    if (ndim == 1) return i * stride[0];
    int64_t off = 0;
#pragma unroll
    for (int d = kMaxWalkDims - 1; d >= 0; --d) {
      if (d < ndim) {
        off += i % size[d] * stride[d];
        i /= size[d];
      }
    }
    return off;
  }
};

// Fills `out` from a host DimWalk; false when it has more dims than a DeviceWalk holds.
inline bool to_device(const DimWalk& w, DeviceWalk& out) {
  if (w.shape.size() > size_t(kMaxWalkDims)) return false;
  out.ndim = int(w.shape.size());
  for (size_t d = 0; d < w.shape.size(); ++d) {
    out.size[d] = w.shape[d];
    out.stride[d] = w.stride[d];
  }
  return true;
}

}  // namespace ember::cuda
