// scan_sort.cpp — CPU kernels of cumsum/cumprod and sort/argsort/topk. Every tensor is rows
// [M, L] with two strides (see ops/scan_sort_kernels.h); the rows are independent, so each
// kernel splits them over threads and handles a row with a plain sequential loop.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>
#include <vector>

#include "cpu/isa.h"
#include "cpu/parallel.h"
#include "kernels.h"
#include "ops/scan_sort_kernels.h"

namespace ember::cpu::EMBER_CPU_ISA {
namespace {

// ---- cumsum, cumprod ----

// x, out: [M, L]; a sequential loop per row in the accumulate type (see scan::acc_t): each
// element is read before its result is written, so out may be x.
void scan(ScanOp kind, const Tensor& x, Tensor& out) {
  scan::dispatch_scan(kind, out.dtype(), kind == ScanOp::Sum ? "cumsum" : "cumprod",
                      [&](auto tag, auto op) {
                        using T = typename decltype(tag)::type;
                        using A = scan::acc_t<T>;
                        const Rows<const T> in = rows_of<const T>(x);
                        const Rows<T> res = rows_of<T>(out);
                        const int64_t len = x.size(1);
                        parallel_for(x.size(0), len, [&](int64_t begin, int64_t end) {
                          for (int64_t m = begin; m < end; ++m) {
                            A acc = op.identity();
                            for (int64_t i = 0; i < len; ++i) {
                              acc = op(acc, A(compute_t<T>(in(m, i))));
                              res(m, i) = T(acc);
                            }
                          }
                        });
                      });
}

// ---- sort, argsort, topk ----

template <class C> bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
  return false;
}

// Whether a goes strictly before b: ascending with NaN last, or descending with NaN first.
template <class C> bool value_before(C a, C b, bool descending) {
  if (descending) return is_nan(a) ? !is_nan(b) : a > b;
  return is_nan(b) ? !is_nan(a) : a < b;
}

// x: [M, L] -> values, indices: [M, k], the first k of each row's stable order. Ties are broken
// by index, which makes the order total: std::sort and std::partial_sort then give exactly the
// stable result.
template <class T>
void sort_rows(const Tensor& x, int64_t k, bool descending, Tensor& values, Tensor& indices) {
  using C = compute_t<T>;
  const Rows<const T> in = rows_of<const T>(x);
  const Rows<T> vals = rows_of<T>(values);
  const Rows<int64_t> idx = rows_of<int64_t>(indices);
  const int64_t len = x.size(1);
  const int64_t cost = len * (64 - __builtin_clzll(uint64_t(len)));  // ~ L log L
  parallel_for(x.size(0), cost, [&](int64_t begin, int64_t end) {
    std::vector<C> row(static_cast<size_t>(len));
    std::vector<int64_t> order(static_cast<size_t>(len));
    for (int64_t m = begin; m < end; ++m) {
      for (int64_t i = 0; i < len; ++i) row[size_t(i)] = C(in(m, i));
      std::iota(order.begin(), order.end(), int64_t(0));
      auto before = [&](int64_t a, int64_t b) {
        C va = row[size_t(a)], vb = row[size_t(b)];
        if (value_before(va, vb, descending)) return true;
        return !value_before(vb, va, descending) && a < b;
      };
      if (k < len) std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      else std::sort(order.begin(), order.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t src = order[size_t(j)];
        if (vals.base) vals(m, j) = in(m, src);  // the element itself: NaN payloads and -0.0 kept
        idx(m, j) = src;
      }
    }
  });
}

void sort(const Tensor& x, bool descending, Tensor& values, Tensor& indices) {
  dispatch_all(x.dtype(), "sort", [&](auto tag) {
    sort_rows<typename decltype(tag)::type>(x, x.size(1), descending, values, indices);
  });
}

void topk(const Tensor& x, int64_t k, bool largest, Tensor& values, Tensor& indices) {
  dispatch_all(x.dtype(), "topk", [&](auto tag) {
    sort_rows<typename decltype(tag)::type>(x, k, largest, values, indices);
  });
}

}  // namespace

void register_scan_sort(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/scan_sort.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cpu::EMBER_CPU_ISA
