// bind_errors.cpp — each C++ error type of error.h becomes its own Python exception class, a
// subclass of ember.EmberError (a RuntimeError) and of the built-in exception that Python code
// expects (ValueError, TypeError, IndexError, MemoryError, NotImplementedError), message intact.
#include <ember/error.h>

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

  // The most derived C++ types are caught first.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ember::ShapeError& e) {
      PyErr_SetString(shape, e.what());
    } catch (const ember::DTypeError& e) {
      PyErr_SetString(dtype, e.what());
    } catch (const ember::DeviceError& e) {
      PyErr_SetString(device, e.what());
    } catch (const ember::IndexError& e) {
      PyErr_SetString(index, e.what());
    } catch (const ember::OutOfMemoryError& e) {
      PyErr_SetString(oom, e.what());
    } catch (const ember::NotSupportedError& e) {
      PyErr_SetString(unsupported, e.what());
    } catch (const ember::ValueError& e) {
      PyErr_SetString(value, e.what());
    } catch (const ember::Error& e) {
      PyErr_SetString(base, e.what());
    }
  });
}

}  // namespace ember::python
