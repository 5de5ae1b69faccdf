// test_threads.cpp — ember::set_num_threads / get_num_threads, the start-up count from the
// environment, and the pool under parallel_for: coverage, nesting, exceptions, concurrent
// callers, and results that do not depend on the thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#endif

#include "cpu/parallel.h"
#include "cpu/thread_pool.h"
#include "ember/threads.h"
#include "test_util.h"

namespace ember {
namespace {

using cpu::baseline::parallel_for;

// Restores the thread count a test changed.
class ThreadsTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = get_num_threads(); }
  void TearDown() override { set_num_threads(saved_); }

 private:
  int saved_ = 1;
};

using test::ScopedEnv;

int affinity_cores() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
#endif
  return int(std::thread::hardware_concurrency());
}

TEST_F(ThreadsTest, SetThenGetRoundTrips) {
  for (int n : {1, 2, 3, 7, 1}) {
    set_num_threads(n);
    EXPECT_EQ(get_num_threads(), n);
  }
}

TEST_F(ThreadsTest, ACountBelowOneIsAValueErrorNamingTheFunctionAndValue) {
  for (int n : {0, -3}) {
    try {
      set_num_threads(n);
      FAIL() << "set_num_threads(" << n << ") did not throw";
    } catch (const ValueError& e) {
      EXPECT_EQ(e.op(), "set_num_threads");
      EXPECT_NE(std::string(e.what()).find("got " + std::to_string(n)), std::string::npos)
          << e.what();
    }
  }
  EXPECT_GE(get_num_threads(), 1);  // unchanged
}

TEST(ThreadsEnvironment, EmberNumThreadsComesFirstThenOmpNumThreadsThenTheAffinityMask) {
  {
    ScopedEnv ember("EMBER_NUM_THREADS", "3"), omp("OMP_NUM_THREADS", "5");
    EXPECT_EQ(cpu::threads_from_environment(), 3);
  }
  {
    ScopedEnv ember("EMBER_NUM_THREADS", std::nullopt), omp("OMP_NUM_THREADS", "5,2");
    EXPECT_EQ(cpu::threads_from_environment(), 5);  // OpenMP's nested list: the outer level
  }
  {
    ScopedEnv ember("EMBER_NUM_THREADS", std::nullopt), omp("OMP_NUM_THREADS", "lots");
    EXPECT_EQ(cpu::threads_from_environment(), affinity_cores());  // ignored, as OpenMP does
  }
  {
    ScopedEnv ember("EMBER_NUM_THREADS", std::nullopt), omp("OMP_NUM_THREADS", std::nullopt);
    EXPECT_EQ(cpu::threads_from_environment(), affinity_cores());
  }
}

TEST(ThreadsEnvironment, ABadEmberNumThreadsIsAValueErrorNamingTheVariableAndText) {
  for (const char* text : {"0", "-1", "two", "2x", "", "4,2"}) {
    ScopedEnv ember("EMBER_NUM_THREADS", std::string(text));
    try {
      cpu::threads_from_environment();
      FAIL() << "EMBER_NUM_THREADS='" << text << "' did not throw";
    } catch (const ValueError& e) {
      EXPECT_EQ(e.op(), "EMBER_NUM_THREADS");
      EXPECT_NE(std::string(e.what()).find("'" + std::string(text) + "'"), std::string::npos)
          << e.what();
    }
  }
}

