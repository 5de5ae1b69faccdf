// _core.cpp — the compiled module ember._core: one bind function per area (bindings.h), in the
// order their types are needed. The Python package (ember/) re-exports and adds the sugar.
#include <ember/autodiff/version.h>
#include <ember/version.h>

#include <map>

#include "bindings.h"

namespace ember::python {
void bind_memory_plan(py::module_& m);  // bind_memory_plan.cpp
void bind_fusion(py::module_& m);       // bind_fusion.cpp: the private face of fused kernels
// ember._core.distributed (bind_distributed.cpp): declared here, not in bindings.h, which every
// binding file includes.
void bind_distributed(py::module_& m);
}  // namespace ember::python

PYBIND11_MODULE(_core, m) {
  namespace ep = ember::python;
  m.doc() = "Ember's compiled core: tensors, ops, autograd, interop, errors and memory";
  m.attr("__version__") = EMBER_PYTHON_VERSION_STRING;
  m.def(
      "versions",
      [] {
        return std::map<std::string, std::string>{{"bindings", EMBER_PYTHON_VERSION_STRING},
                                                  {"autodiff", ember::autodiff::version()},
                                                  {"core", ember::core_version()}};
      },
      "The versions of the three packages in use: {'bindings', 'autodiff', 'core'}.");

  ep::bind_errors(m);
  ep::bind_dtypes(m);
  ep::TensorClass cls(m, "Tensor", py::dynamic_attr(),
                      "An n-dimensional array on a device that can record its history for "
                      "autograd (an eager autodiff Variable).");
  ep::register_tensor_class(cls);
  ep::bind_tensor(m, cls);
  ep::bind_creation(m);
  ep::bind_ops(m, cls);
  ep::bind_movement(m, cls);
  ep::bind_rearrange(m, cls);
  ep::bind_nn_ops(m, cls);
  ep::bind_operators(cls);
  ep::bind_indexing(m, cls);
  ep::bind_autograd(m, cls);
  ep::bind_interop(m, cls);
  ep::bind_memory(m);
  ep::bind_memory_plan(m);
  ep::bind_optim(m);
  ep::bind_compile(m);
  ep::bind_fusion(m);
  ep::bind_distributed(m);
  ep::bind_amp(m);
  ep::bind_argument_errors(m, cls);
}
