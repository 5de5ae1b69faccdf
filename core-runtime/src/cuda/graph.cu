// graph.cu — CUDA graphs (ember/cuda.h's Graph): capture on a stream, instantiate, replay; and the
// allocator's refusal to hand out memory to a stream being captured.
#include <atomic>
#include <string>

#include "cuda/launch.cuh"
#include "ember/backend.h"
#include "ember/cuda.h"
#include "ember/error.h"

namespace ember::cuda {
namespace {

// Captures in progress in the process, so that allocations ask CUDA whether their stream is being
// captured only while one is.
std::atomic<int> g_captures{0};

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

}  // namespace

void check_not_capturing(int index, size_t nbytes, const char* op) {
  if (g_captures.load(std::memory_order_acquire) == 0) return;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  EMBER_CUDA_CHECK(cudaStreamIsCapturing(stream(index), &status), op);
  if (status == cudaStreamCaptureStatusNone) return;
  // A block handed out now would be baked into the graph by address, and could be freed and
  // handed to other work while replays still write it.
  throw ValueError(op, "cannot allocate " + std::to_string(nbytes) +
                           " bytes on cuda:" + std::to_string(index) +
                           " while its current stream is being captured into a CUDA graph. "
                           "Fix: allocate the tensors before Graph::capture_begin and write "
                           "into them with the op's _out form");
}

Graph::~Graph() { reset(); }

Graph::Graph(Graph&& other) noexcept
    : graph_(other.graph_),
      exec_(other.exec_),
      capturing_(other.capturing_),
      previous_stream_(other.previous_stream_),
      device_(other.device_) {
  other.graph_ = other.exec_ = other.capturing_ = nullptr;
}

Graph& Graph::operator=(Graph&& other) noexcept {
  if (this != &other) {
    reset();
    graph_ = other.graph_;
    exec_ = other.exec_;
    capturing_ = other.capturing_;
    previous_stream_ = other.previous_stream_;
    device_ = other.device_;
    other.graph_ = other.exec_ = other.capturing_ = nullptr;
  }
  return *this;
}

void Graph::reset() noexcept {
  if (device_ < 0) return;
  DeviceGuard guard(device_);
  if (capturing_) {  // dropped: end the capture so that the stream takes work again
    cudaGraph_t dropped = nullptr;
    cudaStreamEndCapture(as_stream(capturing_), &dropped);
    if (dropped) cudaGraphDestroy(dropped);
    cudaGetLastError();  // an invalidated capture's error is not the next op's
    g_captures.fetch_sub(1, std::memory_order_acq_rel);
    set_current_stream(Stream::from_external(previous_stream_, device_));
  }
  if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
  graph_ = exec_ = capturing_ = nullptr;
}

void Graph::capture_begin(const Stream& s) {
  const char* op = "Graph::capture_begin";
  backend_for(Device(DeviceType::CUDA, s.device()), op);  // throws unless the GPU is present
  if (capturing_) throw ValueError(op, "a capture is in progress; call capture_end() first");
  if (exec_)
    throw ValueError(op, "the graph holds a capture already; make a new Graph for other work");
  DeviceGuard guard(s.device());
  // Thread-local mode: only this thread is kept from calls that cannot be captured (cudaMalloc,
  // synchronisation), so other threads' work on other streams goes on.
  EMBER_CUDA_CHECK(cudaStreamBeginCapture(as_stream(s.handle()), cudaStreamCaptureModeThreadLocal),
                   op);
  device_ = s.device();
  capturing_ = s.handle();
  previous_stream_ = current_stream(device_).handle();
  set_current_stream(s);
  g_captures.fetch_add(1, std::memory_order_acq_rel);
}

void Graph::capture_end() {
  const char* op = "Graph::capture_end";
  if (!capturing_) throw ValueError(op, "no capture is in progress; call capture_begin() first");
  DeviceGuard guard(device_);
  cudaGraph_t graph = nullptr;
  const cudaError_t err = cudaStreamEndCapture(as_stream(capturing_), &graph);
  g_captures.fetch_sub(1, std::memory_order_acq_rel);
  set_current_stream(Stream::from_external(previous_stream_, device_));
  capturing_ = nullptr;
  if (err != cudaSuccess) {
    cudaGetLastError();
    if (graph) cudaGraphDestroy(graph);
    throw DeviceError(op, std::string("the capture failed (") + cudaGetErrorString(err) +
                              "): work in it waited for the GPU (item(), to_vector(), a copy "
                              "to or from the host, synchronize(), nonzero, masked_select) or "
                              "used memory set up inside it; capture only work that runs "
                              "without the host waiting, after running it once outside");
  }
  graph_ = graph;
  cudaGraphExec_t exec = nullptr;
  EMBER_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0), op);
  exec_ = exec;
}

void Graph::replay() const {
  const char* op = "Graph::replay";
  if (!exec_) throw ValueError(op, "nothing was captured; call capture_begin and capture_end");
  DeviceGuard guard(device_);
  EMBER_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), stream(device_)), op);
}

size_t Graph::node_count() const {
  if (!graph_) return 0;
  size_t n = 0;
  EMBER_CUDA_CHECK(cudaGraphGetNodes(static_cast<cudaGraph_t>(graph_), nullptr, &n),
                   "Graph::node_count");
  return n;
}

}  // namespace ember::cuda
