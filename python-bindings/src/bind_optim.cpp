// bind_optim.cpp — autodiff-engine's training helpers as ember._core classes and functions:
// the optimizers (SGD, Adam, AdamW, RMSprop, Adadelta, Adagrad, Adamax, NAdam, RAdam), the
// learning-rate schedules, gradient clipping, the parameter initialisers (init::) and the state of
// the default random generator. ember.optim and ember.nn.init wrap them with PyTorch's argument
// conventions; every formula runs in C++.
#include <ember/autodiff/init.h>
#include <ember/autodiff/optim.h>
#include <ember/error.h>

#include "bindings.h"
#include "generator.h"

namespace ember::python {

namespace {

namespace opt = ember::autodiff::optim;
namespace init = ember::autodiff::init;
using Schedule = std::shared_ptr<opt::LRScheduler>;

// {"state": {index: {"step": int, buffer: Tensor, scalar: float}}, "param_groups": [{option:
// float, "params": [index]}]}: PyTorch's optimizer state_dict, with the engine's option names.
py::dict optimizer_state(const opt::Optimizer& o) {
  const opt::OptimizerState saved = o.state_dict();
  py::dict state;
  for (const auto& [index, s] : saved.state) {
    py::dict entry;
    entry["step"] = s.step;
    for (const auto& [name, buffer] : s.buffers) entry[name.c_str()] = Variable(buffer);
    for (const auto& [name, value] : s.scalars) entry[name.c_str()] = value;
    state[py::int_(index)] = entry;
  }
  py::list groups;
  for (const auto& g : saved.param_groups) {
    py::dict group;
    for (const auto& [name, value] : g.options) group[name.c_str()] = value;
    group["params"] = g.params;
    groups.append(group);
  }
  py::dict out;
  out["state"] = state;
  out["param_groups"] = groups;
  return out;
}

opt::OptimizerState optimizer_state_from(const opt::Optimizer& o, const py::dict& d) {
  const std::string op = o.name() + ".load_state_dict";
  if (!d.contains("state") || !d.contains("param_groups"))
    throw ember::ValueError(op,
                            "a state_dict has the keys 'state' and 'param_groups'; pass what "
                            "optimizer.state_dict() returned");
  opt::OptimizerState saved;
  for (py::handle g : d["param_groups"]) {
    opt::OptimizerState::Group group;
    for (auto [key, value] : py::cast<py::dict>(g)) {
      const std::string name = py::cast<std::string>(key);
      if (name == "params") group.params = py::cast<std::vector<int64_t>>(value);
      else group.options[name] = py::cast<double>(value);
    }
    saved.param_groups.push_back(std::move(group));
  }
  for (auto [key, value] : py::cast<py::dict>(d["state"])) {
    opt::ParamState s;
    for (auto [name, item] : py::cast<py::dict>(value)) {
      const std::string n = py::cast<std::string>(name);
      if (n == "step") s.step = py::cast<int64_t>(item);
      else if (py::isinstance<py::float_>(item)) s.scalars[n] = py::cast<double>(item);
      else s.buffers[n] = py::cast<const Variable&>(item).data();
    }
    saved.state[py::cast<int64_t>(key)] = std::move(s);
  }
  return saved;
}

// Sets one option of one group, checked as load_state_dict checks a saved group.
void set_option(opt::Optimizer& o, size_t group, const std::string& name, double value) {
  if (name == "lr") return o.set_lr(value, group);
  opt::OptimizerState s = o.state_dict();
  if (group >= s.param_groups.size())
    throw ember::IndexError(o.name() + ".param_groups", "group " + std::to_string(group) + " of " +
                                                            std::to_string(s.param_groups.size()));
  s.param_groups[group].options[name] = value;
  o.load_state_dict(s);
}

py::dict schedule_state(const opt::SchedulerState& s) {
  py::dict d;
  d["last_epoch"] = s.last_epoch;
  d["_step_count"] = s.step_count;
  d["base_lrs"] = s.base_lrs;
  d["_last_lr"] = s.last_lr;
  py::list children;
  for (const auto& c : s.children) children.append(schedule_state(c));
  d["children"] = children;
  return d;
}

opt::SchedulerState schedule_state_from(const py::dict& d) {
  opt::SchedulerState s;
  s.last_epoch = py::cast<int64_t>(d["last_epoch"]);
  s.step_count = py::cast<int64_t>(d["_step_count"]);
  s.base_lrs = py::cast<std::vector<double>>(d["base_lrs"]);
  s.last_lr = py::cast<std::vector<double>>(d["_last_lr"]);
  if (d.contains("children"))
    for (py::handle c : d["children"])
      s.children.push_back(schedule_state_from(c.cast<py::dict>()));
  return s;
}

// One optimizer class, made from (params, options) as every optimizer is.
template <class T, class Base = opt::Optimizer>
void bind_optimizer(py::module_& m, const char* name) {
  auto make = [](std::vector<Variable> params, const opt::Options& options) {
    return new T(std::move(params), options);
  };
  py::class_<T, Base>(m, name).def(py::init(make), py::arg("params"), py::arg("options"));
}

void bind_optimizers(py::module_& m) {
  py::class_<opt::Optimizer>(m, "_Optimizer",
                             "An autodiff-engine optimizer (ember.optim wraps it).")
      .def_property_readonly("name", &opt::Optimizer::name)
      .def_property_readonly("defaults", &opt::Optimizer::defaults)
      .def(
          "add_param_group",
          [](opt::Optimizer& o, std::vector<Variable> params, const opt::Options& options) {
            o.add_param_group(std::move(params), options);
          },
          py::arg("params"), py::arg("options") = opt::Options{})
      .def("group_count", [](const opt::Optimizer& o) { return o.param_groups().size(); })
      .def(
          "group_options",
          [](const opt::Optimizer& o, size_t group) {
            if (group >= o.param_groups().size())
              throw ember::IndexError(o.name() + ".param_groups",
                                      "no group " + std::to_string(group));
            return o.param_groups()[group].options;
          },
          py::arg("group"), "A copy of one group's options.")
      .def("set_option", &set_option, py::arg("group"), py::arg("name"), py::arg("value"),
           "Sets one option of one group (checked).")
      .def("zero_grad", &opt::Optimizer::zero_grad, "Drops every parameter's grad.")
      .def("step", &opt::Optimizer::step, "Updates every parameter that has a grad.")
      .def("state_dict", &optimizer_state)
      .def(
          "load_state_dict",
          [](opt::Optimizer& o, const py::dict& d) {
            o.load_state_dict(optimizer_state_from(o, d));
          },
          py::arg("state_dict"));

  bind_optimizer<opt::SGD>(m, "_SGD");
  bind_optimizer<opt::Adam>(m, "_Adam");
  bind_optimizer<opt::AdamW, opt::Adam>(m, "_AdamW");
  bind_optimizer<opt::RMSprop>(m, "_RMSprop");
  bind_optimizer<opt::Adadelta>(m, "_Adadelta");
  bind_optimizer<opt::Adagrad>(m, "_Adagrad");
  bind_optimizer<opt::Adamax>(m, "_Adamax");
  bind_optimizer<opt::NAdam>(m, "_NAdam");
  bind_optimizer<opt::RAdam>(m, "_RAdam");
}

// ReduceLROnPlateau steps on a metric, so it is not an _LRScheduler; its state_dict is
// {"last_epoch", "best", "num_bad_epochs", "cooldown_counter", "_last_lr"}.
void bind_plateau(py::module_& m) {
  py::class_<opt::ReduceLROnPlateau>(m, "_ReduceLROnPlateau", "An autodiff-engine schedule.")
      .def(py::init<opt::Optimizer&, const std::string&, double, int64_t, double,
                    const std::string&, int64_t, std::vector<double>, double>(),
           py::keep_alive<1, 2>(), py::arg("optimizer"), py::arg("mode"), py::arg("factor"),
           py::arg("patience"), py::arg("threshold"), py::arg("threshold_mode"),
           py::arg("cooldown"), py::arg("min_lrs"), py::arg("eps"))
      .def("step", &opt::ReduceLROnPlateau::step, py::arg("metric"))
      .def("get_last_lr", &opt::ReduceLROnPlateau::get_last_lr)
      .def_property_readonly("last_epoch", &opt::ReduceLROnPlateau::last_epoch)
      .def_property_readonly("best", &opt::ReduceLROnPlateau::best)
      .def_property_readonly("num_bad_epochs", &opt::ReduceLROnPlateau::num_bad_epochs)
      .def_property_readonly("in_cooldown", &opt::ReduceLROnPlateau::in_cooldown)
      .def("state_dict",
           [](const opt::ReduceLROnPlateau& s) {
             const opt::PlateauState& st = s.state_dict();
             py::dict d;
             d["last_epoch"] = st.last_epoch;
             d["best"] = st.best;
             d["num_bad_epochs"] = st.num_bad_epochs;
             d["cooldown_counter"] = st.cooldown_counter;
             d["_last_lr"] = st.last_lr;
             return d;
           })
      .def(
          "load_state_dict",
          [](opt::ReduceLROnPlateau& s, const py::dict& d) {
            opt::PlateauState st;
            st.last_epoch = py::cast<int64_t>(d["last_epoch"]);
            st.best = py::cast<double>(d["best"]);
            st.num_bad_epochs = py::cast<int64_t>(d["num_bad_epochs"]);
            st.cooldown_counter = py::cast<int64_t>(d["cooldown_counter"]);
            st.last_lr = py::cast<std::vector<double>>(d["_last_lr"]);
            s.load_state_dict(st);
          },
          py::arg("state_dict"));
}

void bind_schedules(py::module_& m) {
  using O = opt::Optimizer;
  py::class_<opt::LRScheduler, Schedule>(m, "_LRScheduler", "An autodiff-engine schedule.")
      .def("step", &opt::LRScheduler::step, "To the next epoch: sets every group's lr.")
      .def("get_last_lr", &opt::LRScheduler::get_last_lr)
      .def_property_readonly("last_epoch", &opt::LRScheduler::last_epoch)
      .def_property_readonly("base_lrs", &opt::LRScheduler::base_lrs)
      .def("state_dict", [](const opt::LRScheduler& s) { return schedule_state(s.state_dict()); })
      .def(
          "load_state_dict",
          [](opt::LRScheduler& s, const py::dict& d) { s.load_state_dict(schedule_state_from(d)); },
          py::arg("state_dict"));
  // Each schedule keeps its optimizer alive (the engine needs it to outlive the schedule).
  const auto alive = py::keep_alive<1, 2>();
  py::class_<opt::StepLR, opt::LRScheduler, std::shared_ptr<opt::StepLR>>(m, "_StepLR")
      .def(py::init<O&, int64_t, double>(), alive, py::arg("optimizer"), py::arg("step_size"),
           py::arg("gamma"));
  py::class_<opt::MultiStepLR, opt::LRScheduler, std::shared_ptr<opt::MultiStepLR>>(m,
                                                                                    "_MultiStepLR")
      .def(py::init<O&, const std::vector<int64_t>&, double>(), alive, py::arg("optimizer"),
           py::arg("milestones"), py::arg("gamma"));
  py::class_<opt::ExponentialLR, opt::LRScheduler, std::shared_ptr<opt::ExponentialLR>>(
      m, "_ExponentialLR")
      .def(py::init<O&, double>(), alive, py::arg("optimizer"), py::arg("gamma"));
  py::class_<opt::CosineAnnealingLR, opt::LRScheduler, std::shared_ptr<opt::CosineAnnealingLR>>(
      m, "_CosineAnnealingLR")
      .def(py::init<O&, int64_t, double>(), alive, py::arg("optimizer"), py::arg("t_max"),
           py::arg("eta_min"));
  py::class_<opt::LinearLR, opt::LRScheduler, std::shared_ptr<opt::LinearLR>>(m, "_LinearLR")
      .def(py::init<O&, double, double, int64_t>(), alive, py::arg("optimizer"),
           py::arg("start_factor"), py::arg("end_factor"), py::arg("total_iters"));
  py::class_<opt::SequentialLR, opt::LRScheduler, std::shared_ptr<opt::SequentialLR>>(
      m, "_SequentialLR")
      .def(py::init<O&, std::vector<Schedule>, std::vector<int64_t>>(), alive, py::arg("optimizer"),
           py::arg("schedulers"), py::arg("milestones"));
  py::class_<opt::ChainedScheduler, opt::LRScheduler, std::shared_ptr<opt::ChainedScheduler>>(
      m, "_ChainedScheduler")
      .def(py::init<O&, std::vector<Schedule>>(), alive, py::arg("optimizer"),
           py::arg("schedulers"));
  py::class_<opt::OneCycleLR, opt::LRScheduler, std::shared_ptr<opt::OneCycleLR>>(m, "_OneCycleLR")
      .def(py::init<O&, std::vector<double>, int64_t, double, const std::string&, bool,
                    std::vector<double>, std::vector<double>, double, double, bool>(),
           alive, py::arg("optimizer"), py::arg("max_lrs"), py::arg("total_steps"),
           py::arg("pct_start"), py::arg("anneal_strategy"), py::arg("cycle_momentum"),
           py::arg("base_momenta"), py::arg("max_momenta"), py::arg("div_factor"),
           py::arg("final_div_factor"), py::arg("three_phase"))
      .def_property_readonly("total_steps", &opt::OneCycleLR::total_steps);
  bind_plateau(m);
}

// A random initialiser as Python calls it: f(tensor, args..., generator) on the tensor of a
// Variable, drawing from the ember.Generator `generator` (the default generator when it is None),
// and returning the Variable.
// Args: the initialiser's own arguments, between the tensor and the generator.
template <class... Args, class F> auto random_init(F f, const char* name) {
  return [f, name](const Variable& t, Args... args, py::handle generator) {
    return f(t.data(), args..., generator_from_object(generator, name)), t;
  };
}

void bind_init(py::module_& m) {
  m.def(
      "_calculate_fan_in_and_fan_out",
      [](const Variable& t) {
        init::Fans f = init::calculate_fan_in_and_fan_out(t.data());
        return py::make_tuple(f.fan_in, f.fan_out);
      },
      py::arg("tensor"), "(fan_in, fan_out) of a weight [out, in, k...].");
  m.def("_calculate_gain", &init::calculate_gain, py::arg("nonlinearity"),
        py::arg("param") = py::none());
  // Each initialiser fills its Tensor argument in place (no history) and returns it.
  using S = const std::string&;
  const auto gen = py::arg("generator") = py::none();
  m.def("_uniform_", random_init<double, double>(init::uniform_, "uniform_"), py::arg("tensor"),
        py::arg("a"), py::arg("b"), gen);
  m.def("_normal_", random_init<double, double>(init::normal_, "normal_"), py::arg("tensor"),
        py::arg("mean"), py::arg("std"), gen);
  m.def(
      "_constant_", [](const Variable& t, double v) { return init::constant_(t.data(), v), t; },
      py::arg("tensor"), py::arg("val"));
  m.def("_xavier_uniform_", random_init<double>(init::xavier_uniform_, "xavier_uniform_"),
        py::arg("tensor"), py::arg("gain"), gen);
  m.def("_xavier_normal_", random_init<double>(init::xavier_normal_, "xavier_normal_"),
        py::arg("tensor"), py::arg("gain"), gen);
  m.def("_kaiming_uniform_", random_init<double, S, S>(init::kaiming_uniform_, "kaiming_uniform_"),
        py::arg("tensor"), py::arg("a"), py::arg("mode"), py::arg("nonlinearity"), gen);
  m.def("_kaiming_normal_", random_init<double, S, S>(init::kaiming_normal_, "kaiming_normal_"),
        py::arg("tensor"), py::arg("a"), py::arg("mode"), py::arg("nonlinearity"), gen);
  m.def("_orthogonal_", random_init<double>(init::orthogonal_, "orthogonal_"), py::arg("tensor"),
        py::arg("gain"), gen);
}

}  // namespace

void bind_optim(py::module_& m) {
  bind_optimizers(m);
  bind_schedules(m);
  bind_init(m);
  m.def(
      "_clip_grad_norm_",
      [](const std::vector<Variable>& params, double max_norm, double norm_type, bool nonfinite) {
        return Variable(opt::clip_grad_norm_(params, max_norm, norm_type, nonfinite));
      },
      py::arg("parameters"), py::arg("max_norm"), py::arg("norm_type"),
      py::arg("error_if_nonfinite"));
  m.def("_clip_grad_value_", &opt::clip_grad_value_, py::arg("parameters"), py::arg("clip_value"));
  m.def(
      "get_rng_state",
      [] {
        const Generator& g = default_generator();
        py::dict d;
        d["seed"] = g.seed;
        d["offset"] = g.offset;
        return d;
      },
      "The default random generator's state, {'seed': int, 'offset': int} (a plain copy).");
  m.def(
      "set_rng_state",
      [](const py::dict& state) {
        Generator& g = default_generator();
        g.seed = py::cast<uint64_t>(state["seed"]);
        g.offset = py::cast<uint64_t>(state["offset"]);
      },
      py::arg("state"), "Restores a state from get_rng_state(): the same random tensors follow.");
}

}  // namespace ember::python
