// distributed.h — collectives across processes and machines: a ProcessGroup of `world_size`
// ranks that all-reduce, broadcast, all-gather and reduce-scatter tensors. CPU tensors go through
// Gloo (Debian's libgloo-dev, found at build time: without it the "gloo" backend raises
// NotSupportedError), CUDA tensors through NCCL (loaded from libnccl.so.2 at first use).
//
// The ranks meet through a TCPStore (tcp_store.h) that rank 0 serves at MASTER_ADDR:MASTER_PORT,
// PyTorch's rendezvous: the same environment variables that torchrun sets work here.
//
//   auto store = std::make_shared<TCPStore>("127.0.0.1", 29500, rank, world_size, timeout);
//   auto group = new_process_group("gloo", store, rank, world_size, timeout);
//   group->all_reduce(grad, ReduceOp::Avg);             // blocking
//   auto work = group->all_reduce(grad, ReduceOp::Sum, /*async=*/true);
//   ...; work->wait();                                  // overlapped with other work
//
// Every rank must call the same collectives in the same order, with tensors of the same shape
// and dtype. Each collective carries a sequence number: a rank that calls a different one, a
// rank that died, or one that never comes is a DistributedError on every other rank within the
// timeout, never a hang. After such an error the group is broken: later collectives fail at once.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/tensor.h"

namespace ember::distributed {

// Python: ember.distributed.DistributedError (a RuntimeError). A peer closed its connection,
// the store could not be reached or served, the ranks disagree (world size, collective order).
class EMBER_API DistributedError : public Error {
  using Error::Error;
};
// Python: ember.distributed.DistributedTimeoutError (also a TimeoutError). A rank did not arrive
// or did not take part in a collective within the timeout.
class EMBER_API DistributedTimeoutError : public DistributedError {
  using DistributedError::DistributedError;
};

enum class ReduceOp { Sum, Avg, Max, Min };
const char* reduce_op_name(ReduceOp op);  // "sum", "avg", "max", "min"

using Milliseconds = std::chrono::milliseconds;

// The handle of a collective started with async=true. wait() blocks until it has finished and
// rethrows its error; on CUDA it instead makes the caller's current stream wait for it (the host
// does not wait), as PyTorch's Work.wait() does. The tensors stay alive while it runs.
class EMBER_API Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  virtual bool is_completed() const = 0;
};

class EMBER_API ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  virtual const char* backend() const = 0;  // "gloo", "nccl"
  Milliseconds timeout() const { return timeout_; }

  // In place on every rank: tensor becomes the reduction of every rank's tensor. Avg needs a
  // floating dtype (integer averages would be truncated; Fix: Sum, then divide).
  virtual std::shared_ptr<Work> all_reduce(const Tensor& tensor, ReduceOp op = ReduceOp::Sum,
                                           bool async = false) = 0;
  // In place: every rank's tensor becomes root's.
  virtual std::shared_ptr<Work> broadcast(const Tensor& tensor, int root = 0,
                                          bool async = false) = 0;
  // output: [world_size * n0, ...] gets rank r's input [n0, ...] at rows [r*n0, (r+1)*n0).
  virtual std::shared_ptr<Work> all_gather(const Tensor& output, const Tensor& input,
                                           bool async = false) = 0;
  // input: [world_size * n0, ...]; output [n0, ...] gets rows [rank*n0, (rank+1)*n0) of the
  // reduction of every rank's input.
  virtual std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input,
                                               ReduceOp op = ReduceOp::Sum, bool async = false) = 0;
  virtual std::shared_ptr<Work> barrier(bool async = false) = 0;

  // How many collectives this rank has started (each one's sequence number is its index).
  virtual int64_t sequence_number() const = 0;

 protected:
  ProcessGroup(int rank, int world_size, Milliseconds timeout)
      : rank_(rank), world_size_(world_size), timeout_(timeout) {}
  int rank_, world_size_;
  Milliseconds timeout_;
};

class TCPStore;

// A group of the given backend ("gloo" or "nccl") over `store`. Checks that every rank agrees on
// world_size (DistributedError naming both values) and that all arrive within `timeout`
// (DistributedTimeoutError naming the ranks missing). NotSupportedError for a backend this build
// lacks, ValueError for an unknown one or a rank outside [0, world_size).
std::shared_ptr<ProcessGroup> new_process_group(const std::string& backend,
                                                std::shared_ptr<TCPStore> store, int rank,
                                                int world_size, Milliseconds timeout);

// Whether this build can make a group of the backend ("nccl": compiled with CUDA; libnccl.so.2
// is still loaded only at the first collective).
bool backend_available(const std::string& backend);

}  // namespace ember::distributed
