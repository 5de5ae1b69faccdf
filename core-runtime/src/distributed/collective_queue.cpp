// collective_queue.cpp — the ordered thread of a group's collectives and the store checks.
#include "collective_queue.h"

#include <pthread.h>

#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>
#include <vector>

namespace ember::distributed {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Avg:
      return "avg";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Min:
      return "min";
  }
  return "?";
}

void QueuedWork::wait() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_) {
      if (error_) std::rethrow_exception(error_);
      return;
    }
  }
  if (std::shared_ptr<QueueState> queue = queue_.lock()) queue->run_if_next(this);
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return done_; });
  if (error_) std::rethrow_exception(error_);
}

bool QueuedWork::is_completed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

void QueuedWork::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    error_ = std::move(error);
  }
  done_cv_.notify_all();
}

void QueueState::execute(const std::function<void()>& job, QueuedWork& work,
                         const std::string& broken_by) {
  if (!broken_by.empty()) {
    work.finish(std::make_exception_ptr(
        DistributedError("ProcessGroup",
                         "the group is broken by an earlier failure, so this collective was not "
                         "run (the ranks no longer agree on what comes next): " +
                             broken_by + ". Fix: destroy the group and create a new one")));
    return;
  }
  try {
    job();
    work.finish(nullptr);
  } catch (const std::exception& e) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      broken = e.what();
    }
    work.finish(std::current_exception());
  }
}

void QueueState::done_outside() {
  bool waiting;
  {
    std::lock_guard<std::mutex> lock(mutex);
    busy = false;
    waiting = !jobs.empty() || stopping;
  }
  if (waiting) cv.notify_all();
}

bool QueueState::run_if_next(const QueuedWork* work) {
  std::pair<std::function<void()>, std::shared_ptr<QueuedWork>> next;
  std::string broken_by;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (busy || jobs.empty() || jobs.front().second.get() != work) return false;
    next = std::move(jobs.front());
    jobs.pop_front();
    busy = true;
    broken_by = broken;
  }
  execute(next.first, *next.second, broken_by);
  done_outside();
  return true;
}

CollectiveQueue::CollectiveQueue() : thread_([this] { loop(); }) {
  // Named here, not by the thread itself, so that it has its name before it first runs.
  pthread_setname_np(thread_.native_handle(), kThreadName);  // for ps, top, gdb and the tests
}

CollectiveQueue::~CollectiveQueue() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->cv.notify_all();
  thread_.join();
}

std::shared_ptr<QueuedWork> CollectiveQueue::push(std::function<void()> job) {
  auto work = std::make_shared<QueuedWork>(state_);
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->jobs.emplace_back(std::move(job), work);
  }
  state_->cv.notify_all();
  return work;
}

std::shared_ptr<QueuedWork> CollectiveQueue::run(std::function<void()> job) {
  QueueState& q = *state_;
  std::string broken_by;
  {
    std::unique_lock<std::mutex> lock(q.mutex);
    if (q.busy || !q.jobs.empty()) {
      lock.unlock();
      auto work = push(std::move(job));
      work->wait();
      return work;
    }
    q.busy = true;
    broken_by = q.broken;
  }
  auto work = std::make_shared<QueuedWork>();
  q.execute(job, *work, broken_by);
  q.done_outside();
  work->wait();
  return work;
}

void CollectiveQueue::loop() {
  QueueState& q = *state_;
  for (;;) {
    std::pair<std::function<void()>, std::shared_ptr<QueuedWork>> next;
    std::string broken_by;
    {
      std::unique_lock<std::mutex> lock(q.mutex);
      q.cv.wait(lock, [&] { return (q.stopping || !q.jobs.empty()) && !q.busy; });
      if (q.jobs.empty()) return;
      next = std::move(q.jobs.front());
      q.jobs.pop_front();
      q.busy = true;
      broken_by = q.broken;
    }
    q.execute(next.first, *next.second, broken_by);
    {
      std::lock_guard<std::mutex> lock(q.mutex);
      q.busy = false;
    }
    q.cv.notify_all();
  }
}

