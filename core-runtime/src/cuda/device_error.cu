// device_error.cu — the per-device error flags of device-side checks (see device_error.cuh).
#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/device_error.cuh"
#include "cuda/launch.cuh"
#include "ember/error.h"

namespace ember::cuda {
namespace {

// How many armed checks' messages a device keeps: a failure reported after more checked ops than
// this still names its op and value, but no longer its operands.
constexpr int64_t kKept = 1024;

struct Armed {
  int64_t number = 0;
  DeferredError error;
};

struct DeviceErrors {
  std::mutex mutex;
  std::atomic<bool> ready{false};  // the flag and record exist
  unsigned int* claim = nullptr;
  DeviceErrorRecord* host = nullptr;    // pinned, mapped
  DeviceErrorRecord* mapped = nullptr;  // the same record, as the device addresses it
  int64_t armed_count = 0;
  std::vector<Armed> kept = std::vector<Armed>(size_t(kKept));
};

std::mutex g_mutex;  // guards g_devices' growth and g_op_names
// Indexed by device index. A deque: growing it keeps references to existing entries valid.
std::deque<DeviceErrors> g_devices;
std::vector<const char*> g_op_names;  // an op's id is its place here

DeviceErrors& errors_of(int index) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (int(g_devices.size()) <= index) g_devices.resize(size_t(index) + 1);
  return g_devices[size_t(index)];
}

int32_t op_id(const char* op) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (size_t i = 0; i < g_op_names.size(); ++i)
    if (std::strcmp(g_op_names[i], op) == 0) return int32_t(i);
  g_op_names.push_back(op);
  return int32_t(g_op_names.size() - 1);
}

const char* op_name(int32_t id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return id >= 0 && size_t(id) < g_op_names.size() ? g_op_names[size_t(id)] : "a CUDA kernel";
}

// Creates the flag and the record on first use (d.mutex held).
void create(DeviceErrors& d, int index) {
  DeviceGuard guard(index);
  void* host = nullptr;
  EMBER_CUDA_CHECK(cudaHostAlloc(&host, sizeof(DeviceErrorRecord), cudaHostAllocMapped),
                   "device error flag");
  std::memset(host, 0, sizeof(DeviceErrorRecord));
  d.host = static_cast<DeviceErrorRecord*>(host);
  EMBER_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&d.mapped), host, 0),
                   "device error flag");
  EMBER_CUDA_CHECK(cudaMalloc(&d.claim, sizeof(unsigned int)), "device error flag");
  EMBER_CUDA_CHECK(cudaMemsetAsync(d.claim, 0, sizeof(unsigned int), stream(index)),
                   "device error flag");
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream(index)), "device error flag");
  d.ready.store(true, std::memory_order_release);
}

// The error the record describes: its armed DeferredError when still kept, else one that names
// the op, the value and the bound.
DeferredError recorded_error(const DeviceErrors& d, const DeviceErrorRecord& r) {
  const Armed& a = d.kept[size_t(r.context % kKept)];
  if (a.number == r.context) return a.error;
  return {DeferredError::Kind(r.kind), op_name(r.op), "the value ",
          " outside [0, " + std::to_string(r.bound) + ") was found on the device (more than " +
              std::to_string(kKept) +
              " checked ops ran before this synchronising point, so their operands are no "
              "longer known; rerun with EMBER_CUDA_SYNC=1 to report it at the op)"};
}

}  // namespace

DeviceErrorSink arm_error(Device device, const DeferredError& error, int64_t bound) {
  DeviceErrors& d = errors_of(device.index);
  const int32_t op = op_id(error.op);
  std::lock_guard<std::mutex> lock(d.mutex);
  if (!d.ready.load(std::memory_order_acquire)) create(d, device.index);
  const int64_t number = ++d.armed_count;
  d.kept[size_t(number % kKept)] = {number, error};
  return {d.claim, d.mapped, number, bound, op, int32_t(error.kind)};
}

void check_device_errors(int index) {
  DeviceErrors& d = errors_of(index);
  if (!d.ready.load(std::memory_order_acquire) || !d.host->ready) return;  // the common case
  std::lock_guard<std::mutex> lock(d.mutex);
  if (!d.host->ready) return;  // another thread reported it
  DeviceErrorRecord r;
  std::memcpy(&r, d.host, sizeof r);
  const DeferredError error = recorded_error(d, r);
  // Reset: the record first (no kernel writes it while the claim is held), then the claim.
  std::memset(d.host, 0, sizeof(DeviceErrorRecord));
  DeviceGuard guard(index);
  EMBER_CUDA_CHECK(cudaMemsetAsync(d.claim, 0, sizeof(unsigned int), stream(index)), error.op);
  EMBER_CUDA_CHECK(cudaStreamSynchronize(stream(index)), error.op);
  error.raise(r.value);
}

}  // namespace ember::cuda
