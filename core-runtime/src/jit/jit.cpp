// jit.cpp — what the CPU and CUDA halves of run-time compilation share: the switch, the cache
// folder, the one-time warning, and the CPU kernels' parallel loop.
#include "ember/jit.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "cpu/parallel.h"
#include "ember/error.h"
#include "jit/disk_cache.h"

namespace ember::jit {

const char* status_name(Status s) {
  switch (s) {
    case Status::Ok:
      return "ok";
    case Status::Disabled:
      return "disabled";
    case Status::NoCompiler:
      return "no compiler";
    case Status::CompileFailed:
      return "compile failed";
    case Status::LoadFailed:
      return "load failed";
  }
  return "unknown";
}

bool enabled() {
  const char* setting = std::getenv("EMBER_FUSION");
  return setting == nullptr || std::strcmp(setting, "0") != 0;
}

std::string cache_dir() {
  const CacheFolder folder = open_cache_folder();
  if (folder.path.empty()) throw ValueError("jit::cache_dir", folder.reason);
  return folder.path;
}

bool warn_fallback_once(const std::string& what, const std::string& reason) {
  static std::mutex mutex;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mutex);
  if (!seen.insert(reason).second) return false;
  std::fprintf(stderr, "[ember] warning: %s runs unfused: %s\n", what.c_str(), reason.c_str());
  return true;
}

void CpuKernel::run(char* const* data, int64_t items, int64_t cost_per_item) const {
  const CpuEntry entry = entry_;
  cpu::baseline::parallel_for(items, cost_per_item,
                              [&](int64_t begin, int64_t end) { entry(data, begin, end); });
}

}  // namespace ember::jit
