// cuda_backend.cu — the CUDA backend: per GPU Ember's own stream, a caching allocator over
// cudaMalloc, device properties, and byte copies between the GPU and the host; and the caching
// allocator of pinned host memory (cudaHostAlloc) that copies to the GPUs read directly.
//
// Ember queues a thread's work for a GPU on that GPU's current stream (stream.cu): Ember's own
// stream unless a StreamGuard made another current. It runs in order there, asynchronously to the
// host, and events order it with other streams'. That is what keeps the rest simple:
// - Freeing memory while kernels that use it are still queued is safe. The caching allocator
//   hands a freed block only to later allocations on the stream it was allocated on, which queue
//   behind those kernels; a block used on other streams too (record_stream) waits for events
//   recorded on them at the free.
// - A copy to the host only has to wait for the current stream, and then everything queued
//   before it there is done. It then reports deferred errors (device_error.cuh).
#include <cuda_runtime.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "cuda/device_error.cuh"
#include "cuda/launch.cuh"
#include "ember/backend.h"
#include "ember/error.h"
#include "kernels.h"

namespace ember {

Backend& cuda_backend();
void register_cuda_kernels(KernelTable& table);  // cuda/register_kernels.cu

namespace cuda {
namespace {

// The events of the caching allocators (allocator.h): asked until complete, then destroyed.
bool event_done(void* event) {
  cudaEvent_t e = static_cast<cudaEvent_t>(event);
  cudaError_t err = cudaEventQuery(e);
  if (err == cudaErrorNotReady) {
    cudaGetLastError();  // not a failure: clear it, or the next check_launch would report it
    return false;
  }
  EMBER_CUDA_CHECK(err, "allocate");
  EMBER_CUDA_CHECK(cudaEventDestroy(e), "allocate");
  return true;
}
void wait_for_event(void* event) {
  cudaEvent_t e = static_cast<cudaEvent_t>(event);
  EMBER_CUDA_CHECK(cudaEventSynchronize(e), "empty_cache");
  EMBER_CUDA_CHECK(cudaEventDestroy(e), "empty_cache");
}
void* record_on(void* s, int device) {
  DeviceGuard guard(device);
  cudaEvent_t e = nullptr;
  EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "free");
  EMBER_CUDA_CHECK(cudaEventRecord(e, static_cast<cudaStream_t>(s)), "free");
  return e;
}

class CudaRawAllocator : public RawAllocator {
 public:
  explicit CudaRawAllocator(int index) : index_(index) {}
  void* allocate(size_t nbytes) override {
    DeviceGuard guard(index_);
    void* ptr = nullptr;
    cudaError_t err = cudaMalloc(&ptr, nbytes);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear it, or the next check_launch would report it
      return nullptr;      // the caching allocator frees its cache, retries, then reports
    }
    EMBER_CUDA_CHECK(err, "cudaMalloc");
    return ptr;
  }
  void check_can_allocate(size_t nbytes, const char* op) override {
    check_not_capturing(index_, nbytes, op);
  }
  void deallocate(void* ptr) override {
    DeviceGuard guard(index_);
    EMBER_CUDA_CHECK(cudaFree(ptr), "cudaFree");  // cudaFree waits for the device to be idle
  }

  void* current_stream() override { return stream(index_); }
  void* record_event(void* s) override { return record_on(s, index_); }
  bool event_completed(void* event) override { return event_done(event); }
  void wait_event(void* event) override { wait_for_event(event); }

 private:
  int index_;
};

// Page-locked host memory (Tensor::pin_memory), which the GPUs' copy engines read directly.
// Host memory has no stream of its own (current_stream stays null); the streams recorded on a
// block are those of the copies queued from it (copy_from_pinned_async), so a freed block waits
// for them before it is handed out again. Each such stream is of the GPU note_stream was told.
class PinnedRawAllocator : public RawAllocator {
 public:
  void* allocate(size_t nbytes) override {
    void* ptr = nullptr;
    // Portable: pinned for every GPU, not only the current one.
    cudaError_t err = cudaHostAlloc(&ptr, nbytes, cudaHostAllocPortable);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return nullptr;  // the caching allocator frees its cache, retries, then reports
    }
    EMBER_CUDA_CHECK(err, "cudaHostAlloc");
    return ptr;
  }
  void deallocate(void* ptr) override { EMBER_CUDA_CHECK(cudaFreeHost(ptr), "cudaFreeHost"); }

