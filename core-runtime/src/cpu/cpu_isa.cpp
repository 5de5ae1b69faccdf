// cpu_isa.cpp — which of the instruction sets of cpu/isa.h this CPU runs, and the choice made by
// EMBER_CPU_ISA.
#include "cpu/cpu_isa.h"

#include <cstdlib>
#include <string>

#include "ember/error.h"

namespace ember::cpu {

const char* cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::avx2:
      return "avx2";
    case CpuIsa::avx512:
      return "avx512";
    default:
      return "baseline";
  }
}

bool cpu_isa_built(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::avx2:
      return EMBER_CPU_WITH_AVX2;
    case CpuIsa::avx512:
      return EMBER_CPU_WITH_AVX512;
    default:
      return true;
  }
}

bool cpu_isa_supported(CpuIsa isa) {
  if (isa == CpuIsa::baseline) return true;
  if (!cpu_isa_built(isa)) return false;
#if defined(__x86_64__)
  // GCC's and Clang's checks also ask the operating system whether it saves the wide registers.
  bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
            __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("f16c");
  if (isa == CpuIsa::avx2) return v3;
  return v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512cd");
#else
  return false;
#endif
}

static std::string supported_list() {
  std::string list;
  for (CpuIsa isa : kAllCpuIsas)
    if (cpu_isa_supported(isa)) list += std::string(list.empty() ? "" : ", ") + cpu_isa_name(isa);
  return list;
}

CpuIsa parse_cpu_isa(const std::string& name, const std::string& source) {
  for (CpuIsa isa : kAllCpuIsas) {
    if (name != cpu_isa_name(isa)) continue;
    if (!cpu_isa_supported(isa))
      throw NotSupportedError(source, std::string(cpu_isa_built(isa) ? "this CPU cannot run"
                                                                     : "this build has no") +
                                          " " + name + " kernels; it runs " + supported_list() +
                                          (cpu_isa_built(isa)
                                               ? ""
                                               : " (rebuild core-runtime with EMBER_CPU_ISAS "
                                                 "listing it to have them)"));
    return isa;
  }
  throw ValueError(source, "unknown CPU instruction set '" + name +
                               "'; expected one of baseline, avx2, avx512 (this CPU runs " +
                               supported_list() + ")");
}

CpuIsa initial_cpu_isa() {
  if (const char* forced = std::getenv("EMBER_CPU_ISA"); forced && *forced)
    return parse_cpu_isa(forced, "EMBER_CPU_ISA=" + std::string(forced));
  CpuIsa best = CpuIsa::baseline;
  for (CpuIsa isa : kAllCpuIsas)
    if (cpu_isa_supported(isa)) best = isa;
  return best;
}

}  // namespace ember::cpu
