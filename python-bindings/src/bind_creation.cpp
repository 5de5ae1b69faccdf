// bind_creation.cpp — new tensors: zeros, ones, full, arange, linspace, eye, the random ones and
// the *_like variants, each with dtype=, device= and requires_grad=, as in PyTorch; and
// ember.Generator, the random stream that the random ones take as generator=.
#include <ember/error.h>
#include <ember/ops/creation.h>
#include <ember/ops/random.h>

#include <random>

#include "bindings.h"
#include "generator.h"

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

// rand/randn(*size, generator=None, dtype=None, device=None, requires_grad=False).
void def_random(py::module_& m, const char* name,
                Tensor (*make)(const Shape&, DType, Device, Generator*), const char* doc) {
  m.def(
      name,
      [make, name](const py::args& size, py::handle generator, std::optional<DType> dtype,
                   std::optional<Device> device, bool requires_grad) {
        return Variable(make(shape_from_args(size, name), dtype.value_or(DType::Float32),
                             device.value_or(Device()), generator_from_object(generator, name)),
                        requires_grad);
      },
      py::arg("generator") = py::none(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), py::arg("requires_grad") = false, doc);
}

// A seed as PyTorch takes one: any int in [-2^63, 2^64), a negative one as its two's complement.
uint64_t seed_from_object(py::handle seed) {
  try {
    return py::cast<uint64_t>(seed);
  } catch (const py::cast_error&) {
  }
  try {
    return static_cast<uint64_t>(py::cast<int64_t>(seed));
  } catch (const py::cast_error&) {
    throw ember::ValueError("Generator.manual_seed",
                            "the seed " + py::repr(seed).cast<std::string>() +
                                " is not an int in [-2**63, 2**64). Fix: pass such an int");
  }
}

void bind_generator(py::module_& m) {
  using G = PyGenerator;
  py::class_<G>(m, "Generator",
                "A random stream of its own (a Philox seed and offset), for generator= of the "
                "random functions: the same seed gives the same numbers, and drawing from it "
                "leaves the default generator (ember.manual_seed's) untouched.")
      .def(py::init([](Device device) {
             return G{Generator(), device};
           }),
           py::arg("device") = "cpu")
      .def(
          "manual_seed",
          [](py::object self, py::handle seed) {
            self.cast<G&>().state = Generator(seed_from_object(seed));
            return self;
          },
          py::arg("seed"), "Reseeds the stream (offset back to 0); returns self.")
      .def(
          "seed",
          [](G& g) {
            std::random_device entropy;
            const uint64_t seed = ((uint64_t{entropy()} << 32) | entropy()) >> 1;  // 63 bits
            g.state = Generator(seed);
            return seed;
          },
          "Reseeds from the operating system's entropy; returns the new seed.")
      .def(
          "initial_seed", [](const G& g) { return g.state.seed; },
          "The seed the stream started from.")
      .def(
          "get_state",
          [](const G& g) {
            py::dict d;
            d["seed"] = g.state.seed;
            d["offset"] = g.state.offset;
            return d;
          },
          "The state, {'seed': int, 'offset': int} (as ember.get_rng_state: a copy).")
      .def(
          "set_state",
          [](py::object self, py::handle state) {
            G& g = self.cast<G&>();
            if (!py::isinstance<py::dict>(state) || !state.contains("seed") ||
                !state.contains("offset"))
              throw ember::ValueError("Generator.set_state",
                                      py::repr(state).cast<std::string>() +
                                          " is not a state; pass what get_state() or "
                                          "ember.get_rng_state() returned ({'seed': int, "
                                          "'offset': int})");
            g.state.seed = py::cast<uint64_t>(state["seed"]);
            g.state.offset = py::cast<uint64_t>(state["offset"]);
            return self;
          },
          py::arg("new_state"), "Restores a state from get_state(); returns self.")
      .def_property_readonly(
          "device", [](const G& g) { return g.device; }, "The device it was made for.")
      .def("__repr__", [](const G& g) {
        return "<ember.Generator device=" + g.device.str() +
               " seed=" + std::to_string(g.state.seed) + ">";
      });
}

}  // namespace

Generator* generator_from_object(py::handle obj, const char* op) {
  check_capturable(op,
                   std::string("drawing random numbers with ") + op +
                       " (a tensor made on the host side of the step)",
                   "draw them outside the step and pass them as an argument; dropout is an "
                   "op, and a replay draws its masks again");
  if (obj.is_none()) return nullptr;
  if (!py::isinstance<PyGenerator>(obj))
    throw ember::DTypeError(op, std::string("generator is a ") + Py_TYPE(obj.ptr())->tp_name +
                                    "; expected an ember.Generator (or None for the default "
                                    "generator)");
  return &obj.cast<PyGenerator&>().state;
}

void bind_creation(py::module_& m) {
  def_sized(m, "zeros", static_cast<Sized>(&ember::zeros), "A tensor of zeros of the given size.");
  def_sized(m, "ones", static_cast<Sized>(&ember::ones), "A tensor of ones of the given size.");
  def_sized(m, "empty", static_cast<Sized>(&ember::empty), "An uninitialised tensor.");
  bind_generator(m);
  def_random(m, "rand", &ember::rand,
             "Uniform random values on [0, 1) (from generator, else the default generator that "
             "ember.manual_seed seeds).");
  def_random(m, "randn", &ember::randn,
             "Standard normal random values (from generator, else the default generator).");

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
      [](int64_t low, py::handle high, py::handle size, py::handle generator,
         std::optional<DType> dtype, std::optional<Device> device) {
        int64_t lo = low, hi = 0;
        if (size.is_none()) size = high;  // randint(high, size)
        else hi = py::cast<int64_t>(high);
        if (high.ptr() == size.ptr()) lo = 0, hi = low;
        return Variable(ember::randint(lo, hi, shape_from_args(py::make_tuple(size), "randint"),
                                       dtype.value_or(DType::Int64), device.value_or(Device()),
                                       generator_from_object(generator, "randint")));
      },
      py::arg("low"), py::arg("high"), py::arg("size") = py::none(), py::kw_only(),
      py::arg("generator") = py::none(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(),
      "Random integers on [low, high): randint(low, high, size) or randint(high, size).");
  m.def(
      "randperm",
      [](int64_t n, py::handle generator, std::optional<DType> dtype,
         std::optional<Device> device) {
        return Variable(ember::randperm(n, dtype.value_or(DType::Int64), device.value_or(Device()),
                                        generator_from_object(generator, "randperm")));
      },
      py::arg("n"), py::kw_only(), py::arg("generator") = py::none(), py::arg("dtype") = py::none(),
      py::arg("device") = py::none(), "A random permutation of 0 .. n-1.");
  m.def(
      "manual_seed", [](uint64_t seed) { ember::manual_seed(seed); }, py::arg("seed"),
      "Reseeds the default random generator: the same seed gives the same random tensors.");
}

}  // namespace ember::python
