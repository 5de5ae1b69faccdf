// thread_pool.cpp — the CPU backend's pool of threads, and ember::set_num_threads.
//
// Why not OpenMP: its idle threads spin (libgomp's default: some 300 000 polls, around a
// millisecond) before they sleep, and its `parallel for` hands out the chunks statically, one per
// thread. On a 2-core machine that other CPU-bound processes share, a worker that the OS has not
// scheduled yet held every loop up until it ran, and the spinning took the very core the work
// needed: a small MLP's training step took 1 110 us on OpenMP's two threads against 275 us on
// one. The spin can only be shortened through the environment (OMP_WAIT_POLICY, GOMP_SPINCOUNT),
// read once when libgomp loads, which a library cannot set in time for its user. Here:
// - the calling thread works too, and chunks are claimed one at a time from an atomic counter:
//   a worker that has not woken up yet claims nothing, and the caller takes the rest itself;
// - an idle worker polls for the next job for a short while (kSpin), then sleeps on a condition
//   variable; ops that follow one another closely (the kernels of a training step) find it
//   awake, a busy machine loses at most kSpin of a core after a job; a sleeping worker is woken
//   only for a job large enough to pay for it (parallel.h's kWakeGrains);
// - which chunk a thread runs never changes what the chunk computes (the loops split their work
//   by its size, not by who runs it), so results do not depend on thread timing.
#include "cpu/thread_pool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#include "ember/error.h"
#include "ember/threads.h"

namespace ember::cpu {
namespace {

// How long an idle worker polls before it sleeps. Waking a sleeping thread costs the caller a
// system call and the worker a trip through the scheduler (55-60 us on the 2-core VM at load 20),
// and only loops of kWakeGrains wake one. In a training step driven from Python the kernels are
// tens to hundreds of microseconds apart: with 50 us of polling the digits CNN's step ran no
// faster on two threads than on one (6.0-6.4 ms against 5.6-5.7), with 300 us it matched
// OpenMP's two threads in the same minutes (3.65 ms; OpenMP 3.67). OpenMP polls ~1 ms.
constexpr auto kSpin = std::chrono::microseconds(300);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

thread_local bool t_in_parallel = false;
thread_local bool t_worker = false;

// Parses a thread count; 0 for text that is not a whole number >= 1.
int parse_count(const char* text) {
  if (!text || !*text) return 0;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || (*end != '\0' && *end != ',') || v < 1 || v > 4096) return 0;
  return int(v);
}

int cores_available() {
#if defined(__linux__)
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

// The count; 0 until the environment is read, on first use: a bad EMBER_NUM_THREADS then throws
// from every op that would spread its work (and from get_num_threads) until it is fixed or
// set_num_threads overrides it.
std::atomic<int> g_threads{0};

int current_threads() {
  const int n = g_threads.load(std::memory_order_relaxed);
  if (n) return n;
  int unset = 0;
  g_threads.compare_exchange_strong(unset, threads_from_environment());
  return g_threads.load(std::memory_order_relaxed);
}

// The generation of a job and the next chunk to claim, in one word: a worker that wakes late, its
// job already finished, fails to claim from the next job because the generations differ.
constexpr int kIndexBits = 32;
constexpr uint64_t kIndexMask = (uint64_t(1) << kIndexBits) - 1;

class Pool {
 public:
  // Runs the job on the pool; false (nothing run) when it is not worth waking anyone and every
  // worker sleeps.
  bool run(int64_t chunks, ChunkFn fn, void* context, bool wake) {
    resize(current_threads() - 1);
    if (!wake && sleeping_.load(std::memory_order_acquire) == int(threads_.size())) return false;
    uint64_t gen;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = {fn, context, chunks};
      gen = ++generation_;
      done_.store(0, std::memory_order_relaxed);
      failed_.store(false, std::memory_order_relaxed);
      error_ = nullptr;
      next_.store(gen << kIndexBits, std::memory_order_release);
      published_.store(gen, std::memory_order_release);
    }
    if (wake) wake_.notify_all();  // no system call when every worker is still polling
    t_in_parallel = true;
    work(job_, gen);
    t_in_parallel = false;
    wait_until_done(chunks);
    std::exception_ptr error = error_;
    error_ = nullptr;
    if (error) std::rethrow_exception(error);
    return true;
  }

  // Taken by the one thread whose job runs; another caller meanwhile runs its loop alone.
  std::atomic<bool> busy{false};

 private:
  struct Job {
    ChunkFn fn = nullptr;
    void* context = nullptr;
    int64_t chunks = 0;
  };

  // Claims and runs chunks of job `gen` until none are left (or the job is no longer current).
  void work(const Job& job, uint64_t gen) {
    uint64_t s = next_.load(std::memory_order_relaxed);
    for (;;) {
      if ((s >> kIndexBits) != (gen & (~uint64_t(0) >> kIndexBits)) ||
          int64_t(s & kIndexMask) >= job.chunks)
        return;
      if (!next_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel)) continue;
      run_one(job, int64_t(s & kIndexMask));
      s = next_.load(std::memory_order_relaxed);
    }
  }

