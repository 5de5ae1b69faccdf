// tool_support.cuh — what the kernel tools of benchmarks/tools/ share: a check of CUDA calls that
// ends the program with the failed call's place and error, device buffers, and the mean time of a
// launch.
#pragma once
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                   \
  do {                                                                                \
    const cudaError_t e = (call);                                                     \
    if (e != cudaSuccess) {                                                           \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

namespace tool {

template <class X> X* device_buffer(size_t n) {
  X* p = nullptr;
  CHECK(cudaMalloc(&p, n * sizeof(X)));
  return p;
}

// The mean time of one call of `launch`, over 20 after one to warm up.
template <class Launch> float mean_ms(Launch launch) {
  launch();
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  for (int i = 0; i < 20; ++i) launch();
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  CHECK(cudaGetLastError());
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  return ms / 20;
}

}  // namespace tool
