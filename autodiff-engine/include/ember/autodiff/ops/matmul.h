// ops/matmul.h — builder functions of matrix products (src/rules/matmul.cpp).
#pragma once
#include "ember/autodiff/ops/apply.h"

namespace ember::autodiff {

// NumPy's matmul in every form: 1-D . 1-D -> [], [n,k] @ [k,m] -> [n,m], 1-D operands promoted
// and squeezed back, batch dims broadcast ([b,1,n,k] @ [c,k,m] -> [b,c,n,m]).
template <class V> if_handle<V> matmul(const V& a, const V& b) {
  return apply1<V>(EMBER_OP("matmul"), {a, b});
}
// x [*, in], weight [out, in], bias [out] (optional) -> [*, out] = x weight^T + bias.
template <class V> if_handle<V> linear(const V& x, const V& weight, const V& bias = V()) {
  return apply1<V>(EMBER_OP("linear"), {x, weight, bias});
}
// activation(linear(x, weight, bias)) as one op ("linear_act", core's linear_act), activation
// "relu", "gelu" or "gelu_tanh" (gelu's "tanh" form). gelu's gradient reads linear's value, so
// for gelu the op keeps it as a second output (attribute pre = 1); relu's reads the result.
template <class V>
if_handle<V> linear_act(const V& x, const V& weight, const V& bias, const std::string& activation) {
  return apply(EMBER_OP("linear_act"), std::vector<V>{x, weight, bias},
               {{"activation", activation}, {"pre", int64_t(activation != "relu")}})[0];
}

}  // namespace ember::autodiff