  void run_one(const Job& job, int64_t chunk) {
    if (!failed_.load(std::memory_order_relaxed)) {
      try {
        job.fn(job.context, chunk);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!error_) error_ = std::current_exception();
        failed_.store(true, std::memory_order_relaxed);
      }
    }
    if (done_.fetch_add(1, std::memory_order_acq_rel) + 1 == job.chunks && t_worker) {
      std::lock_guard<std::mutex> lock(mu_);  // the caller checks done_ under the lock
      finished_.notify_one();
    }
  }

  void wait_until_done(int64_t chunks) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (int i = 0; done_.load(std::memory_order_acquire) != chunks; ++i) {
      cpu_relax();
      if (i % 64 == 63 && std::chrono::steady_clock::now() > until) {
        std::unique_lock<std::mutex> lock(mu_);
        finished_.wait(lock, [&] { return done_.load(std::memory_order_acquire) == chunks; });
        return;
      }
    }
  }

  void worker() {
    t_in_parallel = t_worker = true;
    uint64_t seen = published_.load(std::memory_order_acquire);
    for (;;) {
      const auto until = std::chrono::steady_clock::now() + kSpin;
      for (int i = 0; published_.load(std::memory_order_acquire) == seen; ++i) {
        cpu_relax();
        if (i % 64 == 63 && std::chrono::steady_clock::now() > until) break;
      }
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        sleeping_.fetch_add(1, std::memory_order_release);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        sleeping_.fetch_sub(1, std::memory_order_relaxed);
        if (stop_) return;
        seen = generation_;
        job = job_;
      }
      work(job, seen);
    }
  }

  // Called with busy held, so no job is in flight.
  void resize(int workers) {
    if (int(threads_.size()) == workers) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
    threads_.clear();
    stop_ = false;
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { worker(); });
  }

  std::mutex mu_;
  std::condition_variable wake_, finished_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
  uint64_t generation_ = 0;  // guarded by mu_, as job_ and error_ are
  Job job_;
  std::exception_ptr error_;
  std::atomic<uint64_t> published_{0};  // generation_, for polling without the lock
  std::atomic<uint64_t> next_{0};
  std::atomic<int64_t> done_{0};
  std::atomic<bool> failed_{false};
  std::atomic<int> sleeping_{0};  // workers waiting on wake_ (or about to)
};

// Never destroyed: its workers sleep through the process's exit instead of being joined while
// other static objects are torn down. A child of fork() has none of its parent's threads and
// perhaps a locked mutex of the pool's, so it starts a pool of its own.
std::atomic<Pool*> g_pool{nullptr};

Pool& pool() {
  static const bool registered = [] {
#if defined(__linux__)
    pthread_atfork(nullptr, nullptr, [] { g_pool.store(nullptr); });
#endif
    return true;
  }();
  (void)registered;
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (!p) {
    static std::mutex creating;
    std::lock_guard<std::mutex> lock(creating);
    p = g_pool.load(std::memory_order_acquire);
    if (!p) g_pool.store(p = new Pool, std::memory_order_release);
  }
  return *p;
}

}  // namespace

int threads_from_environment() {
  if (const char* text = std::getenv("EMBER_NUM_THREADS")) {
    const int n = parse_count(text);
    if (n == 0 || std::string(text).find(',') != std::string::npos)
      throw ValueError("EMBER_NUM_THREADS",
                       "'" + std::string(text) +
                           "' is not a thread count; set it to a whole number >= 1 (such as 2), "
                           "or unset it to use every core this process may run on");
    return n;
  }
  // OpenMP's variable, as a user who set it for every library expects; its list form ("4,2",
  // nested levels) gives the outer count. Text OpenMP would ignore is ignored here too.
  if (const int n = parse_count(std::getenv("OMP_NUM_THREADS"))) return n;
  return cores_available();
}

bool in_parallel_region() { return t_in_parallel; }

void run_chunks(int64_t chunks, ChunkFn fn, void* context, bool wake) {
  if (chunks <= 0) return;
  Pool* p = nullptr;
  if (chunks > 1 && !t_in_parallel && current_threads() > 1) {
    p = &pool();
    if (p->busy.exchange(true, std::memory_order_acquire)) p = nullptr;
  }
  if (p) {
    struct Release {
      Pool* p;
      ~Release() { p->busy.store(false, std::memory_order_release); }
    } release{p};
    if (p->run(chunks, fn, context, wake)) return;
  }
  for (int64_t c = 0; c < chunks; ++c) fn(context, c);
}

}  // namespace ember::cpu

namespace ember {

void set_num_threads(int n) {
  if (n < 1)
    throw ValueError("set_num_threads", "got " + std::to_string(n) +
                                            " threads; pass a whole number >= 1 (1 runs every "
                                            "op on the calling thread)");
  cpu::g_threads.store(n, std::memory_order_relaxed);
}

int get_num_threads() { return cpu::current_threads(); }

}  // namespace ember
