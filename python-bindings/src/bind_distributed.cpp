// bind_distributed.cpp — ember._core.distributed: the rendezvous store, process groups and their
// collectives, and the gradient reducer of data parallelism. ember/distributed/ adds PyTorch's
// module-level habits (init_process_group, all_reduce(tensor), ReduceOp.SUM, ...).
//
// Every call that may wait for other processes releases the GIL.
#include <ember/autodiff/collective.h>
#include <ember/autodiff/compile/trace.h>
#include <ember/autodiff/reducer.h>
#include <ember/distributed.h>
#include <ember/tcp_store.h>

#include "bindings.h"

namespace ember::python {

namespace {

namespace dist = ember::distributed;
using Release = py::call_guard<py::gil_scoped_release>;

dist::ReduceOp reduce_op(const std::string& name) {
  if (name == "sum") return dist::ReduceOp::Sum;
  if (name == "avg") return dist::ReduceOp::Avg;
  if (name == "max") return dist::ReduceOp::Max;
  if (name == "min") return dist::ReduceOp::Min;
  throw ValueError("ember.distributed",
                   "unknown reduce op '" + name + "'; expected ReduceOp.SUM, AVG, MAX or MIN");
}

dist::Milliseconds milliseconds(double seconds) {
  return dist::Milliseconds(int64_t(seconds * 1000.0));
}

// A tensor argument's data, for collectives that write into it: under no recording, as
// PyTorch's collectives are.
Tensor data_of(py::handle obj, const char* op) {
  if (!is_tensor(obj)) not_a_tensor(op, obj);
  return tensor_of(obj).data();
}

py::bytes to_bytes(const std::vector<uint8_t>& v) {
  return py::bytes(reinterpret_cast<const char*>(v.data()), v.size());
}

}  // namespace

void bind_distributed(py::module_& parent) {
  py::module_ m = parent.def_submodule("distributed", "Process groups and collectives");

  static PyObject* base_error = [&] {
    py::object ember_error = parent.attr("EmberError");
    PyObject* cls = PyErr_NewExceptionWithDoc(
        "ember.distributed.DistributedError",
        "A peer closed its connection, the store could not be reached, or the ranks disagree.",
        ember_error.ptr(), nullptr);
    return cls;
  }();
  static PyObject* timeout_error = [&] {
    py::tuple bases = py::make_tuple(py::reinterpret_borrow<py::object>(base_error),
                                     py::reinterpret_borrow<py::object>(PyExc_TimeoutError));
    return PyErr_NewExceptionWithDoc(
        "ember.distributed.DistributedTimeoutError",
        "A rank did not arrive, or did not take part in a collective, within the timeout.",
        bases.ptr(), nullptr);
  }();
  m.attr("DistributedError") = py::reinterpret_borrow<py::object>(base_error);
  m.attr("DistributedTimeoutError") = py::reinterpret_borrow<py::object>(timeout_error);
  // Registered after bind_errors' translator, so tried before it.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const dist::DistributedTimeoutError& e) {
      PyErr_SetString(timeout_error, e.what());
    } catch (const dist::DistributedError& e) {
      PyErr_SetString(base_error, e.what());
    }
  });

  py::class_<dist::TCPStore, std::shared_ptr<dist::TCPStore>>(
      m, "TCPStore", "The key-value store the ranks meet through; rank 0 serves it.")
      .def(py::init([](const std::string& host, int port, bool is_server, double timeout) {
             return std::make_shared<dist::TCPStore>(host, port, is_server, milliseconds(timeout));
           }),
           py::arg("host"), py::arg("port"), py::arg("is_server"), py::arg("timeout") = 300.0,
           Release())
      .def(
          "set",
          [](dist::TCPStore& s, const std::string& key, py::bytes value) {
            std::string v = value;
            py::gil_scoped_release release;
            s.set(key, std::vector<uint8_t>(v.begin(), v.end()));
          },
          py::arg("key"), py::arg("value"))
      .def(
          "get",
          [](dist::TCPStore& s, const std::string& key) {
            std::vector<uint8_t> v;
            {
              py::gil_scoped_release release;
              v = s.get(key);
            }
            return to_bytes(v);
          },
          py::arg("key"))
      .def("add", &dist::TCPStore::add, py::arg("key"), py::arg("amount"), Release())
      .def("check", &dist::TCPStore::check, py::arg("key"), Release())
      .def(
          "wait",
          [](dist::TCPStore& s, const std::vector<std::string>& keys, double timeout) {
            s.wait(keys, milliseconds(timeout));
          },
          py::arg("keys"), py::arg("timeout"), Release())
      .def_property_readonly("port", &dist::TCPStore::port)
      .def_property_readonly("host", &dist::TCPStore::host);

  py::class_<dist::Work, std::shared_ptr<dist::Work>>(
      m, "Work", "A collective started with async_op=True: wait() for it.")
      .def("wait", &dist::Work::wait, Release())
      .def("is_completed", &dist::Work::is_completed);

  py::class_<dist::ProcessGroup, std::shared_ptr<dist::ProcessGroup>>(
      m, "ProcessGroup", "A group of ranks and its collectives.")
      .def_property_readonly("rank", &dist::ProcessGroup::rank)
      .def_property_readonly("world_size", &dist::ProcessGroup::world_size)
      .def_property_readonly("backend", &dist::ProcessGroup::backend)
      .def_property_readonly("sequence_number", &dist::ProcessGroup::sequence_number)
      .def_property_readonly("timeout",
                             [](const dist::ProcessGroup& g) {
                               return double(g.timeout().count()) / 1000.0;
                             })
      .def(
          "all_reduce",
          [](dist::ProcessGroup& g, py::handle t, const std::string& op, bool async_op) {
            Tensor x = data_of(t, "all_reduce");
            py::gil_scoped_release release;
            return g.all_reduce(x, reduce_op(op), async_op);
          },
          py::arg("tensor"), py::arg("op") = "sum", py::arg("async_op") = false)
      .def(
          "broadcast",
          [](dist::ProcessGroup& g, py::handle t, int src, bool async_op) {
            Tensor x = data_of(t, "broadcast");
            py::gil_scoped_release release;
            return g.broadcast(x, src, async_op);
          },
          py::arg("tensor"), py::arg("src") = 0, py::arg("async_op") = false)
      .def(
          "all_gather",
          [](dist::ProcessGroup& g, py::handle out, py::handle in, bool async_op) {
            Tensor o = data_of(out, "all_gather"), i = data_of(in, "all_gather");
            py::gil_scoped_release release;
            return g.all_gather(o, i, async_op);
          },
          py::arg("output"), py::arg("input"), py::arg("async_op") = false)
      .def(
          "reduce_scatter",
          [](dist::ProcessGroup& g, py::handle out, py::handle in, const std::string& op,
             bool async_op) {
            Tensor o = data_of(out, "reduce_scatter"), i = data_of(in, "reduce_scatter");
            py::gil_scoped_release release;
            return g.reduce_scatter(o, i, reduce_op(op), async_op);
          },
          py::arg("output"), py::arg("input"), py::arg("op") = "sum", py::arg("async_op") = false)
      .def(
          "barrier", [](dist::ProcessGroup& g, bool async_op) { return g.barrier(async_op); },
          py::arg("async_op") = false, Release());

  m.def(
      "new_process_group",
      [](const std::string& backend, std::shared_ptr<dist::TCPStore> store, int rank,
         int world_size, double timeout) {
        return dist::new_process_group(backend, std::move(store), rank, world_size,
                                       milliseconds(timeout));
      },
      py::arg("backend"), py::arg("store"), py::arg("rank"), py::arg("world_size"),
      py::arg("timeout"), Release());
  m.def("backend_available", &dist::backend_available, py::arg("backend"));
  // A buffer's broadcast as an op, which a compiled step records and replays (a plain
  // ProcessGroup.broadcast is a write the tracer cannot see).
  m.def(
      "_broadcast_buffer",
      [](std::shared_ptr<dist::ProcessGroup> group, py::handle t, int64_t root) {
        if (!is_tensor(t)) not_a_tensor("DistributedDataParallel", t);
        const Variable v = tensor_of(t);
        autodiff::compile::see_variable(v);  // a buffer met first here: state of the step
        autodiff::collective::broadcast(group, v.data(), root);
      },
      py::arg("group"), py::arg("tensor"), py::arg("root") = 0);

  py::class_<autodiff::Reducer>(m, "Reducer",
                                "Averages gradients over the group in buckets, overlapped with "
                                "backward (DistributedDataParallel's engine).")
      .def(py::init([](py::list params, std::shared_ptr<dist::ProcessGroup> group,
                       int64_t cap_bytes, int64_t first_cap_bytes) {
             std::vector<Variable> vars;
             for (py::handle p : params) {
               if (!is_tensor(p)) not_a_tensor("DistributedDataParallel", p);
               vars.push_back(tensor_of(p));
             }
             return std::make_unique<autodiff::Reducer>(std::move(vars), std::move(group),
                                                        cap_bytes, first_cap_bytes);
           }),
           py::arg("params"), py::arg("group"),
           py::arg("cap_bytes") = autodiff::Reducer::kDefaultCapBytes,
           py::arg("first_cap_bytes") = autodiff::Reducer::kDefaultFirstCapBytes)
      .def_property("sync", &autodiff::Reducer::sync, &autodiff::Reducer::set_sync)
      .def("buckets",
           [](const autodiff::Reducer& r) {
             std::vector<std::vector<int32_t>> out;
             for (const auto& b : r.buckets()) out.push_back(b.params);
             return out;
           })
      .def("events", [](const autodiff::Reducer& r) {
        std::vector<std::pair<std::string, int64_t>> out;
        for (const auto& e : r.events()) out.emplace_back(e.what, e.microseconds);
        return out;
      });
}

}  // namespace ember::python
