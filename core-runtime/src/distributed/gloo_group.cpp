// gloo_group.cpp — the "gloo" backend: CPU tensors through Gloo's collectives over its TCP
// transport. Compiled when CMake finds Gloo (Debian's libgloo-dev).
//
// Gloo meets its peers through a gloo::rendezvous::Store; ours forwards to the TCPStore. Each
// collective runs on the group's queue thread with a tag made of its sequence number and its
// description: two ranks that called different collectives at the same point wait on different
// tags, never exchange bytes, and time out; the timeout then asks the store what each called.
#include "gloo_group.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>

#include "collective_queue.h"
#include "ember/ops/elementwise.h"

namespace ember::distributed {

namespace {

// Gloo's view of our store: its keys live under the group's prefix.
class GlooStore : public gloo::rendezvous::Store {
 public:
  GlooStore(TCPStore& store, std::string prefix, Milliseconds timeout)
      : store_(store), prefix_(std::move(prefix)), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    store_.set(prefix_ + key, std::vector<uint8_t>(data.begin(), data.end()));
  }
  std::vector<char> get(const std::string& key) override {
    std::vector<uint8_t> value = store_.get(prefix_ + key, timeout_);
    return std::vector<char>(value.begin(), value.end());
  }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const Milliseconds& timeout) override {
    std::vector<std::string> prefixed;
    for (const auto& k : keys) prefixed.push_back(prefix_ + k);
    store_.wait(prefixed, timeout);
  }

 private:
  TCPStore& store_;
  std::string prefix_;
  Milliseconds timeout_;
};

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

// Gloo's TCP device reads its sockets on a thread of its own, which takes a connection's lock
// with try_lock and, when another thread holds it, goes back to epoll at once: it spins. A write
// of this rank's caller wakes the peer's device thread, and an ordinary thread just woken
// preempts the running one, so on a machine with fewer free cores than threads the caller lost
// its core while still holding its connection's lock; the next time this rank's device thread
// woke, it spun on that lock until the scheduler's tick (4 ms) gave the caller its core back: a
// floor of milliseconds under every collective, where torch's Gloo took 0.2 ms. A SCHED_BATCH
// thread does not preempt the running thread when woken (it runs when that one blocks, which a
// caller soon does, waiting for the reply, or at the tick), so the device's thread is started as
// one. (A running thread whose time slice is spent can still lose its core at any wake-up, so on
// a heavily loaded machine the spin still happens at times.) A new thread inherits its creator's
// policy: this guard makes the creating thread SCHED_BATCH for as long as it lives and then gives
// it back its own. Threads of another policy (real-time, idle) are left alone.
class BatchPolicyWhileCreatingThreads {
 public:
  BatchPolicyWhileCreatingThreads() {
#ifdef SCHED_BATCH
    if (sched_getscheduler(0) != SCHED_OTHER || sched_getparam(0, &param_) != 0) return;
    sched_param batch{};
    changed_ = sched_setscheduler(0, SCHED_BATCH, &batch) == 0;
#endif
  }
  ~BatchPolicyWhileCreatingThreads() {
#ifdef SCHED_BATCH
    if (changed_) sched_setscheduler(0, SCHED_OTHER, &param_);
#endif
  }
  BatchPolicyWhileCreatingThreads(const BatchPolicyWhileCreatingThreads&) = delete;
  BatchPolicyWhileCreatingThreads& operator=(const BatchPolicyWhileCreatingThreads&) = delete;

 private:
  sched_param param_{};
  bool changed_ = false;
};

// The address this rank's Gloo listens on: GLOO_SOCKET_IFNAME's interface when set (as in
// PyTorch), loopback when rank 0 is on this machine's loopback, else this machine's host name.
std::shared_ptr<gloo::transport::Device> make_device(const std::string& master_host) {
  gloo::transport::tcp::attr attr;
  if (const char* iface = std::getenv("GLOO_SOCKET_IFNAME"); iface && *iface) {
    attr.iface = iface;
  } else if (is_loopback(master_host)) {
    attr.hostname = "127.0.0.1";
  } else {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    attr.hostname = name;
  }
  BatchPolicyWhileCreatingThreads batch;  // the device's thread (above)
  return gloo::transport::tcp::CreateDevice(attr);
}

// Calls f(T*) with the C++ element type of `dtype` (nullptr: only the type matters).
template <class F> void with_type(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Bool:
      return f(static_cast<bool*>(nullptr));
    case DType::UInt8:
      return f(static_cast<uint8_t*>(nullptr));
    case DType::Int8:
      return f(static_cast<int8_t*>(nullptr));
    case DType::Int16:
      return f(static_cast<int16_t*>(nullptr));
    case DType::Int32:
      return f(static_cast<int32_t*>(nullptr));
    case DType::Int64:
      return f(static_cast<int64_t*>(nullptr));
    case DType::Float16:
      return f(static_cast<Half*>(nullptr));
    case DType::BFloat16:
      return f(static_cast<BFloat16*>(nullptr));
    case DType::Float32:
      return f(static_cast<float*>(nullptr));
    case DType::Float64:
      return f(static_cast<double*>(nullptr));
  }
}

