// test_cuda_async.cpp — asynchronous CUDA: device-side checks (a bad index or class target is
// reported, by op, at the next synchronising point, and the device stays usable), current streams
// and StreamGuard, events ordering work across streams and timing it, record_stream in the caching
// allocator, external streams, GEMMs from two threads, and the stream API on a machine without a
// GPU.
//
// The deferred-error tests are parameterised by device: on the CPU the same bad input raises at
// the call, which checks the messages the CUDA cases expect.
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cuda_test.h"
#include "ember/cuda.h"
#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::expect_error;

// x: [rows, cols] with x[r, c] = 10 r + c, exact in float32.
Tensor grid(int64_t rows, int64_t cols, Device device) {
  std::vector<float> v(size_t(rows * cols));
  for (int64_t i = 0; i < rows * cols; ++i) v[size_t(i)] = float(10 * (i / cols) + i % cols);
  return Tensor::from_vector(v, {rows, cols}).to(device);
}

Tensor indices(const std::vector<int64_t>& v, Device device) {
  return Tensor::from_vector(v, {int64_t(v.size())}).to(device);
}

// On the CPU, `bad` throws E at once. On CUDA, `bad` returns, `sync` (the next synchronising
// point) throws E, and a second synchronisation finds the flag reset. Both messages hold `parts`.
template <class E>
void expect_deferred(Device device, const std::function<void()>& bad,
                     const std::function<void()>& sync, const std::vector<std::string>& parts) {
  if (device.is_cpu()) {
    expect_error<E>(bad, parts);
    return;
  }
  EXPECT_NO_THROW(bad()) << "a device-side check must not throw (nor wait) at the call";
  expect_error<E>(sync, parts);
  EXPECT_NO_THROW(synchronize(device)) << "the flag must be reset once reported";
}

class CudaAsyncErrors : public test::DeviceTest {};
EMBER_INSTANTIATE_DEVICE_TEST(CudaAsyncErrors);

TEST_P(CudaAsyncErrors, IndexSelectReportedAtItemThenNextOpWorks) {
  const Tensor x = grid(10, 3, device());
  Tensor out;
  expect_deferred<IndexError>(
      device(),
      [&] {
        out = index_select(x, 0, indices({1, 12, 3}, device()));
      },
      [&] { sum(out).item<float>(); },
      {"index_select: ", "index 12 is out of range for dim 0 of x ([10, 3] float32",
       "valid indices are 0 to 9"});
  // The device is still usable: the next op is right.
  const Tensor good = index_select(x, 0, indices({9, 0, 4}, device()));
  std::vector<double> expected;
  for (int64_t r : {9, 0, 4})
    for (int64_t c = 0; c < 3; ++c) expected.push_back(double(10 * r + c));
  expect_close(good, expected, 0, 0);
}

TEST_P(CudaAsyncErrors, GatherReportedAtSynchronize) {
  const Tensor x = grid(2, 3, device());
  const Tensor bad = Tensor::from_vector(std::vector<int64_t>{0, 5, 2, 1}, {2, 2}).to(device());
  expect_deferred<IndexError>(
      device(), [&] { gather(x, 1, bad); }, [&] { synchronize(device()); },
      {"gather: ", "index 5 is out of range for dim 1 of x ([2, 3] float32"});
  const Tensor idx = Tensor::from_vector(std::vector<int64_t>{2, 0, 1, 1}, {2, 2}).to(device());
  // out[r, j] = x[r, idx[r, j]] = 10 r + idx[r, j]
  expect_close(gather(x, 1, idx), {2, 0, 11, 11}, 0, 0);
}

TEST_P(CudaAsyncErrors, EmbeddingReportedAtCheckErrors) {
  const Tensor w = grid(4, 2, device());
  const Tensor bad = indices({0, -1, 3}, device());
  // check_errors does not wait: poll an event until the work before it has finished.
  auto finish_then_check = [&] {
    cuda::Event done(false);
    done.record(cuda::current_stream(device().index));
    while (!done.query()) {
    }
    cuda::check_errors(device().index);
  };
  expect_deferred<IndexError>(device(), [&] { embedding(w, bad); }, finish_then_check,
                              {"embedding: ",
                               "index -1 is out of range for the rows of weight ([4, 2] float32",
                               "(negative indices are not wrapped)"});
  expect_close(embedding(w, indices({3, 0}, device())), {30, 31, 0, 1}, 0, 0);
}

