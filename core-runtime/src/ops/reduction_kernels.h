// reduction_kernels.h — the reduction family's op enum (its slots are in kernels/reduction.def),
// the DimWalk that both backends use to walk a set of dims, and the reducers: the arithmetic of
// every reduction, written once and used by the CPU engine (cpu/reduce_loops.h) and the CUDA
// kernels (cuda/reduction.cu) alike (internal header).
//
// Every kernel sees x viewed as [kept..., reduced...]: the front function (ops/reduction.cpp)
// permutes the reduced dims to the end, so a kernel only needs `nreduce`, the number of trailing
// dims to reduce. Outputs are contiguous, one element per kept index, in row-major order.
//
// A reducer folds elements into an accumulator and merges accumulators:
//   acc_t init()                          the value of an empty reduction
//   acc_t step(acc_t a, T x, int64_t i)   folds in element x, at flat index i of the reduced dims
//   acc_t combine(acc_t a, acc_t b)       merges two partial results (of lanes, threads, warps)
//   out_t project(acc_t a, int64_t n)     the result, n being the number of reduced elements
// combine is associative (up to rounding), so an engine may split a reduction however it likes.
// kOrdered is true when the result depends on which element is where (the arg reductions report
// an index), which forbids the engine from walking the reduced dims in another order.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <vector>

#include "dispatch.h"
#include "ember/tensor.h"

namespace ember {

enum class ReduceOp { Sum, Prod, Mean, Amax, Amin, All, Any, LogSumExp };

// Dims walked in row-major order: sizes and element strides, innermost last. Never empty: a walk
// over no dims (or only size-1 dims) is one element.
struct DimWalk {
  std::vector<int64_t> shape, stride;
  int64_t numel = 1;

