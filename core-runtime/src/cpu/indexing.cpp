// indexing.cpp — CPU kernels of the indexing family (contracts in ops/indexing_kernels.h).
// Everything accumulating (index_add, scatter_add) splits work so that no two threads ever add
// into the same element, and adds in index order: results are deterministic.
#include <algorithm>
#include <array>
#include <cstring>
#include <mutex>

#include "convert.h"
#include "cpu/isa.h"
#include "cpu/loops.h"
#include "cpu/parallel.h"
#include "kernels.h"
#include "ops/indexing_kernels.h"

namespace ember::cpu::EMBER_CPU_ISA {
namespace {

IndexRange index_range(const Tensor& index) {
  const int64_t* p = index.data<int64_t>();
  IndexRange r{p[0], p[0]};
  std::mutex merge;
  parallel_for(index.numel(), 1, [&](int64_t b, int64_t e) {
    int64_t lo = p[b], hi = p[b];
    for (int64_t i = b; i < e; ++i) {
      lo = std::min(lo, p[i]);
      hi = std::max(hi, p[i]);
    }
    std::lock_guard<std::mutex> lock(merge);
    r.min = std::min(r.min, lo);
    r.max = std::max(r.max, hi);
  });
  return r;
}

// x: [outer, n, inner], index: [k] -> out: [outer, k, inner]. Each (o, j) is one memcpy of a
// contiguous row of `inner` elements, whatever the dtype.
void index_select(const Tensor& x, const Tensor& index, Tensor& out) {
  const int64_t n = x.size(1), k = index.size(0);
  const size_t row = size_t(x.size(2)) * x.itemsize();
  const char* px = static_cast<const char*>(x.data_ptr());
  char* po = static_cast<char*>(out.data_ptr());
  const int64_t* idx = index.data<int64_t>();
  parallel_for(out.size(0) * k, x.size(2), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {  // r = o * k + j
      const int64_t o = r / k, j = r % k;
      std::memcpy(po + size_t(r) * row, px + size_t(o * n + idx[j]) * row, row);
    }
  });
}

// out: [outer, n, inner] += src: [outer, k, inner] at rows index[j]. Threads split the
// (o, i) columns; each walks j in order, so repeated indices add up in a fixed order.
void index_add(Tensor& out, const Tensor& index, const Tensor& src) {
  dispatch_numeric(out.dtype(), "index_add_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = compute_t<T>;
    const int64_t n = out.size(1), inner = out.size(2), k = index.size(0);
    T* po = out.data<T>();
    const T* ps = src.data<T>();
    const int64_t* idx = index.data<int64_t>();
    parallel_for(out.size(0) * inner, k, [&](int64_t c0, int64_t c1) {
      for (int64_t o = c0 / inner; o * inner < c1; ++o) {
        const int64_t i0 = std::max(c0 - o * inner, int64_t(0));
        const int64_t i1 = std::min(c1 - o * inner, inner);
        for (int64_t j = 0; j < k; ++j) {
          const T* s = ps + (o * k + j) * inner;
          T* d = po + (o * n + idx[j]) * inner;
          for (int64_t i = i0; i < i1; ++i) d[i] = T(Acc(d[i]) + Acc(s[i]));
        }
      }
    });
  });
}

// Calls fn(offsets) for every line of `shape` along dim d — a line fixes every coordinate but
// d — with offsets[k] the line's first element in operand k (through strides[k], in elements).
// Lines go to threads whole.
template <size_t N, class F>
void for_each_line(const Shape& shape, int64_t d, const std::array<const Strides*, N>& strides,
                   F&& fn) {
  const int64_t len = shape[size_t(d)];
  const int64_t lines = shape_numel(shape) / len;
  parallel_for(lines, len, [&](int64_t l0, int64_t l1) {
    for (int64_t line = l0; line < l1; ++line) {
      std::array<int64_t, N> off{};
      int64_t rest = line;
      for (int64_t i = int64_t(shape.size()) - 1; i >= 0; --i) {
        if (i == d) continue;
        const int64_t c = rest % shape[size_t(i)];
        rest /= shape[size_t(i)];
        for (size_t k = 0; k < N; ++k) off[k] += c * (*strides[k])[size_t(i)];
      }
      fn(off);
    }
  });
}

void gather(const Tensor& x, int64_t d, const Tensor& index, Tensor& out) {
  dispatch_by_size(x.itemsize(), "gather", [&](auto tag) {
    using E = typename decltype(tag)::type;
    const E* px = static_cast<const E*>(x.data_ptr());
    E* po = static_cast<E*>(out.data_ptr());
    const int64_t* pi = index.data<int64_t>();
    const int64_t xs = x.stride(d), is = index.stride(d), os = out.stride(d);
    const int64_t len = index.size(d);
    for_each_line<3>(index.shape(), d, {&x.strides(), &index.strides(), &out.strides()},
                     [&](const std::array<int64_t, 3>& off) {
                       for (int64_t j = 0; j < len; ++j)
                         po[off[2] + j * os] = px[off[0] + pi[off[1] + j * is] * xs];
                     });
  });
}

// Lines of index along d write to distinct lines of x (their other coordinates differ), so
// threads, which take whole lines, never add into the same element.
void scatter_add(Tensor& x, int64_t d, const Tensor& index, const Tensor& src) {
  dispatch_numeric(x.dtype(), "scatter_add_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = compute_t<T>;
    T* px = x.data<T>();
    const T* ps = src.data<T>();
    const int64_t* pi = index.data<int64_t>();
    const int64_t xs = x.stride(d), is = index.stride(d), ss = src.stride(d);
    const int64_t len = index.size(d);
    for_each_line<3>(index.shape(), d, {&x.strides(), &index.strides(), &src.strides()},
                     [&](const std::array<int64_t, 3>& off) {
                       for (int64_t j = 0; j < len; ++j) {
                         T& dst = px[off[0] + pi[off[1] + j * is] * xs];
                         dst = T(Acc(dst) + Acc(ps[off[2] + j * ss]));
                       }
                     });
  });
}

void masked_fill(const Tensor& x, const Tensor& mask, double value, Tensor& out) {
  dispatch_all(x.dtype(), "masked_fill", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = convert<T>(value);
    cpu_map<T, T, bool>(out, {x, mask}, [v](T a, bool m) { return m ? v : a; });
  });
}

// One output row (last dim) at a time: its source row through pad_source on the outer
// coordinates, then each element through pad_source on the last.
void pad(const Tensor& x, const std::vector<int64_t>& left, PadMode mode, Tensor& out) {
  dispatch_by_size(x.itemsize(), "pad", [&](auto tag) {
    using E = typename decltype(tag)::type;
    const Shape &in_shape = x.shape(), &out_shape = out.shape();
    const Strides& in_strides = x.strides();
    const size_t ndim = out_shape.size();
    const int64_t in_len = in_shape.back(), out_len = out_shape.back();
    const E* px = static_cast<const E*>(x.data_ptr());
    E* po = static_cast<E*>(out.data_ptr());
    parallel_for(out.numel() / out_len, out_len, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        int64_t rest = r, src = 0;
        for (size_t i = ndim - 1; i-- > 0;) {
          const int64_t c = rest % out_shape[i];
          rest /= out_shape[i];
          src += pad_source(c, left[i], in_shape[i], mode) * in_strides[i];
        }
        const E* xr = px + src;
        E* orow = po + r * out_len;
        for (int64_t j = 0; j < out_len; ++j)
          orow[j] = xr[pad_source(j, left.back(), in_len, mode)];
      }
    });
  });
}

}  // namespace

void register_indexing(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/indexing.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cpu::EMBER_CPU_ISA
