// ops/reduction.h — builder functions of the reduction family (src/ops/reduction.cpp), and the
// two ops of broadcasting that the gradient driver uses: expand and sum_to.
#pragma once
#include <vector>

#include "ember/autodiff/ops/apply.h"

namespace ember::autodiff {

// x [*] -> x with `dims` removed (kept as 1 when keepdim); dims empty = every dim.
template <class V>
if_handle<V> sum(const V& x, const std::vector<int64_t>& dims = {}, bool keepdim = false) {
  return apply1<V>(EMBER_OP("sum"), {x}, {{"dims", dims}, {"keepdim", int64_t(keepdim)}});
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