  int64_t inner() const { return shape.back(); }
  int64_t inner_stride() const { return stride.back(); }
  // Element offset of row `row`, a flat index over every dim but the innermost.
  int64_t row_offset(int64_t row) const {
    int64_t off = 0;
    for (size_t d = shape.size() - 1; d-- > 0;) {
      off += row % shape[d] * stride[d];
      row /= shape[d];
    }
    return off;
  }
  // Element offset of flat index i.
  int64_t offset(int64_t i) const { return row_offset(i / inner()) + i % inner() * inner_stride(); }
};

// Dims [begin, end) of x as a DimWalk; sort_by_stride first orders them by decreasing |stride|.
inline DimWalk make_walk(const Tensor& x, int64_t begin, int64_t end, bool sort_by_stride) {
  std::vector<int64_t> dims;
  for (int64_t d = begin; d < end; ++d)
    if (x.size(d) != 1) dims.push_back(d);
  if (sort_by_stride)
    std::stable_sort(dims.begin(), dims.end(), [&](int64_t a, int64_t b) {
      return std::llabs(x.stride(a)) > std::llabs(x.stride(b));
    });
  DimWalk w;
  for (int64_t d : dims) {
    w.numel *= x.size(d);
    if (!w.shape.empty() && w.stride.back() == x.stride(d) * x.size(d)) {
      w.shape.back() *= x.size(d);
      w.stride.back() = x.stride(d);
    } else {
      w.shape.push_back(x.size(d));
      w.stride.push_back(x.stride(d));
    }
  }
  if (w.shape.empty()) {
    w.shape.push_back(1);
    w.stride.push_back(0);
  }
  return w;
}

namespace reducers {

template <class C> EMBER_HOST_DEVICE inline bool is_nan(C x) {
  if constexpr (std::is_floating_point_v<C>) return x != x;
  return false;
}

// Sums of integers and bools are exact in int64; floats sum in their compute type.
template <class T> constexpr bool kFloating = std::is_floating_point_v<compute_t<T>>;
template <class T> using sum_acc_t = std::conditional_t<kFloating<T>, compute_t<T>, int64_t>;
template <class T> using sum_out_t = std::conditional_t<kFloating<T>, T, int64_t>;

template <class T> struct Sum {
  using acc_t = sum_acc_t<T>;
  using out_t = sum_out_t<T>;
  static constexpr bool kOrdered = false;
  EMBER_HOST_DEVICE acc_t init() const { return acc_t(0); }
  EMBER_HOST_DEVICE acc_t step(acc_t a, T x, int64_t) const { return a + acc_t(compute_t<T>(x)); }
  EMBER_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const { return a + b; }
  EMBER_HOST_DEVICE out_t project(acc_t a, int64_t) const { return out_t(a); }
};

template <class T> struct Prod {
  using acc_t = sum_acc_t<T>;
  using out_t = sum_out_t<T>;
  static constexpr bool kOrdered = false;
  EMBER_HOST_DEVICE acc_t init() const { return acc_t(1); }
  EMBER_HOST_DEVICE acc_t step(acc_t a, T x, int64_t) const { return a * acc_t(compute_t<T>(x)); }
  EMBER_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const { return a * b; }
  EMBER_HOST_DEVICE out_t project(acc_t a, int64_t) const { return out_t(a); }
};

template <class T> struct Mean : Sum<T> {  // floating T only; the mean of nothing is 0/0 = NaN
  using acc_t = compute_t<T>;
  using out_t = T;
  EMBER_HOST_DEVICE out_t project(acc_t a, int64_t n) const { return out_t(a / acc_t(n)); }
};

// The identity of max: -inf for floats, the lowest value for integers (false for bool).
template <class C> EMBER_HOST_DEVICE inline C lowest() {
  if constexpr (std::numeric_limits<C>::has_infinity) return -std::numeric_limits<C>::infinity();
  return std::numeric_limits<C>::lowest();
}
template <class C> EMBER_HOST_DEVICE inline C highest() {
  if constexpr (std::numeric_limits<C>::has_infinity) return std::numeric_limits<C>::infinity();
  return std::numeric_limits<C>::max();
}

// amax / amin; a NaN anywhere makes the result NaN, as in PyTorch.
template <class T, bool IsMax> struct Extreme {
  using acc_t = compute_t<T>;
  using out_t = T;
  static constexpr bool kOrdered = false;
  EMBER_HOST_DEVICE acc_t init() const { return IsMax ? lowest<acc_t>() : highest<acc_t>(); }
  EMBER_HOST_DEVICE acc_t step(acc_t a, T x, int64_t) const { return combine(a, acc_t(x)); }
  EMBER_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const {
    return ((IsMax ? b > a : b < a) | is_nan(b)) ? b : a;  // `|`, not `||`: no branch
  }
  EMBER_HOST_DEVICE out_t project(acc_t a, int64_t) const { return out_t(a); }
};

template <class T, bool IsAll> struct Logical {  // all / any of x != 0
  using acc_t = bool;
  using out_t = bool;
  static constexpr bool kOrdered = false;
  EMBER_HOST_DEVICE acc_t init() const { return IsAll; }
  EMBER_HOST_DEVICE acc_t step(acc_t a, T x, int64_t) const {
    return combine(a, compute_t<T>(x) != compute_t<T>(0));
  }
  EMBER_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const { return IsAll ? a && b : a || b; }
  EMBER_HOST_DEVICE out_t project(acc_t a, int64_t) const { return a; }
};

// log(sum(exp(x))) = m + log(sum(exp(x - m))) with m the running max, so no exp overflows. Two
// partial results rescale the smaller-max sum to the larger max before adding.
template <class C> struct MaxSum {
  C max;
  C sum;  // of exp(x - max)
};
template <class T> struct LogSumExp {
  using C = compute_t<T>;
  using acc_t = MaxSum<C>;
  using out_t = T;
  static constexpr bool kOrdered = false;
  EMBER_HOST_DEVICE acc_t init() const { return {lowest<C>(), C(0)}; }
  // One exp per element: either x is the new max (rescale the sum) or it adds exp(x - max).
  // x == max adds exactly 1, which also covers -inf and +inf, where x - max would be NaN. A NaN
  // becomes the max (and the sum NaN): combine() then keeps it, as max() does.
  EMBER_HOST_DEVICE acc_t step(acc_t a, T x, int64_t) const {
    C v = C(x);
    if (v > a.max || is_nan(v)) return {v, a.sum * std::exp(a.max - v) + C(1)};
    return {a.max, a.sum + (v == a.max ? C(1) : std::exp(v - a.max))};
  }
  EMBER_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const {
    if (a.max < b.max) {  // let a hold the larger max (or a NaN)
      acc_t t = a;
      a = b;
      b = t;
    }
    if (is_nan(b.max)) return b;
    // a.max = +inf (result +inf), or both -inf (only -inf seen): exp(inf - inf) would be NaN.
    if (a.max == highest<C>() || a.max == lowest<C>()) return {a.max, a.sum + b.sum};
    return {a.max, a.sum + b.sum * std::exp(b.max - a.max)};
  }
  EMBER_HOST_DEVICE out_t project(acc_t a, int64_t) const { return out_t(a.max + std::log(a.sum)); }
};

// p-norms. Kind: 0 counts non-zeros, 1 sums |x|, 2 sums x^2, -1 sums |x|^p for any other p.
template <class T, int Kind> struct NormSum {
  using acc_t = compute_t<T>;
  using out_t = T;
  static constexpr bool kOrdered = false;
  acc_t p;
  EMBER_HOST_DEVICE acc_t init() const { return acc_t(0); }
  EMBER_HOST_DEVICE acc_t step(acc_t a, T x, int64_t) const {
    acc_t v = acc_t(x);
    if constexpr (Kind == 0) return a + acc_t(v != acc_t(0));
    if constexpr (Kind == 1) return a + std::abs(v);
    if constexpr (Kind == 2) return a + v * v;
    return a + std::pow(std::abs(v), p);
  }
  EMBER_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const { return a + b; }
  EMBER_HOST_DEVICE out_t project(acc_t a, int64_t) const {
    if constexpr (Kind == 0 || Kind == 1) return out_t(a);
    if constexpr (Kind == 2) return out_t(std::sqrt(a));
    return out_t(std::pow(a, acc_t(1) / p));
  }
};

// max|x| (p = inf) or min|x| (p = -inf).
template <class T, bool IsMax> struct NormExtreme : Extreme<T, IsMax> {
  using acc_t = compute_t<T>;
  EMBER_HOST_DEVICE acc_t init() const { return IsMax ? acc_t(0) : highest<acc_t>(); }
  EMBER_HOST_DEVICE acc_t step(acc_t a, T x, int64_t) const {
    return this->combine(a, std::abs(acc_t(x)));
  }
};

// Welford's running mean and sum of squared deviations, merged with Chan et al.'s formula: one
// pass over x, without the cancellation of sum(x^2) - sum(x)^2 / n.
template <class C> struct MeanM2 {
  int64_t n;
  C mean;
  C m2;  // sum of (x - mean)^2
};
template <class T> struct Variance {
  using C = compute_t<T>;
  using acc_t = MeanM2<C>;
  using out_t = T;
  static constexpr bool kOrdered = false;
  int64_t correction;
  bool take_sqrt;
  EMBER_HOST_DEVICE acc_t init() const { return {0, C(0), C(0)}; }
  EMBER_HOST_DEVICE acc_t step(acc_t a, T x, int64_t) const {
    C v = C(x);
    a.n += 1;
    C d = v - a.mean;
    a.mean += d / C(a.n);
    a.m2 += d * (v - a.mean);
    return a;
  }
  EMBER_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const {
    if (a.n == 0) return b;
    if (b.n == 0) return a;
    int64_t n = a.n + b.n;
    C d = b.mean - a.mean, fb = C(b.n) / C(n);
    return {n, a.mean + d * fb, a.m2 + b.m2 + d * d * C(a.n) * fb};
  }
  // n <= correction divides by 0: inf, or NaN when m2 is 0 (as PyTorch does).
  EMBER_HOST_DEVICE out_t project(acc_t a, int64_t) const {
    int64_t dof = a.n - correction;
    C v = a.m2 / C(dof > 0 ? dof : 0);
    return out_t(take_sqrt ? std::sqrt(v) : v);
  }
};

// The extreme value and its index; index -1 marks "nothing seen yet".
template <class C> struct ValueIndex {
  C value;
  int64_t index;
};
template <class T, bool IsMax> struct ArgExtreme {
  using C = compute_t<T>;
  using acc_t = ValueIndex<C>;
  static constexpr bool kOrdered = true;
  EMBER_HOST_DEVICE acc_t init() const { return {C(0), -1}; }
  EMBER_HOST_DEVICE acc_t step(acc_t a, T x, int64_t i) const { return combine(a, {C(x), i}); }
  // b wins if it is more extreme, NaN where a is not, or equal and earlier.
  EMBER_HOST_DEVICE acc_t combine(acc_t a, acc_t b) const {
    if (a.index < 0) return b;
    if (b.index < 0) return a;
    bool an = is_nan(a.value), bn = is_nan(b.value);
    bool better = bn ? !an : (!an && (IsMax ? b.value > a.value : b.value < a.value));
    bool tie = (an && bn) || a.value == b.value;
    return (better || (tie && b.index < a.index)) ? b : a;
  }
};

}  // namespace reducers
}  // namespace ember
