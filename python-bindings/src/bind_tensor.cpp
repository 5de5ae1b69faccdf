// bind_tensor.cpp — the ember.Tensor class: an eager autodiff Variable, so that every tensor can
// carry requires_grad and grad. Here: construction, attributes, conversions and printing. Ops,
// operators, indexing, autograd and interop add their methods in their own files.
#include <ember/autodiff/ops.h>
#include <ember/error.h>

#include "bindings.h"

namespace ember::python {

namespace {

py::tuple shape_tuple(const std::vector<int64_t>& sizes) {
  py::tuple t(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) t[i] = sizes[i];
  return t;
}

void require_one_element(const Tensor& t, const char* op) {
  if (t.numel() != 1)
    throw ember::ValueError(op, "only a tensor of one element converts to a Python number, not " +
                                    t.str() + ". Fix: index or reduce it first");
}

py::object item(const Tensor& t, const char* op = "item") {
  check_host_read(op, "." + std::string(op) + "()");
  require_one_element(t, "item");
  if (t.dtype() == DType::Bool) return py::bool_(t.item<bool>());
  if (is_floating(t.dtype())) return py::float_(t.item<double>());
  return py::int_(t.item<int64_t>());
}

py::object tolist(const Tensor& t) {
  if (t.dim() == 0) return item(t, "tolist");
  check_host_read("tolist", ".tolist()");
  py::list out;
  for (int64_t i = 0; i < t.size(0); ++i) out.append(tolist(t.select(0, i)));
  return std::move(out);
}

// .to(device), .to(dtype), .to(device, dtype), .to(other), with dtype=/device= keywords too.
// non_blocking: a copy from pinned memory to a GPU is queued without the host waiting
// (core-runtime's Tensor::to); a copy with history to record is the recorded op, which waits.
Variable to(const Variable& x, const py::args& args, std::optional<DType> dtype,
            std::optional<Device> device, bool non_blocking) {
  for (py::handle a : args) {
    if (is_tensor(a)) {
      const Variable& other = tensor_of(a);
      dtype = other.dtype(), device = other.device();
    } else if (py::isinstance<PyDType>(a) || !PyUnicode_Check(a.ptr())) {
      if (py::isinstance<PyDevice>(a) || PyLong_Check(a.ptr())) device = device_from_object(a);
      else dtype = dtype_from_object(a);
    } else {  // a string: a device ("cuda:0") or a dtype ("float64")
      const std::string s = py::cast<std::string>(a);
      if (s.rfind("cpu", 0) == 0 || s.rfind("cuda", 0) == 0) device = Device(s);
      else dtype = dtype_from_name(s);
    }
  }
  Variable y = x;
  if (device && *device != y.device()) {
    const bool recorded = autodiff::grad_enabled() && x.requires_grad();
    y = non_blocking && !recorded ? Variable(y.data().to(*device, true)) : autodiff::to(y, *device);
  }
  if (dtype && *dtype != y.dtype()) y = autodiff::to(y, *dtype);
  return y;
}

Variable cast(const Variable& x, DType dtype) {
  return x.dtype() == dtype ? x : autodiff::to(x, dtype);
}

}  // namespace

void bind_tensor(py::module_& m, TensorClass& cls) {
  cls.def(py::init([](py::handle data, std::optional<DType> dtype, std::optional<Device> device,
                      bool requires_grad) {
            // A Tensor argument shares its storage (as nn.Parameter(t) does); other data is copied.
            Tensor t = is_tensor(data) && !dtype && !device
                           ? tensor_of(data).data()
                           : tensor_from_data(data, dtype, device.value_or(Device()));
            return Variable(t, requires_grad);
          }),
          py::arg("data"), py::kw_only(), py::arg("dtype") = py::none(),
          py::arg("device") = py::none(), py::arg("requires_grad") = false,
          "A new leaf tensor; data is a Tensor (whose storage it shares), a NumPy array, nested "
          "lists of numbers or a number (all copied).");

  m.def(
      "tensor",
      [](py::handle data, std::optional<DType> dtype, std::optional<Device> device,
         bool requires_grad) {
        return Variable(tensor_from_data(data, dtype, device.value_or(Device())), requires_grad);
      },
      py::arg("data"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false,
      "A new tensor holding a copy of data: a number, nested lists/tuples of numbers, a NumPy "
      "array or a Tensor. Without dtype, Python floats give float32, ints int64, bools bool, and "
      "a NumPy array keeps its dtype.");

  cls.def_property_readonly(
         "shape", [](const Variable& x) { return shape_tuple(x.shape()); },
         "The sizes of the dims, a tuple.")
      .def_property_readonly("dtype", &Variable::dtype)
      .def_property_readonly("device", &Variable::device)
      .def_property_readonly("ndim", &Variable::dim)
      .def_property_readonly("is_cuda", [](const Variable& x) { return x.device().is_cuda(); })
      .def_property_readonly("itemsize", [](const Variable& x) { return x.data().itemsize(); })
      .def_property_readonly("nbytes", [](const Variable& x) { return x.data().nbytes(); })
      .def_property_readonly("data", &Variable::detach,
                             "The same storage as a tensor without history (as detach()).")
      .def("dim", &Variable::dim, "The number of dims.")
      .def("numel", &Variable::numel, "The number of elements.")
      .def("element_size", [](const Variable& x) { return x.data().itemsize(); })
      .def(
          "size",
          [](const Variable& x, std::optional<int64_t> dim) -> py::object {
            if (!dim) return shape_tuple(x.shape());
            return py::int_(x.data().size(*dim));
          },
          py::arg("dim") = py::none(), "The shape, or the size of one dim.")
      .def(
          "stride",
          [](const Variable& x, std::optional<int64_t> dim) -> py::object {
            if (!dim) return shape_tuple(x.data().strides());
            return py::int_(x.data().stride(*dim));
          },
          py::arg("dim") = py::none(), "The strides (in elements), or the stride of one dim.")
      .def("storage_offset", [](const Variable& x) { return x.data().offset(); })
      .def("is_contiguous", [](const Variable& x) { return x.data().is_contiguous(); })
      .def("is_floating_point", [](const Variable& x) { return is_floating(x.dtype()); })
      .def("data_ptr",
           [](const Variable& x) { return reinterpret_cast<uintptr_t>(x.data().data_ptr()); })
      .def(
          "item", [](const Variable& x) { return item(x.data()); },
          "The value of a one-element tensor as a Python number.")
      .def(
          "tolist", [](const Variable& x) { return tolist(x.data()); },
          "The values as nested Python lists (a number for a 0-d tensor).")
      .def("to", &to, py::arg("dtype") = py::none(), py::arg("device") = py::none(),
           py::arg("non_blocking") = false,
           "This tensor on another device and/or with another dtype (itself when both match); "
           "differentiable. non_blocking: from pinned memory to a GPU, queued without waiting.")
      .def("cpu",
           [](const Variable& x) { return to(x, py::args(), std::nullopt, Device(), false); })
      .def(
          "cuda",
          [](const Variable& x, int index, bool non_blocking) {
            return to(x, py::args(), std::nullopt, Device(DeviceType::CUDA, index), non_blocking);
          },
          py::arg("device") = 0, py::arg("non_blocking") = false)
      .def(
          "pin_memory",
          [](const Variable& x) {
            if (autodiff::grad_enabled() && x.requires_grad())
              throw ember::ValueError("pin_memory", x.str() +
                                                        " requires grad, and a pinned copy has "
                                                        "no history (it is for data batches). "
                                                        "Fix: pin x.detach()");
            return Variable(x.data().pin_memory());
          },
          "A copy in pinned (page-locked) host memory, which copies to a GPU read directly, "
          "with non_blocking=True without the host waiting (itself when pinned already). Needs "
          "CUDA and a GPU: NotSupportedError in a build without CUDA, DeviceError without a GPU.")
      .def(
          "is_pinned", [](const Variable& x) { return x.data().is_pinned(); },
          "Whether the tensor is in pinned host memory (pin_memory).")
      .def("float", [](const Variable& x) { return cast(x, DType::Float32); })
      .def("double", [](const Variable& x) { return cast(x, DType::Float64); })
      .def("half", [](const Variable& x) { return cast(x, DType::Float16); })
      .def("bfloat16", [](const Variable& x) { return cast(x, DType::BFloat16); })
      .def("long", [](const Variable& x) { return cast(x, DType::Int64); })
      .def("int", [](const Variable& x) { return cast(x, DType::Int32); })
      .def("short", [](const Variable& x) { return cast(x, DType::Int16); })
      .def("byte", [](const Variable& x) { return cast(x, DType::UInt8); })
      .def("bool", [](const Variable& x) { return cast(x, DType::Bool); })
      .def(
          "type", [](const Variable& x, DType dtype) { return cast(x, dtype); }, py::arg("dtype"))
      .def(
          "clone", [](const Variable& x) { return autodiff::clone(x); },
          "A copy of the data in new memory; gradients flow back through it.")
      .def("__repr__", &tensor_repr)
      .def("__len__",
           [](const Variable& x) {
             if (x.dim() == 0) throw py::type_error("len() of a 0-d tensor");
             return x.size(0);
           })
      .def("__bool__",
           [](const Variable& x) {
             check_capturable("bool",
                              "bool(tensor), Python control flow (if, while, and, or) "
                              "on a tensor's value",
                              "choose values with ember.where(condition, a, b) inside the "
                              "step, or decide outside it and pass the choice as a Python "
                              "argument (each value is traced once)");
             if (x.numel() != 1)
               throw ember::ValueError("bool", "the truth value of a tensor of " + x.str() +
                                                   " is ambiguous. Fix: use .any() or .all()");
             return x.data().item<double>() != 0;
           })
      .def("__float__", [](const Variable& x) { return py::float_(item(x.data(), "float")); })
      .def("__int__", [](const Variable& x) { return py::int_(item(x.data(), "int")); })
      .def("__index__",
           [](const Variable& x) {
             if (!is_integral(x.dtype()))
               throw py::type_error("only integer tensors of one element can be an index");
             check_host_read("__index__", "using a tensor as a Python index");
             require_one_element(x.data(), "__index__");
             return x.data().item<int64_t>();
           })
      .def("__hash__", [](py::handle self) { return py::hash(py::int_(uintptr_t(self.ptr()))); });
}

}  // namespace ember::python