  void note_stream(cudaStream_t s, int device) {
    std::lock_guard<std::mutex> lock(mutex_);
    devices_[s] = device;
  }
  void* record_event(void* s) override {
    int device = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      device = devices_.at(s);
    }
    return record_on(s, device);
  }
  bool event_completed(void* event) override { return event_done(event); }
  void wait_event(void* event) override { wait_for_event(event); }

 private:
  std::mutex mutex_;
  std::unordered_map<void*, int> devices_;  // stream -> its GPU
};

// Host-to-device copies through pinned memory. The GPU's copy engines read only page-locked
// ("pinned") host memory, so a copy from ordinary (pageable) memory is first copied into a pinned
// buffer anyway. Doing that ourselves, in chunks through a ring of pinned slots, lets the CPU fill
// slot k+1 while the GPU pulls slot k, and once a chunk is in a slot the caller's memory is no
// longer needed: the copy returns without waiting for the GPU.
class PinnedStaging {
 public:
  static constexpr size_t kSlotBytes = size_t(4) << 20;
  static constexpr int kSlots = 4;

  void to_device(void* dst, const void* src, size_t n, int index, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!pinned_) allocate(index);
    for (size_t done = 0; done < n; done += kSlotBytes) {
      size_t chunk = std::min(kSlotBytes, n - done);
      char* slot = pinned_ + size_t(next_) * kSlotBytes;
      // Wait until the GPU has finished reading the slot's previous chunk.
      EMBER_CUDA_CHECK(cudaEventSynchronize(read_[next_]), "copy to cuda");
      std::memcpy(slot, static_cast<const char*>(src) + done, chunk);
      EMBER_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + done, slot, chunk,
                                       cudaMemcpyHostToDevice, stream),
                       "copy to cuda");
      EMBER_CUDA_CHECK(cudaEventRecord(read_[next_], stream), "copy to cuda");
      next_ = (next_ + 1) % kSlots;
    }
  }

 private:
  void allocate(int index) {  // on first use: 16 MiB of pinned memory per GPU
    DeviceGuard guard(index);
    for (cudaEvent_t& e : read_)
      EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "copy to cuda");
    void* p = nullptr;
    EMBER_CUDA_CHECK(cudaMallocHost(&p, kSlots * kSlotBytes), "copy to cuda");
    pinned_ = static_cast<char*>(p);
  }

  std::mutex mutex_;
  char* pinned_ = nullptr;
  cudaEvent_t read_[kSlots] = {};  // recorded after each slot's copy: "the GPU has read it"
  int next_ = 0;
};

struct DeviceState {
  std::once_flag init;
  cudaDeviceProp props;
  cudaStream_t stream = nullptr;  // Ember's own
  std::unique_ptr<CudaRawAllocator> raw;
  std::unique_ptr<CachingAllocator> allocator;
  PinnedStaging staging;
};

class CudaBackend : public Backend {
 public:
  CudaBackend() : count_(query_device_count()), devices_(new DeviceState[size_t(count_)]) {
    register_cuda_kernels(kernels_);
  }

  DeviceType type() const override { return DeviceType::CUDA; }
  int device_count() const override { return count_; }
  CachingAllocator& allocator(int index) override { return *state(index).allocator; }
  const KernelTable& kernels() const override { return kernels_; }

  void synchronize(int index) override {  // every stream of the device
    DeviceGuard guard(index);
    EMBER_CUDA_CHECK(cudaDeviceSynchronize(), "synchronize");
  }
  void check_errors(int index) override { check_device_errors(index); }

  CachingAllocator* pinned_allocator() override {
    if (count_ == 0) return nullptr;
    std::call_once(pinned_init_, [&] {
      pinned_ = std::make_unique<CachingAllocator>(Device(), &pinned_raw_, true);
    });
    return pinned_.get();
  }

