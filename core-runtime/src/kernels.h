// kernels.h — the kernel table generated from kernels.def, and the accessor per slot that front
// functions call (internal header).
//
// Each line EMBER_KERNEL(unary, void(UnaryOp, const Tensor&, ...)) of kernels/<family>.def
// (listed by kernels.def) gives
//   - a field of KernelTable, `KernelFn<void(UnaryOp, ...)> unary_kernel`, which each backend
//     fills in its register_<family>: `table.unary_kernel = &unary;` (EMBER_REGISTER_SLOT)
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
#define EMBER_KERNEL(name, signature) KernelFn<signature> name##_kernel = nullptr;
#include "kernels.def"
#undef EMBER_KERNEL
};

// Throws NotSupportedError: `device`'s backend has no kernel `name` (defined in core/backend.cpp).
[[noreturn]] void throw_no_kernel(const char* name, Device device);

// <name>_kernel(device): the slot of device's backend; throws as backend_for does when the device
// is missing, and NotSupportedError naming the kernel and the device when the slot is empty.
#define EMBER_KERNEL(name, signature)                                                      \
  inline KernelFn<signature> name##_kernel(Device device) {                                \
    KernelFn<signature> fn = backend_for(device, #name "_kernel").kernels().name##_kernel; \
    if (!fn) throw_no_kernel(#name "_kernel", device);                                     \
    return fn;                                                                             \
  }
#include "kernels.def"
#undef EMBER_KERNEL

// A family's register function in a backend fills its slots with the backend's functions of the
// slots' names, from the family's list:
//   void register_conv_pool(KernelTable& table) {
//   #define EMBER_KERNEL EMBER_REGISTER_SLOT
//   #include "kernels/conv_pool.def"
//   #undef EMBER_KERNEL
//   }
#define EMBER_REGISTER_SLOT(name, signature) table.name##_kernel = &name;

}  // namespace ember
