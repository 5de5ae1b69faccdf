// cpu.h — the instruction set the CPU backend's hot kernels run with.
//
// Elementwise ops, reductions, softmax and the losses, normalization, convolution and pooling,
// and the optimizer updates are compiled once for each instruction set of x86-64 that changes
// their speed: "baseline" (SSE4.2, every x86-64 CPU of the last decade), "avx2" (with FMA) and
// "avx512". The CPU backend starts with the widest that this CPU runs, or the one the environment
// variable EMBER_CPU_ISA names. Builds for other processors (aarch64) have "baseline" only.
#pragma once
#include <string>
#include <vector>

#include "ember/export.h"

namespace ember {

// The instruction set the CPU kernels use now: "baseline", "avx2" or "avx512".
EMBER_API std::string cpu_isa();
// Those this build has kernels for and this CPU runs, narrowest first ("baseline" always).
EMBER_API std::vector<std::string> available_cpu_isas();
// Switches the CPU kernels to `name` for every op started afterwards (by any thread). Throws
// ValueError for an unknown name and NotSupportedError for one not in available_cpu_isas().
EMBER_API void set_cpu_isa(const std::string& name);

}  // namespace ember
