// bind_argument_errors.cpp — one more overload for every function of ember._core and every op
// method of Tensor, tried last: where no real overload takes the arguments, it raises ember's
// ArgumentTypeError (ember/_arguments.py: the function, each argument's type and shape, the
// signature, the fix) in place of pybind11's "incompatible function arguments", which prints the
// repr of every argument (a model's weights, a whole NumPy array).
//
// Why it costs nothing on a good call: pybind11 tries every overload first without implicit
// conversions, then again with them. The extra overload's first argument (an Unmatched, given a
// default so that a call with no positional argument reaches it too) refuses to load without
// conversions, so the extra overload only runs in the second pass, after every real overload.
#include "bindings.h"

namespace {

// Any Python object, loadable only when conversions are allowed (the second pass).
struct Unmatched {
  py::object value;
};

}  // namespace

namespace pybind11::detail {
template <> struct type_caster<Unmatched> {
  PYBIND11_TYPE_CASTER(Unmatched, const_name("object"));
  bool load(handle src, bool convert) {
    if (!convert) return false;
    value.value = reinterpret_borrow<object>(src);
    return true;
  }
};
}  // namespace pybind11::detail

namespace ember::python {

namespace {

// The arguments of the call as given: `first` is the default marker when none was.
py::tuple given(const py::object& first, const py::args& rest, py::handle none_given,
                py::handle self = py::handle()) {
  py::list all;
  if (self) all.append(self);
  if (!first.is(none_given)) all.append(first);
  for (py::handle a : rest) all.append(a);
  return py::tuple(all);
}

[[noreturn]] void explain(const std::string& name, py::handle fn, const py::tuple& args,
                          const py::kwargs& kwargs) {
  py::module_::import("ember._arguments").attr("raise_explained")(name, fn, args, kwargs);
  throw std::logic_error("raise_explained returned");  // it always raises
}

// Whether the first signature of fn's docstring takes *args right after the name's '(' (or after
// self): pybind11 then gives a second pass only to calls whose positional parameters convert, so
// an extra overload would stop keyword arguments from converting (ones(3, dtype="float32")).
// Such functions take any positional argument anyway.
bool takes_star_args(const std::string& name, py::handle fn) {
  const std::string doc = py::str(fn.attr("__doc__"));
  const size_t at = doc.find(name + "(");
  if (at == std::string::npos) return true;
  std::string rest = doc.substr(at + name.size() + 1);
  const std::string self = "self: ember._core.Tensor, ";
  if (rest.rfind(self, 0) == 0) rest = rest.substr(self.size());
  return rest.rfind("*", 0) == 0;
}

}  // namespace

void bind_argument_errors(py::module_& m, TensorClass& cls) {
  // the default of the Unmatched argument: "no positional argument was given"
  static py::handle none_given = py::module_::import("builtins").attr("object")().release();
  std::vector<std::pair<std::string, py::object>> functions, methods;
  for (auto [key, value] : py::dict(m.attr("__dict__"))) {
    const std::string name = py::str(key);
    if (name[0] != '_' && PyCFunction_Check(value.ptr()) && !takes_star_args(name, value))
      functions.emplace_back(name, py::reinterpret_borrow<py::object>(value));
  }
  // the class's __dict__ is a mappingproxy: iterate a dict copy of it
  for (auto [key, value] : py::dict(cls.attr("__dict__"))) {
    const std::string name = py::str(key);
    if (name[0] != '_' && PyInstanceMethod_Check(value.ptr()) && !takes_star_args(name, value))
      methods.emplace_back(name, py::reinterpret_borrow<py::object>(value));
  }
  for (const auto& [name, fn] : functions) {
    m.def(
        name.c_str(),
        [name = "ember." + name, fn = fn.ptr()](const Unmatched& first, const py::args& rest,
                                                const py::kwargs& kwargs) {
          explain(name, fn, given(first.value, rest, none_given), kwargs);
        },
        py::arg("arguments") = py::reinterpret_borrow<py::object>(none_given),
        "(any other arguments: an ember.ArgumentTypeError says what is wrong)");
  }
  for (const auto& [name, method] : methods) {
    cls.def(
        name.c_str(),
        [name = "Tensor." + name,
         fn = PyInstanceMethod_GET_FUNCTION(method.ptr())](py::object self, const Unmatched& first,
                                                           const py::args& rest,
                                                           const py::kwargs& kwargs) {
          explain(name, fn, given(first.value, rest, none_given, self), kwargs);
        },
        py::arg("arguments") = py::reinterpret_borrow<py::object>(none_given),
        "(any other arguments: an ember.ArgumentTypeError says what is wrong)");
  }
}

}  // namespace ember::python
