// test_cuda_graph.cpp — CUDA graphs (cuda::Graph): a step captured once and replayed on new inputs
// written into the same tensors, a bad index in a replay reported by op, allocation refused inside
// a capture, a capture that waits for the GPU failing cleanly, and misuse. Checked against host
// loops, not against Ember's CPU backend.
#include <cstdint>
#include <string>
#include <vector>

#include "cuda_test.h"
#include "ember/cuda.h"
#include "test_util.h"

namespace ember {
namespace {

using test::expect_error;

using CudaGraph = test::CudaTest;

Tensor from(const std::vector<float>& v, const Shape& shape, Device device) {
  return Tensor::from_vector(v, shape).to(device);
}

// One layer over looked-up rows, every result written into a tensor made before the capture:
//   rows[n, 4] = table[idx]    h[n, 5] = rows @ w + b    y[n, 5] = relu(h)
// Small integers throughout, so float32 results are exact and compare with ==.
struct Step {
  static constexpr int64_t kRows = 10, kIn = 4, kOut = 5, kN = 3;
  std::vector<float> table_v, w_v, b_v;
  Tensor table, w, b, idx, rows, h, y;

  explicit Step(Device gpu) {
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t c = 0; c < kIn; ++c) table_v.push_back(float(r - 2 * c));
    for (int64_t i = 0; i < kIn * kOut; ++i) w_v.push_back(float(i % 7 - 3));
    for (int64_t j = 0; j < kOut; ++j) b_v.push_back(float(j - 2));
    table = from(table_v, {kRows, kIn}, gpu);
    w = from(w_v, {kIn, kOut}, gpu);
    b = from(b_v, {kOut}, gpu);
    idx = zeros({kN}, DType::Int64, gpu);
    rows = Tensor::empty({kN, kIn}, DType::Float32, gpu);
    h = Tensor::empty({kN, kOut}, DType::Float32, gpu);
    y = Tensor::empty({kN, kOut}, DType::Float32, gpu);
  }

  void run() const {
    index_select_out(rows, table, 0, idx);
    matmul_out(h, rows, w);
    add_out(h, h, b);
    relu_out(y, h);
  }

  void set_indices(const std::vector<int64_t>& v) const {
    idx.copy_(Tensor::from_vector(v, {kN}).to(idx.device()));
  }

