// out.h — the one code path an op's two forms share (internal header). `Tensor f(args...)`
// allocates its result and `const Tensor& f_out(const Tensor& out, args...)` is given it; both
// check the arguments and work out the result's type, take the output from `output`, and run the
// same kernels into it. checks.h says what a given out must be.
#pragma once
#include <initializer_list>
#include <vector>

#include "ops/checks.h"

namespace ember {

// An op's output: the caller's `*given` (an _out form), checked to have exactly this shape, dtype
// and device and to share no memory with the inputs (with identical_ok, except by being the very
// view an input is); or, when given is null, a new tensor. `name` names the output in errors
// (ops with several outputs name each one).
inline Tensor output(const char* op, const Tensor* given, const Shape& shape, DType dtype,
                     Device device, std::initializer_list<Named> inputs, const char* name = "out",
                     bool identical_ok = false) {
  if (!given) return Tensor::empty(shape, dtype, device, op);
  check_out(op, *given, shape, dtype, device, name);
  check_out_alias(op, *given, inputs, identical_ok, name);
  return *given;
}

// The output of an op whose kernels write any layout (elementwise, rearrange): `output`, with
// its version bumped here since no write_contiguous follows. Elementwise kernels read element i
// of every input before writing element i, so they pass identical_ok.
inline Tensor written_output(const char* op, const Tensor* given, const Shape& shape, DType dtype,
                             Device device, std::initializer_list<Named> inputs,
                             bool identical_ok = true) {
  Tensor out = output(op, given, shape, dtype, device, inputs, "out", identical_ok);
  if (given) out.bump_version();
  return out;
}

// ValueError when two outputs of one op overlap (undefined ones are skipped).
inline void check_outs_apart(const char* op, std::initializer_list<Named> outs) {
  for (auto i = outs.begin(); i != outs.end(); ++i)
    for (auto j = i + 1; j != outs.end(); ++j)
      check_out_alias(op, i->tensor, {*j}, /*identical_ok=*/false, i->name);
}

// Runs write(dsts) for kernels that write only contiguous outputs, dsts[k] standing for outs[k]:
// outs[k] itself when it is contiguous (always so for an allocated result) or undefined (an
// optional output), else a contiguous temporary copied into outs[k] afterwards. Either way each
// defined output's version is bumped once.
// A kernel that writes outs[k] in another dtype (statistics in float32 for a float16 result)
// passes it as dtypes[k]; the temporary then has that dtype and the copy casts.
template <class F>
void write_contiguous(const char* op, std::vector<Tensor> outs, F&& write,
                      const std::vector<DType>& dtypes = {}) {
  auto direct = [&](size_t k) {
    const Tensor& o = outs[k];
    return !o.defined() || (o.is_contiguous() && (k >= dtypes.size() || dtypes[k] == o.dtype()));
  };
  bool all_direct = true;
  for (size_t k = 0; k < outs.size(); ++k) all_direct = all_direct && direct(k);
  if (all_direct) {  // the usual case, an allocated result: no temporaries, no second vector
    write(outs);
    for (const Tensor& o : outs) o.bump_version();
    return;
  }
  std::vector<Tensor> dsts;
  for (size_t k = 0; k < outs.size(); ++k) {
    const Tensor& o = outs[k];
    const DType t = k < dtypes.size() ? dtypes[k] : o.dtype();
    dsts.push_back(direct(k) ? o : Tensor::empty(o.shape(), t, o.device(), op));
  }
  write(dsts);
  for (size_t k = 0; k < outs.size(); ++k) {
    if (!outs[k].defined()) continue;
    if (dsts[k].shares_storage(outs[k])) outs[k].bump_version();
    else outs[k].copy_(dsts[k]);  // copy_ bumps the version
  }
}

// The same for a kernel with one output: write(dst).
template <class F> void write_contiguous(const char* op, const Tensor& out, F&& write) {
  Tensor dst =
      out.is_contiguous() ? out : Tensor::empty(out.shape(), out.dtype(), out.device(), op);
  write(dst);
  if (dst.shares_storage(out)) out.bump_version();
  else out.copy_(dst);  // copy_ bumps the version
}

}  // namespace ember
