// scan_sort.cpp — front functions of cumsum/cumprod and sort/argsort/topk: check the operands,
// work out the result's shape and dtype, view every tensor as rows [M, L] along dim and call the
// device's kernel.
#include "ember/ops/scan_sort.h"

#include <optional>
#include <string>
#include <vector>

#include "kernels.h"
#include "ops/checks.h"
#include "ops/scan_sort_kernels.h"

namespace ember {
namespace {

// t with dim moved last (the other dims keep their order).
Tensor dim_last(const Tensor& t, int64_t dim) {
  if (t.dim() == 0) return t;
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (d != dim) perm.push_back(d);
  perm.push_back(dim);
  return t.permute(perm);
}

// t as [M, L], L = t.size(dim) and M the product of the other dims, when those dims merge into
// one row stride (always for a contiguous t, a transpose, a slice with a step, an expand);
// nullopt when they do not (a permuted 3-D view, say). A 0-d t is [1, 1].
std::optional<Tensor> try_rows(const Tensor& t, int64_t dim) {
  if (t.dim() == 0) return t.as_strided({1, 1}, {1, 1}, t.offset());
  int64_t m = 1, row_stride = 0;
  bool inner_seen = false;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {  // innermost first
    if (d == dim || t.size(d) == 1) continue;
    if (inner_seen && t.stride(d) != row_stride * m) return std::nullopt;
    if (!inner_seen) row_stride = t.stride(d);
    inner_seen = true;
    m *= t.size(d);
  }
  return t.as_strided({m, t.size(dim)}, {row_stride, t.stride(dim)}, t.offset());
}

// An input as rows; one whose dims do not merge is first copied dense.
Tensor input_rows(const Tensor& x, int64_t dim) {
  if (auto r = try_rows(x, dim)) return *r;
  Tensor dense = dim_last(x, dim).contiguous();
  return *try_rows(dense, dense.dim() - 1);
}

// An output as rows. The kernels write through two strides only, so an out whose dims do not
// merge gets a dense temporary (`dense`, out's shape with dim last) that finish() copies into it.
struct OutRows {
  Tensor out;
  int64_t dim;
  Tensor rows;
  Tensor dense;
};

OutRows output_rows(const char* op, const Tensor& out, int64_t dim) {
  if (!out.defined()) return {out, dim, out, Tensor()};
  if (auto r = try_rows(out, dim)) return {out, dim, *r, Tensor()};
  Tensor dense = Tensor::empty(dim_last(out, dim).shape(), out.dtype(), out.device(), op);
  return {out, dim, *try_rows(dense, dense.dim() - 1), dense};
}

void finish(const OutRows& o) {
  if (o.dense.defined()) dim_last(o.out, o.dim).copy_(o.dense);
  if (o.out.defined()) o.out.bump_version();
}

int64_t checked_dim(const char* op, const Tensor& x, int64_t dim) {
  check_defined(op, {{"x", x}});
  return wrap_dim_or_scalar(dim, x.dim(), op, "x is " + describe(x));
}

// ---- cumsum, cumprod ----

DType scan_dtype(const char* op, const Tensor& x, std::optional<DType> dtype) {
  if (!dtype) return is_floating(x.dtype()) ? x.dtype() : DType::Int64;
  if (*dtype == DType::Bool)
    throw DTypeError(op, operands({{"x", x}}) +
                             "; dtype bool is not supported for a running sum or product; pass "
                             "an integer or floating dtype, e.g. DType::Int64");
  return *dtype;
}

void check_scan_out(const char* op, const Tensor& out, const Tensor& x, DType dtype) {
  check_out(op, out, x.shape(), dtype, x.device());
  check_out_alias(op, out, {{"x", x}}, true);
}

// The one code path of a scan and its _out form: out has x's shape and the result dtype.
void run_scan(const char* op, ScanOp kind, const Tensor& out, const Tensor& x, int64_t dim) {
  if (x.numel() == 0) return;
  // The kernels read and write one dtype; x of another is cast first, as in PyTorch.
  Tensor src = x.dtype() == out.dtype() ? x : x.to(out.dtype());
  OutRows o = output_rows(op, out, dim);
  scan_kernel(x.device())(kind, input_rows(src, dim), o.rows);
  finish(o);
}

Tensor scan_op(const char* op, ScanOp kind, const Tensor& x, int64_t dim,
               std::optional<DType> dtype) {
  const int64_t d = checked_dim(op, x, dim);
  Tensor out = Tensor::empty(x.shape(), scan_dtype(op, x, dtype), x.device(), op);
  run_scan(op, kind, out, x, d);
  return out;
}

const Tensor& scan_op_out(const char* op, ScanOp kind, const Tensor& out, const Tensor& x,
                          int64_t dim, std::optional<DType> dtype) {
  const int64_t d = checked_dim(op, x, dim);
  check_scan_out(op, out, x, scan_dtype(op, x, dtype));
  run_scan(op, kind, out, x, d);
  return out;
}

// ---- sort, argsort, topk ----

// x's shape with dim resized to n (a 0-d x keeps its shape).
Shape with_size(const Tensor& x, int64_t dim, int64_t n) {
  Shape s = x.shape();
  if (!s.empty()) s[size_t(dim)] = n;
  return s;
}

// has_values: false for argsort, which has no values output.
void check_sort_outs(const char* op, const Tensor& values, const Tensor& indices, const Tensor& x,
                     const Shape& shape, bool has_values = true) {
  if (has_values) {
    check_out(op, values, shape, x.dtype(), x.device());
    check_out_alias(op, values, {{"x", x}}, false);
  }
  check_out(op, indices, shape, DType::Int64, x.device());
  check_out_alias(op, indices, {{"x", x}, {"values", values}}, false);
}

// The one code path of sort and argsort: values may be undefined (argsort).
void run_sort(const char* op, const Tensor& values, const Tensor& indices, const Tensor& x,
              int64_t dim, bool descending) {
  if (x.numel() == 0) return;
  OutRows v = output_rows(op, values, dim), i = output_rows(op, indices, dim);
  sort_kernel(x.device())(input_rows(x, dim), descending, v.rows, i.rows);
  finish(v);
  finish(i);
}

void check_k(const char* op, const Tensor& x, int64_t dim, int64_t k) {
  const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
  if (k < 0 || k > n)
    throw ValueError(op, operands({{"x", x}}) + "; k is " + std::to_string(k) + " but dim " +
                             std::to_string(dim) + " has size " + std::to_string(n) +
                             "; expected 0 <= k <= " + std::to_string(n));
}

void run_topk(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t k, int64_t dim,
              bool largest) {
  if (values.numel() == 0) return;
  if (x.dim() == 0) k = 1;  // PyTorch's 0-d topk returns x for k = 0 too
  OutRows v = output_rows("topk", values, dim), i = output_rows("topk", indices, dim);
  topk_kernel(x.device())(input_rows(x, dim), k, largest, v.rows, i.rows);
  finish(v);
  finish(i);
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return scan_op("cumsum", ScanOp::Sum, x, dim, dtype);
}

Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return scan_op("cumprod", ScanOp::Prod, x, dim, dtype);
}

const Tensor& cumsum_out(const Tensor& out, const Tensor& x, int64_t dim,
                         std::optional<DType> dtype) {
  return scan_op_out("cumsum", ScanOp::Sum, out, x, dim, dtype);
}

const Tensor& cumprod_out(const Tensor& out, const Tensor& x, int64_t dim,
                          std::optional<DType> dtype) {
  return scan_op_out("cumprod", ScanOp::Prod, out, x, dim, dtype);
}

ValuesIndices sort(const Tensor& x, int64_t dim, bool descending, bool /*stable: always*/) {
  const int64_t d = checked_dim("sort", x, dim);
  Tensor values = Tensor::empty(x.shape(), x.dtype(), x.device(), "sort");
  Tensor indices = Tensor::empty(x.shape(), DType::Int64, x.device(), "sort");
  run_sort("sort", values, indices, x, d, descending);
  return {values, indices};
}

ValuesIndices sort_out(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t dim,
                       bool descending, bool /*stable: always*/) {
  const int64_t d = checked_dim("sort", x, dim);
  check_sort_outs("sort", values, indices, x, x.shape());
  run_sort("sort", values, indices, x, d, descending);
  return {values, indices};
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool /*stable: always*/) {
  const int64_t d = checked_dim("argsort", x, dim);
  Tensor indices = Tensor::empty(x.shape(), DType::Int64, x.device(), "argsort");
  run_sort("argsort", Tensor(), indices, x, d, descending);
  return indices;
}

const Tensor& argsort_out(const Tensor& indices, const Tensor& x, int64_t dim, bool descending,
                          bool /*stable: always*/) {
  const int64_t d = checked_dim("argsort", x, dim);
  check_sort_outs("argsort", Tensor(), indices, x, x.shape(), false);
  run_sort("argsort", Tensor(), indices, x, d, descending);
  return indices;
}

ValuesIndices topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool /*sorted: always*/) {
  const int64_t d = checked_dim("topk", x, dim);
  check_k("topk", x, d, k);
  const Shape shape = with_size(x, d, k);
  Tensor values = Tensor::empty(shape, x.dtype(), x.device(), "topk");
  Tensor indices = Tensor::empty(shape, DType::Int64, x.device(), "topk");
  run_topk(values, indices, x, k, d, largest);
  return {values, indices};
}

ValuesIndices topk_out(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t k,
                       int64_t dim, bool largest, bool /*sorted: always*/) {
  const int64_t d = checked_dim("topk", x, dim);
  check_k("topk", x, d, k);
  check_sort_outs("topk", values, indices, x, with_size(x, d, k));
  run_topk(values, indices, x, k, d, largest);
  return {values, indices};
}

}  // namespace ember
