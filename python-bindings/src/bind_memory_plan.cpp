// bind_memory_plan.cpp — the compiler's memory planner over bare intervals, for tests and
// teaching: ember._core._plan_intervals(sizes, starts, ends, alignment=64).
#include <ember/autodiff/compile/memory_plan.h>

#include "bindings.h"

namespace ember::python {

void bind_memory_plan(py::module_& m) {
  namespace cp = ember::autodiff::compile;
  m.def(
      "_plan_intervals",
      [](const std::vector<int64_t>& sizes, const std::vector<int32_t>& starts,
         const std::vector<int32_t>& ends, int64_t alignment) {
        cp::IntervalPlan plan = cp::plan_intervals(sizes, starts, ends, alignment);
        return py::dict(py::arg("offsets") = plan.offsets,
                        py::arg("planned_peak") = plan.planned_peak,
                        py::arg("naive_peak") = plan.naive_peak,
                        py::arg("lower_bound") = plan.lower_bound);
      },
      py::arg("sizes"), py::arg("starts"), py::arg("ends"), py::arg("alignment") = cp::kAlignment,
      "Places buffers (sizes[k] bytes, live from step starts[k] to ends[k] inclusive) in one "
      "arena, best fit, as compiled mode's memory plan does. Returns {'offsets': [...], "
      "'planned_peak', 'naive_peak' (no reuse), 'lower_bound' (most bytes live at once)}; "
      "sizes are rounded up to alignment.");
}

}  // namespace ember::python
