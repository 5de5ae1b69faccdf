// cuda_runtime.h for kernels compiled by the host compiler (test_conv_gemm_on_host.cpp): the CUDA
// names a kernel header uses, given CPU meanings. A block's threads are std::threads that meet at
// __syncthreads (a barrier), and a kernel's __shared__ arrays are its static storage, which the
// threads of one block share; blocks run one after another.
#pragma once
#include <pthread.h>

#include <algorithm>
#include <cstdint>

struct dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local dim3 threadIdx, blockIdx;
inline dim3 blockDim, gridDim;
inline pthread_barrier_t block_barrier;  // initialised for the block's thread count by the runner
inline void __syncthreads() { pthread_barrier_wait(&block_barrier); }
inline unsigned __umulhi(unsigned a, unsigned b) { return unsigned((uint64_t(a) * b) >> 32); }
using std::min;

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(threads)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
