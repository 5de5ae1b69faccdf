// kernels.h — the kernel table generated from kernels.def, and the accessor per slot that front
// functions call (internal header).
//
// Each line EMBER_KERNEL(unary_kernel, void(UnaryOp, const Tensor&, ...)) of kernels.def gives
//   - a field of KernelTable, `KernelFn<void(UnaryOp, ...)> unary_kernel`, which each backend
//     fills in its register functions: `table.unary_kernel = &unary;`
//   - a function `unary_kernel(Device)` returning that field of the device's backend, so that a
//     front function calls `unary_kernel(x.device())(op, x, out, p0, p1)`.
#pragma once
#include <vector>

#include "ember/backend.h"
#include "ember/tensor.h"
// The types the signatures use, one header per family.
#include "ops/attention_kernels.h"
#include "ops/conv_pool_kernels.h"
#include "ops/creation_kernels.h"
#include "ops/deferred_error.h"
#include "ops/elementwise_kernels.h"
#include "ops/indexing_kernels.h"
#include "ops/matmul_kernels.h"
#include "ops/normalization_kernels.h"
#include "ops/optimizer_kernels.h"
#include "ops/random_kernels.h"
#include "ops/reduction_kernels.h"
#include "ops/resample_kernels.h"
#include "ops/scan_sort_kernels.h"
#include "ops/softmax_loss_kernels.h"

namespace ember {

template <class Signature> using KernelFn = Signature*;

// One backend's kernels: a function pointer per line of kernels.def, null until filled.
struct KernelTable {
#define EMBER_KERNEL(name, signature) KernelFn<signature> name = nullptr;
#include "kernels.def"
#undef EMBER_KERNEL
};

// Throws NotSupportedError: `device`'s backend has no kernel `name` (defined in core/backend.cpp).
[[noreturn]] void throw_no_kernel(const char* name, Device device);

// name(device): the slot of device's backend; throws as backend_for does when the device is
// missing, and NotSupportedError naming the kernel and the device when the slot is empty.
#define EMBER_KERNEL(name, signature)                                   \
  inline KernelFn<signature> name(Device device) {                      \
    KernelFn<signature> fn = backend_for(device, #name).kernels().name; \
    if (!fn) throw_no_kernel(#name, device);                            \
    return fn;                                                          \
  }
#include "kernels.def"
#undef EMBER_KERNEL

}  // namespace ember
