// ops/movement.h — builder functions of views and data movement (src/ops/movement.cpp).
#pragma once
#include "ember/autodiff/ops/apply.h"

namespace ember::autodiff {

// x [*] -> shape (same number of elements; one size may be -1). A view when strides allow.
template <class V> if_handle<V> reshape(const V& x, const Shape& shape) {
  return apply1<V>(EMBER_OP("reshape"), {x}, {{"shape", shape}});
}

}  // namespace ember::autodiff
