// sort_pairs.cuh — 64-bit keys sorted with their positions on the GPU (internal header), by CUB's
// radix sort. The sort is stable, so equal keys keep their positions' order: randperm sorts
// random keys into a permutation, index_add sorts index values into runs of equal rows.
#pragma once
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>

#include "cuda/launch.cuh"
#include "ember/tensor.h"

namespace ember::cuda {

// positions[i] = i for i < n (a template, so that every file including this shares one kernel).
template <class I> __global__ void fill_positions(I* positions, int64_t n) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
    positions[i] = i;
}

// sorted[i] = the i-th smallest of keys[0, n), positions[i] = where it was in keys (ties in
// position order). K is int64_t or uint64_t (Ember has no uint64 dtype: such keys live in int64
// tensors). The scratch comes from Ember's allocator, on `device`'s current stream like the sort.
template <class K>
void sort_with_positions(const K* keys, K* sorted, int64_t* positions, int64_t n, Device device,
                         const char* op) {
  static_assert(sizeof(K) == 8, "64-bit keys");
  constexpr int kThreads = 256;
  cudaStream_t s = stream(device);
  Tensor from = Tensor::empty({n}, DType::Int64, device, op);
  fill_positions<int64_t>
      <<<grid_size(n, kThreads, device.index), kThreads, 0, s>>>(from.data<int64_t>(), n);
  check_launch(op, {&from});
  size_t temp_bytes = 0;  // first call: how much scratch the sort needs
  EMBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys, sorted,
                                                   from.data<int64_t>(), positions, n, 0, 64, s),
                   op);
  Tensor temp = Tensor::empty({int64_t(temp_bytes)}, DType::UInt8, device, op);
  EMBER_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data_ptr(), temp_bytes, keys, sorted,
                                                   from.data<int64_t>(), positions, n, 0, 64, s),
                   op);
}

}  // namespace ember::cuda
