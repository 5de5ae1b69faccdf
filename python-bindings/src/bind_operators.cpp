// bind_operators.cpp — Python's operators on tensors: + - * / // % ** @, & | ^, comparisons,
// unary - and ~, abs(), with numbers on either side (reflected forms), and the in-place forms
// (+= ...) and methods (add_, fill_, uniform_, ...), which write into the tensor's storage, or,
// with history to record, make the tensor the recorded result (records_in_place).
#include <ember/autodiff/compile/trace.h>
#include <ember/autodiff/ops.h>
#include <ember/error.h>
#include <ember/ops/elementwise.h>
#include <ember/ops/random.h>

#include "def_op.h"
#include "generator.h"

namespace ember::python {

namespace ad = ember::autodiff;

namespace {

using V = Variable;

// a op b, or NotImplemented so that Python tries the other operand (or raises TypeError).
py::object apply(const char* op, py::handle a, py::handle b) {
  if (!is_operand(a) || !is_operand(b))
    return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  return py::cast(binary(op, a, b));
}
py::object apply(const Binary& op, const char* name, py::handle a, py::handle b) {
  if (!is_operand(a) || !is_operand(b))
    return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  return py::cast(binary(op, name, a, b));
}

// Whether `result` may be stored in place into x: x's shape, and a dtype of no wider kind (a
// float result does not go into an integer tensor).
void check_fits(const V& x, const V& result, const char* op) {
  if (result.shape() != x.shape())
    throw ember::ShapeError(op, "the result of " + result.str() + " does not fit in place into " +
                                    x.str() + ". Fix: use the out-of-place form");
  auto kind = [](DType d) { return d == DType::Bool ? 0 : is_floating(d) ? 2 : 1; };
  if (kind(result.dtype()) > kind(x.dtype()))
    throw ember::DTypeError(op, "a result of dtype " + std::string(dtype_name(result.dtype())) +
                                    " cannot be stored in place in " + x.str() +
                                    ". Fix: use the out-of-place form, or convert first");
}

// self op= other. With history to record, self takes the recorded out-of-place result
// (assign_recorded); otherwise the result is written into self's storage (self's shape and
// dtype). Returns self, the same object.
py::object inplace(const char* op, py::object self, py::handle other) {
  if (!is_operand(other)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
  const V& x = py::cast<const V&>(self);
  if (records_in_place(x, other)) {
    const V result = binary(op, self, other);
    check_fits(x, result, op);
    assign_recorded(self, result, op);
    return self;
  }
  ad::NoGradGuard no_grad;
  const V result = binary(op, self, other);
  check_fits(x, result, op);
  x.copy_(result);
  return self;
}

// fill_, zero_, uniform_, normal_, copy_: these keep self's shape and dtype by construction.
py::object overwrite(py::object self, const Tensor& values, const char* op) {
  const V& x = py::cast<const V&>(self);
  if (x.requires_grad() && ad::grad_enabled())
    throw ember::ValueError(op, "an in-place write to a tensor that requires grad (" + x.str() +
                                    "). Fix: write under ember.no_grad()");
  x.copy_(V(values));
  return self;
}

}  // namespace

bool records_in_place(const Variable& self, py::handle value) {
  if (!ad::grad_enabled()) return false;
  return self.requires_grad() ||
         (py::isinstance<V>(value) && py::cast<const V&>(value).requires_grad());
}

void assign_recorded(py::handle self, const Variable& result, const char* op) {
  V& x = py::cast<V&>(self);
  if (x.is_leaf() && x.requires_grad())
    throw ember::ValueError(op, "an in-place write to a leaf tensor that requires grad (" +
                                    x.str() +
                                    ", a parameter, say) would change the value its gradient is "
                                    "taken at, as in PyTorch. Fix: write under ember.no_grad() "
                                    "(as an optimizer step or an initialiser does), or into a "
                                    "copy: y = x.clone(), then write into y");
  x = result.dtype() == x.dtype() ? result : ad::to(result, x.dtype());
}

void bind_operators(TensorClass& cls) {
  struct Pair {
    const char *dunder, *reflected, *op;
  };
  for (Pair p : {Pair{"__add__", "__radd__", "add"}, Pair{"__sub__", "__rsub__", "sub"},
                 Pair{"__mul__", "__rmul__", "mul"}, Pair{"__truediv__", "__rtruediv__", "div"},
                 Pair{"__pow__", "__rpow__", "pow"}}) {
    const Binary* op = &binary_op(p.op);
    const char* name = p.op;
    cls.def(p.dunder, [op, name](py::handle a, py::handle b) { return apply(*op, name, a, b); });
    cls.def(p.reflected, [op, name](py::handle a, py::handle b) { return apply(*op, name, b, a); });
  }
  for (Pair p : {Pair{"__eq__", nullptr, "eq"}, Pair{"__ne__", nullptr, "ne"},
                 Pair{"__lt__", nullptr, "lt"}, Pair{"__le__", nullptr, "le"},
                 Pair{"__gt__", nullptr, "gt"}, Pair{"__ge__", nullptr, "ge"}}) {
    const Binary* op = &binary_op(p.op);
    const char* name = p.op;
    cls.def(p.dunder, [op, name](py::handle a, py::handle b) { return apply(*op, name, a, b); });
  }
  // & | ^ ~ are logical on bool tensors and bitwise on integer ones (a float is a DTypeError).
  struct Bitwise {
    const char *dunder, *reflected, *logical, *bitwise;
  };
  for (Bitwise p : {Bitwise{"__and__", "__rand__", "logical_and", "bitwise_and"},
                    Bitwise{"__or__", "__ror__", "logical_or", "bitwise_or"},
                    Bitwise{"__xor__", "__rxor__", "logical_xor", "bitwise_xor"}}) {
    auto pick = [p](py::handle self) {
      return py::cast<const V&>(self).dtype() == DType::Bool ? p.logical : p.bitwise;
    };
    cls.def(p.dunder, [pick](py::handle a, py::handle b) { return apply(pick(a), a, b); });
    cls.def(p.reflected, [pick](py::handle a, py::handle b) { return apply(pick(a), b, a); });
  }
  cls.def("__invert__", [](const V& x) {
    if (x.dtype() == DType::Bool) return ad::logical_not(x);
    return V(ember::bitwise_not(x.data()));  // no gradient: integers only
  });
  cls.def("__neg__", [](const V& x) { return ad::neg(x); });
  cls.def("__pos__", [](const V& x) { return x; });
  cls.def("__abs__", [](const V& x) { return ad::abs(x); });
  cls.def("__matmul__", [](const V& a, const V& b) { return ad::matmul(a, b); });
  cls.def("__rmatmul__", [](const V& b, py::handle a) {
    return ad::matmul(to_variable(a, std::nullopt, b.device()), b);
  });
  // Python's // and %: floor division, and a remainder with the divisor's sign.
  for (Pair p : {Pair{"__floordiv__", "__rfloordiv__", "floor_divide"},
                 Pair{"__mod__", "__rmod__", "remainder"}}) {
    const char* op = p.op;
    cls.def(p.dunder, [op](py::handle a, py::handle b) { return apply(op, a, b); });
    cls.def(p.reflected, [op](py::handle a, py::handle b) { return apply(op, b, a); });
  }

  // ---- in place ----
  for (Pair p : {Pair{"__iadd__", "add_", "add"}, Pair{"__isub__", "sub_", "sub"},
                 Pair{"__imul__", "mul_", "mul"}, Pair{"__itruediv__", "div_", "div"},
                 Pair{"__ipow__", "pow_", "pow"}}) {
    const char* op = p.op;
    cls.def(p.dunder, [op](py::object self, py::handle o) { return inplace(op, self, o); });
    cls.def(
        p.reflected, [op](py::object self, py::handle o) { return inplace(op, self, o); },
        py::arg("other"), "In place: self = self op other; returns self.");
  }
  for (Pair p :
       {Pair{"__ifloordiv__", nullptr, "floor_divide"}, Pair{"__imod__", nullptr, "remainder"}}) {
    const char* op = p.op;
    cls.def(p.dunder, [op](py::object self, py::handle o) { return inplace(op, self, o); });
  }
  cls.def(
      "clamp_",
      [](py::object self, std::optional<double> lo, std::optional<double> hi) {
        const V& x = py::cast<const V&>(self);
        return overwrite(self, ad::clamp(x.detach(), lo, hi).data(), "clamp_");
      },
      py::arg("min") = py::none(), py::arg("max") = py::none(), "Clamps in place.");
  cls.def(
      "fill_",
      [](py::object self, double value) {
        const V& x = py::cast<const V&>(self);
        // One value, broadcast by the write: a compiled step takes it as a constant.
        Tensor t = Tensor::empty({}, x.dtype(), x.device());
        return overwrite(self, t.fill_(value), "fill_");
      },
      py::arg("value"), "Sets every element to value; returns self.");
  cls.def(
      "zero_",
      [](py::object self) {
        const V& x = py::cast<const V&>(self);
        Tensor t = Tensor::empty({}, x.dtype(), x.device());
        return overwrite(self, t.zero_(), "zero_");
      },
      "Sets every element to 0; returns self.");
  cls.def(
      "copy_",
      [](py::object self, py::handle src) {
        const V& x = py::cast<const V&>(self);
        const Tensor s = to_variable(src, std::nullopt, x.device()).data();
        if (ad::compile::tracing()) return overwrite(self, s, "copy_");  // a node reading src
        Tensor t = Tensor::empty(x.shape(), x.dtype(), x.device());
        return overwrite(self, t.copy_(s), "copy_");
      },
      py::arg("src"), "Copies src (broadcast, cast, from any device) into self; returns self.");
  cls.def(
      "uniform_",
      [](py::object self, double low, double high, py::handle generator) {
        const V& x = py::cast<const V&>(self);
        Generator* gen = generator_from_object(generator, "uniform_");
        return overwrite(self, ember::uniform(x.shape(), low, high, x.dtype(), x.device(), gen),
                         "uniform_");
      },
      py::arg("a") = 0.0, py::arg("b") = 1.0, py::kw_only(), py::arg("generator") = py::none(),
      "Fills with uniform values on [a, b) (from generator when given); returns self.");
  cls.def(
      "normal_",
      [](py::object self, double mean, double std, py::handle generator) {
        const V& x = py::cast<const V&>(self);
        Generator* gen = generator_from_object(generator, "normal_");
        return overwrite(self, ember::normal(x.shape(), mean, std, x.dtype(), x.device(), gen),
                         "normal_");
      },
      py::arg("mean") = 0.0, py::arg("std") = 1.0, py::kw_only(), py::arg("generator") = py::none(),
      "Fills with normal values (from generator when given); returns self.");
}

}  // namespace ember::python