std::string describe_tensor(const Tensor& t) {
  std::ostringstream os;
  os << dtype_name(t.dtype()) << "[";
  for (size_t d = 0; d < t.shape().size(); ++d) os << (d ? "," : "") << t.shape()[d];
  os << "]";
  if (!t.device().is_cpu()) os << " on " << t.device().str();
  return os.str();
}

void check_gather_shapes(const char* op, const Tensor& whole, const Tensor& part, int world_size) {
  if (whole.dtype() != part.dtype())
    throw DTypeError(op, "the output is " +
                             describe_tensor(std::string(op) == "all_gather" ? whole : part) +
                             " and the input " +
                             describe_tensor(std::string(op) == "all_gather" ? part : whole) +
                             "; they must have the same dtype");
  Shape expected = part.shape();
  if (expected.empty()) expected = {world_size};
  else expected[0] *= world_size;
  if (whole.shape() != expected) {
    const bool gather = std::string(op) == "all_gather";
    throw ShapeError(op, std::string("the ") + (gather ? "output" : "input") + " is " +
                             describe_tensor(whole) + " and the " + (gather ? "input" : "output") +
                             " " + describe_tensor(part) + "; with " + std::to_string(world_size) +
                             " ranks the " + (gather ? "output" : "input") + " must have shape " +
                             shape_str(expected) + " (world_size times the first dim)");
  }
}

