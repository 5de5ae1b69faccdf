// reduction.cpp — front functions of the reductions: check the operands, work out the result's
// shape and dtype, view x as [kept..., reduced...] and call the device's kernel.
#include "ember/ops/reduction.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels.h"
#include "ops/checks.h"
#include "ops/out.h"
#include "ops/reduction_kernels.h"

namespace ember {
namespace {

// x with its reduced dims moved last, and the shapes of the result.
struct ReducePlan {
  Tensor xr;            // x permuted to [kept..., reduced...]
  int64_t nreduce = 0;  // how many trailing dims of xr are reduced
  int64_t numel = 1;    // elements folded into each output
  Shape out_shape;      // the kept dims
  Shape keep_shape;     // x's shape with the reduced dims set to 1 (for keepdim)
};

ReducePlan plan(const char* op, const Tensor& x, const std::vector<int64_t>& dims) {
  check_defined(op, {{"x", x}});
  const int64_t nd = x.dim();
  std::vector<bool> reduced(size_t(nd), dims.empty());
  for (int64_t d : dims) {
    int64_t w = wrap_dim_or_scalar(d, nd, op, "x is " + describe(x));
    if (nd == 0) continue;  // reducing a scalar's only element
    if (reduced[size_t(w)])
      throw ValueError(op, "x is " + describe(x) + "; dim " + std::to_string(d) +
                               " appears more than once in dims " + shape_str(dims) +
                               "; list each dim once");
    reduced[size_t(w)] = true;
  }
  ReducePlan p;
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < nd; ++d) {
    p.keep_shape.push_back(reduced[size_t(d)] ? 1 : x.size(d));
    if (reduced[size_t(d)]) continue;
    perm.push_back(d);
    p.out_shape.push_back(x.size(d));
  }
  for (int64_t d = 0; d < nd; ++d) {
    if (!reduced[size_t(d)]) continue;
    perm.push_back(d);
    p.numel *= x.size(d);
    ++p.nreduce;
  }
  p.xr = x.permute(perm);
  return p;
}

const Shape& result_shape(const ReducePlan& p, bool keepdim) {
  return keepdim ? p.keep_shape : p.out_shape;
}

// Runs kernel(flat) into out through its [kept...] view, the layout every reduction kernel writes.
template <class F>
void write_reduced(const char* op, const ReducePlan& p, const Tensor& out, F&& kernel) {
  write_contiguous(op, out, [&](Tensor& dst) {
    Tensor flat = dst.view(p.out_shape);
    kernel(flat);
  });
}

// max, min and their kin have no identity, so reducing nothing is an error.
void check_nonempty(const char* op, const Tensor& x, const ReducePlan& p,
                    const std::vector<int64_t>& dims) {
  if (p.numel == 0)
    throw ValueError(op, "x is " + describe(x) + "; the reduced dims " +
                             (dims.empty() ? std::string("(all)") : shape_str(dims)) +
                             " hold no elements and " + op +
                             " of nothing is undefined; reduce over non-empty dims");
}

// has_identity: whether reducing no elements has a value (sum: 0) or is an error (amax). given:
// the _out form's out, or null to allocate the result.
Tensor run_reduce(const char* op, ReduceOp kind, const Tensor& x, const std::vector<int64_t>& dims,
                  bool keepdim, DType out_dtype, const Tensor* given, bool has_identity = true) {
  ReducePlan p = plan(op, x, dims);
  if (!has_identity) check_nonempty(op, x, p, dims);
  Tensor out = output(op, given, result_shape(p, keepdim), out_dtype, x.device(), {{"x", x}});
  write_reduced(op, p, out,
                [&](Tensor& flat) { reduce_kernel(x.device())(kind, p.xr, p.nreduce, flat); });
  return out;
}

DType sum_dtype(DType t) { return is_floating(t) ? t : DType::Int64; }

// values_out/indices_out: the _out form's outputs (null: allocate). values are skipped when
// want_values is false (argmax/argmin).
ValuesIndices run_arg_reduce(const char* op, bool is_max, const Tensor& x,
                             const std::vector<int64_t>& dims, bool keepdim, bool want_values,
                             const Tensor* values_out, const Tensor* indices_out) {
  ReducePlan p = plan(op, x, dims);
  check_nonempty(op, x, p, dims);
  const Shape& shape = result_shape(p, keepdim);
  Tensor values = want_values
                      ? output(op, values_out, shape, x.dtype(), x.device(), {{"x", x}}, "values")
                      : Tensor();
  Tensor indices = output(op, indices_out, shape, DType::Int64, x.device(),
                          {{"x", x}, {"values", values}}, want_values ? "indices" : "out");
  write_contiguous(op, {values, indices}, [&](std::vector<Tensor>& dsts) {
    Tensor v = dsts[0].defined() ? dsts[0].view(p.out_shape) : Tensor();
    Tensor i = dsts[1].view(p.out_shape);
    arg_reduce_kernel(x.device())(is_max, p.xr, p.nreduce, v, i);
  });
  return {values, indices};
}

std::vector<int64_t> optional_dim(std::optional<int64_t> dim) {
  return dim ? std::vector<int64_t>{*dim} : std::vector<int64_t>{};
}

Tensor run_var(const char* op, const Tensor& x, const std::vector<int64_t>& dims,
               int64_t correction, bool keepdim, bool take_sqrt, const Tensor* given) {
  check_defined(op, {{"x", x}});
  check_floating(op, {{"x", x}});
  ReducePlan p = plan(op, x, dims);
  Tensor out = output(op, given, result_shape(p, keepdim), x.dtype(), x.device(), {{"x", x}});
  write_reduced(op, p, out, [&](Tensor& flat) {
    var_kernel(x.device())(p.xr, p.nreduce, correction, take_sqrt, flat);
  });
  return out;
}

Tensor run_mean(const char* op, ReduceOp kind, const Tensor& x, const std::vector<int64_t>& dims,
                bool keepdim, const Tensor* given) {
  check_defined(op, {{"x", x}});
  check_floating(op, {{"x", x}});
  return run_reduce(op, kind, x, dims, keepdim, x.dtype(), given);
}

Tensor run_norm(const Tensor& x, double p, const std::vector<int64_t>& dims, bool keepdim,
                const Tensor* given) {
  check_defined("norm", {{"x", x}});
  check_floating("norm", {{"x", x}});
  if (std::isnan(p)) throw ValueError("norm", "p is NaN; pass a number or +-infinity");
  ReducePlan r = plan("norm", x, dims);
  if (std::isinf(p)) check_nonempty("norm", x, r, dims);  // max|x| of nothing: as amax
  Tensor out = output("norm", given, result_shape(r, keepdim), x.dtype(), x.device(), {{"x", x}});
  write_reduced("norm", r, out,
                [&](Tensor& flat) { norm_kernel(x.device())(r.xr, r.nreduce, p, flat); });
  return out;
}

}  // namespace

