// cuda.h — the few CUDA-specific controls a user needs; everything else is device-agnostic
// (Device("cuda:0"), synchronize(), memory_stats() are in device.h and allocator.h).
#pragma once

namespace ember {

// The cudaStream_t on which Ember queues all work for cuda:index, as a void* so that this header
// needs no CUDA headers. Queue your own kernels or library calls on it to order them with
// Ember's, or capture it into a CUDA graph. Throws NotSupportedError in a build without CUDA and
// DeviceError when the device is not present.
void* cuda_current_stream(int index = 0);

// Sync mode waits for every kernel right after launching it, so that a fault (an out-of-bounds
// access, say) is reported with the op that launched it and its operands, instead of surfacing at
// some later call. Slow: for debugging. Starts on when the environment has EMBER_CUDA_SYNC=1.
void set_cuda_sync_mode(bool on);
bool cuda_sync_mode();

}  // namespace ember
