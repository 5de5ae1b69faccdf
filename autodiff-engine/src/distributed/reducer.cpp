// reducer.cpp — buckets of gradients, each all-reduced as soon as its last gradient is in.
#include "ember/autodiff/reducer.h"

#include <algorithm>
#include <atomic>

#include "ember/autodiff/compile/trace.h"
#include "ember/ops/creation.h"
#include "ember/ops/elementwise.h"

namespace ember::autodiff {

std::vector<BucketPlan> plan_buckets(const std::vector<int32_t>& order,
                                     const std::vector<TensorType>& types, int64_t cap_bytes,
                                     int64_t first_cap_bytes) {
  std::vector<BucketPlan> plan;
  for (int32_t p : order) {
    const TensorType& t = types[size_t(p)];
    const int64_t bytes = t.numel() * int64_t(itemsize(t.dtype));
    bool fresh = plan.empty();
    if (!fresh) {
      const BucketPlan& last = plan.back();
      const TensorType& first = types[size_t(last.params.front())];
      const int64_t cap = plan.size() == 1 ? first_cap_bytes : cap_bytes;
      fresh = first.dtype != t.dtype || first.device != t.device || last.bytes + bytes > cap;
    }
    if (fresh) plan.push_back({});
    plan.back().params.push_back(p);
    plan.back().bytes += bytes;
  }
  return plan;
}

Reducer::Reducer(std::vector<Variable> params, std::shared_ptr<distributed::ProcessGroup> group,
                 int64_t cap_bytes, int64_t first_cap_bytes)
    : params_(std::move(params)),
      group_(std::move(group)),
      cap_bytes_(cap_bytes),
      first_cap_bytes_(first_cap_bytes) {
  static std::atomic<int64_t> reducers{0};
  serial_ = reducers++;
  const char* op = "DistributedDataParallel";
  if (!group_) throw ValueError(op, "the process group is null: call init_process_group first");
  if (cap_bytes <= 0 || first_cap_bytes <= 0)
    throw ValueError(op, "bucket caps must be positive, got " + std::to_string(cap_bytes) +
                             " and " + std::to_string(first_cap_bytes) + " bytes");
  for (size_t i = 0; i < params_.size(); ++i) {
    const Variable& p = params_[i];
    if (!p.defined() || !p.requires_grad() || !p.is_leaf() || !is_floating(p.dtype()))
      throw ValueError(op, "parameter " + std::to_string(i) +
                               (p.defined() ? " (" + p.data().str() + ")" : "") +
                               " is not a floating leaf that requires grad; pass only the "
                               "trainable parameters");
    if (!index_of_.emplace(p.impl(), int32_t(i)).second)
      throw ValueError(op, "parameter " + std::to_string(i) + " is passed twice");
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    const int32_t index = int32_t(i);
    hooks_.push_back(params_[i].register_hook([this, index](const Variable& grad) {
      on_gradient(index, grad);
      return Variable();
    }));
  }
  add_backward_observer(this);
}

Reducer::~Reducer() {
  remove_backward_observer(this);
  for (HookHandle& h : hooks_) h.remove();
  for (Bucket& b : buckets_)
    if (b.work) try {
        b.work->wait();
      } catch (...) {  // a failed all-reduce was reported, or nobody waits for it any more
      }
}

void Reducer::log(const std::string& what) {
  const auto now = std::chrono::steady_clock::now();
  events_.push_back(
      {what, std::chrono::duration_cast<std::chrono::microseconds>(now - start_).count()});
}

// The layout must be the same on every rank: rank 0's gradient order is broadcast once.
void Reducer::build_buckets(const std::vector<int32_t>& local_order) {
  std::vector<int64_t> order(params_.size());
  std::vector<char> listed(params_.size(), 0);
  size_t n = 0;
  for (int32_t p : local_order) order[n++] = p, listed[size_t(p)] = 1;
  for (size_t p = 0; p < params_.size(); ++p)
    if (!listed[p]) order[n++] = int64_t(p);
  Tensor shared = Tensor::from_vector(order, {int64_t(order.size())}).to(params_[0].device());
  group_->broadcast(shared, 0);
  order = shared.to(Device()).to_vector<int64_t>();

  std::vector<int32_t> order32(order.begin(), order.end());
  std::vector<TensorType> types;
  for (const Variable& p : params_) types.push_back({p.shape(), p.dtype(), p.device()});
  plan_ = plan_buckets(order32, types, cap_bytes_, first_cap_bytes_);
  buckets_.assign(plan_.size(), {});
  bucket_of_.assign(params_.size(), -1);
  position_of_.assign(params_.size(), -1);
  for (size_t b = 0; b < plan_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    bucket.params = plan_[b].params;
    int64_t offset = 0;
    for (size_t k = 0; k < bucket.params.size(); ++k) {
      const int32_t p = bucket.params[k];
      bucket_of_[size_t(p)] = int32_t(b);
      position_of_[size_t(p)] = int32_t(k);
      bucket.offsets.push_back(offset);
      offset += params_[size_t(p)].numel();
    }
    const Variable& first = params_[size_t(bucket.params[0])];
    bucket.flat = zeros({offset + int64_t(bucket.params.size())}, first.dtype(), first.device());
  }
}

void Reducer::backward_begins(const std::vector<const VariableImpl*>& leaves_in_order) {
  active_ = false;
  if (params_.empty()) return;
  std::vector<int32_t> mine;  // ours among the leaves, in gradient order
  for (const VariableImpl* leaf : leaves_in_order) {
    auto it = index_of_.find(leaf);
    if (it != index_of_.end()) mine.push_back(it->second);
  }
  if (mine.empty()) return;  // a backward that none of the parameters take part in
  traced_ = compile::tracing();
  if (traced_) guard_sync();  // with sync on or off: the plan holds its all-reduces or none
  if (!sync()) return;
  events_.clear();
  start_ = std::chrono::steady_clock::now();
  log("backward begins");
  if (buckets_.empty()) build_buckets(mine);
  active_ = true;
  next_launch_ = 0;
  filled_.assign(params_.size(), 0);
  std::vector<char> coming(params_.size(), 0);
  for (int32_t p : mine) coming[size_t(p)] = 1;
  for (Bucket& b : buckets_) {
    b.work.reset();
    b.pending = 0;
    b.parts.assign(b.params.size(), 0);
    b.pieces.assign(b.params.size(), {});
    b.started = Tensor();
    for (int32_t p : b.params) b.pending += coming[size_t(p)];
  }
  // What gets no gradient in this backward is known now: its place is filled at once.
  for (size_t p = 0; p < params_.size(); ++p)
    if (!coming[p]) fill(int32_t(p), Tensor());
  for (size_t b = 0; b < buckets_.size(); ++b)
    if (buckets_[b].pending == 0) mark_ready(int32_t(b));
}

// Writes param's gradient into its bucket: the new one plus what .grad accumulated before (the
// no_sync steps), zeros when there is neither; its used-flag says whether there was one.
void Reducer::fill(int32_t param, const Tensor& grad) {
  if (traced_) return trace_fill(param, grad, /*with_before=*/true);
  Bucket& b = buckets_[size_t(bucket_of_[size_t(param)])];
  const int32_t k = position_of_[size_t(param)];
  const Variable& p = params_[size_t(param)];
  Tensor slot = b.flat.narrow(0, b.offsets[size_t(k)], p.numel()).view(p.shape());
  const Variable& before = p.grad();
  if (grad.defined() && before.defined()) add_out(slot, before.data(), grad);
  else if (grad.defined()) slot.copy_(grad);
  else if (before.defined()) slot.copy_(before.data());
  else slot.fill_(0.0);
  const bool used = grad.defined() || before.defined();
  b.flat.narrow(0, b.flat.numel() - int64_t(b.params.size()) + k, 1).fill_(used ? 1.0 : 0.0);
  filled_[size_t(param)] = 1;
}

void Reducer::on_gradient(int32_t param, const Variable& grad) {
  if (!active_ || filled_[size_t(param)]) return;
  fill(param, grad.data());
  log("gradient " + std::to_string(param));
  const int32_t b = bucket_of_[size_t(param)];
  if (--buckets_[size_t(b)].pending == 0) mark_ready(b);
}

// Starts the ready buckets in index order, so that every rank calls the same all-reduces in the
// same order whatever order its gradients came in.
void Reducer::mark_ready(int32_t bucket) {
  (void)bucket;
  while (next_launch_ < int32_t(buckets_.size()) && buckets_[size_t(next_launch_)].pending == 0) {
    Bucket& b = buckets_[size_t(next_launch_)];
    log("bucket " + std::to_string(next_launch_) + " all_reduce starts");
    if (traced_) trace_start(next_launch_);
    else b.work = group_->all_reduce(b.flat, distributed::ReduceOp::Avg, /*async=*/true);
    ++next_launch_;
  }
}

void Reducer::backward_ends() {
  if (!active_) return;
  active_ = false;
  log("backward ends");
  // A gradient that reached .grad without passing a hook (none should) is taken from there.
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    if (bucket.pending == 0) continue;
    for (int32_t p : bucket.params)
      if (!filled_[size_t(p)] && traced_) {
        const Variable& g = params_[size_t(p)].grad();
        trace_fill(p, g.defined() ? g.data() : Tensor(), /*with_before=*/false);
      } else if (!filled_[size_t(p)]) {
        Variable saved = params_[size_t(p)].grad();
        params_[size_t(p)].set_grad(Variable());
        fill(p, saved.defined() ? saved.data() : Tensor());
        params_[size_t(p)].set_grad(saved);
      }
    bucket.pending = 0;
  }
  mark_ready(0);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (traced_) {
      trace_wait(int32_t(b));
      continue;
    }
    Bucket& bucket = buckets_[b];
    bucket.work->wait();
    bucket.work.reset();
    log("bucket " + std::to_string(b) + " all_reduce done");
    const int64_t flags = bucket.flat.numel() - int64_t(bucket.params.size());
    const std::vector<double> used = bucket.flat.narrow(0, flags, int64_t(bucket.params.size()))
                                         .to(DType::Float64)
                                         .to(Device())
                                         .to_vector<double>();
    for (size_t k = 0; k < bucket.params.size(); ++k) {
      if (used[k] <= 0) continue;  // no rank had a gradient for it: .grad stays as it is
      const Variable& p = params_[size_t(bucket.params[k])];
      Tensor mean = bucket.flat.narrow(0, bucket.offsets[k], p.numel()).view(p.shape());
      const Variable& g = p.grad();
      if (g.defined() && g.data().shape() == p.shape() && g.data().is_contiguous())
        g.data().copy_(mean);
      else p.set_grad(Variable(mean.clone()));
    }
  }
}

}  // namespace ember::autodiff