TEST_P(CudaAsyncErrors, IndexAddAndScatterAddReported) {
  const Tensor x = zeros({4, 2}, DType::Float32, device());
  const Tensor src = ones({2, 2}, DType::Float32, device());
  expect_deferred<IndexError>(
      device(),
      [&] {
        index_add(x, 0, indices({1, 4}, device()), src);
      },
      [&] { synchronize(device()); }, {"index_add: ", "index 4 is out of range for dim 0 of x"});
  const Tensor bad = Tensor::from_vector(std::vector<int64_t>{0, 7}, {1, 2}).to(device());
  expect_deferred<IndexError>(
      device(), [&] { scatter_add(x, 0, bad, src); }, [&] { synchronize(device()); },
      {"scatter_add: ", "index 7 is out of range for dim 0 of x"});
  expect_close(index_add(x, 0, indices({3, 3}, device()), src), {0, 0, 0, 0, 0, 0, 2, 2}, 0, 0);
}

// Mean cross entropy of logits rows against targets, in double: log(sum_c exp(x[c])) - x[t].
double mean_cross_entropy(const std::vector<double>& x, int64_t classes,
                          const std::vector<int64_t>& target) {
  double total = 0;
  for (size_t r = 0; r < target.size(); ++r) {
    double s = 0;
    for (int64_t c = 0; c < classes; ++c) s += std::exp(x[r * size_t(classes) + size_t(c)]);
    total += std::log(s) - x[r * size_t(classes) + size_t(target[r])];
  }
  return total / double(target.size());
}

TEST_P(CudaAsyncErrors, CrossEntropyTargetReportedAtItem) {
  const std::vector<double> v = test::random_values(12, 7);
  const Tensor logits = Tensor::from_vector(v, {3, 4}).to(device(), DType::Float32);
  Tensor loss;
  expect_deferred<IndexError>(
      device(),
      [&] {
        loss = cross_entropy(logits, indices({0, 7, 1}, device()));
      },
      [&] { loss.item<float>(); },
      {"cross_entropy: ", "logits is [3, 4] float32", "target holds 7",
       "outside the valid class range [0, 4)", "ignore_index (-100)"});
  const std::vector<int64_t> target{3, 0, 2};
  const Tensor good = cross_entropy(logits, indices(target, device()));
  EXPECT_NEAR(good.item<float>(), mean_cross_entropy(v, 4, target), 1e-5);
}

TEST_P(CudaAsyncErrors, NllLossTargetReportedAtToVector) {
  const std::vector<double> v = test::random_values(8, 11, -3.0, -0.1);
  const Tensor log_probs = Tensor::from_vector(v, {2, 4}).to(device(), DType::Float32);
  Tensor loss;
  expect_deferred<IndexError>(
      device(),
      [&] {
        loss = nll_loss(log_probs, indices({-3, 1}, device()), Tensor(), -100, LossReduction::None);
      },
      [&] { loss.to_vector<float>(); }, {"nll_loss: ", "target holds -3", "[0, 4)"});
  const Tensor good =
      nll_loss(log_probs, indices({2, 1}, device()), Tensor(), -100, LossReduction::None);
  expect_close(good, {-v[2], -v[5]}, 1e-6, 0);
}

TEST_P(CudaAsyncErrors, MaxPool2dBackwardOutOfRangeIndex) {
  // input [1, 1, 2, 2], output [1, 1, 1, 2]: valid indices are 0..3 (and -1, a padding window).
  const Tensor g = Tensor::from_vector(std::vector<float>{1, 2}, {1, 1, 1, 2}).to(device());
  const Tensor bad = Tensor::from_vector(std::vector<int64_t>{1, 99}, {1, 1, 1, 2}).to(device());
  Tensor gx;
  expect_deferred<IndexError>(
      device(),
      [&] {
        gx = max_pool2d_backward(g, bad, {1, 1, 2, 2});
      },
      [&] { gx.to_vector<float>(); },
      {"max_pool2d_backward: ", "outside [0, H * W) = [0, 4)", "input planes of 2 x 2"});
  const Tensor good = Tensor::from_vector(std::vector<int64_t>{3, -1}, {1, 1, 1, 2}).to(device());
  expect_close(max_pool2d_backward(g, good, {1, 1, 2, 2}), {0, 0, 0, 1}, 0, 0);
}

