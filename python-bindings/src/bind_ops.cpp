// bind_ops.cpp — the elementwise, reduction and matmul ops of autodiff-engine's builder headers,
// each as ember.<op> and as a Tensor method. Every op runs (and is recorded) in C++.
#include <ember/autodiff/ops.h>
#include <ember/ops/creation.h>
#include <ember/ops/elementwise.h>

#include <map>

#include "def_op.h"

namespace ember::python {

namespace ad = ember::autodiff;

namespace {

using V = Variable;

#define EMBER_TS(op) [](const V& a, double s) { return ad::op(a, s); }
#define EMBER_ST(op) [](double s, const V& a) { return ad::op(s, a); }
#define EMBER_SWAP(op) [](double s, const V& a) { return ad::op(a, s); }

// The ops with a scalar op of their own in autodiff-engine (add_scalar, rsub_scalar, ...): x op s,
// and s op x as that op's reflected form or, where the op commutes or mirrors (s < x is x > s),
// as x op' s. The other ops take a scalar as a 0-d tensor.
struct ScalarForms {
  Variable (*ts)(const Variable&, double);
  Variable (*st)(double, const Variable&);
};
const std::map<std::string, ScalarForms>& scalar_forms() {
  static const std::map<std::string, ScalarForms> table = {
      {"add", {EMBER_TS(add), EMBER_SWAP(add)}},
      {"sub", {EMBER_TS(sub), EMBER_ST(sub)}},
      {"mul", {EMBER_TS(mul), EMBER_SWAP(mul)}},
      {"div", {EMBER_TS(div), EMBER_ST(div)}},
      {"pow", {EMBER_TS(pow), EMBER_ST(pow)}},
      {"maximum", {EMBER_TS(maximum), EMBER_SWAP(maximum)}},
      {"minimum", {EMBER_TS(minimum), EMBER_SWAP(minimum)}},
      {"eq", {EMBER_TS(eq), EMBER_SWAP(eq)}},
      {"ne", {EMBER_TS(ne), EMBER_SWAP(ne)}},
      {"lt", {EMBER_TS(lt), EMBER_SWAP(gt)}},
      {"le", {EMBER_TS(le), EMBER_SWAP(ge)}},
      {"gt", {EMBER_TS(gt), EMBER_SWAP(lt)}},
      {"ge", {EMBER_TS(ge), EMBER_SWAP(le)}},
  };
  return table;
}
#undef EMBER_TS
#undef EMBER_ST
#undef EMBER_SWAP

// The plain binary ops of core-runtime's ember/ops/binary.def, a line each there (those marked
// Own add their own entry), with the scalar forms above. A Python float makes an integer tensor
// floating before the arithmetic ops, not before the bitwise ops, comparisons or logical ops.
constexpr bool is_arithmetic(BinaryDTypes d) {
  return d != BinaryDTypes::Integral && d != BinaryDTypes::Bool;
}
const std::map<std::string, Binary>& binaries() {
  static const std::map<std::string, Binary> table = [] {
    std::map<std::string, Binary> ops;
#define EMBER_BINARY_ENTRY_Plain(name, dtypes)                                                 \
  ops[#name] = Binary{[](const V& a, const V& b) { return ad::name(a, b); }, nullptr, nullptr, \
                      is_arithmetic(BinaryDTypes::dtypes)};
#define EMBER_BINARY_ENTRY_Own(name, dtypes)
#define EMBER_BINARY_OP(name, Formula, dtypes, scalar, api, doc) \
  EMBER_BINARY_ENTRY_##api(name, dtypes)
#include <ember/ops/binary.def>
#undef EMBER_BINARY_OP
#undef EMBER_BINARY_ENTRY_Plain
#undef EMBER_BINARY_ENTRY_Own
    for (const auto& [name, forms] : scalar_forms()) {
      ops.at(name).ts = forms.ts;
      ops.at(name).st = forms.st;
    }
    return ops;
  }();
  return table;
}

// A Python float meets an integer tensor: the tensor becomes float32 first, as in PyTorch.
V floating_for(const V& x, py::handle scalar, bool arithmetic) {
  if (arithmetic && is_python_float(scalar) && !is_floating(x.dtype()))
    return ad::to(x, DType::Float32);
  return x;
}

// A scalar as a 0-d tensor beside `like` (for ops without a scalar form): like's dtype, or
// float32 when a Python float meets an integer tensor.
V scalar_operand(py::handle s, const V& like) {
  const bool widen = is_python_float(s) && !is_floating(like.dtype());
  return V(
      ember::scalar_tensor(scalar_value(s), widen ? DType::Float32 : like.dtype(), like.device()));
}

// Reductions take dim=None | int | tuple of ints.
template <V (*F)(const V&, const std::vector<int64_t>&, bool)> auto reduce() {
  return
      [](const V& x, py::handle dim, bool keepdim) { return F(x, dims_from_object(dim), keepdim); };
}
// sum and mean also take PyTorch's dtype= (x is cast to it first, so that the sum of small ints
// does not overflow) and NumPy's name axis= for dim.
template <V (*F)(const V&, const std::vector<int64_t>&, bool)> auto reduce_typed(const char* op) {
  return [op](const V& x, py::handle dim, bool keepdim, std::optional<DType> dtype,
              py::handle axis) {
    if (!axis.is_none() && !dim.is_none())
      throw ember::ValueError(op, "got both dim and axis (two names of one argument); pass one");
    const V y = dtype && *dtype != x.dtype() ? ad::to(x, *dtype) : x;
    return F(y, dims_from_object(axis.is_none() ? dim : axis), keepdim);
  };
}
V sum_(const V& x, const std::vector<int64_t>& d, bool k) { return ad::sum(x, d, k); }
V mean_(const V& x, const std::vector<int64_t>& d, bool k) { return ad::mean(x, d, k); }
V prod_(const V& x, const std::vector<int64_t>& d, bool k) { return ad::prod(x, d, k); }
V amax_(const V& x, const std::vector<int64_t>& d, bool k) { return ad::amax(x, d, k); }
V amin_(const V& x, const std::vector<int64_t>& d, bool k) { return ad::amin(x, d, k); }
V logsumexp_(const V& x, const std::vector<int64_t>& d, bool k) { return ad::logsumexp(x, d, k); }
V all_(const V& x, const std::vector<int64_t>& d, bool k) { return ad::all(x, d, k); }
V any_(const V& x, const std::vector<int64_t>& d, bool k) { return ad::any(x, d, k); }

// var/std: correction=1 by default; unbiased=False means correction 0 (PyTorch's older name).
int64_t correction_of(std::optional<int64_t> correction, std::optional<bool> unbiased) {
  if (correction) return *correction;
  return unbiased.value_or(true) ? 1 : 0;
}

// max(x) -> the largest value; max(x, dim) -> (values, indices); max(x, other) -> maximum.
py::object extreme(const V& x, py::handle dim, bool keepdim, bool is_max) {
  if (dim.is_none()) return py::cast(is_max ? ad::amax(x) : ad::amin(x));
  if (py::isinstance<V>(dim))
    return py::cast(binary(is_max ? "maximum" : "minimum", py::cast(x), dim));
  auto [values, indices] = is_max ? ad::max(x, py::cast<int64_t>(dim), keepdim)
                                  : ad::min(x, py::cast<int64_t>(dim), keepdim);
  return values_indices(values, indices);
}

}  // namespace

bool is_operand(py::handle obj) {
  return is_tensor(obj) || is_scalar(obj) || PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr()) ||
         py::hasattr(obj, "__array_interface__");
}