  // y computed on the host for indices v.
  std::vector<float> expected(const std::vector<int64_t>& v) const {
    std::vector<float> out;
    for (int64_t i = 0; i < kN; ++i)
      for (int64_t j = 0; j < kOut; ++j) {
        float acc = b_v[size_t(j)];
        for (int64_t c = 0; c < kIn; ++c)
          acc += table_v[size_t(v[size_t(i)] * kIn + c)] * w_v[size_t(c * kOut + j)];
        out.push_back(acc > 0 ? acc : 0);
      }
    return out;
  }
};

// Runs the step once on `s` (cuBLAS sets up the stream's workspace) and captures it there.
cuda::Graph capture_step(const Step& step, const cuda::Stream& s) {
  {
    cuda::StreamGuard guard(s);
    step.run();
  }
  s.synchronize();
  cuda::Graph graph;
  graph.capture_begin(s);
  step.run();
  graph.capture_end();
  return graph;
}

TEST_F(CudaGraph, ReplaysAStepOnNewInputs) {
  const Step step(gpu);
  const cuda::Stream s = cuda::Stream::create(0);
  const cuda::Graph graph = capture_step(step, s);
  EXPECT_TRUE(graph.captured());
  EXPECT_GE(graph.node_count(), 4u) << "index_select, the GEMM, add and relu";
  EXPECT_EQ(cuda::current_stream(0), cuda::Stream::ember_stream(0)) << "restored after capture";
  for (const std::vector<int64_t>& v :
       {std::vector<int64_t>{0, 1, 2}, {9, 4, 9}, {7, 0, 3}, {5, 5, 5}}) {
    step.y.fill_(-1.0);
    step.set_indices(v);
    graph.replay();  // on the current stream, after the copy and the fill
    EXPECT_EQ(step.y.to_vector<float>(), step.expected(v));
  }
}

TEST_F(CudaGraph, BadIndexInAReplayIsReportedByOpAndTheNextReplayWorks) {
  const Step step(gpu);
  const cuda::Graph graph = capture_step(step, cuda::Stream::create(0));
  step.set_indices({1, 12, 3});
  EXPECT_NO_THROW(graph.replay()) << "the check runs on the device";
  expect_error<IndexError>([&] { synchronize(gpu); },
                           {"index_select: ", "index 12 is out of range for dim 0"});
  step.set_indices({2, 8, 6});
  graph.replay();
  EXPECT_EQ(step.y.to_vector<float>(), step.expected({2, 8, 6}));
}

TEST_F(CudaGraph, AllocatingInsideACaptureIsRefusedAndTheCaptureGoesOn) {
  const Tensor x = from({1, 2, 3, 4}, {4}, gpu);
  const Tensor y = Tensor::empty({4}, DType::Float32, gpu);
  const cuda::Stream s = cuda::Stream::create(0);
  cuda::Graph graph;
  graph.capture_begin(s);
  expect_error<ValueError>([&] { add(x, x); },
                           {"add: ", "being captured into a CUDA graph", "_out form"});
  // A number operand becomes a 0-d tensor on the device, which is an allocation too.
  expect_error<ValueError>([&] { add_out(y, x, 1.0); }, {"being captured into a CUDA graph"});
  add_out(y, x, x);
  graph.capture_end();
  graph.replay();
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_NO_THROW(add(x, 1.0)) << "allocation works again after the capture";
}

TEST_F(CudaGraph, ACaptureThatWaitsForTheGpuFailsCleanly) {
  const Tensor x = from({1, 2, 3}, {3}, gpu);
  const cuda::Stream s = cuda::Stream::create(0);
  cuda::Graph graph;
  graph.capture_begin(s);
  EXPECT_THROW(x.to_vector<float>(), Error) << "a copy to the host inside a capture";
  expect_error<DeviceError>([&] { graph.capture_end(); },
                            {"Graph::capture_end: ", "the capture failed", "waited for the GPU"});
  EXPECT_FALSE(graph.captured());
  EXPECT_EQ(cuda::current_stream(0), cuda::Stream::ember_stream(0));
  cuda::StreamGuard guard(s);  // the stream takes work again
  EXPECT_EQ(add(x, 1.0).to_vector<float>(), (std::vector<float>{2, 3, 4}));
}

TEST_F(CudaGraph, Misuse) {
  const cuda::Stream s = cuda::Stream::create(0);
  cuda::Graph graph;
  expect_error<ValueError>([&] { graph.replay(); }, {"Graph::replay: ", "nothing was captured"});
  expect_error<ValueError>([&] { graph.capture_end(); },
                           {"Graph::capture_end: ", "no capture is in progress"});
  graph.capture_begin(s);
  expect_error<ValueError>([&] { graph.capture_begin(s); },
                           {"Graph::capture_begin: ", "in progress"});
  graph.capture_end();
  expect_error<ValueError>([&] { graph.capture_begin(s); },
                           {"Graph::capture_begin: ", "holds a capture already"});
  {
    cuda::Graph dropped;
    dropped.capture_begin(s);
  }  // destroyed mid-capture: the capture ends, the current stream is restored
  EXPECT_EQ(cuda::current_stream(0), cuda::Stream::ember_stream(0));
  const Tensor x = from({1, 2}, {2}, gpu);
  cuda::StreamGuard guard(s);
  EXPECT_EQ(add(x, 1.0).to_vector<float>(), (std::vector<float>{2, 3}));
}

TEST(CudaGraphWithoutGpu, AnEmptyGraphIsHarmless) {
  const cuda::Graph graph;  // constructing one touches no device, with or without CUDA
  EXPECT_FALSE(graph.captured());
  EXPECT_EQ(graph.node_count(), 0u);
}

}  // namespace
}  // namespace ember
