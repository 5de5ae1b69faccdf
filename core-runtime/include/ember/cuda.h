// cuda.h — the few CUDA-specific controls a user needs; everything else is device-agnostic
// (Device("cuda:0"), synchronize(), memory_stats() are in device.h and allocator.h).
#pragma once
#include <cstddef>

namespace ember {

// The cudaStream_t on which Ember queues the calling thread's work for cuda:index (its current
// stream, below: current_stream(index).handle()), as a void* so that this header needs no CUDA
// headers. Queue your own kernels or library calls on it to order them with Ember's, or capture
// it into a CUDA graph. Throws NotSupportedError in a build without CUDA and
// DeviceError when the device is not present.
void* cuda_current_stream(int index = 0);

// Sync mode waits for every kernel right after launching it, so that a fault (an out-of-bounds
// access, say) is reported with the op that launched it and its operands, instead of surfacing at
// some later call. Slow: for debugging. Starts on when the environment has EMBER_CUDA_SYNC=1.
void set_cuda_sync_mode(bool on);
bool cuda_sync_mode();

// Whether float32 GEMMs on CUDA (matmul, linear, the im2col convolutions) may use TF32 tensor
// cores: about 8x faster on an H100/H200, with a 10-bit mantissa in the products. Off by
// default, as in PyTorch (torch.backends.cuda.matmul.allow_tf32); starts on when the
// environment has EMBER_ALLOW_TF32=1. Read at every GEMM, so a change applies to the next one.
// float16/bfloat16 GEMMs always use tensor cores with float32 accumulation.
void set_allow_tf32(bool on);
bool allow_tf32();

}  // namespace ember

// ---- Streams, events and asynchronous errors ----
//
// Work on a GPU is queued on the device's *current stream* and runs asynchronously to the host.
// Each thread starts with Ember's own stream of each device; a StreamGuard makes another stream
// current for its scope. Events order work across streams without the host waiting.
//
// A check that needs device data (an index out of range in index_select, gather, embedding,
// index_add_, scatter_add_, one_hot, max_pool2d_backward; a class target outside [0, C) in
// cross_entropy and nll_loss) never waits for the GPU: the kernel records the bad value in the
// device's error flag and skips the element, and the next synchronising point on the host (a copy
// to the host such as item() or to_vector(), synchronize(), Stream/Event::synchronize(),
// cuda::check_errors()) throws the typed error naming the op. The device stays usable. The first
// failure since the last report is the one reported.
namespace ember {
class Tensor;
}

namespace ember::cuda {

// A CUDA stream of one GPU, as a small value: the cudaStream_t (a void*) and the device.
class Stream {
 public:
  // Ember's own stream of the GPU, the current one unless a StreamGuard says otherwise.
  static Stream ember_stream(int device = 0);
  // A new non-blocking stream on the GPU. It lives until the process ends (the caching allocator
  // keeps blocks per stream, and a destroyed stream's handle could come back as a new stream's):
  // create a few and reuse them.
  static Stream create(int device = 0);
  // A stream another library created (its cudaStream_t as void*), on GPU `device`. Ember never
  // destroys it; the owner keeps it alive while work or memory of Ember's uses it.
  static Stream from_external(void* cuda_stream, int device = 0);

  void* handle() const { return handle_; }
  int device() const { return device_; }
  bool query() const;        // whether all its queued work has finished (never waits)
  void synchronize() const;  // waits for its work, then reports deferred errors (check_errors)

  bool operator==(const Stream& o) const { return handle_ == o.handle_ && device_ == o.device_; }
  bool operator!=(const Stream& o) const { return !(*this == o); }