Variable binary(const std::string& name, py::handle a, py::handle b) {
  return binary(binary_op(name), name.c_str(), a, b);
}

const Binary& binary_op(const std::string& name) { return binaries().at(name); }

Variable binary(const Binary& op, const char* name, py::handle a, py::handle b) {
  const bool a_tensor = is_tensor(a), b_tensor = is_tensor(b);
  // The common case first, with nothing to convert: a small op's time is this call path.
  if (a_tensor && b_tensor) return op.tt(tensor_of(a), tensor_of(b));
  if (a_tensor && is_scalar(b)) {
    const V x = floating_for(py::cast<V>(a), b, op.arithmetic);
    return op.ts ? op.ts(x, scalar_value(b)) : op.tt(x, scalar_operand(b, x));
  }
  if (b_tensor && is_scalar(a)) {
    const V x = floating_for(py::cast<V>(b), a, op.arithmetic);
    return op.st ? op.st(scalar_value(a), x) : op.tt(scalar_operand(a, x), x);
  }
  if (!a_tensor && !b_tensor) not_a_tensor(name, a);
  const Device device = a_tensor ? py::cast<const V&>(a).device() : py::cast<const V&>(b).device();
  return op.tt(to_variable(a, std::nullopt, device), to_variable(b, std::nullopt, device));
}

