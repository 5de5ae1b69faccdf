// scan_sort_kernels.h — what the kernels of cumsum/cumprod and sort/argsort/topk (their slots
// are in kernels/scan_sort.def) share on both backends: the rows view and the scan arithmetic
// (internal header).
//
// Every kernel sees its tensors as rows: 2-D views [M, L] whose row M holds one line along the
// op's dim (ops/scan_sort.cpp moves dim last and merges the other dims into one), each with its
// own two strides. M and L are never 0 when a kernel is called.
#pragma once
#include <cstdint>
#include <type_traits>

#include "dispatch.h"
#include "ember/tensor.h"

namespace ember {

enum class ScanOp { Sum, Prod };

// Element (m, i) of a rows view [M, L] is base[m * row_stride + i * stride]. Made on the host by
// rows_of (a null base for an undefined tensor), read on either device.
template <class T> struct Rows {
  T* base = nullptr;
  int64_t row_stride = 0, stride = 0;
  EMBER_HOST_DEVICE T& operator()(int64_t m, int64_t i) const {
    return base[m * row_stride + i * stride];
  }
};

template <class T> Rows<T> rows_of(const Tensor& t) {
  if (!t.defined()) return {};
  return {static_cast<T*>(t.data_ptr()), t.stride(0), t.stride(1)};
}

namespace scan {

// Floats accumulate in their compute type (float for float16/bfloat16); integers in int64, with
// wrap-around arithmetic done in uint64 (signed overflow would be undefined), which stores into a
// narrower integer as that type's own wrap-around result would.
template <class T>
using acc_t = std::conditional_t<std::is_floating_point_v<compute_t<T>>, compute_t<T>, int64_t>;

template <class A> struct Sum {
  EMBER_HOST_DEVICE A identity() const { return A(0); }
  EMBER_HOST_DEVICE A operator()(A a, A b) const {
    if constexpr (std::is_floating_point_v<A>) return a + b;
    return A(uint64_t(a) + uint64_t(b));
  }
};

template <class A> struct Prod {
  EMBER_HOST_DEVICE A identity() const { return A(1); }
  EMBER_HOST_DEVICE A operator()(A a, A b) const {
    if constexpr (std::is_floating_point_v<A>) return a * b;
    return A(uint64_t(a) * uint64_t(b));
  }
};

// Calls fn(TypeTag<T>{}, op) with op the Sum or Prod of acc_t<T>, for out's (numeric) dtype.
template <class F> void dispatch_scan(ScanOp kind, DType dtype, const char* name, F&& fn) {
  dispatch_numeric(dtype, name, [&](auto tag) {
    using A = acc_t<typename decltype(tag)::type>;
    if (kind == ScanOp::Sum) fn(tag, Sum<A>{});
    else fn(tag, Prod<A>{});
  });
}

}  // namespace scan
}  // namespace ember