 private:
  Stream(void* handle, int device) : handle_(handle), device_(device) {}
  void* handle_ = nullptr;
  int device_ = 0;
};

// The calling thread's current stream of GPU `device`, and setting it.
Stream current_stream(int device = 0);
void set_current_stream(const Stream& stream);

// Makes `stream` the current stream of its GPU while in scope, then restores the previous one.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

// A CUDA event: a mark in a stream's queue that other streams can wait for, and a timer.
class Event {
 public:
  explicit Event(bool timing = true);  // the CUDA event is created at the first record()
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(const Stream& stream);  // marks the work queued on `stream` so far
  // Work queued on `stream` after this call waits until the marked work has finished; the host
  // does not wait. An event never recorded is already complete.
  void wait(const Stream& stream) const;
  bool query() const;        // whether the marked work has finished (never waits)
  void synchronize() const;  // waits for the marked work, then reports deferred errors
  // Milliseconds from this event to `end`, both recorded with timing on and `end` finished.
  float elapsed_time(const Event& end) const;

 private:
  void* event_ = nullptr;
  int device_ = -1;
  bool timing_ = true;
};

// A CUDA graph: the work one thread queues on one stream between capture_begin() and
// capture_end(), recorded once and then replayed with a single launch, which saves the host the
// cost of launching each kernel again (PyTorch's torch.cuda.CUDAGraph). A replay runs the same
// kernels on the same memory addresses, so:
// - allocate every tensor the captured work reads or writes before capture_begin(), write into
//   them with the _out forms (and the in-place ops), and keep them alive while the graph is
//   replayed; change the inputs between replays by writing into the same tensors (copy_, fill_).
//   An allocation on the capturing stream throws ValueError naming the op, and the capture goes
//   on (the op queued nothing). A number operand (add_out(y, x, 1.0)) is such an allocation: it
//   becomes a 0-d tensor on the device; pass a tensor made before the capture instead.
// - run the work once on the stream before capturing it: the first GEMM on a stream sets up
//   cuBLAS's workspace, which cannot happen inside a capture.
// - nothing in the captured work may wait for the GPU: item(), to_vector(), copies to or from the
//   host, synchronize(), nonzero/masked_select (which read a count back), one_hot without
//   num_classes. CUDA refuses those, and capture_end() reports it.
// Device-side checks stay on in a replay: a bad index written into a captured index tensor is
// reported, naming the op, at the next synchronising point after the replay.
class Graph {
 public:
  Graph() = default;
  ~Graph();  // ends a capture still in progress (dropping it) and frees the graph
  Graph(Graph&& other) noexcept;
  Graph& operator=(Graph&& other) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Makes `stream` the calling thread's current stream of its GPU and starts recording the work
  // queued on it (Ember's own stream, or one from Stream::create or from_external; not the legacy
  // default stream). The capture is the thread's own: other threads may keep working meanwhile.
  void capture_begin(const Stream& stream);
  // Stops recording, restores the previous current stream and makes the graph replayable.
  void capture_end();
  // Queues the recorded work on the current stream of the graph's GPU. The host does not wait.
  void replay() const;
  bool captured() const { return exec_ != nullptr; }
  size_t node_count() const;  // kernels, copies and memsets recorded (0 before capture_end)

 private:
  void reset() noexcept;
  void* graph_ = nullptr;  // cudaGraph_t
  void* exec_ = nullptr;   // cudaGraphExec_t
  void* capturing_ = nullptr;
  void* previous_stream_ = nullptr;
  int device_ = -1;
};

// Throws the first deferred error (IndexError, ValueError, naming the op) that work on GPU
// `device` has reported since the last report, and resets the flag. Does not wait: it sees what
// finished work wrote (synchronize() waits, then checks).
void check_errors(int device = 0);

// Tells the caching allocator that `tensor`'s memory is used by work on `stream` (PyTorch's
// record_stream): when the memory is freed, it is not handed out again until the work queued on
// `stream` by then has finished. Needed when a tensor made on one stream is used on another and
// may be freed before that work is done. External memory (from_blob) is left alone.
void record_stream(const Tensor& tensor, const Stream& stream);

}  // namespace ember::cuda
