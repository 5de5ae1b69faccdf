// cpu_compile.cpp — run-time compilation of C++ kernels: the machine's compiler builds a shared
// object, the disk cache keeps it, dlopen loads it (see ember/jit.h).
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "ember/jit.h"
#include "jit/disk_cache.h"
#include "jit/run_program.h"
#include "jit/status.h"

#ifndef EMBER_JIT_CXX
#define EMBER_JIT_CXX "c++"
#endif

namespace ember::jit {
namespace {

// -march=native: the object runs only where it was compiled, which the key records (the
// device). The floating-point flags are those of the library's own kernels
// (core-runtime/CMakeLists.txt) so that the same arithmetic gives the same bits: no contraction
// into fused multiply-adds, no errno; -fwrapv gives signed overflow the two's-complement result
// the library's kernels get in practice. -w: generated code is not for reading warnings.
const char* const kFlags[] = {"-std=c++17",
                              "-O3",
#if defined(__x86_64__)
                              "-march=native",
#else
                              "-mcpu=native",
#endif
                              "-fPIC",
                              "-shared",
                              "-w",
                              "-fno-math-errno",
                              "-fno-trapping-math",
                              "-ffp-contract=off",
                              "-fwrapv",
                              "-fno-strict-aliasing"};

// What makes a compiled object specific to this machine: the processor's model and features.
std::string cpu_description() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model, flags;
  while (std::getline(cpuinfo, line) && (model.empty() || flags.empty())) {
    if (model.empty() && line.rfind("model name", 0) == 0) model = line;
    if (flags.empty() && (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0))
      flags = line;
  }
  return model + "\n" + hex64(fnv1a64(flags));
}

std::mutex g_mutex;                             // guards everything below, and serialises compiles
std::map<std::string, std::string> g_versions;  // compiler -> --version line
std::map<std::string, std::shared_ptr<const CpuKernel>> g_loaded;  // key -> kernel
std::map<std::string, CpuCompile> g_failed;                        // key -> why (not retried)

// The compiler's first line of --version, or nothing when it cannot be run.
std::optional<std::string> compiler_version(const std::string& compiler) {
  auto found = g_versions.find(compiler);
  if (found != g_versions.end()) return found->second;
  const ProgramRun run = run_program({compiler, "--version"});
  if (!run.started || run.exit_code != 0) return std::nullopt;
  const std::string first_line = run.output.substr(0, run.output.find('\n'));
  g_versions[compiler] = first_line;
  return first_line;
}

// The first lines of a compiler's complaint, for a reason a user can read.
std::string first_lines(const std::string& text, int count) {
  size_t end = 0;
  for (int line = 0; line < count; ++line) {
    end = text.find('\n', end);
    if (end == std::string::npos) return text;
    ++end;
  }
  return text.substr(0, end) + "...";
}

CpuCompile load(const std::string& path, const std::string& entry, bool from_cache) {
  void* library = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr)
    return failure<CpuCompile>(Status::LoadFailed, std::string("dlopen failed: ") + ::dlerror());
  void* symbol = ::dlsym(library, entry.c_str());
  if (symbol == nullptr)
    return failure<CpuCompile>(Status::LoadFailed, "the compiled object has no " + entry);
  CpuCompile result;
  result.from_cache = from_cache;
  result.kernel = std::make_shared<CpuKernel>(reinterpret_cast<CpuEntry>(symbol));
  return result;
}

// Builds `source` in `folder` and returns the shared object's bytes, or the failure.
CpuCompile build(const std::string& compiler, const std::string& folder, const std::string& source,
                 std::string& object) {
  static std::atomic<uint64_t> counter{0};
  const std::string stem =
      folder + "/build-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  if (!write_file_atomically(stem + ".cpp", source))
    return failure<CpuCompile>(Status::CompileFailed, "cannot write the source into " + folder);
  std::vector<std::string> argv{compiler};
  for (const char* flag : kFlags) argv.emplace_back(flag);
  argv.insert(argv.end(), {stem + ".cpp", "-o", stem + ".so"});
  const ProgramRun run = run_program(argv);
  std::remove((stem + ".cpp").c_str());
  std::optional<std::string> bytes = read_file(stem + ".so");
  std::remove((stem + ".so").c_str());
  if (!run.started)
    return failure<CpuCompile>(Status::NoCompiler, "the C++ compiler " + compiler +
                                                       " could not be run (set EMBER_CXX)");
  if (run.exit_code != 0 || !bytes)
    return failure<CpuCompile>(Status::CompileFailed, "the C++ compiler " + compiler +
                                                          " failed (exit status " +
                                                          std::to_string(run.exit_code) +
                                                          "): " + first_lines(run.output, 12));
  object = std::move(*bytes);
  return {};
}

CpuCompile compile_locked(const std::string& source, const std::string& entry) {
  if (!enabled()) return failure<CpuCompile>(Status::Disabled, "EMBER_FUSION=0 turns it off");
  const std::string compiler = cpu_compiler();
  const std::optional<std::string> version = compiler_version(compiler);
  if (!version)
    return failure<CpuCompile>(Status::NoCompiler,
                               "no C++ compiler at " + compiler +
                                   " (set EMBER_CXX to the path of g++ or clang++)");
  std::string key = "cpu\n" + compiler + "\n" + *version + "\n";
  for (const char* flag : kFlags) key += std::string(flag) + " ";
  key += "\n" + cpu_description() + "\n" + entry + "\n" + source;

  if (auto found = g_loaded.find(key); found != g_loaded.end()) {
    CpuCompile hit;
    hit.from_cache = true;
    hit.kernel = found->second;
    return hit;
  }
  if (auto failed = g_failed.find(key); failed != g_failed.end()) return failed->second;

  const CacheFolder cache = open_cache_folder();
  std::string folder = cache.path;
  bool private_folder = false;
  if (folder.empty()) {  // no cache: build in a private temporary folder
    std::string pattern =
        std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/ember-jit-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr)
      return failure<CpuCompile>(Status::CompileFailed, cache.reason + ", nor a temporary one");
    folder = pattern;
    private_folder = true;
  }
  const std::string path = folder + "/" + hex64(fnv1a64(key)) + ".so";
  CpuCompile result;
  if (!private_folder && cache_load(folder, key, "so")) {
    result = load(path, entry, /*from_cache=*/true);
  } else {
    std::string object;
    result = build(compiler, folder, source, object);
    if (result.status == Status::Ok) {
      if (private_folder || !cache_store(folder, key, "so", object)) {
        // Uncached: load a private copy, then let it go from the folder (dlopen keeps it).
        write_file_atomically(path, object);
        result = load(path, entry, false);
        std::remove(path.c_str());
      } else {
        result = load(path, entry, false);
      }
    }
  }
  if (private_folder) ::rmdir(folder.c_str());
  if (result.status == Status::Ok) {
    g_loaded[key] = result.kernel;
  } else {
    g_failed[key] = result;
  }
  return result;
}

}  // namespace

std::string cpu_compiler() {
  const char* chosen = std::getenv("EMBER_CXX");
  return chosen && *chosen ? chosen : EMBER_JIT_CXX;
}

CpuCompile compile_cpu(const std::string& source, const std::string& entry) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return compile_locked(source, entry);
}

void forget_loaded_kernels() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_loaded.clear();
  g_failed.clear();
  forget_loaded_cuda_images();
}

}  // namespace ember::jit
