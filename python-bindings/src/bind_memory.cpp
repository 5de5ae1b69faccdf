// bind_memory.cpp — devices and memory: the caching allocator's statistics and cap per device,
// synchronize, the CUDA queries (ember.cuda builds on these) and the CPU's thread count.
#include <ember/allocator.h>
#include <ember/cuda.h>
#include <ember/device.h>
#include <ember/threads.h>

#include "bindings.h"

namespace ember::python {

void bind_memory(py::module_& m) {
  const auto device = py::arg("device") = "cpu";
  m.def(
      "memory_stats",
      [](Device d) {
        MemoryStats s = ember::memory_stats(d);
        return py::dict(py::arg("in_use") = s.in_use, py::arg("peak") = s.peak,
                        py::arg("reserved") = s.reserved,
                        py::arg("peak_reserved") = s.peak_reserved,
                        py::arg("allocations") = s.allocations,
                        py::arg("system_allocations") = s.system_allocations,
                        py::arg("limit") = s.limit, py::arg("segments") = s.segments,
                        py::arg("free_blocks") = s.free_blocks,
                        py::arg("largest_free_block") = s.largest_free_block);
      },
      device,
      "The caching allocator's statistics for a device, in bytes: in_use (held by tensors), "
      "peak, reserved (segments obtained from the system), peak_reserved, allocations, "
      "system_allocations, limit (0: none), segments, free_blocks (cached pieces of "
      "reserved - in_use) and largest_free_block.");
  m.def(
      "memory_summary", [](Device d) { return ember::memory_summary(d); }, device,
      "A short table of the device's memory: allocated, reserved, their peaks, what is cached, "
      "the largest free block, the segments, and the ops whose tensors hold the most bytes.");
  m.def(
      "memory_snapshot",
      [](Device d) {
        py::list segments;
        for (const SegmentInfo& seg : ember::memory_snapshot(d)) {
          py::list blocks;
          for (const BlockInfo& b : seg.blocks)
            blocks.append(py::dict(py::arg("address") = b.address, py::arg("size") = b.size,
                                   py::arg("requested") = b.requested,
                                   py::arg("state") = b.allocated ? "allocated" : "free",
                                   py::arg("op") = b.op));
          segments.append(py::dict(py::arg("device") = seg.device.str(),
                                   py::arg("address") = seg.address, py::arg("size") = seg.size,
                                   py::arg("pool") = seg.small ? "small" : "large",
                                   py::arg("blocks") = blocks));
        }
        return segments;
      },
      device,
      "Every segment of the device's caching allocator, in address order: a dict with device, "
      "address, size, pool ('small': requests up to 1 MiB, or 'large') and blocks, each a dict "
      "with address, size, requested, state ('allocated' or 'free') and op (the op that "
      "allocated it; '' when free).");
  m.def(
      "memory_allocated", [](Device d) { return ember::memory_stats(d).in_use; }, device,
      "Bytes held by tensors on the device now.");
  m.def(
      "max_memory_allocated", [](Device d) { return ember::memory_stats(d).peak; }, device,
      "The highest memory_allocated since the last reset_peak_memory_stats.");
  m.def(
      "memory_reserved", [](Device d) { return ember::memory_stats(d).reserved; }, device,
      "Bytes obtained from the system (in use + cached).");
  m.def(
      "reset_peak_memory_stats", [](Device d) { ember::reset_peak_memory(d); }, device,
      "Restarts the peak at the current in-use bytes.");
  m.def(
      "set_memory_limit",
      [](py::handle bytes, Device d) {
        const int64_t n = bytes.is_none() ? 0
                          : PyUnicode_Check(bytes.ptr())
                              ? parse_bytes(py::cast<std::string>(bytes), "set_memory_limit")
                              : py::cast<int64_t>(bytes);
        ember::set_memory_limit(n, d);
      },
      py::arg("limit"), device,
      "Caps the device's memory in use: bytes, or text such as '2GiB'; None or 0 removes it. "
      "An allocation past it raises ember.OutOfMemoryError.");
  m.def(
      "empty_cache", [](Device d) { ember::empty_cache(d); }, device,
      "Returns the cached, unused blocks to the system.");
  m.def(
      "synchronize", [](Device d) { ember::synchronize(d); }, py::arg("device") = "cuda:0",
      "Waits for the work queued on the device (nothing to wait for on the CPU).");
  m.def("cuda_compiled", &ember::cuda_compiled, "Whether core-runtime was built with CUDA.");
  m.def("cuda_device_count", &ember::cuda_device_count, "How many GPUs the driver reports.");
  m.def("cuda_is_available", &ember::cuda_is_available, "Whether tensors can go on a GPU here.");
  m.def("set_cuda_sync_mode", &ember::set_cuda_sync_mode, py::arg("on"),
        "Waits for every kernel after launch, so a fault names the op that launched it (slow).");
  m.def("set_num_threads", &ember::set_num_threads, py::arg("n"),
        "Runs the CPU ops (and their matrix products) on n threads from the next op on; 1 runs "
        "them on the calling thread. Raises ValueError for n < 1.");
  m.def("get_num_threads", &ember::get_num_threads,
        "The threads the CPU ops run on: set_num_threads's, else EMBER_NUM_THREADS, else "
        "OMP_NUM_THREADS, else the cores this process may run on.");
}

}  // namespace ember::python
