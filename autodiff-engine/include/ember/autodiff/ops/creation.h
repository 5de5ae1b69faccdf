// ops/creation.h — builder functions of tensors made from another's type (src/rules/creation.cpp).
#pragma once
#include "ember/autodiff/ops/apply.h"

namespace ember::autodiff {

// x [*] -> [*] of the same dtype and device, every element 0 / 1 / value.
template <class V> if_handle<V> zeros_like(const V& x) {
  return apply1<V>(EMBER_OP("zeros_like"), {x});
}
template <class V> if_handle<V> ones_like(const V& x) {
  return apply1<V>(EMBER_OP("ones_like"), {x});
}
template <class V> if_handle<V> full_like(const V& x, double value) {
  return apply1<V>(EMBER_OP("full_like"), {x}, {{"value", value}});
}

}  // namespace ember::autodiff
