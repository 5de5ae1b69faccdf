// isa.h — the name of the instruction set this file is compiled for (internal header).
//
// The hot CPU kernel files are compiled once per x86-64 instruction set: for the baseline every
// x86-64 machine of the last decade has (SSE4.2, the -march of the build), for AVX2 with FMA, and
// for AVX-512. CMake compiles each such file again with EMBER_CPU_ISA_AVX2 or
// EMBER_CPU_ISA_AVX512 defined, and everything the file defines lives in the namespace
// ember::cpu::EMBER_CPU_ISA (ember::cpu::baseline, ::avx2, ::avx512), so the copies never clash
// at link time. register_kernels.cpp picks the copy the CPU can run (cpu_isa.cpp).
#pragma once

#if defined(EMBER_CPU_ISA_AVX512)
#define EMBER_CPU_ISA avx512
#elif defined(EMBER_CPU_ISA_AVX2)
#define EMBER_CPU_ISA avx2
#else
#define EMBER_CPU_ISA baseline
#endif