// Each op's out-of-place form passes no output (allocate); its _out form passes &out.
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return run_reduce("sum", ReduceOp::Sum, x, dims, keepdim, sum_dtype(x.dtype()), nullptr);
}
const Tensor& sum_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims,
                      bool keepdim) {
  run_reduce("sum", ReduceOp::Sum, x, dims, keepdim, sum_dtype(x.dtype()), &out);
  return out;
}

Tensor prod(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return run_reduce("prod", ReduceOp::Prod, x, dims, keepdim, sum_dtype(x.dtype()), nullptr);
}
const Tensor& prod_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims,
                       bool keepdim) {
  run_reduce("prod", ReduceOp::Prod, x, dims, keepdim, sum_dtype(x.dtype()), &out);
  return out;
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return run_mean("mean", ReduceOp::Mean, x, dims, keepdim, nullptr);
}
const Tensor& mean_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims,
                       bool keepdim) {
  run_mean("mean", ReduceOp::Mean, x, dims, keepdim, &out);
  return out;
}

Tensor var(const Tensor& x, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  return run_var("var", x, dims, correction, keepdim, false, nullptr);
}
const Tensor& var_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims,
                      int64_t correction, bool keepdim) {
  run_var("var", x, dims, correction, keepdim, false, &out);
  return out;
}

