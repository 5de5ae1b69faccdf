// bind_autograd.cpp — requires_grad, grad, backward, hooks, detach, grad mode,
// ember.autograd.grad and the recording of ember.autograd.Function: Python's view of
// autodiff-engine's eager Variables (variable.h, custom_function.h).
#include <ember/autodiff/custom_function.h>
#include <ember/autodiff/variable.h>

#include "bindings.h"

namespace ember::python {

namespace ad = ember::autodiff;

namespace {

using V = Variable;

py::object or_none(const V& v) { return v.defined() ? py::cast(v) : py::none(); }

std::vector<V> variables(py::handle obj) {
  if (py::isinstance<V>(obj)) return {py::cast<V>(obj)};
  std::vector<V> out;
  for (py::handle h : obj) out.push_back(h.is_none() ? V() : py::cast<V>(h));
  return out;
}

// An ember.autograd.Function call: its backward is a Python callable, backward(grad_outputs,
// saved) -> one Tensor or None per input (ember/autograd.py maps PyTorch's ctx onto it).
class PyFunction : public ad::CustomFunction {
 public:
  PyFunction(std::string name, py::function backward)
      : name_(std::move(name)), backward_(std::move(backward)) {}
  ~PyFunction() override {
    // The last reference may go from C++ (a record freed by backward): drop it with the GIL.
    if (!Py_IsInitialized()) {
      backward_.release();  // the interpreter is gone: nothing to decrement
      return;
    }
    py::gil_scoped_acquire gil;
    backward_ = py::function();
  }
  std::string name() const override { return name_; }
  std::vector<V> backward(const std::vector<V>& grad_outputs,
                          const std::vector<V>& saved) override {
    py::gil_scoped_acquire gil;
    py::list grads, kept;
    for (const V& g : grad_outputs) grads.append(or_none(g));
    for (const V& s : saved) kept.append(py::cast(s));
    py::object out = backward_(grads, kept);
    return variables(out);
  }

 private:
  std::string name_;
  py::function backward_;
};

}  // namespace

void bind_autograd(py::module_& m, TensorClass& cls) {
  py::class_<ad::HookHandle>(m, "RemovableHandle",
                             "What register_hook returns: remove() unregisters the hook; as a "
                             "context manager it removes the hook on leaving the block.")
      .def("remove", &ad::HookHandle::remove, "Unregisters the hook (again: nothing happens).")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](ad::HookHandle& h, py::args) { h.remove(); });

  cls.def_property(
         "requires_grad", &V::requires_grad, [](V& x, bool flag) { x.set_requires_grad(flag); },
         "Whether backward computes a gradient for this tensor (settable on leaves).")
      .def(
          "requires_grad_",
          [](py::object self, bool flag) {
            py::cast<V&>(self).set_requires_grad(flag);
            return self;
          },
          py::arg("requires_grad") = true, "Sets requires_grad; returns self.")
      .def_property(
          "grad", [](const V& x) { return or_none(x.grad()); },
          [](const V& x, std::optional<V> g) {
            if (g) x.set_grad(*g);
            else x.zero_grad();
          },
          "The accumulated gradient, or None.")
      .def_property_readonly("is_leaf", &V::is_leaf, "Made by no recorded op.")
      .def_property_readonly(
          "op",
          [](const V& x) -> py::object {
            if (x.is_leaf()) return py::none();
            return py::str(x.op_name());
          },
          "The name of the recorded op that made this tensor, None for a leaf.")
      .def(
          "backward",
          [](const V& x, std::optional<V> gradient, bool retain_graph, bool create_graph) {
            x.backward(gradient.value_or(V()), retain_graph, create_graph);
          },
          py::arg("gradient") = py::none(), py::arg("retain_graph") = false,
          py::arg("create_graph") = false,
          "Accumulates d(self)/d(leaf) into the .grad of every leaf that requires grad; "
          "gradient weighs a self of more than one element.")
      .def("detach", &V::detach, "The same data without history (requires_grad False).")
      .def("retain_grad", &V::retain_grad, "Keeps .grad on a non-leaf after backward.")
      .def(
          "register_hook",
          [](const V& x, py::function fn) {
            return x.register_hook([fn](const V& grad) -> V {
              py::gil_scoped_acquire gil;
              py::object out = fn(grad);
              return out.is_none() ? V() : out.cast<V>();
            });
          },
          py::arg("hook"),
          "hook(grad) runs when backward computes this tensor's gradient; it may return a "
          "replacement tensor (None keeps the gradient). Returns a handle whose remove() "
          "unregisters the hook.")
      .def("_graph_str", &V::graph_str)
      .def("_graph_dot", &V::graph_dot)
      .def_property_readonly("_name", &V::name)
      .def(
          "_set_name",
          [](const V& x, std::string name, bool buffer) { x.set_name(std::move(name), buffer); },
          py::arg("name"), py::arg("buffer") = false,
          "The name the printed graph gives this leaf (nn.Module sets it for its parameters "
          "and buffers); buffer: printed as a buffer rather than an input.");

  m.def("is_grad_enabled", &ad::grad_enabled, "Whether ops on tensors are recorded.");
  m.def("set_grad_enabled", &ad::set_grad_enabled, py::arg("mode"), "Turns recording on or off.");
  m.def(
      "grad",
      [](py::handle outputs, py::handle inputs, py::handle grad_outputs,
         std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
        std::vector<V> result =
            ad::grad(variables(outputs), variables(inputs),
                     grad_outputs.is_none() ? std::vector<V>() : variables(grad_outputs),
                     retain_graph.value_or(create_graph), create_graph, allow_unused);
        py::tuple out(result.size());
        for (size_t i = 0; i < result.size(); ++i) out[i] = or_none(result[i]);
        return out;
      },
      py::arg("outputs"), py::arg("inputs"), py::arg("grad_outputs") = py::none(),
      py::arg("retain_graph") = py::none(), py::arg("create_graph") = false,
      py::arg("allow_unused") = false,
      "The gradients of outputs with respect to inputs, returned (a tuple) rather than "
      "accumulated; None for an unused input when allow_unused.");
  m.def(
      "_record_function",
      [](const std::string& name, py::function backward, const std::vector<V>& inputs,
         const std::vector<V>& outputs, const std::vector<int64_t>& saved_inputs,
         const std::vector<int64_t>& saved_outputs,
         const std::vector<int64_t>& non_differentiable) {
        std::vector<Tensor> tensors;
        for (const V& y : outputs) tensors.push_back(y.data());
        return ad::record_custom_function(std::make_shared<PyFunction>(name, std::move(backward)),
                                          inputs, std::move(tensors), saved_inputs, saved_outputs,
                                          non_differentiable);
      },
      py::arg("name"), py::arg("backward"), py::arg("inputs"), py::arg("outputs"),
      py::arg("saved_inputs"), py::arg("saved_outputs"), py::arg("non_differentiable"),
      "Records outputs computed from inputs as one node whose gradient calls backward "
      "(ember.autograd.Function.apply uses it).");
  m.def(
      "backward_cache_stats",
      [] {
        ad::BackwardCacheStats s = ad::backward_cache_stats();
        return py::dict(py::arg("built") = s.built, py::arg("reused") = s.reused);
      },
      "How many backward graphs were built and how many reused from the cache.");
}

}  // namespace ember::python
