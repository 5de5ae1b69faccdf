// stream.cu — the current stream of each GPU, and the Stream, StreamGuard and Event of
// ember/cuda.h, with record_stream.
#include <vector>

#include "cuda/device_error.cuh"
#include "cuda/launch.cuh"
#include "ember/allocator.h"
#include "ember/backend.h"
#include "ember/cuda.h"
#include "ember/error.h"
#include "ember/tensor.h"

namespace ember::cuda {

cudaStream_t ember_stream(int index);  // cuda_backend.cu

namespace {

// The calling thread's current stream per GPU; nullptr (or past the end): Ember's own.
thread_local std::vector<cudaStream_t> t_current;

// Throws NotSupportedError / DeviceError unless GPU `device` is present.
void check_device(int device, const char* op) { backend_for(Device(DeviceType::CUDA, device), op); }

void set_current(int device, cudaStream_t s) {
  if (t_current.size() <= size_t(device)) t_current.resize(size_t(device) + 1, nullptr);
  t_current[size_t(device)] = s;
}

// cudaStreamQuery / cudaEventQuery: true when done, false when not yet.
bool done(cudaError_t err, const char* op) {
  if (err == cudaErrorNotReady) {
    cudaGetLastError();  // not a failure: clear it, or the next check_launch would report it
    return false;
  }
  EMBER_CUDA_CHECK(err, op);
  return true;
}

}  // namespace

cudaStream_t stream(int index) {
  if (size_t(index) < t_current.size() && t_current[size_t(index)]) return t_current[size_t(index)];
  return ember_stream(index);
}

// ---- Stream ----

Stream Stream::ember_stream(int device) {
  check_device(device, "Stream::ember_stream");
  return Stream(cuda::ember_stream(device), device);
}

Stream Stream::create(int device) {
  check_device(device, "Stream::create");
  DeviceGuard guard(device);
  cudaStream_t s = nullptr;
  // Non-blocking, like Ember's own: it does not wait for the legacy default stream.
  EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "Stream::create");
  return Stream(s, device);
}

Stream Stream::from_external(void* cuda_stream, int device) {
  check_device(device, "Stream::from_external");
  if (!cuda_stream)
    throw ValueError("Stream::from_external",
                     "the stream handle is null (the legacy default stream); pass "
                     "cudaStreamLegacy or cudaStreamPerThread to use a default stream");
  return Stream(cuda_stream, device);
}

bool Stream::query() const {
  DeviceGuard guard(device_);
  return done(cudaStreamQuery(static_cast<cudaStream_t>(handle_)), "Stream::query");
}

void Stream::synchronize() const {
  DeviceGuard guard(device_);
  EMBER_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(handle_)),
                   "Stream::synchronize");
  check_device_errors(device_);
}

Stream current_stream(int device) {
  check_device(device, "current_stream");
  return Stream::from_external(stream(device), device);
}

void set_current_stream(const Stream& s) {
  check_device(s.device(), "set_current_stream");
  set_current(s.device(), static_cast<cudaStream_t>(s.handle()));
}

StreamGuard::StreamGuard(const Stream& s) : previous_(current_stream(s.device())) {
  set_current_stream(s);
}

StreamGuard::~StreamGuard() {
  set_current(previous_.device(), static_cast<cudaStream_t>(previous_.handle()));
}

// ---- Event ----

Event::Event(bool timing) : timing_(timing) {}

Event::~Event() {
  if (event_) cudaEventDestroy(static_cast<cudaEvent_t>(event_));  // kept by CUDA until done
}

Event::Event(Event&& other) noexcept
    : event_(other.event_), device_(other.device_), timing_(other.timing_) {
  other.event_ = nullptr;
}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    if (event_) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
    event_ = other.event_;
    device_ = other.device_;
    timing_ = other.timing_;
    other.event_ = nullptr;
  }
  return *this;
}

void Event::record(const Stream& s) {
  const char* op = "Event::record";
  check_device(s.device(), op);
  if (event_ && device_ != s.device())
    throw DeviceError(op, "the event belongs to cuda:" + std::to_string(device_) +
                              " and cannot mark a stream of cuda:" + std::to_string(s.device()) +
                              "; use one event per device");
  DeviceGuard guard(s.device());
  if (!event_) {
    cudaEvent_t e = nullptr;
    EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e,
                                              timing_ ? cudaEventDefault : cudaEventDisableTiming),
                     op);
    event_ = e;
    device_ = s.device();
  }
  EMBER_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event_),
                                   static_cast<cudaStream_t>(s.handle())),
                   op);
}

void Event::wait(const Stream& s) const {
  check_device(s.device(), "Event::wait");
  if (!event_) return;
  DeviceGuard guard(s.device());
  EMBER_CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(s.handle()),
                                       static_cast<cudaEvent_t>(event_), 0),
                   "Event::wait");
}

bool Event::query() const {
  if (!event_) return true;
  DeviceGuard guard(device_);
  return done(cudaEventQuery(static_cast<cudaEvent_t>(event_)), "Event::query");
}

void Event::synchronize() const {
  if (!event_) return;
  DeviceGuard guard(device_);
  EMBER_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)), "Event::synchronize");
  check_device_errors(device_);
}

float Event::elapsed_time(const Event& end) const {
  const char* op = "Event::elapsed_time";
  if (!event_ || !end.event_)
    throw ValueError(op, "both events must be recorded first (record(stream))");
  if (!timing_ || !end.timing_)
    throw ValueError(op, "an event was made with timing off; make both with Event(true)");
  DeviceGuard guard(device_);
  float ms = 0;
  if (!done(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(event_),
                                 static_cast<cudaEvent_t>(end.event_)),
            op))
    throw ValueError(op, "the end event's work has not finished; call end.synchronize() first");
  return ms;
}

// ---- errors and record_stream ----

void check_errors(int device) {
  check_device(device, "check_errors");
  check_device_errors(device);
}

void record_stream(const Tensor& tensor, const Stream& s) {
  const char* op = "record_stream";
  check_device(s.device(), op);
  if (!tensor.defined()) throw ValueError(op, "tensor is undefined");
  const Device device(DeviceType::CUDA, s.device());
  if (tensor.device() != device)
    throw DeviceError(op, "tensor is " + describe(tensor) + " but the stream belongs to " +
                              device.str() + "; record a stream of the tensor's own GPU");
  const StorageImpl& storage = *tensor.storage();
  if (storage.is_external() || !storage.data()) return;  // not the caching allocator's
  allocator_for(device).record_stream(storage.data(), s.handle());
}

}  // namespace ember::cuda
