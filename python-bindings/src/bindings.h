// bindings.h — what the binding files share: the Tensor class (an eager autodiff Variable), the
// conversions of Python arguments (dtypes, devices, shapes, dims, scalars) and one bind function
// per area, called in order by _core.cpp.
#pragma once
#include <ember/autodiff/variable.h>
#include <ember/tensor.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

namespace py = pybind11;

namespace ember::python {

using autodiff::Variable;
using TensorClass = py::class_<Variable>;

// The Python objects ember.dtype and ember.device: small wrappers, so that DType and Device
// arguments can also be given as strings ("float32", "cuda:0") or NumPy dtypes.
struct PyDType {
  DType value;
};
struct PyDevice {
  Device value;
};

// ember.float32, "float32", numpy.float32, numpy.dtype("float32"), Python's float/int/bool.
// Anything else is a DTypeError.
DType dtype_from_object(py::handle obj);
// ember.device, "cpu", "cuda", "cuda:1". Anything else is a ValueError.
Device device_from_object(py::handle obj);

// Sizes given as f(2, 3) or f((2, 3)) or f([2, 3]).
Shape shape_from_args(const py::args& args, const char* op);
// A dim argument: None (every dim: {}), an int, or a tuple/list of ints.
std::vector<int64_t> dims_from_object(py::handle obj);

// Python numbers and NumPy scalars (what ops accept beside a tensor): bool, int, float, anything
// with __index__ or __float__ that is not a sequence.
bool is_scalar(py::handle obj);
bool is_python_float(py::handle obj);  // a float, not an int: int tensors then become float
double scalar_value(py::handle obj);

// An ember.Tensor as is; a list, scalar or NumPy array as a new tensor on `device`.
Variable to_variable(py::handle obj, std::optional<DType> dtype = std::nullopt,
                     Device device = Device());
// The tensor a nested list, scalar, NumPy array or Tensor holds, copied (ember.tensor).
Tensor tensor_from_data(py::handle data, std::optional<DType> dtype, Device device);

// A CPU tensor sharing the memory of a NumPy array (or any buffer), which it keeps alive.
Tensor tensor_from_numpy(py::handle array);

// repr(tensor), as PyTorch prints it (format.cpp).
std::string tensor_repr(const Variable& v);

// Whether obj is an ember.Tensor (or of a subclass, such as nn.Parameter), and the Variable it
// holds. py::isinstance<Variable> and py::cast look the class up by its C++ type on every call,
// which at one element is a good part of an operator's time; these compare with the class
// recorded once by register_tensor_class.
void register_tensor_class(const TensorClass& cls);
bool is_tensor(py::handle obj);
const Variable& tensor_of(py::handle obj);  // obj must be a tensor (is_tensor)

// While a compiled step is traced (ember.compile): a CaptureError saying that `what` (done by
// `op`) cannot be captured, and the fix. Does nothing otherwise.
void check_capturable(const char* op, const std::string& what, const std::string& fix);
// The same for a read of a tensor's values on the host (.item(), printing, bool(), ...).
void check_host_read(const char* op, const std::string& what);

// Raises the ember error for a tensor argument of the wrong type.
[[noreturn]] void not_a_tensor(const char* op, py::handle obj);

void bind_errors(py::module_& m);
void bind_dtypes(py::module_& m);
void bind_tensor(py::module_& m, TensorClass& cls);
void bind_creation(py::module_& m);
void bind_ops(py::module_& m, TensorClass& cls);
void bind_movement(py::module_& m, TensorClass& cls);
void bind_rearrange(py::module_& m, TensorClass& cls);
void bind_nn_ops(py::module_& m, TensorClass& cls);
void bind_operators(TensorClass& cls);
void bind_indexing(py::module_& m, TensorClass& cls);
void bind_autograd(py::module_& m, TensorClass& cls);
void bind_interop(py::module_& m, TensorClass& cls);
void bind_memory(py::module_& m);
void bind_optim(py::module_& m);
void bind_compile(py::module_& m);
void bind_amp(py::module_& m);
// Last: explains calls that no overload takes (bind_argument_errors.cpp).
void bind_argument_errors(py::module_& m, TensorClass& cls);

}  // namespace ember::python

// DType and Device arguments and results convert through the wrappers above.
namespace pybind11::detail {
template <> struct type_caster<ember::DType> {
  PYBIND11_TYPE_CASTER(ember::DType, const_name("ember.dtype"));
  bool load(handle src, bool convert) {
    if (!convert && !isinstance<ember::python::PyDType>(src)) return false;
    value = ember::python::dtype_from_object(src);
    return true;
  }
  static handle cast(ember::DType d, return_value_policy, handle) {
    return pybind11::cast(ember::python::PyDType{d}).release();
  }
};
template <> struct type_caster<ember::Device> {
  PYBIND11_TYPE_CASTER(ember::Device, const_name("ember.device"));
  bool load(handle src, bool convert) {
    if (!convert && !isinstance<ember::python::PyDevice>(src)) return false;
    value = ember::python::device_from_object(src);
    return true;
  }
  static handle cast(ember::Device d, return_value_policy, handle) {
    return pybind11::cast(ember::python::PyDevice{d}).release();
  }
};
}  // namespace pybind11::detail
