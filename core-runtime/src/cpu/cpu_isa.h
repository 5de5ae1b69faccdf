// cpu_isa.h — the instruction sets the CPU kernels are compiled for, and which of them this CPU
// runs (internal header; the public face is ember/cpu.h).
#pragma once
#include <string>
#include <vector>

// Which copies of the hot kernels this build has: EMBER_CPU_WITH_AVX2 and EMBER_CPU_WITH_AVX512
// are 1 or 0, defined by CMakeLists.txt (EMBER_CPU_ISAS) on the files that ask, cpu_isa.cpp and
// register_kernels.cpp; -Werror=undef makes a test of them in any other file an error.

namespace ember {
struct KernelTable;
}

namespace ember::cpu {

enum class CpuIsa { baseline, avx2, avx512 };
constexpr CpuIsa kAllCpuIsas[] = {CpuIsa::baseline, CpuIsa::avx2, CpuIsa::avx512};

const char* cpu_isa_name(CpuIsa isa);
// Whether this build has the copy of the hot kernels for `isa` (EMBER_CPU_ISAS).
bool cpu_isa_built(CpuIsa isa);
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