py::object values_indices(const Variable& values, const Variable& indices) {
  static py::object type =
      py::module_::import("collections")
          .attr("namedtuple")("values_indices", py::make_tuple("values", "indices"));
  return type(values, indices);
}

void bind_ops(py::module_& m, TensorClass& cls) {
  // ---- unary: x [*] -> [*] ----
  // core-runtime's ember/ops/unary.def: one binding per line there (Own ones are bound below)
#define EMBER_BIND_UNARY(name, doc) \
  def_op(                           \
      m, cls, #name, [](const V& x) { return ad::name(x); }, doc);
#define EMBER_BIND_UNARY_Plain(name, doc) EMBER_BIND_UNARY(name, doc)
#define EMBER_BIND_UNARY_Own(name, doc)
#define EMBER_UNARY_OP(name, Formula, dtypes, cost, api, doc) EMBER_BIND_UNARY_##api(name, doc)
#include <ember/ops/unary.def>
#undef EMBER_UNARY_OP
  // Their names, for ember._ops to export.
  py::list unary_ops;
#define EMBER_UNARY_OP(name, Formula, dtypes, cost, api, doc) unary_ops.append(#name);
#include <ember/ops/unary.def>
#undef EMBER_UNARY_OP
  m.attr("_unary_ops") = py::tuple(unary_ops);
#undef EMBER_BIND_UNARY_Plain
#undef EMBER_BIND_UNARY_Own
  EMBER_BIND_UNARY(logical_not, "not x, as bool.")
  EMBER_BIND_UNARY(square, "x * x.")
  EMBER_BIND_UNARY(isnan, "Whether x is NaN, as bool.")
  EMBER_BIND_UNARY(isinf, "Whether x is +inf or -inf, as bool.")
  EMBER_BIND_UNARY(isfinite, "Whether x is neither NaN nor infinite, as bool.")
#undef EMBER_BIND_UNARY
  def_op(
      m, cls, "round", [](const V& x, int64_t decimals) { return ad::round(x, decimals); },
      "Rounded half to even, to `decimals` places (zero gradient).", py::kw_only(),
      py::arg("decimals") = 0);
  def_op(
      m, cls, "nan_to_num",
      [](const V& x, double nan, std::optional<double> posinf, std::optional<double> neginf) {
        return ad::nan_to_num(x, nan, posinf, neginf);
      },
      "NaN, +inf and -inf replaced (None: the dtype's largest / lowest finite value).",
      py::arg("nan") = 0.0, py::arg("posinf") = py::none(), py::arg("neginf") = py::none());
  def_op(
      m, cls, "negative", [](const V& x) { return ad::neg(x); }, "-x.");
  def_op(
      m, cls, "leaky_relu", [](const V& x, double s) { return ad::leaky_relu(x, s); },
      "x > 0 ? x : negative_slope x.", py::arg("negative_slope") = 0.01);
  def_op(
      m, cls, "elu", [](const V& x, double a) { return ad::elu(x, a); },
      "x > 0 ? x : alpha (e^x - 1).", py::arg("alpha") = 1.0);
  def_op(
      m, cls, "gelu", [](const V& x, const std::string& a) { return ad::gelu(x, a); },
      "x Phi(x); approximate 'none' (erf) or 'tanh'.", py::arg("approximate") = "none");
  def_op(
      m, cls, "softplus", [](const V& x, double b, double t) { return ad::softplus(x, b, t); },
      "log(1 + e^(beta x)) / beta.", py::arg("beta") = 1.0, py::arg("threshold") = 20.0);

  // ---- the backward ops of the activations: (grad, x) or (grad, y) -> dx ----
#define EMBER_BIND_BACKWARD(name)                                                    \
  m.def(                                                                             \
      #name, [](const V& g, const V& x) { return ad::name(g, x); }, py::arg("grad"), \
      py::arg("x"));
  EMBER_BIND_BACKWARD(relu_backward)
  EMBER_BIND_BACKWARD(silu_backward)
  EMBER_BIND_BACKWARD(sigmoid_backward)
  EMBER_BIND_BACKWARD(tanh_backward)
#undef EMBER_BIND_BACKWARD

  // ---- binary: tensors or scalars on either side, broadcast ----
  // core-runtime's ember/ops/binary.def: one binding per line there (Own ones are bound below)
#define EMBER_BIND_BINARY_Plain(name, doc)                                                         \
  {                                                                                                \
    const Binary* op = &binary_op(#name);                                                          \
    def_op(                                                                                        \
        m, cls, #name, [op](py::handle a, py::handle b) { return binary(*op, #name, a, b); }, doc, \
        py::arg("other"));                                                                         \
  }
#define EMBER_BIND_BINARY_Own(name, doc)
#define EMBER_BINARY_OP(name, Formula, dtypes, scalar, api, doc) EMBER_BIND_BINARY_##api(name, doc)
#include <ember/ops/binary.def>
#undef EMBER_BINARY_OP
#undef EMBER_BIND_BINARY_Plain
#undef EMBER_BIND_BINARY_Own
  // Their names, for ember._ops to export.
  py::list binary_ops;
#define EMBER_BINARY_OP(name, Formula, dtypes, scalar, api, doc) binary_ops.append(#name);
#include <ember/ops/binary.def>
#undef EMBER_BINARY_OP
  m.attr("_binary_ops") = py::tuple(binary_ops);
  m.def(
      "where",
      [](const V& cond, py::handle a, py::handle b) {
        const V like = py::isinstance<V>(a)   ? py::cast<V>(a)
                       : py::isinstance<V>(b) ? py::cast<V>(b)
                                              : V(ember::zeros({}, DType::Float32, cond.device()));
        auto operand = [&](py::handle o) {
          return is_scalar(o) ? scalar_operand(o, like)
                              : to_variable(o, std::nullopt, cond.device());
        };
        return ad::where(cond, operand(a), operand(b));
      },
      py::arg("condition"), py::arg("input"), py::arg("other"),
      "input where condition (bool) is true, other where false; broadcast; either may be a "
      "number.");
  def_op(
      m, cls, "clamp",
      [](const V& x, std::optional<double> lo, std::optional<double> hi) {
        return ad::clamp(x, lo, hi);
      },
      "min(max(x, min), max); either bound may be None.", py::arg("min") = py::none(),
      py::arg("max") = py::none());
  def_op(
      m, cls, "clip",
      [](const V& x, std::optional<double> lo, std::optional<double> hi) {
        return ad::clamp(x, lo, hi);
      },
      "Another name of clamp.", py::arg("min") = py::none(), py::arg("max") = py::none());
  def_op(
      m, cls, "masked_fill",
      [](const V& x, const V& mask, double value) { return ad::masked_fill(x, mask, value); },
      "x with value where mask (bool, broadcast to x) is true.", py::arg("mask"), py::arg("value"));

  // ---- reductions: dim None (every dim), an int or a tuple ----
  const auto dim = py::arg("dim") = py::none();
  const auto keepdim = py::arg("keepdim") = false;
  const auto dtype = py::arg("dtype") = py::none();
  const auto axis = py::arg("axis") = py::none();
  def_op(m, cls, "sum", reduce_typed<sum_>("sum"),
         "The sum over dim (or axis), of x cast to dtype when given.", dim, keepdim, py::kw_only(),
         dtype, axis);
  def_op(m, cls, "mean", reduce_typed<mean_>("mean"),
         "The mean over dim (or axis), of x cast to dtype when given.", dim, keepdim, py::kw_only(),
         dtype, axis);
  def_op(m, cls, "prod", reduce<prod_>(), "The product over dim.", dim, keepdim);
  def_op(m, cls, "amax", reduce<amax_>(), "The largest value over dim.", dim, keepdim);
  def_op(m, cls, "amin", reduce<amin_>(), "The smallest value over dim.", dim, keepdim);
  def_op(m, cls, "logsumexp", reduce<logsumexp_>(), "log(sum(exp(x))) over dim.", dim, keepdim);
  def_op(m, cls, "all", reduce<all_>(), "Whether every element over dim is non-zero.", dim,
         keepdim);
  def_op(m, cls, "any", reduce<any_>(), "Whether some element over dim is non-zero.", dim, keepdim);
  def_op(
      m, cls, "var",
      [](const V& x, py::handle d, std::optional<bool> unbiased, bool k, std::optional<int64_t> c) {
        return ad::var(x, dims_from_object(d), correction_of(c, unbiased), k);
      },
      "The variance over dim with Bessel's correction (1 unless given).", dim,
      py::arg("unbiased") = py::none(), keepdim, py::kw_only(), py::arg("correction") = py::none());
  def_op(
      m, cls, "std",
      [](const V& x, py::handle d, std::optional<bool> unbiased, bool k, std::optional<int64_t> c) {
        return ad::std(x, dims_from_object(d), correction_of(c, unbiased), k);
      },
      "The standard deviation over dim.", dim, py::arg("unbiased") = py::none(), keepdim,
      py::kw_only(), py::arg("correction") = py::none());
  def_op(
      m, cls, "norm",
      [](const V& x, double p, py::handle d, bool k) {
        return ad::norm(x, p, dims_from_object(d), k);
      },
      "The vector p-norm over dim.", py::arg("p") = 2.0, dim, keepdim);
  def_op(
      m, cls, "max", [](const V& x, py::handle d, bool k) { return extreme(x, d, k, true); },
      "max(x): the largest value; max(x, dim): (values, indices); max(x, other): maximum.", dim,
      keepdim);
  def_op(
      m, cls, "min", [](const V& x, py::handle d, bool k) { return extreme(x, d, k, false); },
      "min(x): the smallest value; min(x, dim): (values, indices); min(x, other): minimum.", dim,
      keepdim);
  def_op(
      m, cls, "argmax",
      [](const V& x, std::optional<int64_t> d, bool k) { return ad::argmax(x, d, k); },
      "int64 index of the maximum along dim (of the flattened x without dim).", dim, keepdim);
  def_op(
      m, cls, "argmin",
      [](const V& x, std::optional<int64_t> d, bool k) { return ad::argmin(x, d, k); },
      "int64 index of the minimum along dim (of the flattened x without dim).", dim, keepdim);
  m.def(
      "sum_to", [](const V& x, const Shape& s) { return ad::sum_to(x, s); }, py::arg("input"),
      py::arg("shape"), "x summed over the dims that broadcast shape to x's shape.");

  // ---- matrix products ----
  def_op(
      m, cls, "matmul", [](const V& a, const V& b) { return ad::matmul(a, b); },
      "NumPy's matmul: dot, matrix, batched (batch dims broadcast).", py::arg("other"));
  def_op(
      m, cls, "mm", [](const V& a, const V& b) { return ad::matmul(a, b); },
      "A matrix product (matmul).", py::arg("other"));
  def_op(
      m, cls, "bmm", [](const V& a, const V& b) { return ad::matmul(a, b); },
      "A batched matrix product (matmul).", py::arg("other"));
  m.def(
      "linear",
      [](const V& x, const V& w, std::optional<V> b) { return ad::linear(x, w, b.value_or(V())); },
      py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(),
      "x [*, in] @ weight [out, in]^T + bias [out].");
}

}  // namespace ember::python
