// isa_begin.h — compiles what follows, up to isa_end.h, for this file's instruction set (see
// isa.h). Included after every header of the library and of the standard library that the file
// needs, and before the CPU backend's own headers.
//
// Why a pragma and not -mavx2 on the command line: a file compiled with -mavx2 may also emit
// AVX2 code for the inline functions and templates of every header it includes (std::vector's,
// Tensor's), and the linker keeps just one copy of each, perhaps that one, which the baseline
// kernels would then call on a CPU without AVX2. `#pragma GCC target` applies only to functions
// defined after it: the headers included before it keep their baseline code (and are still
// inlined into the kernels, which then vectorise them with the wider instructions), while the
// kernels, the CPU headers' templates and the lambdas inside them get the new instructions.
// This is the reason for the include order, and for the standard headers listed here: any that
// a CPU header includes must be included before the pragma.
#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "cpu/isa.h"

#if defined(EMBER_CPU_ISA_AVX2) || defined(EMBER_CPU_ISA_AVX512)
#if !defined(__x86_64__)
#error "EMBER_CPU_ISA_AVX2 and EMBER_CPU_ISA_AVX512 are x86-64 instruction sets"
#endif
// AVX2 with FMA: x86-64-v3, Haswell (2013) and Zen 1 onwards. AVX-512 adds the subsets every
// AVX-512 CPU since Skylake-SP has, and asks for 512-bit vectors (GCC's default tuning keeps to
// 256 bits, which halves what the wide registers give; Clang: min_vector_width). The pragmas take
// no macros, hence the strings written out twice.
#if defined(__clang__) && defined(EMBER_CPU_ISA_AVX512)
#pragma clang attribute push(                                                                       \
    __attribute__((target(                                                                          \
        "avx2,fma,bmi,bmi2,f16c,lzcnt,movbe,popcnt,avx512f,avx512cd,avx512vl,avx512bw,avx512dq"))), \
    apply_to = function)
#pragma clang attribute push(__attribute__((min_vector_width(512))), apply_to = function)
#elif defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,bmi,bmi2,f16c,lzcnt,movbe,popcnt"))), \
                             apply_to = function)
#elif defined(EMBER_CPU_ISA_AVX512)
#pragma GCC push_options
#pragma GCC target( \
    "avx2,fma,bmi,bmi2,f16c,lzcnt,movbe,popcnt,avx512f,avx512cd,avx512vl,avx512bw,avx512dq,prefer-vector-width=512")
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,bmi,bmi2,f16c,lzcnt,movbe,popcnt")
#endif
#endif