// ---- CUDA only ----

using CudaAsync = test::CudaTest;

TEST_F(CudaAsync, TheFirstOfTwoFailuresIsReported) {
  const Tensor x = grid(10, 3, gpu);
  index_select(x, 0, indices({12}, gpu));
  gather(x, 0, Tensor::from_vector(std::vector<int64_t>{-5}, {1, 1}).to(gpu));
  expect_error<IndexError>([&] { synchronize(gpu); }, {"index_select: ", "index 12"});
  EXPECT_NO_THROW(synchronize(gpu)) << "the second failure is dropped with the first's report";
}

TEST_F(CudaAsync, ReportedAfterManyCheckedOpsStillNamesTheOp) {
  const Tensor x = grid(10, 3, gpu);
  index_select(x, 0, indices({10}, gpu));
  const Tensor ok = indices({1}, gpu);
  for (int i = 0; i < 1100; ++i) index_select(x, 0, ok);  // more checks than the flag keeps
  expect_error<IndexError>([&] { synchronize(gpu); }, {"index_select: ", "value 10", "[0, 10)"});
}

TEST_F(CudaAsync, SyncModeReportsAtTheOp) {
  const Tensor x = grid(10, 3, gpu);
  set_cuda_sync_mode(true);
  expect_error<IndexError>([&] { index_select(x, 0, indices({11}, gpu)); },
                           {"index_select: ", "index 11"});
  set_cuda_sync_mode(false);
  EXPECT_NO_THROW(synchronize(gpu));
}

TEST_F(CudaAsync, StreamGuardSetsAndRestores) {
  const cuda::Stream ember = cuda::Stream::ember_stream(0);
  EXPECT_EQ(cuda::current_stream(0), ember);
  EXPECT_EQ(cuda_current_stream(0), ember.handle());
  const cuda::Stream a = cuda::Stream::create(0), b = cuda::Stream::create(0);
  EXPECT_NE(a, ember);
  EXPECT_NE(a, b);
  {
    cuda::StreamGuard ga(a);
    EXPECT_EQ(cuda::current_stream(0), a);
    EXPECT_EQ(cuda_current_stream(0), a.handle());
    {
      cuda::StreamGuard gb(b);
      EXPECT_EQ(cuda::current_stream(0), b);
    }
    EXPECT_EQ(cuda::current_stream(0), a);
  }
  EXPECT_EQ(cuda::current_stream(0), ember);
  cuda::set_current_stream(b);
  EXPECT_EQ(cuda::current_stream(0), b);
  cuda::set_current_stream(ember);
  EXPECT_EQ(cuda::current_stream(0), ember);
}

