// prelude.cpp — the target-specific head of generated source, then the part every target shares
// (see prelude.h). An OpenCL target would add its own head here.
#include "prelude.h"

#include "ember/jit.h"

namespace ember::autodiff::compile::codegen {
namespace {

// CPU: the C++ compiler's own headers. E_INDEPENDENT before an elementwise loop says that its
// stores alias no load and no other store (the outputs are fresh tensors): without it the
// compiler checks every pair of pointers at run time and, past ten pairs (a group writing five
// values), leaves the loop scalar.
const char* kCpuHead = R"head(#include <math.h>
#include <stdint.h>
#include <string.h>
typedef int8_t e_i8;
typedef uint8_t e_u8;
typedef int16_t e_i16;
typedef uint16_t e_u16;
typedef int32_t e_i32;
typedef uint32_t e_u32;
typedef int64_t e_i64;
#define E_FN static inline
static inline e_u32 e_f32_bits(float f) { e_u32 u; memcpy(&u, &f, 4); return u; }
static inline float e_bits_f32(e_u32 u) { float f; memcpy(&f, &u, 4); return f; }
#define E_INF_F __builtin_inff()
#define E_NAN_F __builtin_nanf("")
#define E_INF_D __builtin_inf()
#define E_NAN_D __builtin_nan("")
#define EMBER_CPU_ISA jit
#if defined(__clang__)
#define E_INDEPENDENT _Pragma("clang loop vectorize(assume_safety)")
#else
#define E_INDEPENDENT _Pragma("GCC ivdep")
#endif
)head";

// After the library's vectorisable functions (jit::cpu_math_source): their names in kernels.
const char* kCpuVectorMath = R"(
E_FN float e_vexp(float x) { return ember::cpu::jit::exp_vectorisable(x); }
E_FN float e_vlog(float x) { return ember::cpu::jit::log_vectorisable(x); }
E_FN float e_vtanh(float x) { return ember::cpu::jit::tanh_vectorisable(x); }
E_FN float e_vsigmoid(float x) { return ember::cpu::jit::sigmoid_vectorisable(x); }
E_FN float e_verf(float x) { return ember::cpu::jit::erf_vectorisable(x); }
)";

// CUDA (NVRTC, compiled with -default-device): no headers; the math functions are built in.
const char* kCudaHead = R"(typedef signed char e_i8;
typedef unsigned char e_u8;
typedef short e_i16;
typedef unsigned short e_u16;
typedef int e_i32;
typedef unsigned int e_u32;
typedef long long e_i64;
#define E_FN static __forceinline__
E_FN e_u32 e_f32_bits(float f) { return __float_as_uint(f); }
E_FN float e_bits_f32(e_u32 u) { return __uint_as_float(u); }
#define E_INF_F __int_as_float(0x7f800000)
#define E_NAN_F __int_as_float(0x7fc00000)
#define E_INF_D __longlong_as_double(0x7ff0000000000000LL)
#define E_NAN_D __longlong_as_double(0x7ff8000000000000LL)
struct e_pointers { char* data[32]; };
)";

// Every target: round-to-nearest-even conversions, as ember/half.h makes them.
const char* kShared = R"(E_FN e_u16 e_f32_to_f16(float f) {
  e_u32 x = e_f32_bits(f);
  e_u32 sign = (x >> 16) & 0x8000u;
  e_u32 a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return (e_u16)(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (a >= 0x477ff000u) return (e_u16)(sign | 0x7c00u);
  if (a < 0x38800000u) {
    float scaled = e_bits_f32(a) * 16777216.0f;
    e_u32 m = (e_u32)scaled;
    float rem = scaled - (float)m;
    if (rem > 0.5f || (rem == 0.5f && (m & 1u))) ++m;
    return (e_u16)(sign | m);
  }
  e_u32 odd = (a >> 13) & 1u;
  a += 0xc8000fffu + odd;
  return (e_u16)(sign | (a >> 13));
}
E_FN float e_f16_to_f32(e_u16 h) {
  e_u32 sign = (e_u32)(h & 0x8000u) << 16;
  e_u32 ex = (h >> 10) & 0x1fu;
  e_u32 mant = h & 0x3ffu;
  if (ex == 0) { float f = (float)mant * 5.9604644775390625e-8f; return sign ? -f : f; }
  if (ex == 31) return e_bits_f32(sign | 0x7f800000u | (mant << 13));
  return e_bits_f32(sign | ((ex + 112u) << 23) | (mant << 13));
}
E_FN e_u16 e_f32_to_bf16(float f) {
  e_u32 x = e_f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (e_u16)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (e_u16)(x >> 16);
}
E_FN float e_bf16_to_f32(e_u16 b) { return e_bits_f32((e_u32)b << 16); }
E_FN float e_round_f16(float f) { return e_f16_to_f32(e_f32_to_f16(f)); }
E_FN float e_round_bf16(float f) { return e_bf16_to_f32(e_f32_to_bf16(f)); }
E_FN e_i64 e_min64(e_i64 a, e_i64 b) { return a < b ? a : b; }
)";

}  // namespace

std::string prelude(Target target) {
  if (target == Target::Cuda) return std::string(kCudaHead) + kShared;
  return std::string(kCpuHead) + jit::cpu_math_source() + kCpuVectorMath + kShared;
}

const char* kernel_qualifier(Target target) {
  return target == Target::Cuda ? "extern \"C\" __global__" : "extern \"C\"";
}

}  // namespace ember::autodiff::compile::codegen
