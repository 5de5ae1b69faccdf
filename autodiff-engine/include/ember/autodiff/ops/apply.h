// apply.h — how a builder function reaches its op, for both kinds of handle.
//
// Every builder function (ops/<family>.h) is a template over the handle type V:
//   Val       a value of a Graph: apply() adds a node (symbolic; what gradient rules use);
//   Variable  an eager value (variable.h): apply() runs the op now and records it for backward.
// So each op is written once and serves graphs, rules and eager code alike:
//   template <class V> V tanh(const V& x) { return apply1<V>(EMBER_OP("tanh"), {x}); }
#pragma once
#include <type_traits>
#include <vector>

#include "ember/autodiff/graph.h"
#include "ember/autodiff/op.h"

namespace ember::autodiff {

class Variable;

// Adds a node to the graph of the first defined input. Undefined inputs are left out, so an
// optional operand (a bias) is simply not passed.
std::vector<Val> apply(const OpDef& op, const std::vector<Val>& inputs, Attrs attrs = {});
// Runs the op on the inputs' tensors and, when grad mode is on and an input requires grad,
// records it (variable.h).
std::vector<Variable> apply(const OpDef& op, const std::vector<Variable>& inputs, Attrs attrs = {});

template <class V> V apply1(const OpDef& op, const std::vector<V>& inputs, Attrs attrs = {}) {
  return apply(op, inputs, std::move(attrs))[0];
}

// Builder functions and operators accept exactly these handle types.
template <class V> struct is_handle : std::false_type {};
template <> struct is_handle<Val> : std::true_type {};
template <> struct is_handle<Variable> : std::true_type {};
template <class V, class R = V> using if_handle = std::enable_if_t<is_handle<V>::value, R>;

}  // namespace ember::autodiff

// The OpDef named `name`, looked up once per call site.
#define EMBER_OP(name)                                                            \
  ([]() -> const ::ember::autodiff::OpDef& {                                      \
    static const ::ember::autodiff::OpDef& def = ::ember::autodiff::op_def(name); \
    return def;                                                                   \
  }())
