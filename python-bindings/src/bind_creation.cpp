// bind_creation.cpp — new tensors: zeros, ones, full, arange, linspace, eye, the random ones and
// the *_like variants, each with dtype=, device= and requires_grad=, as in PyTorch.
#include <ember/ops/creation.h>
#include <ember/ops/random.h>

#include "bindings.h"

namespace ember::python {

namespace {

using Sized = Tensor (*)(const Shape&, DType, Device);

// f(*size, dtype=None, device=None, requires_grad=False) over a core creation function.
template <class Make> void def_sized(py::module_& m, const char* name, Make make, const char* doc) {
  m.def(
      name,
      [make, name](const py::args& size, std::optional<DType> dtype, std::optional<Device> device,
                   bool requires_grad) {
        return Variable(make(shape_from_args(size, name), dtype.value_or(DType::Float32),
                             device.value_or(Device())),
                        requires_grad);
      },
      py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false, doc);
}

// f(t, dtype=None, device=None, requires_grad=False): t's shape, dtype and device unless given.
template <class Make> void def_like(py::module_& m, const char* name, Make make, const char* doc) {
  m.def(
      name,
      [make](const Variable& t, std::optional<DType> dtype, std::optional<Device> device,
             bool requires_grad) {
        return Variable(make(t.shape(), dtype.value_or(t.dtype()), device.value_or(t.device())),
                        requires_grad);
      },
      py::arg("input"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false, doc);
}

// The dtype of a number as PyTorch infers it: bool, int64 for ints, float32 for floats.
DType scalar_dtype(py::handle value) {
  if (PyBool_Check(value.ptr())) return DType::Bool;
  return is_python_float(value) ? DType::Float32 : DType::Int64;
}

Tensor random_sized(Tensor (*make)(const Shape&, DType, Device, Generator*), const Shape& s,
                    DType d, Device dev) {
  return make(s, d, dev, nullptr);
}

}  // namespace

void bind_creation(py::module_& m) {
  def_sized(m, "zeros", static_cast<Sized>(&ember::zeros), "A tensor of zeros of the given size.");
  def_sized(m, "ones", static_cast<Sized>(&ember::ones), "A tensor of ones of the given size.");
  def_sized(m, "empty", static_cast<Sized>(&ember::empty), "An uninitialised tensor.");
  def_sized(
      m, "rand",
      [](const Shape& s, DType d, Device dev) { return random_sized(&ember::rand, s, d, dev); },
      "Uniform random values on [0, 1) (seeded by ember.manual_seed).");
  def_sized(
      m, "randn",
      [](const Shape& s, DType d, Device dev) { return random_sized(&ember::randn, s, d, dev); },
      "Standard normal random values (seeded by ember.manual_seed).");

  def_like(m, "zeros_like", static_cast<Sized>(&ember::zeros), "Zeros shaped like input.");
  def_like(m, "ones_like", static_cast<Sized>(&ember::ones), "Ones shaped like input.");
  def_like(m, "empty_like", static_cast<Sized>(&ember::empty), "Uninitialised, like input.");
  def_like(
      m, "rand_like",
      [](const Shape& s, DType d, Device dev) { return random_sized(&ember::rand, s, d, dev); },
      "Uniform random values on [0, 1), shaped like input.");
  def_like(
      m, "randn_like",
      [](const Shape& s, DType d, Device dev) { return random_sized(&ember::randn, s, d, dev); },
      "Standard normal random values, shaped like input.");

  m.def(
      "full",
      [](py::handle size, py::handle fill_value, std::optional<DType> dtype,
         std::optional<Device> device, bool requires_grad) {
        return Variable(ember::full(shape_from_args(py::make_tuple(size), "full"),
                                    scalar_value(fill_value),
                                    dtype.value_or(scalar_dtype(fill_value)),
                                    device.value_or(Device())),
                        requires_grad);
      },
      py::arg("size"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false,
      "A tensor of the given size filled with fill_value (dtype inferred from it).");
  m.def(
      "full_like",
      [](const Variable& t, py::handle fill_value, std::optional<DType> dtype,
         std::optional<Device> device, bool requires_grad) {
        Tensor out = ember::full(t.shape(), scalar_value(fill_value), dtype.value_or(t.dtype()),
                                 device.value_or(t.device()));
        return Variable(out, requires_grad);
      },
      py::arg("input"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false,
      "A tensor shaped like input filled with fill_value.");
  m.def(
      "arange",
      [](py::handle start, py::handle end, py::handle step, std::optional<DType> dtype,
         std::optional<Device> device, bool requires_grad) {
        if (end.is_none()) end = start, start = py::int_(0);
        const bool floats = is_python_float(start) || is_python_float(end) || is_python_float(step);
        if (!dtype && floats) dtype = DType::Float32;
        return Variable(ember::arange(scalar_value(start), scalar_value(end), scalar_value(step),
                                      dtype, device.value_or(Device())),
                        requires_grad);
      },
      py::arg("start"), py::arg("end") = py::none(), py::arg("step") = 1, py::kw_only(),
      py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false,
      "start, start + step, ... up to but excluding end (arange(n): 0 .. n-1); int64 when every "
      "argument is an int, float32 otherwise.");
  m.def(
      "linspace",
      [](double start, double end, int64_t steps, std::optional<DType> dtype,
         std::optional<Device> device, bool requires_grad) {
        return Variable(ember::linspace(start, end, steps, dtype.value_or(DType::Float32),
                                        device.value_or(Device())),
                        requires_grad);
      },
      py::arg("start"), py::arg("end"), py::arg("steps"), py::kw_only(),
      py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      py::arg("requires_grad") = false, "steps values evenly spaced from start to end, both in.");
  m.def(
      "eye",
      [](int64_t n, std::optional<int64_t> cols, std::optional<DType> dtype,
         std::optional<Device> device, bool requires_grad) {
        return Variable(ember::eye(n, cols.value_or(-1), dtype.value_or(DType::Float32),
                                   device.value_or(Device())),
                        requires_grad);
      },
      py::arg("n"), py::arg("m") = py::none(), py::kw_only(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false,
      "An [n, m] matrix (m = n by default) with ones on the diagonal.");
  m.def(
      "randint",
      [](int64_t low, py::handle high, py::handle size, std::optional<DType> dtype,
         std::optional<Device> device) {
        int64_t lo = low, hi = 0;
        if (size.is_none()) size = high;  // randint(high, size)
        else hi = py::cast<int64_t>(high);
        if (high.ptr() == size.ptr()) lo = 0, hi = low;
        return Variable(ember::randint(lo, hi, shape_from_args(py::make_tuple(size), "randint"),
                                       dtype.value_or(DType::Int64), device.value_or(Device())));
      },
      py::arg("low"), py::arg("high"), py::arg("size") = py::none(), py::kw_only(),
      py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      "Random integers on [low, high): randint(low, high, size) or randint(high, size).");
  m.def(
      "randperm",
      [](int64_t n, std::optional<DType> dtype, std::optional<Device> device) {
        return Variable(
            ember::randperm(n, dtype.value_or(DType::Int64), device.value_or(Device())));
      },
      py::arg("n"), py::kw_only(), py::arg("dtype") = py::none(), py::arg("device") = py::none(),
      "A random permutation of 0 .. n-1.");
  m.def(
      "manual_seed", [](uint64_t seed) { ember::manual_seed(seed); }, py::arg("seed"),
      "Reseeds the default random generator: the same seed gives the same random tensors.");
}

}  // namespace ember::python
