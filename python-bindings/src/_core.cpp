// _core.cpp — the compiled module ember._core: versions and CUDA availability, for now.
// Tensors and ops are bound here as the packages below grow (one binding line per op).
#include <ember/autodiff/version.h>
#include <ember/device.h>
#include <ember/version.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
  m.doc() = "Ember's compiled core: versions and CUDA availability";
  m.attr("__version__") = EMBER_PYTHON_VERSION_STRING;

  m.def(
      "versions",
      [] {
        return std::map<std::string, std::string>{{"bindings", EMBER_PYTHON_VERSION_STRING},
                                                  {"autodiff", ember::autodiff::version()},
                                                  {"core", ember::core_version()}};
      },
      "The versions of the three packages in use: {'bindings', 'autodiff', 'core'}.");
  m.def("cuda_compiled", &ember::cuda_compiled,
        "Whether core-runtime was built with its CUDA backend.");
  m.def("cuda_device_count", &ember::cuda_device_count,
        "How many GPUs the CUDA driver reports (0 without a driver or GPU).");
  m.def("cuda_is_available", &ember::cuda_is_available,
        "Whether tensors can be placed on a GPU here.");
}
