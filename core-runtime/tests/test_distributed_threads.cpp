// test_distributed_threads.cpp — the threads of a gloo group, checked through /proc (Linux): what
// keeps a collective free of scheduler waits on a machine with fewer free cores than threads.
// No timing: each check counts threads or their context switches. Ranks are threads of this
// process on 127.0.0.1; every wait is bounded by a timeout of a few seconds.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sched.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "distributed/collective_queue.h"
#include "distributed_ranks.h"
#include "ember/distributed.h"
#include "ember/tcp_store.h"

namespace ember::test {
namespace {

using distributed::Milliseconds;
using distributed::ProcessGroup;
using distributed::TCPStore;

constexpr Milliseconds kTimeout{4000};

std::vector<int> thread_ids() {
  std::vector<int> out;
  if (DIR* dir = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(dir))
      if (e->d_name[0] != '.') out.push_back(std::stoi(e->d_name));
    ::closedir(dir);
  }
  return out;
}

std::string task_file(int tid, const char* name) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/" + name);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

int batch_threads() {
  int n = 0;
  for (int tid : thread_ids()) n += sched_getscheduler(tid) == SCHED_BATCH;
  return n;
}

// What the "status" lines `field` say of this process's threads named `name`, one per thread.
std::vector<std::string> status_of(const std::string& name, const std::string& field) {
  std::vector<std::string> out;
  for (int tid : thread_ids()) {
    if (task_file(tid, "comm") != name + "\n") continue;
    std::istringstream status(task_file(tid, "status"));
    for (std::string line; std::getline(status, line);)
      if (line.rfind(field + ":", 0) == 0) out.push_back(line.substr(field.size() + 1));
  }
  return out;
}

// How often the threads named `name` went to sleep: a sleeping thread's count grows by one each
// time it is woken and sleeps again.
int64_t sleeps_of(const std::string& name) {
  int64_t total = 0;
  for (const std::string& n : status_of(name, "voluntary_ctxt_switches")) total += std::stoll(n);
  return total;
}

// Waits (5 s at most) until the one thread named `name` sleeps; false if it never did.
bool wait_until_asleep(const std::string& name) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    const std::vector<std::string> state = status_of(name, "State");
    if (state.size() == 1 && state[0].find('S') != std::string::npos) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

class GlooThreads : public GlooTest {};

// Gloo's device thread spins on a connection lock that a preempted caller holds; as SCHED_BATCH
// it does not preempt the caller on waking (gloo_group.cpp says how). The rank's own thread, which
// creates the device, keeps its ordinary policy.
TEST_F(GlooThreads, TheDeviceThreadIsBatchAndTheCallerKeepsItsPolicy) {
  const int before = batch_threads();
  auto errors = run_ranks(2, [&](ProcessGroup& g) {
    EXPECT_EQ(sched_getscheduler(0), SCHED_OTHER) << "rank " << g.rank();
    Tensor t = Tensor::from_vector(std::vector<float>{1, 2, 3}, {3});
    g.all_reduce(t);
    EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{2, 4, 6}));
    // Both ranks' devices exist once their groups connected; the barrier keeps both alive
    // until each rank has counted.
    EXPECT_GE(batch_threads(), before + 2) << "rank " << g.rank();
    g.barrier();
  });
  for (int r = 0; r < 2; ++r) EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
}

// A blocking collective runs on the caller's thread and leaves the group's queue thread asleep:
// waking it for nothing each time took a core from the peers on a busy machine.
TEST_F(GlooThreads, BlockingCollectivesLeaveTheQueueThreadAsleep) {
  const std::string name = distributed::CollectiveQueue::kThreadName;
  auto errors = run_ranks(1, [&](ProcessGroup& g) {
    Tensor t = Tensor::from_vector(std::vector<float>(1024, 1.0f), {1024});
    g.all_reduce(t, distributed::ReduceOp::Sum, /*async=*/true)->wait();  // woke the thread
    ASSERT_TRUE(wait_until_asleep(name)) << "no thread named " << name << " went to sleep";
    const int64_t before = sleeps_of(name);
    constexpr int kCalls = 200;
    for (int i = 0; i < kCalls; ++i) g.all_reduce(t);
    // A handful for whatever else may wake a thread; one per call before this was fixed.
    EXPECT_LT(sleeps_of(name) - before, kCalls / 4);
    EXPECT_EQ(t.to_vector<float>()[0], 1.0f);  // a world of one: unchanged
  });
  EXPECT_EQ(errors[0], "");
}

}  // namespace
}  // namespace ember::test
