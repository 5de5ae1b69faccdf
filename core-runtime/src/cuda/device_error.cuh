// device_error.cuh — the per-device error flag of the checks that need device data: an index out
// of range, a class target outside [0, C) (internal header).
//
//   DeviceErrorSink sink = arm_error(device, error, bound);   // on the host, before the launch
//   my_kernel<<<blocks, threads, 0, stream(device)>>>(..., sink);
//   // in the kernel:  if (bad) { sink.report(value); continue; }
//
// A kernel that finds a bad value reports it and skips the element; it never traps, so the CUDA
// context stays usable (a device-side assert would poison it for the rest of the process). The
// host never waits for the check: check_device_errors, called at every synchronising point (a
// copy to the host, synchronize, Stream and Event synchronize, cuda::check_errors), raises the
// DeferredError that was armed, with the value, and resets the flag. The first report since the
// last check wins; later ones are dropped.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "ember/device.h"
#include "ops/deferred_error.h"

namespace ember::cuda {

// What the failing kernel writes, in mapped pinned host memory, so that the host reads it after a
// synchronisation without a copy. `ready` is written last, after a system-wide fence.
struct DeviceErrorRecord {
  int64_t context;  // which arm_error call: the message's DeferredError is kept by its number
  int64_t value;    // the offending value
  int64_t bound;    // the limit it broke, for the message when the context is no longer kept
  int32_t op;       // the op, as an index into the table of op names
  int32_t kind;     // DeferredError::Kind
  volatile int32_t ready;
};

// Passed to a kernel by value.
struct DeviceErrorSink {
  unsigned int* claim;        // device memory: 0 until the first report since the last check
  DeviceErrorRecord* record;  // the mapped record, as the device addresses it
  int64_t context, bound;
  int32_t op, kind;

  __device__ void report(int64_t value) const {
    if (atomicCAS(claim, 0u, 1u) != 0u) return;  // an earlier failure is recorded already
    record->context = context;
    record->value = value;
    record->bound = bound;
    record->op = op;
    record->kind = kind;
    __threadfence_system();  // the fields reach the host before `ready` does
    record->ready = 1;
  }
};

// Keeps `error` for the message and returns the sink of `device`'s flag for one launch; `bound`
// is the limit the value breaks (an index's dim size, the number of classes).
DeviceErrorSink arm_error(Device device, const DeferredError& error, int64_t bound);

// Raises the first error reported on GPU `index` since the last check, and resets the flag.
// Reports only what work that has finished wrote: call it after a synchronisation.
void check_device_errors(int index);

}  // namespace ember::cuda
