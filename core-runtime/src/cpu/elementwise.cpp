// elementwise.cpp — CPU kernels of the elementwise family. Each kernel picks the element type,
// takes the op's formula from ops/elementwise_math.h and runs it through the CPU elementwise
// engine (cpu_map), which handles strides, broadcasting, threads and vectorisable inner loops.
// T is the stored type, C = compute_t<T> the type the formula runs in (float for half types).
#include "kernels.h"
#include "ops/elementwise_kernels.h"
#include "ops/elementwise_math.h"

// From here on compiled for this file's instruction set; cpu/isa_begin.h says why the CPU
// backend's own headers come after it.
#include "cpu/isa_begin.h"
// The CPU backend's headers.
#include "cpu/loops.h"

namespace ember::cpu::EMBER_CPU_ISA {

// x, out: [*] of one dtype (bool for bitwise_not only).
static void unary(UnaryOp op, const Tensor& x, Tensor& out, double p0, double p1) {
  dispatch_all(out.dtype(), unary_op_name(op), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    math::visit_unary<C>(op, p0, p1,
                         [&](auto f) { cpu_map<T, T>(out, {x}, [f](T v) { return T(f(C(v))); }); });
  });
}

// a, b, out: [*] of one dtype.
static void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  dispatch_all(out.dtype(), binary_op_name(op), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    math::visit_binary<C>(op, [&](auto f) {
      cpu_map<T, T, T>(out, {a, b}, [f](T u, T v) { return T(f(C(u), C(v))); });
    });
  });
}

// a, b: [*] of one dtype; out: [*] bool.
static void compare(CompareOp op, const Tensor& a, const Tensor& b, Tensor& out) {
  dispatch_all(a.dtype(), compare_op_name(op), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    math::visit_compare<C>(op, [&](auto f) {
      cpu_map<bool, T, T>(out, {a, b}, [f](T u, T v) { return f(C(u), C(v)); });
    });
  });
}

// grad, x, out: [*] of one floating dtype.
static void backward(BackwardOp op, const Tensor& grad, const Tensor& x, Tensor& out, double p0,
                     double p1) {
  dispatch_floating(out.dtype(), backward_op_name(op), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    math::visit_backward<C>(op, p0, p1, [&](auto f) {
      cpu_map<T, T, T>(out, {grad, x}, [f](T g, T v) { return T(f(C(g), C(v))); });
    });
  });
}

// cond: [*] bool; a, b, out: [*] of one dtype.
static void where(const Tensor& cond, const Tensor& a, const Tensor& b, Tensor& out) {
  dispatch_all(out.dtype(), "where", [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu_map<T, bool, T, T>(out, {cond, a, b}, [](bool c, T u, T v) { return c ? u : v; });
  });
}

// x: [*] of any dtype; out: [*] bool.
static void predicate(PredicateOp op, const Tensor& x, Tensor& out) {
  dispatch_all(x.dtype(), predicate_op_name(op), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    math::visit_predicate<C>(op, [&](auto f) {
      cpu_map<bool, T>(out, {x}, [f](T v) { return f(C(v)); });
    });
  });
}

// x, out: [*] of one dtype.
static void nan_to_num(const Tensor& x, Tensor& out, double nan, double posinf, double neginf) {
  dispatch_all(out.dtype(), "nan_to_num", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    math::NanToNum<C> f{C(nan), C(posinf), C(neginf)};
    cpu_map<T, T>(out, {x}, [f](T v) { return T(f(C(v))); });
  });
}

void register_elementwise(KernelTable& table) {
  table.unary_kernel = &unary;
  table.binary_kernel = &binary;
  table.compare_kernel = &compare;
  table.backward_kernel = &backward;
  table.where_kernel = &where;
  table.predicate_kernel = &predicate;
  table.nan_to_num_kernel = &nan_to_num;
}

}  // namespace ember::cpu::EMBER_CPU_ISA

#include "cpu/isa_end.h"
