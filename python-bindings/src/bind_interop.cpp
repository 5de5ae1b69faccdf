// bind_interop.cpp — tensors and NumPy arrays share memory on the CPU (ember.from_numpy,
// Tensor.numpy(), __array__), and tensors travel to and from any library through DLPack
// (__dlpack__, __dlpack_device__, ember.from_dlpack), both the versioned and the legacy capsule.
// Whichever side made the memory, it stays alive as long as the other side holds a view of it.
#include <ember/error.h>
#include <ember/from_blob.h>
#include <pybind11/numpy.h>

#include "bindings.h"
#include "dlpack.h"

namespace ember::python {

namespace {

using V = Variable;

// ---- NumPy ----

// The dtype of a buffer's struct format ("f", "<d", "?", ...) and item size.
DType dtype_of_format(std::string format, py::ssize_t itemsize) {
  while (!format.empty() && std::string("<>=@!").find(format[0]) != std::string::npos)
    format.erase(0, 1);
  const char c = format.size() == 1 ? format[0] : '\0';
  if (c == '?') return DType::Bool;
  if (c == 'e') return DType::Float16;
  if (c == 'f') return DType::Float32;
  if (c == 'd') return DType::Float64;
  if (c == 'B') return DType::UInt8;
  if (std::string("bhilq").find(c) != std::string::npos && c != '\0') {
    switch (itemsize) {
      case 1:
        return DType::Int8;
      case 2:
        return DType::Int16;
      case 4:
        return DType::Int32;
      case 8:
        return DType::Int64;
    }
  }
  throw ember::DTypeError("from_numpy", "arrays of format '" + format +
                                            "' have no Ember dtype; supported: bool, uint8, int8, "
                                            "int16, int32, int64, float16, float32, float64");
}

// Drops a Python reference from wherever the last view of the memory dies.
std::function<void(void*)> release_when_done(py::object owner) {
  PyObject* ptr = owner.release().ptr();
  return [ptr](void*) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    Py_DECREF(ptr);
  };
}

py::array numpy_view(const V& x) {
  const Tensor& t = x.data();
  if (!t.device().is_cpu())
    throw ember::DeviceError("numpy", "the tensor is on " + t.device().str() +
                                          ". Fix: .cpu().numpy() copies it to the host");
  if (t.dtype() == DType::BFloat16)
    throw ember::DTypeError("numpy", "NumPy has no bfloat16. Fix: .float().numpy()");
  std::vector<py::ssize_t> shape(t.shape().begin(), t.shape().end()), strides;
  for (int64_t s : t.strides()) strides.push_back(py::ssize_t(s * int64_t(t.itemsize())));
  auto* keep = new Tensor(t);  // the array's base owns a handle on the storage
  py::capsule base(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(py::dtype(dtype_name(t.dtype())), shape, strides, t.data_ptr(), base);
}

// ---- DLPack ----

DLDataType dl_dtype(DType d) {
  const uint8_t bits = uint8_t(itemsize(d) * 8);
  switch (d) {
    case DType::Bool:
      return {kDLBool, 8, 1};
    case DType::UInt8:
      return {kDLUInt, 8, 1};
    case DType::BFloat16:
      return {kDLBfloat, 16, 1};
    default:
      return {is_floating(d) ? uint8_t(kDLFloat) : uint8_t(kDLInt), bits, 1};
  }
}

DType from_dl_dtype(DLDataType t) {
  if (t.lanes != 1)
    throw ember::DTypeError("from_dlpack", "vector dtypes (lanes > 1) are not supported");
  for (int i = 0; i < kNumDTypes; ++i) {
    DLDataType c = dl_dtype(DType(i));
    if (c.code == t.code && c.bits == t.bits) return DType(i);
  }
  throw ember::DTypeError("from_dlpack", "DLPack dtype code " + std::to_string(t.code) + " with " +
                                             std::to_string(t.bits) + " bits has no Ember dtype");
}

// What a tensor exported through DLPack keeps alive: the tensor and its shape and strides.
template <class Managed> struct Export {
  Managed managed{};
  Tensor tensor;
  std::vector<int64_t> shape, strides;
};

template <class Managed> Managed* export_tensor(const Tensor& t) {
  auto* e = new Export<Managed>();
  e->tensor = t;
  e->shape = t.shape();
  e->strides = t.strides();
  DLTensor& dl = e->managed.dl_tensor;
  dl.data = t.data_ptr();
  dl.device = {t.device().is_cpu() ? kDLCPU : kDLCUDA, t.device().is_cpu() ? 0 : t.device().index};
  dl.ndim = int32_t(t.dim());
  dl.dtype = dl_dtype(t.dtype());
  dl.shape = e->shape.data();
  dl.strides = e->strides.data();
  dl.byte_offset = 0;
  e->managed.manager_ctx = e;
  e->managed.deleter = [](Managed* self) {
    delete static_cast<Export<Managed>*>(self->manager_ctx);
  };
  return &e->managed;
}

// A capsule named `name` whose destructor frees the tensor unless a consumer took it (and renamed
// the capsule "used_...").
template <class Managed> py::capsule capsule_of(Managed* managed, const char* name) {
  PyObject* cap = PyCapsule_New(managed, name, [](PyObject* c) {
    const char* n = PyCapsule_GetName(c);
    if (std::string(n).rfind("used_", 0) == 0) return;
    if (auto* m = static_cast<Managed*>(PyCapsule_GetPointer(c, n))) m->deleter(m);
  });
  if (!cap) throw py::error_already_set();
  return py::reinterpret_steal<py::capsule>(cap);
}

py::capsule to_dlpack(const V& x, py::handle stream, py::handle max_version, py::handle dl_device,
                      py::handle copy) {
  Tensor t = x.data();
  if (!dl_device.is_none()) {
    auto dev = py::cast<std::pair<int, int>>(dl_device);
    const Device want = dev.first == kDLCPU ? Device() : Device(DeviceType::CUDA, dev.second);
    if (want != t.device()) {
      if (!copy.is_none() && !py::cast<bool>(copy))
        throw ember::ValueError("__dlpack__",
                                "dl_device differs from the tensor's device and "
                                "copy=False forbids a copy");
      t = t.to(want);
    }
  }
  if (!copy.is_none() && py::cast<bool>(copy)) t = t.clone();
  if (t.device().is_cuda()) ember::synchronize(t.device());  // a consumer's stream sees our writes
  (void)stream;
  const bool versioned =
      !max_version.is_none() && py::cast<std::pair<int, int>>(max_version).first >= 1;
  if (versioned) {
    DLManagedTensorVersioned* m = export_tensor<DLManagedTensorVersioned>(t);
    m->version = {1, 0};
    m->flags = 0;
    return capsule_of(m, "dltensor_versioned");
  }
  return capsule_of(export_tensor<DLManagedTensor>(t), "dltensor");
}

Tensor tensor_of_dl(const DLTensor& dl, std::function<void(void*)> deleter) {
  Device device;
  if (dl.device.device_type == kDLCUDA) device = Device(DeviceType::CUDA, dl.device.device_id);
  else if (dl.device.device_type != kDLCPU && dl.device.device_type != kDLCUDAHost)
    throw ember::DeviceError("from_dlpack", "DLPack device type " +
                                                std::to_string(dl.device.device_type) +
                                                " is not supported (CPU and CUDA are)");
  const DType dtype = from_dl_dtype(dl.dtype);
  Shape shape(dl.shape, dl.shape + dl.ndim);
  Strides strides =
      dl.strides ? Strides(dl.strides, dl.strides + dl.ndim) : contiguous_strides(shape);
  void* data = static_cast<char*>(dl.data) + dl.byte_offset;
  return from_blob(data, shape, strides, dtype, device, std::move(deleter));
}

// Takes the tensor out of a "dltensor" or "dltensor_versioned" capsule (renaming it "used_...").
Tensor from_capsule(py::capsule cap) {
  const std::string name = cap.name() ? cap.name() : "";
  if (name == "dltensor_versioned") {
    auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(cap.ptr(), name.c_str()));
    if (m->version.major > 1)
      throw ember::NotSupportedError("from_dlpack", "DLPack major version " +
                                                        std::to_string(m->version.major) +
                                                        " is newer than this Ember reads (1)");
    Tensor t = tensor_of_dl(m->dl_tensor, [m](void*) {
      if (m->deleter) m->deleter(m);
    });
    PyCapsule_SetName(cap.ptr(), "used_dltensor_versioned");
    return t;
  }
  if (name == "dltensor") {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(cap.ptr(), name.c_str()));
    Tensor t = tensor_of_dl(m->dl_tensor, [m](void*) {
      if (m->deleter) m->deleter(m);
    });
    PyCapsule_SetName(cap.ptr(), "used_dltensor");
    return t;
  }
  throw ember::ValueError("from_dlpack", "a capsule named '" + name +
                                             "' is not a DLPack tensor (expected 'dltensor' or "
                                             "'dltensor_versioned'), or it was used already");
}

