// prelude.h — what generated source starts with on each target (internal header): the integer
// types under names of our own (e_i64, ...), bit casts, infinities, and float16/bfloat16
// conversions written in plain C, identical to core-runtime's Half and BFloat16 (ember/half.h).
#pragma once
#include <string>

#include "ember/autodiff/compile/codegen.h"

namespace ember::autodiff::compile::codegen {

std::string prelude(Target target);
// How the kernel's entry point is declared on the target: "extern \"C\"" on the CPU.
const char* kernel_qualifier(Target target);

}  // namespace ember::autodiff::compile::codegen
