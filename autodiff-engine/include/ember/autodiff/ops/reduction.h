// ops/reduction.h — builder functions of the reduction family (src/rules/reduction.cpp), and the
// two ops of broadcasting that the gradient driver uses: expand and sum_to. Names and arguments
// are core-runtime's (ember/ops/reduction.h). dims empty = every dim.
#pragma once
#include <optional>
#include <utility>
#include <vector>

#include "ember/autodiff/ops/apply.h"

namespace ember::autodiff {

// x [*] -> x with `dims` removed (kept as 1 when keepdim): sum, mean, prod, amax, amin,
// logsumexp; all / any (-> bool, no gradient). amax/amin split the gradient equally among tied
// maxima (as PyTorch's amax does). prod's gradient is the product of the other elements, exact
// (to second order) with zeros in x.
#define EMBER_AD_REDUCE(name)                                                                  \
  template <class V>                                                                           \
  if_handle<V> name(const V& x, const std::vector<int64_t>& dims = {}, bool keepdim = false) { \
    return apply1<V>(EMBER_OP(#name), {x}, {{"dims", dims}, {"keepdim", int64_t(keepdim)}});   \
  }
EMBER_AD_REDUCE(sum)
EMBER_AD_REDUCE(mean)
EMBER_AD_REDUCE(prod)
EMBER_AD_REDUCE(amax)
EMBER_AD_REDUCE(amin)
EMBER_AD_REDUCE(logsumexp)
EMBER_AD_REDUCE(all)
EMBER_AD_REDUCE(any)
#undef EMBER_AD_REDUCE

// Variance and standard deviation with Bessel's `correction` (1: unbiased).
template <class V>
if_handle<V> var(const V& x, const std::vector<int64_t>& dims = {}, int64_t correction = 1,
                 bool keepdim = false) {
  return apply1<V>(EMBER_OP("var"), {x},
                   {{"dims", dims}, {"correction", correction}, {"keepdim", int64_t(keepdim)}});
}
template <class V>
if_handle<V> std(const V& x, const std::vector<int64_t>& dims = {}, int64_t correction = 1,
                 bool keepdim = false) {
  return apply1<V>(EMBER_OP("std"), {x},
                   {{"dims", dims}, {"correction", correction}, {"keepdim", int64_t(keepdim)}});
}
// The p-norm over dims (p = 2: Euclidean). The gradient at 0 is 0 (a subgradient); p = +-inf
// splits it among tied extremes as amax; p = 0 (a count) has none.
template <class V>
if_handle<V> norm(const V& x, double p = 2.0, const std::vector<int64_t>& dims = {},
                  bool keepdim = false) {
  return apply1<V>(EMBER_OP("norm"), {x},
                   {{"p", p}, {"dims", dims}, {"keepdim", int64_t(keepdim)}});
}

// Along one dim: (values, int64 indices). The gradient goes to the element the index names
// (the first of tied maxima, as PyTorch's max(dim) does). Ops "max_dim" / "min_dim".
template <class V>
if_handle<V, std::pair<V, V>> max(const V& x, int64_t dim, bool keepdim = false) {
  auto out =
      apply(EMBER_OP("max_dim"), std::vector<V>{x}, {{"dim", dim}, {"keepdim", int64_t(keepdim)}});
  return {out[0], out[1]};
}
template <class V>
if_handle<V, std::pair<V, V>> min(const V& x, int64_t dim, bool keepdim = false) {
  auto out =
      apply(EMBER_OP("min_dim"), std::vector<V>{x}, {{"dim", dim}, {"keepdim", int64_t(keepdim)}});
  return {out[0], out[1]};
}
// int64 indices of the maximum/minimum (no gradient); no dim: of the flattened tensor.
template <class V>
if_handle<V> argmax(const V& x, std::optional<int64_t> dim = {}, bool keepdim = false) {
  Attrs attrs{{"keepdim", int64_t(keepdim)}};
  if (dim) attrs.set("dim", *dim);
  return apply1<V>(EMBER_OP("argmax"), {x}, std::move(attrs));
}
template <class V>
if_handle<V> argmin(const V& x, std::optional<int64_t> dim = {}, bool keepdim = false) {
  Attrs attrs{{"keepdim", int64_t(keepdim)}};
  if (dim) attrs.set("dim", *dim);
  return apply1<V>(EMBER_OP("argmin"), {x}, std::move(attrs));
}

// x [*] -> shape, which x broadcasts to (a view).
template <class V> if_handle<V> expand(const V& x, const Shape& shape) {
  return apply1<V>(EMBER_OP("expand"), {x}, {{"shape", shape}});
}
// x [*] -> shape, which broadcasts to x's shape: the sum over the broadcast dims (expand's
// adjoint).
template <class V> if_handle<V> sum_to(const V& x, const Shape& shape) {
  return apply1<V>(EMBER_OP("sum_to"), {x}, {{"shape", shape}});
}

}  // namespace ember::autodiff
