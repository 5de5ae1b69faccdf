// reduction.cpp — front functions of the reductions: check the operands, work out the result's
// shape and dtype, view x as [kept..., reduced...] and call the device's kernel.
#include "ember/ops/reduction.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels.h"
#include "ops/checks.h"
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

Tensor shaped(const ReducePlan& p, const Tensor& out, bool keepdim) {
  return keepdim ? out.view(p.keep_shape) : out;
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

// has_identity: whether reducing no elements has a value (sum: 0) or is an error (amax).
Tensor run_reduce(const char* op, ReduceOp kind, const Tensor& x, const std::vector<int64_t>& dims,
                  bool keepdim, DType out_dtype, bool has_identity = true) {
  ReducePlan p = plan(op, x, dims);
  if (!has_identity) check_nonempty(op, x, p, dims);
  Tensor out = Tensor::empty(p.out_shape, out_dtype, x.device(), op);
  reduce_kernel(x.device())(kind, p.xr, p.nreduce, out);
  return shaped(p, out, keepdim);
}

DType sum_dtype(DType t) { return is_floating(t) ? t : DType::Int64; }

ValuesIndices run_arg_reduce(const char* op, bool is_max, const Tensor& x,
                             const std::vector<int64_t>& dims, bool keepdim, bool want_values) {
  ReducePlan p = plan(op, x, dims);
  check_nonempty(op, x, p, dims);
  Tensor values = want_values ? Tensor::empty(p.out_shape, x.dtype(), x.device(), op) : Tensor();
  Tensor indices = Tensor::empty(p.out_shape, DType::Int64, x.device(), op);
  arg_reduce_kernel(x.device())(is_max, p.xr, p.nreduce, values, indices);
  return {want_values ? shaped(p, values, keepdim) : values, shaped(p, indices, keepdim)};
}

std::vector<int64_t> optional_dim(std::optional<int64_t> dim) {
  return dim ? std::vector<int64_t>{*dim} : std::vector<int64_t>{};
}

Tensor run_var(const char* op, const Tensor& x, const std::vector<int64_t>& dims,
               int64_t correction, bool keepdim, bool take_sqrt) {
  check_defined(op, {{"x", x}});
  check_floating(op, {{"x", x}});
  ReducePlan p = plan(op, x, dims);
  Tensor out = Tensor::empty(p.out_shape, x.dtype(), x.device(), op);
  var_kernel(x.device())(p.xr, p.nreduce, correction, take_sqrt, out);
  return shaped(p, out, keepdim);
}

}  // namespace

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return run_reduce("sum", ReduceOp::Sum, x, dims, keepdim, sum_dtype(x.dtype()));
}

Tensor prod(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return run_reduce("prod", ReduceOp::Prod, x, dims, keepdim, sum_dtype(x.dtype()));
}

Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  check_defined("mean", {{"x", x}});
  check_floating("mean", {{"x", x}});
  return run_reduce("mean", ReduceOp::Mean, x, dims, keepdim, x.dtype());
}

Tensor var(const Tensor& x, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  return run_var("var", x, dims, correction, keepdim, false);
}

Tensor std(const Tensor& x, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  return run_var("std", x, dims, correction, keepdim, true);
}

Tensor amax(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return run_reduce("amax", ReduceOp::Amax, x, dims, keepdim, x.dtype(), false);
}

Tensor amin(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return run_reduce("amin", ReduceOp::Amin, x, dims, keepdim, x.dtype(), false);
}

ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim) {
  return run_arg_reduce("max", true, x, {dim}, keepdim, true);
}

ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim) {
  return run_arg_reduce("min", false, x, {dim}, keepdim, true);
}

Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return run_arg_reduce("argmax", true, x, optional_dim(dim), keepdim, false).indices;
}

Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return run_arg_reduce("argmin", false, x, optional_dim(dim), keepdim, false).indices;
}

Tensor logsumexp(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  check_defined("logsumexp", {{"x", x}});
  check_floating("logsumexp", {{"x", x}});
  return run_reduce("logsumexp", ReduceOp::LogSumExp, x, dims, keepdim, x.dtype());
}

Tensor all(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return run_reduce("all", ReduceOp::All, x, dims, keepdim, DType::Bool);
}

Tensor any(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return run_reduce("any", ReduceOp::Any, x, dims, keepdim, DType::Bool);
}

Tensor norm(const Tensor& x, double p, const std::vector<int64_t>& dims, bool keepdim) {
  check_defined("norm", {{"x", x}});
  check_floating("norm", {{"x", x}});
  if (std::isnan(p)) throw ValueError("norm", "p is NaN; pass a number or +-infinity");
  ReducePlan r = plan("norm", x, dims);
  if (std::isinf(p)) check_nonempty("norm", x, r, dims);  // max|x| of nothing: as amax
  Tensor out = Tensor::empty(r.out_shape, x.dtype(), x.device(), "norm");
  norm_kernel(x.device())(r.xr, r.nreduce, p, out);
  return shaped(r, out, keepdim);
}

}  // namespace ember
