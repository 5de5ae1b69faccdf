// bind_errors.cpp — each C++ error type of error.h becomes its own Python exception class, a
// subclass of ember.EmberError (a RuntimeError) and of the built-in exception that Python code
// expects (ValueError, TypeError, IndexError, MemoryError, NotImplementedError). The message
// keeps its content; the C++ spellings in its advice become the Python ones (python_terms).
#include <ember/autodiff/compile/trace.h>
#include <ember/error.h>

#include <cctype>
#include <regex>
#include <string>

#include "bindings.h"

namespace ember::python {

namespace {

// Classes are made once and live as long as the interpreter (the module holds a reference).
PyObject* new_exception(py::module_& m, const char* name, std::vector<PyObject*> bases,
                        const char* doc) {
  py::tuple base_tuple(bases.size());
  for (size_t i = 0; i < bases.size(); ++i)
    base_tuple[i] = py::reinterpret_borrow<py::object>(bases[i]);
  const std::string qualified = std::string("ember.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base_tuple.ptr(), nullptr);
  if (!cls) throw py::error_already_set();
  m.attr(name) = py::reinterpret_borrow<py::object>(cls);
  return cls;
}

// The C++ spellings that core-runtime's and autodiff-engine's messages use in their advice, and
// what a Python user writes instead:
//   .to(DType::Int64) / to(x, DType::Int64) -> .to(ember.int64) / x.to(ember.int64)
//   retain_graph=true, requires_grad=false  -> retain_graph=True, requires_grad=False
//   NoGradGuard                             -> ember.no_grad()
//   a Variable                              -> a tensor
std::string python_terms(std::string text) {
  static const std::regex free_to(R"(\bto\((\w+), DType::(\w+)\))");
  text = std::regex_replace(text, free_to, "$1.to(DType::$2)");
  static const std::regex dtype(R"(\bDType::(\w+))");
  std::string out;
  auto last = text.cbegin();
  for (std::sregex_iterator it(text.begin(), text.end(), dtype), end; it != end; ++it) {
    out.append(last, (*it)[0].first);
    std::string name = (*it)[1].str();
    for (char& c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
    out += "ember." + name;
    last = (*it)[0].second;
  }
  out.append(last, text.cend());
  static const std::regex true_arg(R"((\w=)true\b)"), false_arg(R"((\w=)false\b)");
  static const std::regex guard(R"(\bNoGradGuard\b)"), variable(R"(\bVariable(s?)\b)");
  out = std::regex_replace(out, true_arg, "$1True");
  out = std::regex_replace(out, false_arg, "$1False");
  out = std::regex_replace(out, guard, "ember.no_grad()");
  return std::regex_replace(out, variable, "tensor$1");
}

void set_error(PyObject* cls, const std::exception& e) {
  PyErr_SetString(cls, python_terms(e.what()).c_str());
}

}  // namespace

void bind_errors(py::module_& m) {
  static PyObject* base =
      new_exception(m, "EmberError", {PyExc_RuntimeError}, "The base of every Ember error.");
  static PyObject* shape = new_exception(m, "ShapeError", {base, PyExc_ValueError},
                                         "Incompatible shapes (a ValueError).");
  static PyObject* dtype = new_exception(m, "DTypeError", {base, PyExc_TypeError},
                                         "A wrong or unsupported dtype (a TypeError).");
  static PyObject* device = new_exception(m, "DeviceError", {base},
                                          "Mixed or unavailable devices, or a failed CUDA call.");
  static PyObject* index = new_exception(m, "IndexError", {base, PyExc_IndexError},
                                         "An index or dim out of range (an IndexError).");
  static PyObject* oom = new_exception(m, "OutOfMemoryError", {base, PyExc_MemoryError},
                                       "The allocator's cap was reached or the device is full.");
  static PyObject* unsupported =
      new_exception(m, "NotSupportedError", {base, PyExc_NotImplementedError},
                    "A valid request that is not implemented (for this device).");
  static PyObject* value = new_exception(m, "ValueError", {base, PyExc_ValueError},
                                         "A bad argument value (a ValueError).");
  static PyObject* capture =
      new_exception(m, "CaptureError", {unsupported},
                    "Something a compiled step cannot capture (a NotSupportedError).");

  // The most derived C++ types are caught first.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ember::ShapeError& e) {
      set_error(shape, e);
    } catch (const ember::DTypeError& e) {
      set_error(dtype, e);
    } catch (const ember::DeviceError& e) {
      set_error(device, e);
    } catch (const ember::IndexError& e) {
      set_error(index, e);
    } catch (const ember::OutOfMemoryError& e) {
      set_error(oom, e);
    } catch (const ember::autodiff::compile::CaptureError& e) {
      set_error(capture, e);
    } catch (const ember::NotSupportedError& e) {
      set_error(unsupported, e);
    } catch (const ember::ValueError& e) {
      set_error(value, e);
    } catch (const ember::Error& e) {
      set_error(base, e);
    }
  });
}

}  // namespace ember::python
