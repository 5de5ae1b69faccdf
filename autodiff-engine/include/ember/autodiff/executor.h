// executor.h — runs a graph on concrete tensors.
//
// Values live in a table indexed by ValueId. Inputs and parameters are bound by the caller,
// constants come from the graph, and each node's outputs are computed by its op's core-runtime
// call on the devices its inputs are on (asynchronously on CUDA: nothing here synchronises).
// Each intermediate is dropped after its last use, so memory follows the liveness of values. A
// node none of whose outputs is read or fetched is not run at all, unless it does more than
// compute them: writes in place, communicates, draws random numbers, or a value hook watches.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ember/autodiff/graph.h"

namespace ember::autodiff {

// What one node did, for the tutorials' plots. Times are host wall-clock (on CUDA: the launch,
// unless RunOptions::synchronize); bytes are the allocator's in-use counter before and after.
struct NodeProfile {
  int32_t node = 0;
  std::string op;
  double milliseconds = 0;
  int64_t bytes_allocated = 0;  // in-use growth while the node ran
  int64_t bytes_freed = 0;      // released by dropping values after their last use
};

struct RunOptions {
  int32_t first_node = 0;  // run nodes [first_node, last_node); the values they read that
  int32_t last_node = -1;  // earlier nodes compute must be bound (-1: to the end)
  std::vector<NodeProfile>* profile = nullptr;  // filled per node run when given
  bool synchronize = false;  // synchronise the device after each node (honest per-node times)
  // Called with each value a node computes, before any later node reads it; may replace the
  // tensor (eager mode's gradient hooks).
  std::function<void(ValueId, Tensor&)> on_value;
};

// Runs the graph. `bound` holds a tensor for every input and parameter the nodes read (and for
// any value computed before first_node that they read); it is indexed by ValueId and may be
// longer than needed. Returns the tensors of `fetch`. A tensor of the wrong type for its value
// is an error naming the value.
std::vector<Tensor> run(const Graph& graph, std::vector<Tensor> bound,
                        const std::vector<ValueId>& fetch, const RunOptions& options = {});

// Runs the graph with its inputs and parameters bound in the order they were declared, and
// returns its outputs.
std::vector<Tensor> run(const Graph& graph, const std::vector<Tensor>& inputs);

}  // namespace ember::autodiff
