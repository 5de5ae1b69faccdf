// group_updates.cpp — the optimizer's per-parameter updates of a step joined into one node
// (passes.h).
//
// While a step is traced the optimizer records one update node per parameter (sgd_update,
// adam_update), and the hoisting pass moves each up to right after its gradient is ready. Eager
// mode updates all of them in one multi-tensor call (on CUDA one kernel launch); replayed node
// by node they are as many launches. This pass joins runs of updates of one kind and attributes
// into one node (sgd_update_group, adam_update_group) at the place of the run's last update. An
// update joins the run only when nothing after it up to that place (the run's other updates
// included) reads or writes what it writes (the parameter, its state) or writes what it reads
// (the grad, the hyper numbers), so every other node sees the same contents as before; and only
// when its grad is state (a .grad tensor) rather than a buffer of the arena, which waiting longer
// would keep alive.
#include <algorithm>

#include "../rewrite.h"
#include "ember/autodiff/compile/passes.h"
#include "ember/autodiff/op.h"

namespace ember::autodiff::compile {

namespace {

struct Kind {
  const char* update;
  const char* group;
  size_t state;  // state buffers after the parameter, before the grad
};
const Kind kKinds[] = {{"sgd_update", "sgd_update_group", 0},
                       {"adam_update", "adam_update_group", 2}};

const Kind* kind_of(const Node& node) {
  for (const Kind& kind : kKinds)
    if (node.op->name == kind.update) return &kind;
  return nullptr;
}

// The number of state buffers of an update node: sgd_update's momentum buffer is optional.
size_t state_of(const Node& node, const Kind& kind) {
  return kind.state > 0 ? kind.state : node.inputs.size() - 3;
}

}  // namespace

Program group_updates(const Program& program, Explain& explain) {
  const char* pass = "grouped updates";
  const Graph& g = *program.graph;
  const std::vector<ValueId> buffer = buffers(program);
  const std::vector<bool> outlives = outlives_step(program, buffer);

  // The buffers the open run's updates write (parameters, state) and read (grads, hyper).
  std::vector<char> written(size_t(g.num_values()), 0), read(size_t(g.num_values()), 0);
  // Whether `other` reads or writes a buffer the run writes, or writes one it reads: then the run
  // cannot wait past it.
  auto touches_run = [&](const Node& other) {
    for (ValueId v : other.inputs)
      if (written[size_t(buffer[size_t(v)])]) return true;
    for (ValueId v : other.outputs) {
      const bool writes = other.op->in_place || program.reuse.count(v) > 0;
      if (written[size_t(buffer[size_t(v)])] || (writes && read[size_t(buffer[size_t(v)])]))
        return true;
    }
    return false;
  };

  // Runs of updates, each closed when the next update cannot wait for it (or differs in kind).
  // Every update of a run waits until the run's last: nothing after it up to there, the run's
  // later updates included, may touch what it writes or write what it reads (so two updates of
  // one parameter never join: one multi-tensor call would update it twice at once). The nodes
  // after the run's last update are checked once, against all its updates together.
  std::vector<std::vector<int32_t>> runs;
  std::vector<int32_t> run;
  auto close = [&] {
    if (run.size() > 1) runs.push_back(run);
    for (int32_t m : run)
      for (ValueId in : g.node(m).inputs)
        written[size_t(buffer[size_t(in)])] = read[size_t(buffer[size_t(in)])] = 0;
    run.clear();
  };
  auto add_to_run = [&](int32_t k, size_t per) {
    run.push_back(k);
    const Node& u = g.node(k);
    for (size_t i = 0; i < u.inputs.size(); ++i)
      (i < per ? written : read)[size_t(buffer[size_t(u.inputs[i])])] = 1;
  };
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const Node& node = g.node(k);
    const Kind* kind = kind_of(node);
    if (!kind) continue;
    const size_t per = 1 + state_of(node, *kind);
    const ValueId grad = node.inputs[per];
    if (!outlives[size_t(buffer[size_t(grad)])]) {
      explain.add(pass, g.value_name(node.outputs[0]) + " = " + node.op->name +
                            " stays alone: its grad is a buffer of the step, not a .grad tensor");
      close();
      continue;
    }
    if (!run.empty()) {
      const Node& first = g.node(run[0]);
      bool joins = first.op == node.op && first.attrs == node.attrs &&
                   first.inputs.size() == node.inputs.size();
      for (int32_t j = run.back() + 1; j <= k && joins; ++j) joins = !touches_run(g.node(j));
      if (!joins) close();
    }
    add_to_run(k, per);
  }
  close();

  std::vector<int32_t> run_of(size_t(g.num_nodes()), -1);
  for (size_t r = 0; r < runs.size(); ++r)
    for (int32_t k : runs[r]) run_of[size_t(k)] = int32_t(r);
  Rewriter rw(program);
  for (int32_t k = 0; k < g.num_nodes(); ++k) {
    const int32_t r = run_of[size_t(k)];
    if (r < 0) {
      rw.copy(k);
      continue;
    }
    const std::vector<int32_t>& members = runs[size_t(r)];
    if (k != members.back()) {  // joins the group node at the run's last update
      rw.drop(k, {});
      continue;
    }
    const Node& last = g.node(k);
    const Kind& kind = *kind_of(last);
    const size_t per = 1 + state_of(last, kind);
    std::vector<ValueId> inputs, grads, hypers, stands_for;
    for (int32_t m : members) {
      const Node& u = g.node(m);
      inputs.insert(inputs.end(), u.inputs.begin(), u.inputs.begin() + long(per));
      grads.push_back(u.inputs[per]);
      hypers.push_back(u.inputs[per + 1]);
      stands_for.insert(stands_for.end(), u.outputs.begin(), u.outputs.end());
    }
    inputs.insert(inputs.end(), grads.begin(), grads.end());
    inputs.insert(inputs.end(), hypers.begin(), hypers.end());
    Attrs attrs = last.attrs;
    attrs.set("params", int64_t(members.size()));
    rw.replace(k, op_def(kind.group), inputs, attrs, stands_for);
    explain.add(pass, std::to_string(members.size()) + " " + kind.update + " nodes (" +
                          g.value_name(g.node(members.front()).outputs[0]) + " ... " +
                          g.value_name(last.outputs[0]) + ") joined into one " + kind.group +
                          ": one multi-tensor update per run of equal hyper numbers");
  }
  if (runs.empty()) explain.add(pass, "(no run of two or more updates)");
  Program out = rw.finish();
  explain.after(pass, out);
  return out;
}

}  // namespace ember::autodiff::compile
