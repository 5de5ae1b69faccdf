// tool_support.cuh — what the kernel tools of benchmarks/tools/ share: a check of CUDA calls that
// ends the program with the failed call's place and error, device buffers and their copies to the
// host, the comparison of results, and the mean time of a launch.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <vector>

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

template <class X> std::vector<float> to_host(const X* d, size_t n) {
  std::vector<X> h(n);
  CHECK(cudaMemcpy(h.data(), d, n * sizeof(X), cudaMemcpyDeviceToHost));
  return std::vector<float>(h.begin(), h.end());
}

// The largest |a - b|; equal infinities (logsumexp's fully masked rows) count as equal.
inline float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

// The largest finite |x| over some vectors.
inline float max_abs(std::initializer_list<const std::vector<float>*> xs) {
  float m = 0;
  for (const std::vector<float>* x : xs)
    for (float e : *x)
      if (std::isfinite(e)) m = std::max(m, std::fabs(e));
  return m;
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