// Every index of [0, n) visited exactly once, whatever the count and the cost.
TEST_F(ThreadsTest, ParallelForCoversTheRangeOnce) {
  for (int threads : {1, 2, 3, 8}) {
    set_num_threads(threads);
    for (int64_t n : {1, 2, 7, 1000, 100003}) {
      for (int64_t cost : {int64_t(1), int64_t(1000), int64_t(1) << 20}) {
        std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
        parallel_for(n, cost, [&](int64_t b, int64_t e) {
          ASSERT_LE(0, b);
          ASSERT_LT(b, e);
          ASSERT_LE(e, n);
          for (int64_t i = b; i < e; ++i) seen[size_t(i)].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(seen[size_t(i)].load(), 1) << "threads " << threads << " n " << n;
      }
    }
  }
}

TEST_F(ThreadsTest, WorkTooSmallForAThreadRunsInOneCallOnTheCaller) {
  set_num_threads(4);
  int calls = 0;
  std::thread::id who;
  parallel_for(1000, 1, [&](int64_t b, int64_t e) {
    ++calls;
    who = std::this_thread::get_id();
    EXPECT_EQ(b, 0);
    EXPECT_EQ(e, 1000);
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(who, std::this_thread::get_id());
}

TEST_F(ThreadsTest, ANestedParallelForRunsInlineOnItsThread) {
  set_num_threads(4);
  std::atomic<int> inner_calls{0}, mismatched{0};
  std::atomic<int64_t> inner_total{0};
  parallel_for(8, int64_t(1) << 20, [&](int64_t b, int64_t e) {
    EXPECT_TRUE(cpu::in_parallel_region());
    for (int64_t i = b; i < e; ++i) {
      const std::thread::id outer = std::this_thread::get_id();
      parallel_for(1000, int64_t(1) << 20, [&](int64_t ib, int64_t ie) {
        inner_calls.fetch_add(1);
        inner_total.fetch_add(ie - ib);
        if (std::this_thread::get_id() != outer) mismatched.fetch_add(1);
      });
    }
  });
  EXPECT_EQ(inner_calls.load(), 8);  // one call each, over the whole range
  EXPECT_EQ(inner_total.load(), 8 * 1000);
  EXPECT_EQ(mismatched.load(), 0);
  EXPECT_FALSE(cpu::in_parallel_region());
}

TEST_F(ThreadsTest, AnExceptionInAChunkReachesTheCallerAndThePoolGoesOn) {
  set_num_threads(3);
  for (int64_t bad : {int64_t(0), int64_t(5), int64_t(11)}) {  // the caller's chunk or a worker's
    EXPECT_THROW(parallel_for(12, int64_t(1) << 20,
                              [&](int64_t b, int64_t e) {
                                for (int64_t i = b; i < e; ++i)
                                  if (i == bad)
                                    throw ShapeError("chunk", "index " + std::to_string(i));
                              }),
                 ShapeError);
  }
  EXPECT_THROW(parallel_for(12, int64_t(1) << 20,
                            [](int64_t, int64_t) { throw std::runtime_error("every chunk"); }),
               std::runtime_error);
  std::atomic<int64_t> total{0};  // still works afterwards
  parallel_for(12, int64_t(1) << 20, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
  EXPECT_EQ(total.load(), 12);
}

TEST_F(ThreadsTest, CallersOnSeveralThreadsAtOnceEachGetTheirWholeRange) {
  set_num_threads(2);
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&] {
      for (int round = 0; round < 200; ++round) {
        std::atomic<int64_t> total{0};
        parallel_for(64, int64_t(1) << 16, [&](int64_t b, int64_t e) { total.fetch_add(e - b); });
        if (total.load() != 64) wrong.fetch_add(1);
      }
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST_F(ThreadsTest, TheCountTakesEffectAtTheNextLoop) {
  for (int threads : {3, 1, 2, 4}) {
    set_num_threads(threads);
    std::mutex mu;
    std::set<std::thread::id> ids;
    for (int round = 0; round < 50; ++round)
      parallel_for(64, int64_t(1) << 20, [&](int64_t, int64_t) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        std::lock_guard<std::mutex> lock(mu);
        ids.insert(std::this_thread::get_id());
      });
    EXPECT_GE(int(ids.size()), 1);
    EXPECT_LE(int(ids.size()), threads);
  }
}

// The same bits on 1, 2 and 3 threads: elementwise (cheap and transcendental), a reduction over
// one long vector (chunked), a column reduction and softmax over rows. A GEMM split into bands and
// a convolution's forward (GEMMs too) agree to float rounding: the BLAS may compute the tiles at a
// band's edge with another kernel (blas.h).
TEST_F(ThreadsTest, ResultsDoNotDependOnTheThreadCount) {
  const Tensor x = test::random_tensor({1 << 20}, 1);
  const Tensor m = test::random_tensor({1024, 515}, 2);
  const Tensor a = test::random_tensor({256, 300}, 3), b = test::random_tensor({300, 200}, 4);
  const Tensor img = test::random_tensor({8, 3, 32, 32}, 5);
  const Tensor w = test::random_tensor({16, 3, 3, 3}, 6);
  auto run = [&] {
    return std::vector<Tensor>{add(x, x),     exp(x),       gelu(x),
                               sum(x),        sum(m, {0}),  amax(m, {1}),
                               softmax(m, 1), matmul(a, b), conv2d(img, w)};
  };
  const size_t kFirstGemm = 7;  // matmul, then conv2d
  set_num_threads(1);
  const std::vector<Tensor> one = run();
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    const std::vector<Tensor> many = run();
    for (size_t i = 0; i < one.size(); ++i) {
      const std::vector<float> a = one[i].to_vector<float>(), b = many[i].to_vector<float>();
      if (i < kFirstGemm) {
        EXPECT_EQ(a, b) << "result " << i << " at " << threads << " threads";
        continue;
      }
      ASSERT_EQ(a.size(), b.size());
      for (size_t e = 0; e < a.size(); ++e)  // sums of 300 or 27 products of normal numbers
        ASSERT_NEAR(a[e], b[e], 1e-5f * std::max(1.0f, std::abs(a[e])))
            << "result " << i << " element " << e << " at " << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace ember
