// reducer.h — data parallelism's gradient averaging, overlapped with backward (what PyTorch's
// DistributedDataParallel does in its C++ reducer).
//
// The parameters' gradients are gathered into buckets (about 25 MB; the first smaller, so that
// communication starts early) in the order the backward graph computes them. During backward, a
// gradient hook copies each gradient into its place in its bucket; the moment a bucket's last
// gradient is in, its all-reduce (average) starts asynchronously on the process group, while
// backward goes on computing the gradients of earlier layers. When backward ends, the reducer
// waits for the buckets and writes the averages into the parameters' .grad.
//
// Parameters that get no gradient are known from the backward graph itself (BackwardObserver:
// no flag to set): their place in the bucket holds zeros, or the gradient they accumulated
// before, and one flag per parameter rides along in its bucket, so that every rank learns which
// parameters got a gradient on some rank. A parameter no rank used keeps .grad undefined, as
// in one process.
//
// set_sync(false) (Python: DistributedDataParallel.no_sync()) lets backward accumulate locally;
// the next backward with sync on reduces the sum accumulated since. A backward that reaches none
// of the parameters (of another model, say) is left alone.
//
// Compiled mode (ember.compile): while a step is traced, the reducer records graph nodes instead
// of calling the group (reducer_trace.cpp): the moment a bucket's last gradient is in, an
// all_reduce_start node (ember/autodiff/collective.h) that flattens the bucket and starts its
// all-reduce; when backward ends, per bucket an all_reduce_wait node whose averages are written
// into .grad, before anything the step does after backward (the optimizer's update). A replay
// runs those nodes where the trace put them, so communication still overlaps backward; the
// reducer itself plays no part in a replay. Which parameters some rank used is read when
// tracing and fixed in the plan. The sync flag is a guard of the step: a step traced under
// no_sync has no all-reduce nodes, and one traced with sync on is not replayed under no_sync
// (each traces its own plan). The guard holds the flag's value when the step begins, so a step
// that uses no_sync inside itself replays too. As in eager mode every rank must run the same
// collectives in the same order: every rank must trace (or replay) at the same calls, which the
// same step with the same guards on every rank does; a rank that does not is the group's
// DistributedError, not a hang.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/autodiff/backward_observer.h"
#include "ember/autodiff/variable.h"
#include "ember/distributed.h"

namespace ember::autodiff {

// One bucket of a plan: parameter indices in the order their gradients are produced.
struct BucketPlan {
  std::vector<int32_t> params;
  int64_t bytes = 0;
};

// Cuts parameters, given in the order their gradients are produced, into buckets: a bucket ends
// when adding the next would pass its cap (first_cap_bytes for the first, cap_bytes after), or
// when the dtype or device changes (a bucket is one flat tensor). A parameter larger than the
// cap gets a bucket of its own.
std::vector<BucketPlan> plan_buckets(const std::vector<int32_t>& order,
                                     const std::vector<TensorType>& types, int64_t cap_bytes,
                                     int64_t first_cap_bytes);

class Reducer : public BackwardObserver {
 public:
  static constexpr int64_t kDefaultCapBytes = 25 << 20;
  static constexpr int64_t kDefaultFirstCapBytes = 1 << 20;

  // Hooks every parameter (each must require grad) and starts observing backward passes.
  Reducer(std::vector<Variable> params, std::shared_ptr<distributed::ProcessGroup> group,
          int64_t cap_bytes = kDefaultCapBytes, int64_t first_cap_bytes = kDefaultFirstCapBytes);
  ~Reducer() override;
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  void set_sync(bool sync);
  bool sync() const { return *sync_; }

  // The buckets in use (empty before the first backward with sync on).
  const std::vector<BucketPlan>& buckets() const { return plan_; }

  // What happened during the last backward with sync on, in order, with microseconds since it
  // began: "backward begins", "gradient <i>", "bucket <b> all_reduce starts", "backward ends",
  // "bucket <b> all_reduce done". Shows the overlap of communication with backward.
  struct Event {
    std::string what;
    int64_t microseconds;
  };
  const std::vector<Event>& events() const { return events_; }

  void backward_begins(const std::vector<const VariableImpl*>& leaves_in_order) override;
  void backward_ends() override;

 private:
  struct Bucket {
    std::vector<int32_t> params;
    std::vector<int64_t> offsets;  // each parameter's first element in `flat`
    Tensor flat;                   // [numel of the gradients + one used-flag per parameter]
    int32_t pending = 0;           // gradients still to come in this backward
    std::shared_ptr<distributed::Work> work;
    // While tracing (reducer_trace.cpp): per parameter what the start node reads (its
    // collective::Part and tensors), and the start node's output.
    std::vector<int64_t> parts;
    std::vector<std::vector<Tensor>> pieces;
    Tensor started;
  };
  void build_buckets(const std::vector<int32_t>& order);
  void on_gradient(int32_t param, const Variable& grad);
  void fill(int32_t param, const Tensor& grad);  // grad: the new gradient, or undefined
  void mark_ready(int32_t bucket);
  void log(const std::string& what);
  // Compiled mode (reducer_trace.cpp).
  void guard_sync();
  void trace_fill(int32_t param, const Tensor& grad, bool with_before);
  void trace_start(int32_t bucket);
  void trace_wait(int32_t bucket);

  std::vector<Variable> params_;
  std::shared_ptr<distributed::ProcessGroup> group_;
  int64_t cap_bytes_, first_cap_bytes_;
  std::vector<HookHandle> hooks_;
  std::unordered_map<const VariableImpl*, int32_t> index_of_;
  // Shared with the guard a traced step keeps (guard_sync), which may outlive the reducer.
  std::shared_ptr<bool> sync_ = std::make_shared<bool>(true);
  int64_t serial_;  // names the guard: "DistributedDataParallel #<serial> sync"

  std::vector<BucketPlan> plan_;
  std::vector<Bucket> buckets_;
  std::vector<int32_t> bucket_of_, position_of_;  // per parameter
  std::vector<char> filled_;                      // per parameter, this backward
  bool active_ = false;                           // inside a backward with sync on
  bool traced_ = false;                           // ... that a compiled step is tracing
  int32_t next_launch_ = 0;  // buckets start in index order, the same on every rank
  std::vector<Event> events_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace ember::autodiff
