// backends.cpp — new_process_group: the backends this build has. EMBER_WITH_GLOO and
// EMBER_WITH_NCCL come from CMake (1 when compiled in, 0 when not).
#include "collective_queue.h"
#if EMBER_WITH_GLOO
#include "gloo_group.h"
#endif
#if EMBER_WITH_NCCL
#include "nccl_group.h"
#endif

namespace ember::distributed {

bool backend_available(const std::string& backend) {
  if (backend == "gloo") return EMBER_WITH_GLOO;
  if (backend == "nccl") return EMBER_WITH_NCCL;
  return false;
}

std::shared_ptr<ProcessGroup> new_process_group(const std::string& backend,
                                                std::shared_ptr<TCPStore> store, int rank,
                                                int world_size, Milliseconds timeout) {
  const char* op = "init_process_group";
  if (backend != "gloo" && backend != "nccl")
    throw ValueError(op, "unknown backend '" + backend +
                             "'; expected \"gloo\" (CPU tensors) or "
                             "\"nccl\" (CUDA tensors)");
  if (world_size < 1)
    throw ValueError(op, "world size " + std::to_string(world_size) + " must be at least 1");
  if (rank < 0 || rank >= world_size)
    throw ValueError(op, "rank " + std::to_string(rank) + " is outside [0, " +
                             std::to_string(world_size) + "). Fix: RANK must be 0.." +
                             std::to_string(world_size - 1) +
                             " for WORLD_SIZE=" + std::to_string(world_size));
  if (timeout.count() <= 0)
    throw ValueError(op, "timeout " + std::to_string(timeout.count()) + " ms must be positive");
  if (!store) throw ValueError(op, "the store is null");
  const std::string prefix = store->next_group_prefix();
  if (backend == "gloo") {
#if EMBER_WITH_GLOO
    return std::make_shared<GlooProcessGroup>(std::move(store), prefix, rank, world_size, timeout);
#else
    throw NotSupportedError(op,
                            "this build of Ember has no gloo backend: Gloo was not found when "
                            "core-runtime was built. Fix: install Gloo (Debian: apt-get "
                            "install libgloo-dev) and build again");
#endif
  }
#if EMBER_WITH_NCCL
  return std::make_shared<NcclProcessGroup>(std::move(store), prefix, rank, world_size, timeout);
#else
  throw NotSupportedError(op,
                          "this build of Ember has no nccl backend: it was built without "
                          "CUDA. Fix: build with CUDA (EMBER_ENABLE_CUDA=1), or use "
                          "\"gloo\" for CPU tensors");
#endif
}

}  // namespace ember::distributed
