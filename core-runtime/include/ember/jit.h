// jit.h — kernels compiled while the program runs: C++ source built by the machine's C++
// compiler into a shared object and loaded with dlopen (CPU), or CUDA source built by NVRTC into
// a cubin (CUDA). A code generator (autodiff-engine's fusion) renders the source; this header
// only compiles, caches and runs it.
//
// Compiled artifacts are kept in a disk cache, one entry per key: the source, the compiler, its
// flags and the device. The cache lives in $EMBER_CACHE_DIR, else $XDG_CACHE_HOME/ember, else
// ~/.cache/ember, created with mode 0700. Each entry records its full key and a hash of the
// artifact; an entry whose key or hash does not match is rebuilt, never loaded.
//
// Nothing here throws for a missing or failing compiler: the caller gets a Status and a reason,
// runs its unfused kernels instead and tells the user once (see warn_fallback_once).
//   EMBER_FUSION=0     turns run-time compilation off (Status::Disabled)
//   EMBER_CXX=path     the C++ compiler to use (default: the one Ember was built with)
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "ember/export.h"

namespace ember::jit {

enum class Status {
  Ok,
  Disabled,       // EMBER_FUSION=0
  NoCompiler,     // the C++ compiler is not there, or NVRTC is not built in
  CompileFailed,  // the compiler rejected the source (the reason holds its first lines)
  LoadFailed,     // dlopen or the entry point failed
};
EMBER_API const char* status_name(Status s);  // "ok", "disabled", ...

// A CPU kernel's entry point, `extern "C"` in the source:
//   void entry(char* const* data, int64_t begin, int64_t end)
// data[0] is the output, data[1..] the inputs; [begin, end) a range of the kernel's work items.
using CpuEntry = void (*)(char* const* data, int64_t begin, int64_t end);

// A loaded CPU kernel. The shared object stays loaded for the life of the process.
class EMBER_API CpuKernel {
 public:
  explicit CpuKernel(CpuEntry entry) : entry_(entry) {}
  // Runs entry over [0, items) on Ember's thread pool, cut into chunks as the library's own
  // kernels are (cpu/parallel.h); cost_per_item is the work of one item in the pool's units (one
  // cheap elementwise op on one element = 1).
  void run(char* const* data, int64_t items, int64_t cost_per_item) const;

 private:
  CpuEntry entry_;
};

struct CpuCompile {
  Status status = Status::Ok;
  std::string reason;       // why it is not Ok, in a sentence
  bool from_cache = false;  // loaded from the disk cache (or this process's memory) unbuilt
  std::shared_ptr<const CpuKernel> kernel;  // set when Ok
};

// Compiles `source` (C++17) into a shared object, or takes it from the cache, and loads `entry`.
EMBER_API CpuCompile compile_cpu(const std::string& source, const std::string& entry);

struct CudaCompile {
  Status status = Status::Ok;
  std::string reason;
  bool from_cache = false;
  std::string image;  // the cubin (or PTX when ptx was asked for) when Ok
};

// Compiles CUDA `source` with NVRTC for compute capability `sm` (80, 90, ...; 0: the current
// device's). ptx=true stops at PTX. Needs no GPU unless sm is 0. Status::NoCompiler where Ember
// was built without CUDA.
EMBER_API CudaCompile compile_cuda(const std::string& source, int sm, bool ptx = false);
// Whether NVRTC is built in.
EMBER_API bool nvrtc_available();

// Kernel `entry` of a cubin from compile_cuda, loaded into this process (the image stays loaded
// for every GPU). Loading finds an image loaded before by its hash, so a caller that launches a
// kernel often loads it once and keeps this handle: a launch then costs no lookup.
struct CudaKernel {
  const void* handle = nullptr;  // the CUDA runtime's cudaKernel_t
};
EMBER_API CudaKernel load_cuda(const std::string& image, const std::string& entry);

// Launches `kernel` on the current stream of GPU `device`, as
//   entry(CudaPointers pointers, int64_t items)
// with a grid-stride loop's grid over `items`. data[0] is the output, data[1..count) the inputs.
struct CudaPointers {
  static constexpr int kMax = 32;
  char* data[kMax];
};
EMBER_API void launch_cuda(const CudaKernel& kernel, int device, const CudaPointers& pointers,
                           int64_t items);

// The library's vectorisable float functions (exp_vectorisable, log_, tanh_, sigmoid_ and
// erf_vectorisable of src/cpu/vector_exp.h and vector_math.h) as C++ source, in namespace
// ember::cpu::EMBER_CPU_ISA (define EMBER_CPU_ISA first): a generated CPU kernel that calls them
// computes exactly what the library's kernels compute, and vectorises as they do.
EMBER_API const char* cpu_math_source();

// Whether run-time compilation is on (EMBER_FUSION is not "0").
EMBER_API bool enabled();
// The cache folder (created, mode 0700, on first use).
EMBER_API std::string cache_dir();
// The C++ compiler compile_cpu runs: EMBER_CXX, else the one Ember was built with.
EMBER_API std::string cpu_compiler();
// Prints "[ember] <what> runs unfused: <reason>" to stderr the first time this reason is seen
// in the process; returns whether it printed.
EMBER_API bool warn_fallback_once(const std::string& what, const std::string& reason);
// Forgets the kernels this process has loaded or failed to build, so that the next compile_*
// consults the disk cache (and the compiler) again. For tests of the cache.
EMBER_API void forget_loaded_kernels();

}  // namespace ember::jit