// Gloo's element-wise reduction out[i] = a[i] (op) b[i], in T's compute type (half types in
// float, bool's sum an or).
template <class T> gloo::AllreduceOptions::Func reduce_function(ReduceOp op) {
  using C = compute_t<T>;
  auto loop = [](auto combine) {
    return [combine](void* out, const void* a, const void* b, size_t n) {
      T* o = static_cast<T*>(out);
      const T* x = static_cast<const T*>(a);
      const T* y = static_cast<const T*>(b);
      for (size_t i = 0; i < n; ++i) o[i] = T(combine(C(x[i]), C(y[i])));
    };
  };
  switch (op) {
    case ReduceOp::Max:
      return loop([](C p, C q) { return std::max(p, q); });
    case ReduceOp::Min:
      return loop([](C p, C q) { return std::min(p, q); });
    default:  // Sum and Avg (divided afterwards)
      if constexpr (std::is_same_v<T, bool>) return loop([](C p, C q) { return p || q; });
      return loop([](C p, C q) { return C(p + q); });
  }
}

uint32_t collective_tag(int64_t seq, const std::string& call) {
  return uint32_t(std::hash<std::string>()(call) * 31u + uint64_t(seq) * 0x9E3779B1u);
}

void check_cpu(const Tensor& t, const char* op, const char* role) {
  if (!t.defined()) throw ValueError(op, std::string(role) + " is an undefined tensor");
  if (!t.device().is_cpu())
    throw DeviceError(op, std::string(role) + " is " + describe_tensor(t) +
                              ", but the gloo backend reduces CPU tensors. Fix: move it to "
                              "the CPU with .to(\"cpu\"), or use the nccl backend for CUDA");
}

}  // namespace

GlooProcessGroup::GlooProcessGroup(std::shared_ptr<TCPStore> store, std::string prefix, int rank,
                                   int world_size, Milliseconds timeout)
    : ProcessGroup(rank, world_size, timeout),
      store_(std::move(store)),
      prefix_(std::move(prefix)) {
  check_arrival(*store_, prefix_, rank, world_size, timeout);
  GlooStore gloo_store(*store_, prefix_ + "gloo/", timeout);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, world_size);
  context->setTimeout(timeout);
  try {
    auto device = make_device(store_->host());
    context->connectFullMesh(gloo_store, device);
  } catch (const Error&) {
    throw;  // the store's, already typed
  } catch (const std::exception& e) {
    throw DistributedError("init_process_group",
                           "the gloo backend could not connect rank " + std::to_string(rank) +
                               " to its peers within " + std::to_string(timeout.count()) + " ms (" +
                               e.what() + "). Fix: check that every rank can reach " +
                               "the others (GLOO_SOCKET_IFNAME names the interface to use)");
  }
  context_ = context;
  queue_ = std::make_unique<CollectiveQueue>();
}

GlooProcessGroup::~GlooProcessGroup() {
  queue_.reset();  // finishes the collectives queued before the context goes
}

std::shared_ptr<Work> GlooProcessGroup::enqueue(const std::string& call, bool async,
                                                std::function<void(uint32_t tag)> body) {
  const int64_t seq = seq_++;
  auto job = [this, seq, call, body = std::move(body)] {
    try {
      body(collective_tag(seq, call));
    } catch (const gloo::IoException& e) {
      const std::string what = e.what();
      if (what.find("imed out") != std::string::npos || what.find("timeout") != std::string::npos)
        throw_collective_timeout(*store_, prefix_, rank_, world_size_, seq, call, timeout_, what);
      throw_collective_broken(*store_, prefix_, rank_, world_size_, seq, call, what);
    } catch (const Error&) {
      throw;                             // ours (a copy's), already typed
    } catch (const std::exception& e) {  // gloo::Exception, and GLOO_ENFORCE's EnforceNotMet
      throw DistributedError("ProcessGroup", "collective #" + std::to_string(seq) + ", " + call +
                                                 ", failed in gloo: " + e.what());
    }
  };
  return async ? queue_->push(std::move(job)) : queue_->run(std::move(job));
}

