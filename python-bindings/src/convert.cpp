// convert.cpp — Python arguments to C++ values: dtypes, devices, shapes, dims, scalars, and the
// tensor a nested list, scalar or NumPy array holds (ember.tensor).
#include <ember/autodiff/compile/trace.h>
#include <ember/dtype.h>
#include <ember/error.h>

#include "bindings.h"

namespace ember::python {

namespace {

std::string type_name(py::handle obj) { return py::str(py::type::handle_of(obj).attr("__name__")); }

bool is_sequence(py::handle obj) {
  return !PyUnicode_Check(obj.ptr()) && !PyBytes_Check(obj.ptr()) && PySequence_Check(obj.ptr());
}

// A NumPy scalar (numpy.float32(1), numpy.bool_(True)): not a sequence, has dtype and item().
bool is_numpy_scalar(py::handle obj) {
  return !is_sequence(obj) && py::hasattr(obj, "dtype") && py::hasattr(obj, "item");
}

int64_t int_from(py::handle obj, const char* op, const char* what) {
  if (PyBool_Check(obj.ptr()) || !PyIndex_Check(obj.ptr()))
    throw ember::DTypeError(op, std::string(what) + " must be ints, got " + type_name(obj) + " " +
                                    std::string(py::repr(obj)));
  return py::cast<int64_t>(py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr())));
}

// The values and shape of a nested sequence of scalars, and the widest kind of value seen.
struct Nested {
  Shape shape;
  std::vector<double> values;
  int kind = -1;          // 0 bool, 1 int, 2 float (-1: no value seen yet)
  size_t leaf_depth = 0;  // the depth of the values; every value must sit at it
  bool leaf_seen = false;
  Shape at;  // the position being walked: data[at[0]][at[1]]...
};

// "[1][0]": where in the nested data an element sits.
std::string position(const Shape& at) {
  std::string s;
  for (int64_t i : at) s += "[" + std::to_string(i) + "]";
  return s.empty() ? "the top level" : "data" + s;
}

[[noreturn]] void ragged(const Nested& n, const std::string& why) {
  throw ember::ValueError("tensor", "the nested sequence is ragged: " + why +
                                        " (the shape so far is " + shape_str(n.shape) +
                                        "). Fix: every row of a dim needs the same length; pad "
                                        "the short rows or build one tensor per row");
}

void walk(py::handle obj, size_t depth, Nested& n) {
  if (is_numpy_scalar(obj)) return walk(obj.attr("item")(), depth, n);
  if (is_scalar(obj)) {
    if (!n.leaf_seen) n.leaf_depth = depth, n.leaf_seen = true;
    if (depth != n.leaf_depth)
      ragged(n, position(n.at) + " is a number where its neighbours are sequences");
    const int kind = PyBool_Check(obj.ptr()) ? 0 : is_python_float(obj) ? 2 : 1;
    n.kind = std::max(n.kind, kind);
    n.values.push_back(scalar_value(obj));
    return;
  }
  if (is_tensor(obj)) {
    const Tensor& t = tensor_of(obj).data();
    if (t.dim() == 0) {
      const DType d = t.dtype();
      py::object value = d == DType::Bool ? py::cast(t.item<bool>())
                         : is_floating(d) ? py::cast(t.item<double>())
                                          : py::cast(t.item<int64_t>());
      return walk(value, depth, n);
    }
    py::list rows;
    for (int64_t i = 0; i < t.size(0); ++i) rows.append(py::cast(Variable(t.select(0, i))));
    return walk(rows, depth, n);
  }
  if (!is_sequence(obj))
    throw ember::DTypeError("tensor", "cannot make a tensor of a " + type_name(obj) +
                                          "; expected numbers, (nested) lists or tuples of "
                                          "numbers, a NumPy array or a Tensor");
  if (n.leaf_seen && depth >= n.leaf_depth)
    ragged(n, position(n.at) + " is a sequence where its neighbours are numbers");
  const int64_t len = int64_t(py::len(obj));
  if (n.shape.size() == depth) n.shape.push_back(len);
  else if (n.shape[depth] != len)
    ragged(n, position(n.at) + " has length " + std::to_string(len) + " where the rows before it " +
                  "have length " + std::to_string(n.shape[depth]));
  n.at.push_back(0);
  for (py::handle item : py::iter(obj)) {
    walk(item, depth + 1, n);
    ++n.at.back();
  }
  n.at.pop_back();
  if (len == 0 && !n.leaf_seen) n.leaf_depth = depth + 1, n.leaf_seen = true;
}

}  // namespace

namespace {
PyTypeObject* tensor_type = nullptr;
const py::detail::type_info* tensor_info = nullptr;
}  // namespace

void register_tensor_class(const TensorClass& cls) {
  tensor_type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  tensor_info = py::detail::get_type_info(typeid(Variable));
}

bool is_tensor(py::handle obj) { return PyObject_TypeCheck(obj.ptr(), tensor_type); }

const Variable& tensor_of(py::handle obj) {
  auto* instance = reinterpret_cast<py::detail::instance*>(obj.ptr());
  return *instance->get_value_and_holder(tensor_info).value_ptr<Variable>();
}

