// isa_end.h — ends the region isa_begin.h opened: what follows is compiled for the baseline.
#if defined(EMBER_CPU_ISA_AVX2) || defined(EMBER_CPU_ISA_AVX512)
#if defined(__clang__) && defined(EMBER_CPU_ISA_AVX512)
#pragma clang attribute pop
#pragma clang attribute pop
#elif defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
#endif
