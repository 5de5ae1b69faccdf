// reduction.cpp — CPU kernels of the reduction family. Each picks the reducer of its op
// (ops/reduction_kernels.h) for x's dtype and hands it to the engine (cpu/reduce_loops.h).
#include <cmath>

#include "kernels.h"
#include "ops/reduction_kernels.h"

// From here on compiled for this file's instruction set; cpu/isa_begin.h says why the CPU
// backend's own headers come after it.
#include "cpu/isa_begin.h"
// The CPU backend's headers.
#include "cpu/reduce_loops.h"

namespace ember::cpu::EMBER_CPU_ISA {

namespace rd = reducers;

static int64_t reduced_numel(const Tensor& x, int64_t nreduce) {
  int64_t n = 1;
  for (int64_t d = x.dim() - nreduce; d < x.dim(); ++d) n *= x.size(d);
  return n;
}

// out[o] = r.project(fold of output o's elements).
template <class T, class R>
void reduce_into(const Tensor& x, int64_t nreduce, const R& r, Tensor& out) {
  using Out = typename R::out_t;
  Out* o = out.data<Out>();
  const int64_t n = reduced_numel(x, nreduce);
  cpu_reduce<T>(x, nreduce, r, [&](int64_t i, typename R::acc_t a) { o[i] = r.project(a, n); });
}

static void reduce(ReduceOp op, const Tensor& x, int64_t nreduce, Tensor& out) {
  const DType dt = x.dtype();
  switch (op) {
    case ReduceOp::Sum:
      return dispatch_all(dt, "sum", [&](auto tag) {
        using T = typename decltype(tag)::type;
        reduce_into<T>(x, nreduce, rd::Sum<T>{}, out);
      });
    case ReduceOp::Prod:
      return dispatch_all(dt, "prod", [&](auto tag) {
        using T = typename decltype(tag)::type;
        reduce_into<T>(x, nreduce, rd::Prod<T>{}, out);
      });
    case ReduceOp::Mean:
      return dispatch_floating(dt, "mean", [&](auto tag) {
        using T = typename decltype(tag)::type;
        reduce_into<T>(x, nreduce, rd::Mean<T>{}, out);
      });
    case ReduceOp::Amax:
      return dispatch_all(dt, "amax", [&](auto tag) {
        using T = typename decltype(tag)::type;
        reduce_into<T>(x, nreduce, rd::Extreme<T, true>{}, out);
      });
    case ReduceOp::Amin:
      return dispatch_all(dt, "amin", [&](auto tag) {
        using T = typename decltype(tag)::type;
        reduce_into<T>(x, nreduce, rd::Extreme<T, false>{}, out);
      });
    case ReduceOp::All:
      return dispatch_all(dt, "all", [&](auto tag) {
        using T = typename decltype(tag)::type;
        reduce_into<T>(x, nreduce, rd::Logical<T, true>{}, out);
      });
    case ReduceOp::Any:
      return dispatch_all(dt, "any", [&](auto tag) {
        using T = typename decltype(tag)::type;
        reduce_into<T>(x, nreduce, rd::Logical<T, false>{}, out);
      });
    case ReduceOp::LogSumExp:
      return dispatch_floating(dt, "logsumexp", [&](auto tag) {
        using T = typename decltype(tag)::type;
        reduce_into<T>(x, nreduce, rd::LogSumExp<T>{}, out);
      });
  }
}

static void norm(const Tensor& x, int64_t nreduce, double p, Tensor& out) {
  dispatch_floating(x.dtype(), "norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    if (p == 2) return reduce_into<T>(x, nreduce, rd::NormSum<T, 2>{C(p)}, out);
    if (p == 1) return reduce_into<T>(x, nreduce, rd::NormSum<T, 1>{C(p)}, out);
    if (p == 0) return reduce_into<T>(x, nreduce, rd::NormSum<T, 0>{C(p)}, out);
    if (std::isinf(p) && p > 0) return reduce_into<T>(x, nreduce, rd::NormExtreme<T, true>{}, out);
    if (std::isinf(p)) return reduce_into<T>(x, nreduce, rd::NormExtreme<T, false>{}, out);
    reduce_into<T>(x, nreduce, rd::NormSum<T, -1>{C(p)}, out);
  });
}

static void var(const Tensor& x, int64_t nreduce, int64_t correction, bool take_sqrt, Tensor& out) {
  dispatch_floating(x.dtype(), take_sqrt ? "std" : "var", [&](auto tag) {
    using T = typename decltype(tag)::type;
    reduce_into<T>(x, nreduce, rd::Variance<T>{correction, take_sqrt}, out);
  });
}

static void arg_reduce(bool is_max, const Tensor& x, int64_t nreduce, Tensor& values,
                       Tensor& indices) {
  dispatch_all(x.dtype(), is_max ? "max" : "min", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* v = values.defined() ? values.data<T>() : nullptr;
    int64_t* ix = indices.data<int64_t>();
    auto run = [&](auto r) {
      cpu_reduce<T>(x, nreduce, r, [&](int64_t o, auto a) {
        if (v) v[o] = T(a.value);
        ix[o] = a.index;
      });
    };
    if (is_max) run(rd::ArgExtreme<T, true>{});
    else run(rd::ArgExtreme<T, false>{});
  });
}

void register_reduction(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/reduction.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cpu::EMBER_CPU_ISA

#include "cpu/isa_end.h"
