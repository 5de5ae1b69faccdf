// collective_queue.h — what every backend's group shares: the thread that runs its collectives
// in the order they were called (so an async all-reduce overlaps the caller's work), their Work
// handles, the broken state after a failure, and the checks made through the store.
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "ember/distributed.h"
#include "ember/tcp_store.h"

namespace ember::distributed {

// A Work done on the queue's thread: wait() blocks until it has run and rethrows its error.
class QueuedWork : public Work {
 public:
  void wait() override;
  bool is_completed() const override;
  void finish(std::exception_ptr error);

 private:
  mutable std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

// One thread that runs jobs in order. A job that throws breaks the queue: every later job fails
// at once with an error that names the first failure, since the ranks no longer agree on what
// comes next.
class CollectiveQueue {
 public:
  static constexpr const char* kThreadName = "ember_collect";  // its thread's name (15 chars max)
  CollectiveQueue();
  ~CollectiveQueue();  // runs the jobs queued, then ends the thread
  std::shared_ptr<QueuedWork> push(std::function<void()> job);
  // Runs job on the calling thread when nothing is queued or running (a blocking collective then
  // costs no hand-over between threads, which on a busy machine waits for the scheduler), else
  // queues it behind the others; returns its finished Work either way.
  std::shared_ptr<QueuedWork> run(std::function<void()> job);

 private:
  void loop();
  void execute(const std::function<void()>& job, QueuedWork& work, const std::string& broken);
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::pair<std::function<void()>, std::shared_ptr<QueuedWork>>> jobs_;
  bool stopping_ = false;
  bool busy_ = false;   // a job is running (on the queue's thread or a caller's)
  std::string broken_;  // the first failure's message; empty while healthy
  std::thread thread_;
};

// "all_reduce(float32[7], sum)": what a rank called, for the messages and the tag.
std::string describe_tensor(const Tensor& t);

// all_gather's and reduce_scatter's shapes: `whole` is [world_size * n0, ...] and `part`
// [n0, ...] of the same dtype (or part 0-d and whole [world_size]); a ShapeError or DTypeError
// naming the op otherwise.
void check_gather_shapes(const char* op, const Tensor& whole, const Tensor& part, int world_size);

// Checks through the store that `world_size` ranks arrive within the timeout, that they agree on
// world_size and that no rank number is taken twice (keys under `prefix`).
void check_arrival(TCPStore& store, const std::string& prefix, int rank, int world_size,
                   Milliseconds timeout);

// The error for collective number `seq` (described by `call`) that did not complete in time:
// every rank that timed out posts what it called, so the message says which rank called
// something else (a DistributedError) or which ranks never came (a DistributedTimeoutError).
[[noreturn]] void throw_collective_timeout(TCPStore& store, const std::string& prefix, int rank,
                                           int world_size, int64_t seq, const std::string& call,
                                           Milliseconds timeout, const std::string& detail);

}  // namespace ember::distributed
