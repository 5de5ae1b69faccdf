// cuda.h — the few CUDA-specific controls a user needs; everything else is device-agnostic
// (Device("cuda:0"), synchronize(), memory_stats() are in device.h and allocator.h).
#pragma once

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
