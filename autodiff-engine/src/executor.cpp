// executor.cpp — runs nodes in order over a table of tensors, dropping each value after its last
// use (see executor.h).
#include "ember/autodiff/executor.h"

#include <algorithm>
#include <chrono>

#include "debug_log.h"
#include "ember/allocator.h"
#include "ember/autodiff/compile/trace.h"
#include "ember/autodiff/op.h"
#include "ember/device.h"

namespace ember::autodiff {

namespace {

void check_bound(const Graph& g, ValueId id, const Tensor& t) {
  const Value& v = g.value(id);
  if (!t.defined())
    throw ValueError("run", "value " + g.value_name(id) + ":" + v.type.str() +
                                " is read but was not bound to a tensor");
  if (type_of(t) != v.type)
    throw ShapeError("run", "value " + g.value_name(id) + " is " + v.type.str() +
                                " but was bound to a tensor of " + type_of(t).str());
}

int64_t in_use(const Device& d) { return memory_stats(d).in_use; }

}  // namespace

std::vector<Tensor> run(const Graph& graph, std::vector<Tensor> env,
                        const std::vector<ValueId>& fetch, const RunOptions& options) {
  const int32_t first = options.first_node;
  const int32_t last = options.last_node < 0 ? graph.num_nodes() : options.last_node;
  env.resize(size_t(graph.num_values()));

  // A node none of whose outputs is read or fetched only computes what would be dropped at once
  // (the gradient driver leaves some: the slice_backward nodes whose pieces it joined with a
  // cat): skipped, unless it does more than compute its outputs (writes in place, communicates,
  // draws random numbers, or has a value hook to call). last_use[v]: the last node run (in
  // [first, last)) reading v; fetched values are never dropped. Both from the end backwards, so
  // that what only skipped nodes read is skipped too.
  std::vector<int32_t> last_use(env.size(), -1);
  for (ValueId id : fetch) last_use[size_t(id)] = INT32_MAX;
  std::vector<bool> skipped(size_t(std::max(last - first, 0)), false);
  for (int32_t k = last - 1; k >= first; --k) {
    const Node& node = graph.node(k);
    const bool effects = node.outputs.empty() || node.op->in_place || node.op->collective ||
                         node.op->random || options.on_value;
    const bool unread = std::all_of(node.outputs.begin(), node.outputs.end(),
                                    [&](ValueId out) { return last_use[size_t(out)] < 0; });
    if (!effects && unread) {
      skipped[size_t(k - first)] = true;
      continue;
    }
    for (ValueId in : node.inputs) last_use[size_t(in)] = std::max(last_use[size_t(in)], k);
  }

  for (int32_t k = first; k < last; ++k) {
    if (skipped[size_t(k - first)]) continue;
    const Node& node = graph.node(k);
    std::vector<Tensor> inputs;
    inputs.reserve(node.inputs.size());
    for (ValueId in : node.inputs) {
      Tensor& t = env[size_t(in)];
      if (graph.value(in).kind == ValueKind::Constant) {
        if (!t.defined()) t = graph.value(in).constant;
        compile::see_constant(t);
      }
      check_bound(graph, in, t);
      inputs.push_back(t);
    }
    const Device device = inputs.empty() ? Device() : inputs[0].device();
    const auto start = std::chrono::steady_clock::now();
    const int64_t before = options.profile ? in_use(device) : 0;

    std::vector<Tensor> outputs = run_op(*node.op, inputs, node.attrs);
    if (debug_enabled()) log_op(node.op->name, inputs, outputs, start);
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      Tensor& slot = env[size_t(node.outputs[o])];
      slot = std::move(outputs[o]);
      if (options.on_value) options.on_value(node.outputs[o], slot);
    }
    inputs.clear();
    if (options.synchronize && device.type == DeviceType::CUDA) synchronize(device);
    const int64_t after_run = options.profile ? in_use(device) : 0;

    // Drop what no later node reads (outputs nobody reads included).
    for (ValueId in : node.inputs)
      if (last_use[size_t(in)] == k) env[size_t(in)] = Tensor();
    for (ValueId out : node.outputs)
      if (last_use[size_t(out)] < k) env[size_t(out)] = Tensor();

    if (options.profile) {
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      options.profile->push_back(
          NodeProfile{k, node.op->name, ms, after_run - before, after_run - in_use(device)});
    }
  }

  std::vector<Tensor> result;
  result.reserve(fetch.size());
  for (ValueId id : fetch) {
    Tensor& t = env[size_t(id)];
    if (!t.defined() && graph.value(id).kind == ValueKind::Constant) t = graph.value(id).constant;
    check_bound(graph, id, t);
    result.push_back(t);
  }
  return result;
}

std::vector<Tensor> run(const Graph& graph, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> env(size_t(graph.num_values()));
  size_t next = 0;
  for (ValueId id = 0; id < graph.num_values(); ++id) {
    const ValueKind kind = graph.value(id).kind;
    if (kind == ValueKind::Computed || kind == ValueKind::Constant) continue;
    if (next == inputs.size())
      throw ValueError("run", "got " + std::to_string(inputs.size()) +
                                  " tensors but the graph has more inputs and parameters");
    env[size_t(id)] = inputs[next++];
  }
  if (next != inputs.size())
    throw ValueError("run", "got " + std::to_string(inputs.size()) + " tensors for " +
                                std::to_string(next) + " inputs and parameters");
  return run(graph, std::move(env), graph.outputs());
}

}  // namespace ember::autodiff
