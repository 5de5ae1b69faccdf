// bind_dtypes.cpp — ember.dtype (ember.float32, ...) and ember.device ("cpu", "cuda:0").
#include <ember/dtype.h>

#include "bindings.h"

namespace ember::python {

namespace {

// Equality with anything that names a dtype or device; false for anything that names none.
template <class T, class From> bool equals(const T& self, py::handle other, From from) {
  try {
    return from(other) == self.value;
  } catch (const std::exception&) {
    PyErr_Clear();
    return false;
  }
}

}  // namespace

void bind_dtypes(py::module_& m) {
  py::class_<PyDType>(m, "dtype", "An element type: ember.float32, ember.int64, ...")
      .def(py::init([](py::handle obj) { return PyDType{dtype_from_object(obj)}; }),
           py::arg("dtype"), "The dtype a name ('float32'), NumPy dtype or ember.dtype names.")
      .def_property_readonly("name", [](const PyDType& d) { return dtype_name(d.value); })
      .def_property_readonly(
          "itemsize", [](const PyDType& d) { return itemsize(d.value); }, "Bytes per element.")
      .def_property_readonly("is_floating_point",
                             [](const PyDType& d) { return is_floating(d.value); })
      .def("__repr__", [](const PyDType& d) { return std::string("ember.") + dtype_name(d.value); })
      .def("__str__", [](const PyDType& d) { return std::string("ember.") + dtype_name(d.value); })
      .def("__eq__", [](const PyDType& d, py::handle o) { return equals(d, o, dtype_from_object); })
      .def("__hash__", [](const PyDType& d) { return int(d.value); })
      .def(py::pickle([](const PyDType& d) { return std::string(dtype_name(d.value)); },
                      [](const std::string& name) { return PyDType{dtype_from_name(name)}; }));

  const std::pair<const char*, DType> names[] = {
      {"bool", DType::Bool},       {"uint8", DType::UInt8},   {"int8", DType::Int8},
      {"int16", DType::Int16},     {"short", DType::Int16},   {"int32", DType::Int32},
      {"int", DType::Int32},       {"int64", DType::Int64},   {"long", DType::Int64},
      {"float16", DType::Float16}, {"half", DType::Float16},  {"bfloat16", DType::BFloat16},
      {"float32", DType::Float32}, {"float", DType::Float32}, {"float64", DType::Float64},
      {"double", DType::Float64}};
  for (const auto& [name, dtype] : names) m.attr(name) = PyDType{dtype};

  py::class_<PyDevice>(m, "device", "Where a tensor lives: ember.device('cpu'), ('cuda:0').")
      .def(py::init([](py::handle spec) { return PyDevice{device_from_object(spec)}; }),
           py::arg("spec"))
      .def(py::init([](const std::string& type, int index) {
             return PyDevice{Device(type + ":" + std::to_string(index))};
           }),
           py::arg("type"), py::arg("index"))
      .def_property_readonly("type",
                             [](const PyDevice& d) { return d.value.is_cpu() ? "cpu" : "cuda"; })
      .def_property_readonly("index", [](const PyDevice& d) { return d.value.index; })
      .def("__str__", [](const PyDevice& d) { return d.value.str(); })
      .def("__repr__", [](const PyDevice& d) { return "device('" + d.value.str() + "')"; })
      .def("__eq__",
           [](const PyDevice& d, py::handle o) { return equals(d, o, device_from_object); })
      .def("__hash__", [](const PyDevice& d) { return int(d.value.type) * 1024 + d.value.index; })
      .def(py::pickle([](const PyDevice& d) { return d.value.str(); },
                      [](const std::string& s) { return PyDevice{Device(s)}; }));
}

}  // namespace ember::python
