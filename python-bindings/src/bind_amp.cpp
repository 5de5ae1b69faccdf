// bind_amp.cpp — mixed precision: the autocast state of the calling thread per device type (what
// ember.autocast sets; the cast policy lives in autodiff-engine's autocast.h) and the TF32
// switch of CUDA's float32 GEMMs (ember.backends.cuda.matmul.allow_tf32).
#include <ember/autodiff/autocast.h>
#include <ember/cuda.h>

#include "bindings.h"

namespace ember::python {

void bind_amp(py::module_& m) {
  namespace ad = autodiff;
  m.def(
      "_autocast_state",
      [](Device device) {
        const ad::AutocastState s = ad::autocast_state(device.type);
        return py::make_tuple(s.enabled, s.dtype);
      },
      py::arg("device_type"), "(enabled, dtype) of autocast for a device type on this thread.");
  m.def(
      "_set_autocast_state",
      [](Device device, bool enabled, DType dtype) {
        ad::set_autocast_state(device.type, {enabled, dtype});
      },
      py::arg("device_type"), py::arg("enabled"), py::arg("dtype"),
      "Sets autocast for a device type on this thread (ember.autocast restores it on exit).");
  m.def(
      "_autocast_policy",
      [](const std::string& op) { return ad::cast_policy_name(ad::autocast_policy(op)); },
      py::arg("op"),
      "What autocast does to the op's floating inputs: 'lower', 'float32', 'float32_math', "
      "'widest' or 'keep'.");
  m.def("_set_allow_tf32", &ember::set_allow_tf32, py::arg("on"),
        "Lets float32 GEMMs on CUDA use TF32 tensor cores (off by default).");
  m.def("_allow_tf32", &ember::allow_tf32, "Whether float32 GEMMs on CUDA may use TF32.");
}

}  // namespace ember::python