V from_dlpack(py::handle obj) {
  if (PyCapsule_CheckExact(obj.ptr()))
    return V(from_capsule(py::reinterpret_borrow<py::capsule>(obj)));
  if (!py::hasattr(obj, "__dlpack__"))
    throw ember::DTypeError("from_dlpack",
                            "expected an object with __dlpack__ or a DLPack "
                            "capsule, got " +
                                std::string(py::repr(obj)));
  py::object cap;
  try {
    cap = obj.attr("__dlpack__")(py::arg("max_version") = py::make_tuple(1, 0));
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;
    cap = obj.attr("__dlpack__")();  // a producer older than DLPack 1.0
  }
  return V(from_capsule(cap.cast<py::capsule>()));
}

}  // namespace

Tensor tensor_from_numpy(py::handle array) {
  py::buffer_info info = py::reinterpret_borrow<py::buffer>(array).request(/*writable=*/false);
  const DType dtype = dtype_of_format(info.format, info.itemsize);
  Shape shape(info.shape.begin(), info.shape.end());
  Strides strides;
  for (py::ssize_t s : info.strides) {
    if (s < 0 || s % info.itemsize != 0)
      throw ember::ValueError("from_numpy",
                              "the array has a negative or unaligned stride (" + std::to_string(s) +
                                  " bytes); Ember cannot view it. Fix: pass "
                                  "numpy.ascontiguousarray(a), or use ember.tensor(a)");
    strides.push_back(s / info.itemsize);
  }
  return from_blob(info.ptr, shape, strides, dtype, Device(),
                   release_when_done(py::reinterpret_borrow<py::object>(array)));
}

