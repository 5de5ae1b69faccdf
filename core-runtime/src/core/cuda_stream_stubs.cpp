// cuda_stream_stubs.cpp — the streams, events, graphs and deferred-error calls of ember/cuda.h in
// a build without CUDA: each throws the NotSupportedError that backend_for gives for a CUDA
// device. (Built with CUDA, they are in cuda/stream.cu and cuda/graph.cu.)
#if !EMBER_WITH_CUDA
#include "ember/backend.h"
#include "ember/cuda.h"
#include "ember/error.h"

namespace ember::cuda {
namespace {
[[noreturn]] void unavailable(const char* op) {
  backend_for(Device(DeviceType::CUDA, 0), op);                 // throws: CUDA is not compiled in
  throw NotSupportedError(op, "Ember was built without CUDA");  // not reached
}
}  // namespace

Stream Stream::ember_stream(int) { unavailable("Stream::ember_stream"); }
Stream Stream::create(int) { unavailable("Stream::create"); }
Stream Stream::from_external(void*, int) { unavailable("Stream::from_external"); }
bool Stream::query() const { unavailable("Stream::query"); }
void Stream::synchronize() const { unavailable("Stream::synchronize"); }
Stream current_stream(int) { unavailable("current_stream"); }
void set_current_stream(const Stream&) { unavailable("set_current_stream"); }
StreamGuard::StreamGuard(const Stream& s) : previous_(s) { unavailable("StreamGuard"); }
StreamGuard::~StreamGuard() = default;

Event::Event(bool timing) : timing_(timing) {}
Event::~Event() = default;
Event::Event(Event&& other) noexcept = default;
Event& Event::operator=(Event&& other) noexcept = default;
void Event::record(const Stream&) { unavailable("Event::record"); }
void Event::wait(const Stream&) const { unavailable("Event::wait"); }
bool Event::query() const { unavailable("Event::query"); }
void Event::synchronize() const { unavailable("Event::synchronize"); }
float Event::elapsed_time(const Event&) const { unavailable("Event::elapsed_time"); }

Graph::~Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;
void Graph::reset() noexcept {}
void Graph::capture_begin(const Stream&) { unavailable("Graph::capture_begin"); }
void Graph::capture_end() { unavailable("Graph::capture_end"); }
void Graph::replay() const { unavailable("Graph::replay"); }
size_t Graph::node_count() const { return 0; }

void check_errors(int) { unavailable("check_errors"); }
void record_stream(const Tensor&, const Stream&) { unavailable("record_stream"); }

}  // namespace ember::cuda
#endif
