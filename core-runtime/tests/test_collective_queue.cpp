// test_collective_queue.cpp — the ordered queue of a group's collectives (src/distributed/
// collective_queue.h): jobs run in the order pushed, whichever thread runs them; a Work's wait()
// runs its job itself when it is next; a failure breaks the queue. Every wait is bounded.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "distributed/collective_queue.h"

namespace ember::test {
namespace {

using distributed::CollectiveQueue;
using distributed::QueuedWork;
using distributed::QueueState;

// Runs f on a thread of its own; true if it returned within 5 s (else the thread is left behind
// and the test fails instead of hanging).
bool returns_in_time(std::function<void()> f) {
  auto finished = std::make_shared<std::promise<void>>();
  std::future<void> done = finished->get_future();
  std::thread([f = std::move(f), finished] {
    f();
    finished->set_value();
  }).detach();
  return done.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
}

TEST(CollectiveQueue, JobsRunInTheOrderPushedWhoeverWaits) {
  std::mutex m;
  std::vector<int> order;
  CollectiveQueue queue;
  std::vector<std::shared_ptr<QueuedWork>> works;
  for (int i = 0; i < 50; ++i)
    works.push_back(queue.push([&, i] {
      std::lock_guard<std::mutex> lock(m);
      order.push_back(i);
    }));
  // Waited for last to first: a waiter may run its job only when it is next.
  for (auto it = works.rbegin(); it != works.rend(); ++it) (*it)->wait();
  works.push_back(queue.run([&] { order.push_back(50); }));  // blocking, behind the others
  std::vector<int> want(51);
  for (int i = 0; i < 51; ++i) want[size_t(i)] = i;
  EXPECT_EQ(order, want);
  for (const auto& w : works) EXPECT_TRUE(w->is_completed());
}

// Without a thread to run it, a job still runs when its Work is waited for and it is next: on
// the waiting thread. A job that is not next is left to the queue.
TEST(CollectiveQueue, WaitRunsTheNextJobOnTheWaitingThread) {
  auto state = std::make_shared<QueueState>();
  std::thread::id ran_on;
  auto first = std::make_shared<QueuedWork>(state);
  auto second = std::make_shared<QueuedWork>(state);
  state->jobs.emplace_back([&] { ran_on = std::this_thread::get_id(); }, first);
  state->jobs.emplace_back([] {}, second);
  EXPECT_FALSE(state->run_if_next(second.get()));
  EXPECT_FALSE(second->is_completed());
  std::thread::id waiter;
  ASSERT_TRUE(returns_in_time([&] {
    waiter = std::this_thread::get_id();
    first->wait();
  }));
  EXPECT_EQ(ran_on, waiter);
  EXPECT_TRUE(first->is_completed());
  EXPECT_FALSE(state->busy);
  ASSERT_TRUE(returns_in_time([&] { second->wait(); }));  // now next
}

TEST(CollectiveQueue, AFailureBreaksTheQueueForTheJobsAfterIt) {
  CollectiveQueue queue;
  auto bad = queue.push([] { throw std::runtime_error("peer went away"); });
  auto later = queue.push([] {});
  EXPECT_THROW(bad->wait(), std::runtime_error);
  try {
    later->wait();
    ADD_FAILURE() << "a job after a failure ran";
  } catch (const distributed::DistributedError& e) {
    EXPECT_NE(std::string(e.what()).find("peer went away"), std::string::npos) << e.what();
  }
  EXPECT_THROW(queue.run([] {}), distributed::DistributedError);
}

}  // namespace
}  // namespace ember::test