DType dtype_from_object(py::handle obj) {
  if (py::isinstance<PyDType>(obj)) return py::cast<PyDType>(obj).value;
  if (PyUnicode_Check(obj.ptr())) return dtype_from_name(py::cast<std::string>(obj));
  if (obj.ptr() == reinterpret_cast<PyObject*>(&PyFloat_Type)) return DType::Float64;
  if (obj.ptr() == reinterpret_cast<PyObject*>(&PyLong_Type)) return DType::Int64;
  if (obj.ptr() == reinterpret_cast<PyObject*>(&PyBool_Type)) return DType::Bool;
  py::dict modules = py::module_::import("sys").attr("modules");
  if (modules.contains("numpy")) {
    try {
      std::string name = py::str(modules["numpy"].attr("dtype")(obj).attr("name"));
      return dtype_from_name(name);
    } catch (const py::error_already_set&) {
    } catch (const ember::ValueError&) {
    }
  }
  throw ember::DTypeError("dtype",
                          "expected an ember dtype (ember.float32, ...), a name such as "
                          "'float32' or a NumPy dtype, got " +
                              type_name(obj) + " " + std::string(py::repr(obj)));
}

Device device_from_object(py::handle obj) {
  if (py::isinstance<PyDevice>(obj)) return py::cast<PyDevice>(obj).value;
  if (PyUnicode_Check(obj.ptr())) return Device(py::cast<std::string>(obj));
  if (PyLong_Check(obj.ptr())) return Device(DeviceType::CUDA, py::cast<int>(obj));
  throw ember::ValueError("device",
                          "expected an ember.device, a name such as 'cpu' or "
                          "'cuda:0', or a GPU index, got " +
                              type_name(obj) + " " + std::string(py::repr(obj)));
}

Shape shape_from_args(const py::args& args, const char* op) {
  py::handle sizes = args;
  if (args.size() == 1 && is_sequence(args[0])) sizes = args[0];
  Shape shape;
  for (py::handle s : sizes) shape.push_back(int_from(s, op, "sizes"));
  return shape;
}

std::vector<int64_t> dims_from_object(py::handle obj) {
  if (obj.is_none()) return {};
  if (!is_sequence(obj)) return {int_from(obj, "dim", "dims")};
  std::vector<int64_t> dims;
  for (py::handle d : obj) dims.push_back(int_from(d, "dim", "dims"));
  return dims;
}

bool is_scalar(py::handle obj) {
  PyObject* p = obj.ptr();
  if (PyBool_Check(p) || PyLong_Check(p) || PyFloat_Check(p)) return true;
  if (is_tensor(obj) || is_sequence(obj)) return false;
  return PyIndex_Check(p) || py::hasattr(obj, "__float__");
}

bool is_python_float(py::handle obj) {
  return !PyBool_Check(obj.ptr()) && !PyLong_Check(obj.ptr()) && !PyIndex_Check(obj.ptr());
}

double scalar_value(py::handle obj) {
  if (PyBool_Check(obj.ptr())) return obj.ptr() == Py_True ? 1.0 : 0.0;
  if (PyIndex_Check(obj.ptr())) {
    py::object i = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
    const double v = PyLong_AsDouble(i.ptr());
    if (PyErr_Occurred()) throw py::error_already_set();
    return v;
  }
  const double v = PyFloat_AsDouble(obj.ptr());
  if (PyErr_Occurred()) throw py::error_already_set();
  return v;
}

Tensor tensor_from_data(py::handle data, std::optional<DType> dtype, Device device) {
  // A Python number is a constant of the step; anything longer may differ from call to call.
  if (!is_scalar(data))
    check_capturable("tensor",
                     "a tensor made from Python data (a list, an array, a copy of a "
                     "tensor) inside the step, whose values would be fixed into the compiled "
                     "step,",
                     "make it outside the step and pass it as an argument (for a copy of a "
                     "tensor: x.clone())");
  if (is_tensor(data)) {
    const Tensor& t = tensor_of(data).data();
    return t.to(device, dtype.value_or(t.dtype())).clone();
  }
  if (is_sequence(data) && py::hasattr(data, "__array_interface__")) {
    // A NumPy array: copied through the buffer protocol, keeping its dtype. An object array
    // (ragged rows, or Python objects) has no numbers to copy.
    if (py::str(data.attr("dtype").attr("kind")).cast<std::string>() == "O")
      throw ember::DTypeError(
          "tensor", "the NumPy array is of dtype object, shape " +
                        std::string(py::str(data.attr("shape"))) +
                        ": it holds Python objects (often rows of different lengths), not "
                        "numbers. Fix: make every row the same length and convert it with "
                        "a.astype(numpy.float32), or pass a list of numbers");
    py::object contiguous =
        py::module_::import("numpy").attr("asarray")(data, py::arg("order") = "C");
    const Tensor t = tensor_from_numpy(contiguous);
    return t.to(device, dtype.value_or(t.dtype())).clone();
  }
  Nested n;
  walk(data, 0, n);
  const DType inferred = n.kind == 0 ? DType::Bool : n.kind == 1 ? DType::Int64 : DType::Float32;
  Tensor t = Tensor::from_vector(n.values, n.shape);
  return t.to(device, dtype.value_or(inferred));
}

void check_capturable(const char* op, const std::string& what, const std::string& fix) {
  autodiff::compile::check_capturable(op, what, fix);
}

void check_host_read(const char* op, const std::string& what) {
  check_capturable(op, what + " reads its values on the host",
                   "return the tensor from the step and read it after the call");
}

Variable to_variable(py::handle obj, std::optional<DType> dtype, Device device) {
  if (is_tensor(obj)) return tensor_of(obj);
  return Variable(tensor_from_data(obj, dtype, device));
}

void not_a_tensor(const char* op, py::handle obj) {
  throw ember::DTypeError(op, "expected a Tensor, got " + type_name(obj) + " " +
                                  std::string(py::repr(obj)));
}

}  // namespace ember::python
