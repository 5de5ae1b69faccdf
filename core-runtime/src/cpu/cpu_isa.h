// cpu_isa.h — the instruction sets the CPU kernels are compiled for, and which of them this CPU
// runs (internal header; the public face is ember/cpu.h).
#pragma once
#include <string>
#include <vector>

// Whether this build has the AVX2 and AVX-512 copies of the hot kernels (x86-64 builds only;
// CMakeLists.txt compiles them under the same condition).
#if defined(__x86_64__)
#define EMBER_CPU_X86_VARIANTS 1
#else
#define EMBER_CPU_X86_VARIANTS 0
#endif

namespace ember {
struct KernelTable;
}

namespace ember::cpu {

enum class CpuIsa { baseline, avx2, avx512 };
constexpr CpuIsa kAllCpuIsas[] = {CpuIsa::baseline, CpuIsa::avx2, CpuIsa::avx512};

const char* cpu_isa_name(CpuIsa isa);
// Whether this build has kernels for `isa` and this CPU (and its operating system) runs them.
bool cpu_isa_supported(CpuIsa isa);
// The supported ISA of that name; ValueError for an unknown name, NotSupportedError for one this
// build or CPU lacks. `source` names where the name came from, for the message.
CpuIsa parse_cpu_isa(const std::string& name, const std::string& source);
// The ISA the CPU backend starts with: EMBER_CPU_ISA's when that is set, else the widest supported.
CpuIsa initial_cpu_isa();

// Fills `table` with the CPU kernels, the hot families' copy for `isa` (register_kernels.cpp).
void register_kernels(CpuIsa isa, KernelTable& table);

}  // namespace ember::cpu