std::shared_ptr<Work> GlooProcessGroup::all_reduce(const Tensor& tensor, ReduceOp op, bool async) {
  check_cpu(tensor, "all_reduce", "the tensor");
  if (op == ReduceOp::Avg && !is_floating(tensor.dtype()))
    throw DTypeError("all_reduce", std::string("avg of ") + describe_tensor(tensor) +
                                       " would truncate; avg needs a floating dtype. Fix: "
                                       "all_reduce with sum, then divide by the world size");
  const std::string call =
      "all_reduce(" + describe_tensor(tensor) + ", " + reduce_op_name(op) + ")";
  return enqueue(call, async, [this, tensor, op](uint32_t tag) {
    Tensor buf = tensor.contiguous();
    if (buf.numel() > 0) {
      gloo::AllreduceOptions opts(context_);
      with_type(buf.dtype(), [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        opts.setOutput(static_cast<T*>(buf.data_ptr()), size_t(buf.numel()));
        opts.setReduceFunction(reduce_function<T>(op));
      });
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
      buf.bump_version();
    }
    if (op == ReduceOp::Avg) div_(buf, double(world_size_));
    if (!tensor.is_contiguous()) tensor.copy_(buf);
  });
}

std::shared_ptr<Work> GlooProcessGroup::broadcast(const Tensor& tensor, int root, bool async) {
  check_cpu(tensor, "broadcast", "the tensor");
  if (root < 0 || root >= world_size_)
    throw ValueError("broadcast", "root " + std::to_string(root) +
                                      " is not a rank of this group "
                                      "of " +
                                      std::to_string(world_size_) + "; expected 0.." +
                                      std::to_string(world_size_ - 1));
  const std::string call =
      "broadcast(" + describe_tensor(tensor) + ", root " + std::to_string(root) + ")";
  return enqueue(call, async, [this, tensor, root](uint32_t tag) {
    Tensor buf = tensor.contiguous();
    if (buf.numel() > 0) {
      gloo::BroadcastOptions opts(context_);  // in place: the root sends from its output
      opts.setOutput(static_cast<uint8_t*>(buf.data_ptr()), size_t(buf.nbytes()));
      opts.setRoot(root);
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::broadcast(opts);
      buf.bump_version();
    }
    if (!tensor.is_contiguous()) tensor.copy_(buf);
  });
}

std::shared_ptr<Work> GlooProcessGroup::all_gather(const Tensor& output, const Tensor& input,
                                                   bool async) {
  check_cpu(output, "all_gather", "the output");
  check_cpu(input, "all_gather", "the input");
  check_gather_shapes("all_gather", output, input, world_size_);
  const std::string call = "all_gather(" + describe_tensor(input) + ")";
  return enqueue(call, async, [this, output, input](uint32_t tag) {
    Tensor in = input.contiguous();
    Tensor out = output.contiguous();
    if (in.numel() > 0) {
      gloo::AllgatherOptions opts(context_);
      opts.setInput(static_cast<uint8_t*>(in.data_ptr()), size_t(in.nbytes()));
      opts.setOutput(static_cast<uint8_t*>(out.data_ptr()), size_t(out.nbytes()));
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::allgather(opts);
      out.bump_version();
    }
    if (!output.is_contiguous()) output.copy_(out);
  });
}

std::shared_ptr<Work> GlooProcessGroup::reduce_scatter(const Tensor& output, const Tensor& input,
                                                       ReduceOp op, bool async) {
  check_cpu(output, "reduce_scatter", "the output");
  check_cpu(input, "reduce_scatter", "the input");
  check_gather_shapes("reduce_scatter", input, output, world_size_);
  if (op == ReduceOp::Avg && !is_floating(input.dtype()))
    throw DTypeError("reduce_scatter", std::string("avg of ") + describe_tensor(input) +
                                           " would truncate; avg needs a floating dtype. Fix: "
                                           "sum, then divide by the world size");
  const std::string call =
      "reduce_scatter(" + describe_tensor(input) + ", " + reduce_op_name(op) + ")";
  // Gloo's only reduce-scatter is its old halving-doubling class; an all-reduce of a copy of the
  // whole input, of which each rank keeps its rows, is as correct and uses Gloo's ring.
  return enqueue(call, async, [this, output, input, op](uint32_t tag) {
    Tensor whole = input.clone();
    if (whole.numel() > 0) {
      gloo::AllreduceOptions opts(context_);
      with_type(whole.dtype(), [&](auto* type) {
        using T = std::remove_pointer_t<decltype(type)>;
        opts.setOutput(static_cast<T*>(whole.data_ptr()), size_t(whole.numel()));
        opts.setReduceFunction(reduce_function<T>(op));
      });
      opts.setTag(tag);
      opts.setTimeout(timeout_);
      gloo::allreduce(opts);
    }
    const int64_t rows = output.dim() == 0 ? 1 : output.size(0);
    Tensor mine = whole.narrow(0, rank_ * rows, rows);
    if (op == ReduceOp::Avg) div_(mine, double(world_size_));
    output.copy_(output.dim() == 0 ? mine.reshape({}) : mine);
  });
}

std::shared_ptr<Work> GlooProcessGroup::barrier(bool async) {
  return enqueue("barrier()", async, [this](uint32_t tag) {
    gloo::BarrierOptions opts(context_);
    opts.setTag(tag);
    opts.setTimeout(timeout_);
    gloo::barrier(opts);
  });
}

}  // namespace ember::distributed