void bind_interop(py::module_& m, TensorClass& cls) {
  m.def(
      "from_numpy",
      [](py::buffer a) {
        check_capturable("from_numpy",
                         "a tensor made from a NumPy array inside the step (its "
                         "values would be fixed into the compiled step)",
                         "make it outside the step and pass it as an argument");
        return V(tensor_from_numpy(a));
      },
      py::arg("array"),
      "A CPU tensor sharing the array's memory (writes through one show in the other); the "
      "array stays alive while the tensor does.");
  cls.def(
      "numpy",
      [](const V& x) {
        check_host_read("numpy", ".numpy()");
        if (x.requires_grad())
          throw ember::ValueError("numpy", "the tensor requires grad. Fix: x.detach().numpy()");
        return numpy_view(x);
      },
      "A NumPy array viewing this CPU tensor's memory (the tensor stays alive as its base).");
  cls.def(
      "__array__",
      [](const V& x, py::handle dtype, py::handle copy) {
        check_host_read("__array__", "converting a tensor to a NumPy array");
        py::array a = numpy_view(x.device().is_cpu() ? x : V(x.data().to(Device())));
        if (!dtype.is_none()) return py::array(a.attr("astype")(dtype));
        if (!copy.is_none() && py::cast<bool>(copy)) return py::array(a.attr("copy")());
        return a;
      },
      py::arg("dtype") = py::none(), py::arg("copy") = py::none());
  cls.def("__dlpack__", &to_dlpack, py::kw_only(), py::arg("stream") = py::none(),
          py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
          py::arg("copy") = py::none(), "A DLPack capsule of this tensor (no copy).");
  cls.def("__dlpack_device__", [](const V& x) {
    const Device d = x.device();
    return py::make_tuple(int(d.is_cpu() ? kDLCPU : kDLCUDA), d.is_cpu() ? 0 : d.index);
  });
  m.def("from_dlpack", &from_dlpack, py::arg("obj"),
        "A tensor sharing the memory of an object with __dlpack__ (NumPy, PyTorch, CuPy, JAX) "
        "or of a DLPack capsule; the producer's memory stays alive while Ember holds it.");
}

}  // namespace ember::python
