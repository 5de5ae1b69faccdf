// bind_compile.cpp — autodiff-engine's compiled steps (compile/compile.h) as
// ember._core._CompiledStep. ember.compile (ember/_compile.py) wraps it: it finds the modules'
// names and training modes, flattens the arguments and rebuilds the returned structure.
#include <ember/autodiff/compile/compile.h>

#include "bindings.h"

namespace ember::python {

namespace {

namespace cc = ember::autodiff::compile;

using Pairs = std::vector<std::pair<std::string, std::string>>;

cc::CompiledStep make_step(py::function fn, const std::string& name, int64_t memory_budget,
                           std::vector<std::string> input_names,
                           std::vector<std::pair<Variable, std::string>> state_names,
                           py::object guards, py::object warn, bool optimize, bool fuse) {
  cc::CompileOptions options;
  options.name = name;
  options.memory_budget = memory_budget;
  options.input_names = std::move(input_names);
  options.state_names = std::move(state_names);
  options.optimize = optimize;
  options.fuse = fuse;
  if (!guards.is_none()) options.guards = [guards]() { return py::cast<Pairs>(guards()); };
  if (!warn.is_none()) options.warn = [warn](const std::string& message) { warn(message); };
  // The step runs with the GIL held: it is Python code calling ops.
  return cc::CompiledStep(
      [fn](const std::vector<Variable>& inputs) {
        return py::cast<std::vector<Variable>>(fn(inputs));
      },
      std::move(options));
}

}  // namespace

void bind_compile(py::module_& m) {
  py::class_<cc::CompiledStep>(m, "_CompiledStep",
                               "A traced and replayed step (ember.compile wraps it).")
      .def(py::init(&make_step), py::arg("fn"), py::arg("name"), py::arg("memory_budget"),
           py::arg("input_names"), py::arg("state_names"), py::arg("guards"), py::arg("warn"),
           py::arg("optimize") = true, py::arg("fuse") = true)
      .def(
          "__call__",
          [](cc::CompiledStep& step, const std::vector<Variable>& inputs) { return step(inputs); },
          py::arg("inputs"))
      .def("explain", &cc::CompiledStep::explain)
      .def("graph", &cc::CompiledStep::graph)
      .def("source", &cc::CompiledStep::source, py::arg("group"),
           "The generated source of the newest plan's fused group `group`.")
      .def_property_readonly("fused_groups", &cc::CompiledStep::fused_groups)
      .def_property_readonly("traces", &cc::CompiledStep::traces)
      .def_property_readonly("replays", &cc::CompiledStep::replays)
      .def_property_readonly("plans", &cc::CompiledStep::plans)
      .def_property_readonly("plan_id", &cc::CompiledStep::plan_id)
      .def_property_readonly("last_call_replayed", &cc::CompiledStep::last_call_replayed);
  m.def("_tracing", &cc::tracing, "Whether a compiled step is being traced on this thread.");
}

}  // namespace ember::python