TEST_F(CudaAsync, CopiesAndKernelsRunOnTheCurrentStream) {
  const cuda::Stream s = cuda::Stream::create(0);
  cuda::StreamGuard guard(s);
  std::vector<float> v(3000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  const Tensor x = Tensor::from_vector(v, {3000}).to(gpu);  // host to device on s
  const Tensor y = add(x.clone(), 1.0);                     // device to device, then a kernel
  const std::vector<float> got = y.to_vector<float>();      // device to host on s
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(got[i], float(i) + 1) << i;
  EXPECT_TRUE(s.query()) << "the copy to the host waited for s";
}

// Queues `steps` rounds of a = a + 1 over n float32 zeros on the current stream: 2^26 elements
// take about 0.1 ms a round on an H200, far longer than the host takes to queue a round.
Tensor long_work(Device gpu, int steps, int64_t n = int64_t(1) << 26) {
  Tensor a = zeros({n}, DType::Float32, gpu);
  for (int i = 0; i < steps; ++i) a = add(a, 1.0);
  return a;
}

TEST_F(CudaAsync, EventOrdersAProducerAndAConsumerOnTwoStreams) {
  const cuda::Stream a = cuda::Stream::create(0), b = cuda::Stream::create(0);
  Tensor produced;
  cuda::Event ready;
  {
    cuda::StreamGuard guard(a);
    produced = long_work(gpu, 200, int64_t(1) << 24);
    ready.record(a);
  }
  cuda::StreamGuard guard(b);
  ready.wait(b);  // b waits on the device; the host does not
  cuda::record_stream(produced, b);
  // Every element is 200, and their sum is exact in float64.
  const Tensor total = sum(produced.to(DType::Float64));
  EXPECT_EQ(total.item<double>(), 200.0 * double(int64_t(1) << 24));
  EXPECT_TRUE(ready.query());
}

TEST_F(CudaAsync, ElapsedTimeIsPositive) {
  const cuda::Stream s = cuda::current_stream(0);
  cuda::Event start, end;
  start.record(s);
  const Tensor a = long_work(gpu, 20);
  end.record(s);
  end.synchronize();
  EXPECT_GT(start.elapsed_time(end), 0.0f);
  cuda::Event never, untimed(false);
  expect_error<ValueError>([&] { start.elapsed_time(never); },
                           {"Event::elapsed_time: ", "recorded"});
  untimed.record(s);
  untimed.synchronize();
  expect_error<ValueError>([&] { start.elapsed_time(untimed); },
                           {"Event::elapsed_time: ", "timing"});
  EXPECT_TRUE(never.query());
  EXPECT_NO_THROW(never.synchronize());
  EXPECT_NO_THROW(never.wait(s));
}

TEST_F(CudaAsync, RecordStreamDelaysReuseUntilTheOtherStreamIsDone) {
  const cuda::Stream home = cuda::current_stream(0), side = cuda::Stream::create(0);
  synchronize(gpu);
  empty_cache(gpu);  // no cached block of x's size is left from other tests
  // 3 MiB + 512 B: a size no other tensor here has.
  const int64_t n = (int64_t(3) << 18) + 128;
  Tensor x = full({n}, 1.0, DType::Float32, gpu);  // allocated on home
  void* const block = x.data_ptr();
  cuda::Event x_ready;
  x_ready.record(home);
  Tensor y;
  {
    cuda::StreamGuard guard(side);
    x_ready.wait(side);
    const Tensor busy = long_work(gpu, 200);  // keeps side busy for about 20 ms
    y = mul(x, 2.0);                          // reads x after that
    cuda::record_stream(x, side);
  }
  const int64_t bytes = memory_stats(gpu).in_use;
  x = Tensor();  // freed on home while side's mul has not run yet
  ASSERT_FALSE(side.query()) << "side's work finished too soon for the test to mean anything";
  EXPECT_GT(memory_stats(gpu).awaiting_streams, 0);
  EXPECT_LT(memory_stats(gpu).in_use, bytes);
  Tensor z = full({n}, 7.0, DType::Float32, gpu);  // must not get x's block
  EXPECT_NE(z.data_ptr(), block);
  side.synchronize();
  const Tensor w = Tensor::empty({n}, DType::Float32, gpu);  // now x's block comes back
  EXPECT_EQ(w.data_ptr(), block);
  EXPECT_EQ(memory_stats(gpu).awaiting_streams, 0);
  // Had z been given x's block, side's mul would have read 7s.
  const std::vector<float> got = y.to_vector<float>();
  for (int64_t i = 0; i < n; i += 997) ASSERT_EQ(got[size_t(i)], 2.0f) << i;
  EXPECT_EQ(got.back(), 2.0f);
}

TEST_F(CudaAsync, WithoutRecordStreamABlockIsReusedOnItsOwnStream) {
  synchronize(gpu);
  empty_cache(gpu);
  const int64_t n = (int64_t(3) << 18) + 256;
  Tensor x = Tensor::empty({n}, DType::Float32, gpu);
  void* const block = x.data_ptr();
  x = Tensor();
  EXPECT_EQ(Tensor::empty({n}, DType::Float32, gpu).data_ptr(), block);
  // ...but not by another stream's allocation: blocks belong to the stream they were made on.
  const cuda::Stream side = cuda::Stream::create(0);
  cuda::StreamGuard guard(side);
  EXPECT_NE(Tensor::empty({n}, DType::Float32, gpu).data_ptr(), block);
}

TEST_F(CudaAsync, ExternalStreamWrapsAndRunsKernels) {
  // A handle made elsewhere (here by Ember itself, as another library would hand one over).
  void* const handle = cuda::Stream::create(0).handle();
  const cuda::Stream ext = cuda::Stream::from_external(handle, 0);
  EXPECT_EQ(ext.handle(), handle);
  EXPECT_EQ(ext.device(), 0);
  Tensor y;
  {
    cuda::StreamGuard guard(ext);
    EXPECT_EQ(cuda_current_stream(0), handle);
    const Tensor x = grid(64, 64, gpu);
    y = matmul(x, eye(64, 64, DType::Float32, gpu));  // a kernel and cuBLAS, both on ext
  }
  ext.synchronize();
  const std::vector<float> got = y.to_vector<float>();
  for (int64_t i = 0; i < 64 * 64; ++i)
    ASSERT_EQ(got[size_t(i)], float(10 * (i / 64) + i % 64)) << i;
  expect_error<ValueError>([] { cuda::Stream::from_external(nullptr, 0); },
                           {"Stream::from_external: ", "null"});
}

// Each thread has its own cuBLAS handle: with one handle per device shared by all threads, a
// thread could bind it to its stream (cublasSetStream) just before another thread's GEMM, which
// then ran on the wrong stream and could still be running when its thread read the result.
// Probabilistic: such a race shows as a wrong element in some round.
TEST_F(CudaAsync, GemmsOfTwoThreadsOnTheirOwnStreamsAreEachRight) {
  constexpr int64_t n = 256;
  auto worker = [&](float scale, std::string* failure) {
    const cuda::Stream s = cuda::Stream::create(0);
    cuda::StreamGuard guard(s);
    const Tensor a = mul(grid(n, n, gpu), double(scale));
    const Tensor id = eye(n, n, DType::Float32, gpu);
    for (int round = 0; round < 200 && failure->empty(); ++round) {
      const std::vector<float> got = matmul(a, id).to_vector<float>();  // waits for s only
      for (int64_t i = 0; i < n * n; ++i)
        if (got[size_t(i)] != scale * float(10 * (i / n) + i % n)) {
          *failure = "round " + std::to_string(round) + ", element " + std::to_string(i);
          break;
        }
    }
  };
  std::string failure_a, failure_b;
  std::thread ta(worker, 1.0f, &failure_a), tb(worker, -2.0f, &failure_b);
  ta.join();
  tb.join();
  EXPECT_EQ(failure_a, "");
  EXPECT_EQ(failure_b, "");
}

TEST_F(CudaAsync, StreamAndEventErrors) {
  expect_error<DeviceError>([] { cuda::Stream::create(cuda_device_count()); },
                            {"Stream::create: ", "not available"});
  const Tensor host = zeros({4});
  expect_error<DeviceError>([&] { cuda::record_stream(host, cuda::current_stream(0)); },
                            {"record_stream: ", "cpu"});
}

// ---- without a GPU ----

TEST(CudaAsyncWithoutGpu, StreamApiThrowsCleanly) {
  if (cuda_is_available()) GTEST_SKIP() << "a GPU is present";
  // NotSupportedError in a build without CUDA, DeviceError in one with CUDA but no GPU.
  auto expect_unavailable = [](const std::function<void()>& fn, const char* op) {
    try {
      fn();
      ADD_FAILURE() << op << " did not throw";
    } catch (const NotSupportedError& e) {
      EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
    } catch (const DeviceError& e) {
      EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
    }
  };
  expect_unavailable([] { cuda::Stream::create(0); }, "Stream::create");
  expect_unavailable([] { cuda::Stream::ember_stream(0); }, "Stream::ember_stream");
  expect_unavailable([] { cuda::Stream::from_external(nullptr, 0); }, "Stream::from_external");
  expect_unavailable([] { cuda::current_stream(0); }, "current_stream");
  expect_unavailable([] { cuda::check_errors(0); }, "check_errors");
  expect_unavailable([] { cuda_current_stream(0); }, "cuda_current_stream");
  cuda::Event e;  // constructing and destroying an event touches no device
  EXPECT_NO_THROW(cuda::Event(false));
}

}  // namespace
}  // namespace ember
