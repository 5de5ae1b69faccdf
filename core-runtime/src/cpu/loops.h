// loops.h — the CPU elementwise engine (internal header).
//
// Every elementwise kernel (unary, binary, where, casts, copies) is a lambda handed to
// cpu_map(). The caller has already broadcast every input to the output's shape (stride-0 views),
// so the engine only sees N operands of one shape with arbitrary strides. It
//   0. runs operands that are all contiguous as one flat run (steps 1 and 2 then do nothing),
//   1. coalesces dims that are contiguous with their neighbour in every operand,
//   2. walks the outer dims with an index counter, spread over threads,
//   3. runs the innermost dim as a plain typed loop — when every stride is one element this is a
//      unit-stride loop the compiler vectorises.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <tuple>
#include <utility>
#include <vector>

#include "cpu/isa.h"
#include "cpu/parallel.h"
#include "ember/tensor.h"

namespace ember::cpu::EMBER_CPU_ISA {

// Shape and per-operand byte strides after coalescing, innermost dim last.
template <size_t N> struct StridedLayout {
  std::vector<int64_t> shape;
  std::array<std::vector<int64_t>, N> strides;  // bytes
};

template <size_t N>
StridedLayout<N> coalesce(const Shape& shape, const std::array<const Tensor*, N>& ops) {
  StridedLayout<N> out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;  // size-1 dims never move the pointers
    bool merge = !out.shape.empty();
    for (size_t k = 0; k < N && merge; ++k) {
      int64_t s = ops[k]->stride(int64_t(d)) * int64_t(ops[k]->itemsize());
      merge = out.strides[k].back() == s * shape[d];
    }
    if (merge) {
      out.shape.back() *= shape[d];
      for (size_t k = 0; k < N; ++k)
        out.strides[k].back() = ops[k]->stride(int64_t(d)) * int64_t(ops[k]->itemsize());
    } else {
      out.shape.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k)
        out.strides[k].push_back(ops[k]->stride(int64_t(d)) * int64_t(ops[k]->itemsize()));
    }
  }
  if (out.shape.empty()) {  // a scalar or all-ones shape: one element
    out.shape.push_back(1);
    for (size_t k = 0; k < N; ++k) out.strides[k].push_back(0);
  }
  return out;
}

template <size_t N> bool all_contiguous(const std::array<const Tensor*, N>& ops) {
  for (const Tensor* t : ops)
    if (!t->is_contiguous()) return false;
  return true;
}

// One run of n elements from `base`, split between threads; `cost` per element (parallel.h).
template <size_t N, class Run>
void one_run(const std::array<char*, N>& base, const std::array<int64_t, N>& stride, int64_t n,
             int64_t cost, Run& run) {
  parallel_for(n, cost, [&](int64_t b, int64_t e) {
    std::array<char*, N> p;
    for (size_t k = 0; k < N; ++k) p[k] = base[k] + b * stride[k];
    run(p, stride, e - b);
  });
}

// Calls run(ptrs, inner_strides_bytes, n) for every innermost run of `ops` (all of one shape);
// `cost` is the work of one element (parallel.h's cost::).
template <size_t N, class Run>
void strided_for_each(const std::array<const Tensor*, N>& ops, Run&& run,
                      int64_t cost = cost::kCheap) {
  const Shape& shape = ops[0]->shape();
  const int64_t numel = shape_numel(shape);
  if (numel == 0) return;
  if (all_contiguous(ops)) {  // the common case, without coalescing's vectors
    std::array<char*, N> base;
    std::array<int64_t, N> itemsize;
    for (size_t k = 0; k < N; ++k) {
      base[k] = static_cast<char*>(ops[k]->data_ptr());
      itemsize[k] = int64_t(ops[k]->itemsize());
    }
    one_run(base, itemsize, numel, cost, run);
    return;
  }
  StridedLayout<N> L = coalesce(shape, ops);
  const int64_t ndim = int64_t(L.shape.size());
  const int64_t inner = L.shape.back();
  std::array<int64_t, N> inner_stride;
  for (size_t k = 0; k < N; ++k) inner_stride[k] = L.strides[k].back();

  std::array<char*, N> base;
  for (size_t k = 0; k < N; ++k) base[k] = static_cast<char*>(ops[k]->data_ptr());

  int64_t outer = 1;
  for (int64_t d = 0; d + 1 < ndim; ++d) outer *= L.shape[size_t(d)];

  if (outer == 1) {
    one_run(base, inner_stride, inner, cost, run);
    return;
  }
  parallel_for(outer, inner * cost, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      std::array<char*, N> p = base;
      int64_t rest = o;
      for (int64_t d = ndim - 2; d >= 0; --d) {
        int64_t i = rest % L.shape[size_t(d)];
        rest /= L.shape[size_t(d)];
        for (size_t k = 0; k < N; ++k) p[k] += i * L.strides[k][size_t(d)];
      }
      run(p, inner_stride, inner);
    }
  });
}

template <class Out, class... In, class F, size_t... I>
inline void run_map(const std::array<char*, sizeof...(In) + 1>& p,
                    const std::array<int64_t, sizeof...(In) + 1>& s, int64_t n, F& fn,
                    std::index_sequence<I...>) {
  bool unit = s[0] == int64_t(sizeof(Out)) && ((s[I + 1] == int64_t(sizeof(In))) && ...);
  Out* o = reinterpret_cast<Out*>(p[0]);
  if (unit) {  // contiguous run: a plain loop the compiler can vectorise
    std::tuple<const In*...> ins{reinterpret_cast<const In*>(p[I + 1])...};
    for (int64_t i = 0; i < n; ++i) o[i] = fn(std::get<I>(ins)[i]...);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    *reinterpret_cast<Out*>(p[0] + i * s[0]) =
        fn(*reinterpret_cast<const In*>(p[I + 1] + i * s[I + 1])...);
  }
}

// out[i] = fn(in0[i], in1[i], ...) with Out and In... the C++ element types of the tensors.
// Inputs must already have out's shape (broadcast views are fine).
// `in` holds references: an elementwise call copies no Tensor handle.
template <class Out, class... In, class F>
void cpu_map(Tensor& out, const std::array<std::reference_wrapper<const Tensor>, sizeof...(In)>& in,
             F&& fn, int64_t cost = cost::kCheap) {
  constexpr size_t N = sizeof...(In) + 1;
  std::array<const Tensor*, N> ops;
  ops[0] = &out;
  for (size_t k = 0; k < sizeof...(In); ++k) ops[k + 1] = &in[k].get();
  strided_for_each<N>(
      ops,
      [&](const std::array<char*, N>& p, const std::array<int64_t, N>& s, int64_t n) {
        run_map<Out, In...>(p, s, n, fn, std::index_sequence_for<In...>{});
      },
      cost);
}

}  // namespace ember::cpu::EMBER_CPU_ISA
