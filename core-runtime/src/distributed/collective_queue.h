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

struct QueueState;

// A Work of the queue: wait() blocks until it has run and rethrows its error. A job that has not
// started when wait() is called, and is next in line with none running, runs on the waiting
// thread instead of the queue's: the queue's thread would only add a hand-over each way (on a
// busy machine, each a wait for the scheduler) to a job the caller is idle for anyway.
class QueuedWork : public Work {
 public:
  QueuedWork() = default;
  explicit QueuedWork(std::weak_ptr<QueueState> queue) : queue_(std::move(queue)) {}
  void wait() override;
  bool is_completed() const override;
  void finish(std::exception_ptr error);

 private:
  std::weak_ptr<QueueState> queue_;  // gone with the queue, whose jobs are then all done
  mutable std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

// What the queue's thread and the threads that run its jobs themselves (run(), a Work's wait())
// share. A job that throws breaks the queue: every later job fails at once with an error that
// names the first failure, since the ranks no longer agree on what comes next.
struct QueueState {
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<std::pair<std::function<void()>, std::shared_ptr<QueuedWork>>> jobs;
  bool stopping = false;
  bool busy = false;   // a job is running (on the queue's thread or a caller's)
  std::string broken;  // the first failure's message; empty while healthy

  // Runs job (or fails it at once when the queue is broken) and finishes its Work.
  void execute(const std::function<void()>& job, QueuedWork& work, const std::string& broken_by);
  // After a job run outside the queue's thread: no longer busy; wakes the queue's thread only
  // when it has something to do (a wake-up per job would make it runnable for nothing, and on
  // a machine with fewer free cores than threads it takes a turn the peers were waiting for).
  void done_outside();
  // Runs `work`'s job on the calling thread if it is next and none runs; false otherwise.
  bool run_if_next(const QueuedWork* work);
};

// One thread that runs jobs in order (QueueState says what a failure does).
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
  std::shared_ptr<QueueState> state_ = std::make_shared<QueueState>();
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

// The error for collective number `seq` whose connection to a peer broke: a mismatch when another
// rank posted a different call for it (it timed out and ended first), else "a rank ended".
[[noreturn]] void throw_collective_broken(TCPStore& store, const std::string& prefix, int rank,
                                          int world_size, int64_t seq, const std::string& call,
                                          const std::string& detail);

}  // namespace ember::distributed
