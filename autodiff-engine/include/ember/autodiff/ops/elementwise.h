// ops/elementwise.h — builder functions of the elementwise family (src/ops/elementwise.cpp):
// for graphs (Val) and eager code (Variable) alike (see apply.h). Binary ops broadcast.
#pragma once
#include "ember/autodiff/ops/apply.h"

namespace ember::autodiff {

// ---- unary: x [*] -> [*] ----
template <class V> if_handle<V> neg(const V& x) { return apply1<V>(EMBER_OP("neg"), {x}); }
template <class V> if_handle<V> tanh(const V& x) { return apply1<V>(EMBER_OP("tanh"), {x}); }
// grad * (1 - y^2), with y = tanh(x)
template <class V> if_handle<V> tanh_backward(const V& grad, const V& y) {
  return apply1<V>(EMBER_OP("tanh_backward"), {grad, y});
}

// ---- binary, broadcasting: a [*], b [*] -> broadcast shape ----
template <class V> if_handle<V> add(const V& a, const V& b) {
  return apply1<V>(EMBER_OP("add"), {a, b});
}
template <class V> if_handle<V> sub(const V& a, const V& b) {
  return apply1<V>(EMBER_OP("sub"), {a, b});
}
template <class V> if_handle<V> mul(const V& a, const V& b) {
  return apply1<V>(EMBER_OP("mul"), {a, b});
}

// ---- with a scalar: x [*] -> [*] ----
template <class V> if_handle<V> add(const V& x, double value) {
  return apply1<V>(EMBER_OP("add_scalar"), {x}, {{"value", value}});
}
template <class V> if_handle<V> mul(const V& x, double value) {
  return apply1<V>(EMBER_OP("mul_scalar"), {x}, {{"value", value}});
}

// ---- operators ----
template <class V> if_handle<V> operator-(const V& x) { return neg(x); }
template <class V> if_handle<V> operator+(const V& a, const V& b) { return add(a, b); }
template <class V> if_handle<V> operator-(const V& a, const V& b) { return sub(a, b); }
template <class V> if_handle<V> operator*(const V& a, const V& b) { return mul(a, b); }
template <class V> if_handle<V> operator+(const V& x, double s) { return add(x, s); }
template <class V> if_handle<V> operator+(double s, const V& x) { return add(x, s); }
template <class V> if_handle<V> operator-(const V& x, double s) { return add(x, -s); }
template <class V> if_handle<V> operator*(const V& x, double s) { return mul(x, s); }
template <class V> if_handle<V> operator*(double s, const V& x) { return mul(x, s); }

}  // namespace ember::autodiff
