// reducer_trace.cpp — the Reducer while a compiled step is traced (reducer.h, "Compiled mode"):
// the same buckets, started and awaited as all_reduce_start / all_reduce_wait nodes
// (ember/autodiff/collective.h) instead of calls to the group, so that a replay repeats them.
#include "ember/autodiff/collective.h"
#include "ember/autodiff/compile/trace.h"
#include "ember/autodiff/reducer.h"

namespace ember::autodiff {

// The plan is right only for the sync flag it was traced with: a guard, so that turning no_sync
// on or off replays (or traces) the plan of the other kind instead. Quiet: alternating is what
// gradient accumulation does. Called at the first backward of the trace and before the step
// changes the flag itself (no_sync inside the step): the first call sets what the guard expects,
// the flag's value when the step began.
void Reducer::guard_sync() {
  std::shared_ptr<bool> flag = sync_;
  compile::add_guard(
      "DistributedDataParallel #" + std::to_string(serial_) + " sync",
      [flag] { return std::string(*flag ? "on" : "off (no_sync)"); }, /*quiet=*/true);
}

void Reducer::set_sync(bool sync) {
  if (compile::tracing()) guard_sync();
  *sync_ = sync;
}

// What the start node will read for `param`: its new gradient (if any) and, with_before, what
// .grad held before (accumulated under no_sync), as fill() sums them in eager mode.
void Reducer::trace_fill(int32_t param, const Tensor& grad, bool with_before) {
  Bucket& b = buckets_[size_t(bucket_of_[size_t(param)])];
  const size_t k = size_t(position_of_[size_t(param)]);
  const Variable& p = params_[size_t(param)];
  std::vector<Tensor>& pieces = b.pieces[k];
  pieces.clear();
  int64_t part = collective::kNone;
  if (with_before && p.grad().defined()) {
    compile::see_grad(p.impl_ptr());  // state of the step, unless the step wrote it
    pieces.push_back(p.grad().data());
    part |= collective::kBefore;
  }
  if (grad.defined()) {
    pieces.push_back(grad);
    part |= collective::kGrad;
  }
  b.parts[k] = part;
  filled_[size_t(param)] = 1;
}

void Reducer::trace_start(int32_t bucket) {
  Bucket& b = buckets_[size_t(bucket)];
  std::vector<int64_t> numels;
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < b.params.size(); ++k) {
    numels.push_back(params_[size_t(b.params[k])].numel());
    for (Tensor& t : b.pieces[k]) inputs.push_back(std::move(t));
    b.pieces[k].clear();
  }
  const Variable& first = params_[size_t(b.params[0])];
  const Attrs attrs{{"group", collective::group_id(group_)},
                    {"bucket", int64_t(bucket)},
                    {"parts", b.parts},
                    {"numels", numels},
                    {"dtype", int64_t(first.dtype())},
                    {"device", first.device().str()}};
  b.started = run_op(op_def("all_reduce_start"), inputs, attrs)[0];
}

// The wait node, then each average some rank had a gradient for written into .grad (set_grad
// records the write); the others keep .grad as it is, as in eager mode.
void Reducer::trace_wait(int32_t bucket) {
  Bucket& b = buckets_[size_t(bucket)];
  collective::finish(b.started);  // the flags below are read now, and the tracer must see
  compile::written_by_collective(b.started);  // the buffer's new contents as the start's
  std::vector<int64_t> numels, ndims, dims;
  for (int32_t p : b.params) {
    const Shape& shape = params_[size_t(p)].shape();
    numels.push_back(params_[size_t(p)].numel());
    ndims.push_back(int64_t(shape.size()));
    dims.insert(dims.end(), shape.begin(), shape.end());
  }
  const Attrs attrs{{"bucket", int64_t(bucket)},
                    {"numels", numels},
                    {"ndims", ndims},
                    {"dims", dims}};
  std::vector<Tensor> means = run_op(op_def("all_reduce_wait"), {b.started}, attrs);
  const int64_t flags = b.started.numel() - int64_t(b.params.size());
  const std::vector<double> used = b.started.narrow(0, flags, int64_t(b.params.size()))
                                       .to(DType::Float64)
                                       .to(Device())
                                       .to_vector<double>();
  b.started = Tensor();
  log("bucket " + std::to_string(bucket) + " all_reduce done");
  for (size_t k = 0; k < b.params.size(); ++k)
    if (used[k] > 0) params_[size_t(b.params[k])].set_grad(Variable(means[k]));
}

}  // namespace ember::autodiff
