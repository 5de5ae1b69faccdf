// masking.cpp — CPU kernels of the masking family (contracts in ops/masking_kernels.h).
// nonzero and masked_select are stream compactions: each thread counts the set flags of its
// chunk, a prefix sum over the chunks gives each its first output row, then every chunk writes
// its rows in order, so the result is row-major whatever the number of threads.
#include <algorithm>
#include <vector>

#include "convert.h"
#include "cpu/isa.h"
#include "cpu/parallel.h"
#include "kernels.h"
#include "ops/indexing_kernels.h"

namespace ember::cpu::EMBER_CPU_ISA {
namespace {

// Calls emit(i, slot) for every i in [0, n) with is_set(i), slot counting the set ones before
// it; alloc(total) runs once, after the counting and before any emit.
template <class IsSet, class Alloc, class Emit>
void compact(int64_t n, IsSet&& is_set, Alloc&& alloc, Emit&& emit) {
  const int64_t chunks = std::clamp<int64_t>(n / kParallelGrain, 1, num_threads());
  std::vector<int64_t> start(size_t(chunks) + 1, 0);
  auto range = [&](int64_t c) {
    return std::pair<int64_t, int64_t>{n * c / chunks, n * (c + 1) / chunks};
  };
  parallel_for(chunks, kParallelGrain, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      auto [b, e] = range(c);
      int64_t count = 0;
      for (int64_t i = b; i < e; ++i) count += is_set(i) ? 1 : 0;
      start[size_t(c) + 1] = count;
    }
  });
  for (int64_t c = 0; c < chunks; ++c) start[size_t(c) + 1] += start[size_t(c)];
  alloc(start.back());
  parallel_for(chunks, kParallelGrain, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      auto [b, e] = range(c);
      int64_t slot = start[size_t(c)];
      for (int64_t i = b; i < e; ++i)
        if (is_set(i)) emit(i, slot++);
    }
  });
}

// The storage offset (in elements, from element 0) of the i-th row-major element of t.
int64_t element_offset(const Tensor& t, int64_t i) {
  int64_t off = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    off += (i % t.size(d)) * t.stride(d);
    i /= t.size(d);
  }
  return off;
}

// x: [*] -> [n, x.dim()]; out row `slot` = the coordinates of x's i-th element.
Tensor nonzero(const Tensor& x) {
  const Tensor xc = x.contiguous();
  const int64_t ndim = x.dim();
  Tensor out;
  dispatch_all(x.dtype(), "nonzero", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* px = xc.data<T>();
    int64_t* po = nullptr;
    compact(
        xc.numel(), [&](int64_t i) { return convert<bool>(px[i]); },
        [&](int64_t total) {
          out = Tensor::empty({total, ndim}, DType::Int64, x.device(), "nonzero");
          po = out.data<int64_t>();
        },
        [&](int64_t i, int64_t slot) {
          for (int64_t d = ndim - 1; d >= 0; --d) {
            po[slot * ndim + d] = i % x.size(d);
            i /= x.size(d);
          }
        });
  });
  return out;
}

// x, mask: one shape, any strides -> [n]: x's elements where mask is set, row-major.
Tensor masked_select(const Tensor& x, const Tensor& mask) {
  const Tensor mc = mask.contiguous();
  const bool* pm = mc.data<bool>();
  Tensor out;
  dispatch_by_size(x.itemsize(), "masked_select", [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* px = static_cast<const E*>(x.data_ptr());
    E* po = nullptr;
    compact(
        mc.numel(), [&](int64_t i) { return pm[i]; },
        [&](int64_t total) {
          out = Tensor::empty({total}, x.dtype(), x.device(), "masked_select");
          po = static_cast<E*>(out.data_ptr());
        },
        [&](int64_t i, int64_t slot) { po[slot] = px[element_offset(x, i)]; });
  });
  return out;
}

// One thread, in order: with repeated offsets the last write wins, deterministically.
void put(const Tensor& flat, const Tensor& offsets, const Tensor& values) {
  dispatch_by_size(flat.itemsize(), "index_put", [&](auto tag) {
    using E = typename decltype(tag)::type;
    E* pf = static_cast<E*>(flat.data_ptr());
    const E* pv = static_cast<const E*>(values.data_ptr());
    const int64_t* po = offsets.data<int64_t>();
    for (int64_t i = 0; i < offsets.numel(); ++i) pf[po[i]] = pv[i];
  });
}

}  // namespace

void register_masking(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/masking.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cpu::EMBER_CPU_ISA