  void copy_from_pinned_async(void* dst, Device dst_device, const void* src, size_t n) override {
    if (n == 0) return;
    cudaStream_t s = stream(dst_device);
    {
      DeviceGuard guard(dst_device);
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, s), "copy to cuda");
    }
    // src's block stays out of reuse until the copy has read it, should it be freed before.
    pinned_raw_.note_stream(s, dst_device.index);
    pinned_allocator()->record_stream(src, s);
  }

  void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device,
                  size_t n) override {
    if (n == 0) return;
    if (src_device.is_cpu() && pinned_allocator()->contains(src)) {
      // Pinned memory needs no staging: the copy engine reads it. Returning once it has keeps
      // copy_bytes' contract (src may be overwritten after).
      cudaStream_t s = stream(dst_device);
      DeviceGuard guard(dst_device);
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, s), "copy to cuda");
      EMBER_CUDA_CHECK(cudaStreamSynchronize(s), "copy to cuda");
    } else if (src_device.is_cpu()) {
      // From pageable memory through the pinned ring: returns once the last chunk is staged.
      state(dst_device.index).staging.to_device(dst, src, n, dst_device.index, stream(dst_device));
    } else if (dst_device.is_cpu()) {  // the host is about to read dst: wait for it
      cudaStream_t s = stream(src_device);
      DeviceGuard guard(src_device);
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, s), "copy to cpu");
      EMBER_CUDA_CHECK(cudaStreamSynchronize(s), "copy to cpu");
      check_device_errors(src_device.index);
    } else if (src_device == dst_device) {
      DeviceGuard guard(dst_device);
      EMBER_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, stream(dst_device)),
                       "copy_");
    } else {
      // Between GPUs the copy joins two streams without the host waiting: dst's stream waits for
      // src's producers, copies, and src's stream then waits for the copy, since src's memory
      // may be reused by later work there.
      cudaStream_t from = stream(src_device), to = stream(dst_device);
      order_after(to, from, src_device.index);
      DeviceGuard guard(dst_device);
      EMBER_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_device.index, src, src_device.index, n, to),
                       "copy_");
      order_after(from, to, dst_device.index);
    }
  }

  // A device's stream, allocator and properties, created on its first use.
  DeviceState& state(int index) {
    DeviceState& d = devices_[size_t(index)];
    std::call_once(d.init, [&] {
      DeviceGuard guard(index);
      EMBER_CUDA_CHECK(cudaGetDeviceProperties(&d.props, index), "cuda init");
      // Non-blocking: the stream does not wait for the legacy default stream, which other
      // libraries in the process may use.
      EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking), "cuda init");
      d.raw = std::make_unique<CudaRawAllocator>(index);
      d.allocator =
          std::make_unique<CachingAllocator>(Device(DeviceType::CUDA, index), d.raw.get());
    });
    return d;
  }

 private:
  // Work queued on `later` from now on waits for the work queued on `earlier` (of GPU
  // `earlier_device`) so far. The event may be destroyed at once: CUDA keeps it until it is used.
  static void order_after(cudaStream_t later, cudaStream_t earlier, int earlier_device) {
    DeviceGuard guard(earlier_device);
    cudaEvent_t e = nullptr;
    EMBER_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "copy_");
    EMBER_CUDA_CHECK(cudaEventRecord(e, earlier), "copy_");
    EMBER_CUDA_CHECK(cudaStreamWaitEvent(later, e, 0), "copy_");
    EMBER_CUDA_CHECK(cudaEventDestroy(e), "copy_");
  }

  // 0 when there is no driver or no GPU: the library then works on the CPU alone.
  static int query_device_count() {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // clear the error so that no later check reports it
      return 0;
    }
    return n;
  }

  int count_;
  std::unique_ptr<DeviceState[]> devices_;
  KernelTable kernels_;
  PinnedRawAllocator pinned_raw_;
  std::once_flag pinned_init_;
  std::unique_ptr<CachingAllocator> pinned_;  // made on first use, when a GPU is present
};

CudaBackend& backend() { return static_cast<CudaBackend&>(cuda_backend()); }

}  // namespace

cudaStream_t ember_stream(int index) { return backend().state(index).stream; }
const cudaDeviceProp& properties(int index) { return backend().state(index).props; }
void* stream_handle(int index) { return stream(index); }  // for ember/cuda.h

}  // namespace cuda

Backend& cuda_backend() {
  static cuda::CudaBackend* backend =
      new cuda::CudaBackend();  // never destroyed: tensors may outlive statics
  return *backend;
}

}  // namespace ember
