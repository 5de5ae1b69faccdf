// def_op.h — binds one op twice, as ember.<name>(input, ...) and as the method input.<name>(...),
// with the same docstring and keyword names: each op has one binding line.
#pragma once
#include "bindings.h"

namespace ember::python {

template <class F, class... Extra>
void def_op(py::module_& m, TensorClass& cls, const char* name, F&& f, const char* doc,
            const Extra&... extra) {
  m.def(name, f, doc, py::arg("input"), extra...);
  cls.def(name, std::forward<F>(f), doc, extra...);
}

// One binary op: its tensor-tensor form, and its forms with a scalar on the right or left (null
// where the op has none: the scalar then becomes a 0-d tensor).
struct Binary {
  Variable (*tt)(const Variable&, const Variable&);
  Variable (*ts)(const Variable&, double);
  Variable (*st)(double, const Variable&);
  bool arithmetic;  // a Python float makes an integer tensor floating (as in PyTorch)
};

// A binary op of tensors and Python/NumPy scalars on either side (bind_ops.cpp): the ops of
// core-runtime's ember/ops/binary.def. By name, or by the op that
// binary_op found once, when the caller was bound (no lookup per call).
const Binary& binary_op(const std::string& name);
Variable binary(const Binary& op, const char* name, py::handle a, py::handle b);
Variable binary(const std::string& name, py::handle a, py::handle b);
// Whether a binary op can take `obj` as an operand (else an operator returns NotImplemented).
bool is_operand(py::handle obj);

// In-place writes (x += y, x[idx] = v, x.index_put_) with history to record: grad mode is on and
// self or the value written requires grad. Such a write is computed out of place, recorded, and
// assign_recorded makes the Tensor object `self` hold the result, with its history and its own
// storage (views taken of the old storage keep the old values). A leaf that requires grad is a
// ValueError naming `op`, as in PyTorch.
bool records_in_place(const Variable& self, py::handle value);
void assign_recorded(py::handle self, const Variable& result, const char* op);

// (values, indices), a namedtuple as PyTorch's max(dim) returns.
py::object values_indices(const Variable& values, const Variable& indices);

}  // namespace ember::python