namespace {

using Clock = std::chrono::steady_clock;

std::vector<uint8_t> int_bytes(int64_t v) {
  std::vector<uint8_t> out(8);
  std::memcpy(out.data(), &v, 8);
  return out;
}
int64_t bytes_int(const std::vector<uint8_t>& b) {
  int64_t v = -1;
  if (b.size() == 8) std::memcpy(&v, b.data(), 8);
  return v;
}

std::string join_ranks(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

// The error of ranks that disagree on the world size. The rank that serves the store keeps it a
// moment longer, so that the others read what they need to report the same disagreement instead
// of a store that went away.
DistributedError mismatch(TCPStore& store, const std::string& message) {
  if (store.serves()) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  return DistributedError("init_process_group", message);
}

}  // namespace

void check_arrival(TCPStore& store, const std::string& prefix, int rank, int world_size,
                   Milliseconds timeout) {
  const char* op = "init_process_group";
  if (store.add(prefix + "arrived/" + std::to_string(rank), 1) > 1)
    throw DistributedError(op, "rank " + std::to_string(rank) +
                                   " joined twice: two processes were started with RANK=" +
                                   std::to_string(rank) + ". Fix: give each process its own " +
                                   "RANK in [0, " + std::to_string(world_size) + ")");
  store.set(prefix + "world_size/" + std::to_string(rank), int_bytes(world_size));
  const auto deadline = Clock::now() + timeout;
  std::vector<bool> seen(size_t(world_size), false);
  seen[size_t(rank)] = true;
  for (;;) {
    std::vector<int> missing;
    for (int r = 0; r < world_size; ++r) {
      if (seen[size_t(r)]) continue;
      const std::string key = prefix + "world_size/" + std::to_string(r);
      if (!store.check(key)) {
        missing.push_back(r);
        continue;
      }
      seen[size_t(r)] = true;
      const int64_t theirs = bytes_int(store.get(key));
      if (theirs != world_size)
        throw mismatch(store, "rank " + std::to_string(r) + " was started with world size " +
                                  std::to_string(theirs) + " and this rank (" +
                                  std::to_string(rank) + ") with " + std::to_string(world_size) +
                                  ". Fix: start every rank with the same WORLD_SIZE");
    }
    // A rank of a larger world that a smaller world's ranks would never wait for.
    if (store.check(prefix + "world_size/" + std::to_string(world_size)))
      throw mismatch(store, "a rank numbered " + std::to_string(world_size) +
                                " joined, but this rank (" + std::to_string(rank) +
                                ") was started with world size " + std::to_string(world_size) +
                                ". Fix: start every rank with the same WORLD_SIZE");
    if (missing.empty()) return;
    if (Clock::now() >= deadline)
      throw DistributedTimeoutError(op,
                                    "rank(s) " + join_ranks(missing) + " of " +
                                        std::to_string(world_size) + " did not join within " +
                                        std::to_string(timeout.count()) + " ms (rank " +
                                        std::to_string(rank) + " waited). Fix: start every rank, " +
                                        "with the same MASTER_ADDR/MASTER_PORT, or raise timeout=");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

namespace {

// Posts what this rank called as collective `seq`, then reads what the other ranks posted until
// every one has or `deadline` passes. Returns "; rank R called X as its collective #seq" for each
// rank whose call differs; `absent` gets the ranks that posted nothing.
std::string calls_that_differ(TCPStore& store, const std::string& prefix, int rank, int world_size,
                              int64_t seq, const std::string& call, Clock::time_point deadline,
                              std::vector<int>& absent) {
  const std::string key = prefix + "call/" + std::to_string(seq) + "/";
  store.set(key + std::to_string(rank), std::vector<uint8_t>(call.begin(), call.end()));
  std::vector<bool> seen(size_t(world_size), false);
  seen[size_t(rank)] = true;
  std::string differ;
  for (;;) {
    absent.clear();
    for (int r = 0; r < world_size; ++r) {
      if (seen[size_t(r)]) continue;
      if (!store.check(key + std::to_string(r))) {
        absent.push_back(r);
        continue;
      }
      seen[size_t(r)] = true;
      std::vector<uint8_t> theirs = store.get(key + std::to_string(r));
      const std::string called(theirs.begin(), theirs.end());
      if (called != call)
        differ += "; rank " + std::to_string(r) + " called " + called + " as its collective #" +
                  std::to_string(seq);
    }
    if (absent.empty() || Clock::now() >= deadline) return differ;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

const char* const kSameCollectives =
    ". Every rank must call the same collectives in the same order with tensors of the same "
    "shape and dtype";

}  // namespace

void throw_collective_timeout(TCPStore& store, const std::string& prefix, int rank, int world_size,
                              int64_t seq, const std::string& call, Milliseconds timeout,
                              const std::string& detail) {
  const std::string op = "ProcessGroup";
  const std::string head = "collective #" + std::to_string(seq) + " on rank " +
                           std::to_string(rank) + ", " + call + ", did not complete within " +
                           std::to_string(timeout.count()) + " ms";
  std::vector<int> absent;
  std::string differ;
  try {
    // The other ranks time out at about the same moment; give them a little while to post.
    const auto deadline = Clock::now() + std::min<Milliseconds>(timeout, Milliseconds(3000));
    differ = calls_that_differ(store, prefix, rank, world_size, seq, call, deadline, absent);
  } catch (const DistributedError&) {
    // The store is gone with rank 0: say what is known.
    throw DistributedError(op, head +
                                   " and the rendezvous store no longer answers: rank 0 has "
                                   "ended (" +
                                   detail + ")");
  }
  if (!differ.empty()) throw DistributedError(op, head + differ + kSameCollectives);
  throw DistributedTimeoutError(
      op, head + ": rank(s) " + join_ranks(absent) + " did not take part (still busy, ended, or " +
              "called fewer collectives). Fix: call the same collectives on every rank, or " +
              "raise timeout= if a rank is only slow (" + detail + ")");
}

void throw_collective_broken(TCPStore& store, const std::string& prefix, int rank, int world_size,
                             int64_t seq, const std::string& call, const std::string& detail) {
  const std::string head = "collective #" + std::to_string(seq) + " on rank " +
                           std::to_string(rank) + ", " + call + ", failed";
  std::string differ;
  try {
    // A rank that timed out on a different call posted it before it ended: say so. No waiting:
    // a rank that crashed posts nothing.
    std::vector<int> absent;
    differ = calls_that_differ(store, prefix, rank, world_size, seq, call, Clock::now(), absent);
  } catch (const DistributedError&) {
    // The store is gone with rank 0; the message below says another rank ended.
  }
  if (!differ.empty()) throw DistributedError("ProcessGroup", head + differ + kSameCollectives);
  throw DistributedError("ProcessGroup", head +
                                             ": a peer's connection broke, so another rank has "
                                             "ended or crashed (" +
                                             detail + ")");
}

}  // namespace ember::distributed