Tensor std(const Tensor& x, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  return run_var("std", x, dims, correction, keepdim, true, nullptr);
}
const Tensor& std_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims,
                      int64_t correction, bool keepdim) {
  run_var("std", x, dims, correction, keepdim, true, &out);
  return out;
}

Tensor amax(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return run_reduce("amax", ReduceOp::Amax, x, dims, keepdim, x.dtype(), nullptr, false);
}
const Tensor& amax_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims,
                       bool keepdim) {
  run_reduce("amax", ReduceOp::Amax, x, dims, keepdim, x.dtype(), &out, false);
  return out;
}

Tensor amin(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return run_reduce("amin", ReduceOp::Amin, x, dims, keepdim, x.dtype(), nullptr, false);
}
const Tensor& amin_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims,
                       bool keepdim) {
  run_reduce("amin", ReduceOp::Amin, x, dims, keepdim, x.dtype(), &out, false);
  return out;
}

ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim) {
  return run_arg_reduce("max", true, x, {dim}, keepdim, true, nullptr, nullptr);
}
ValuesIndices max_out(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t dim,
                      bool keepdim) {
  return run_arg_reduce("max", true, x, {dim}, keepdim, true, &values, &indices);
}

ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim) {
  return run_arg_reduce("min", false, x, {dim}, keepdim, true, nullptr, nullptr);
}
ValuesIndices min_out(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t dim,
                      bool keepdim) {
  return run_arg_reduce("min", false, x, {dim}, keepdim, true, &values, &indices);
}

Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return run_arg_reduce("argmax", true, x, optional_dim(dim), keepdim, false, nullptr, nullptr)
      .indices;
}
const Tensor& argmax_out(const Tensor& out, const Tensor& x, std::optional<int64_t> dim,
                         bool keepdim) {
  run_arg_reduce("argmax", true, x, optional_dim(dim), keepdim, false, nullptr, &out);
  return out;
}

Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return run_arg_reduce("argmin", false, x, optional_dim(dim), keepdim, false, nullptr, nullptr)
      .indices;
}
const Tensor& argmin_out(const Tensor& out, const Tensor& x, std::optional<int64_t> dim,
                         bool keepdim) {
  run_arg_reduce("argmin", false, x, optional_dim(dim), keepdim, false, nullptr, &out);
  return out;
}

Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return run_mean("logsumexp", ReduceOp::LogSumExp, x, dims, keepdim, nullptr);
}
const Tensor& logsumexp_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims,
                            bool keepdim) {
  run_mean("logsumexp", ReduceOp::LogSumExp, x, dims, keepdim, &out);
  return out;
}

Tensor all(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return run_reduce("all", ReduceOp::All, x, dims, keepdim, DType::Bool, nullptr);
}
const Tensor& all_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims,
                      bool keepdim) {
  run_reduce("all", ReduceOp::All, x, dims, keepdim, DType::Bool, &out);
  return out;
}

Tensor any(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return run_reduce("any", ReduceOp::Any, x, dims, keepdim, DType::Bool, nullptr);
}
const Tensor& any_out(const Tensor& out, const Tensor& x, const std::vector<int64_t>& dims,
                      bool keepdim) {
  run_reduce("any", ReduceOp::Any, x, dims, keepdim, DType::Bool, &out);
  return out;
}

Tensor norm(const Tensor& x, double p, const std::vector<int64_t>& dims, bool keepdim) {
  return run_norm(x, p, dims, keepdim, nullptr);
}
const Tensor& norm_out(const Tensor& out, const Tensor& x, double p,
                       const std::vector<int64_t>& dims, bool keepdim) {
  run_norm(x, p, dims, keepdim, &out);
  return out;
}

}  // namespace ember
