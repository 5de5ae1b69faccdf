// softmax_loss.cpp — CPU kernels of the softmax and loss family. Row-wise kernels copy a row into
// a contiguous buffer in the compute type, so the arithmetic runs on unit-stride data whatever
// the input's strides; rows are spread over threads. Sums along a row accumulate in double: a
// float sum of 30000 exps would drift by 1e-5. The exps are exp_c (cpu/vector_exp.h) and the sums
// and the max `omp simd` reductions, so that the loops over a row's buffer are vectorised (a
// reduction may add in any order). Pointwise losses run on cpu_map.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels.h"
#include "ops/reduction_kernels.h"  // DimWalk
#include "ops/softmax_loss_kernels.h"

// From here on compiled for this file's instruction set; cpu/isa_begin.h says why the CPU
// backend's own headers come after it.
#include "cpu/isa_begin.h"
// The CPU backend's headers.
#include "cpu/loops.h"
#include "cpu/parallel.h"
#include "cpu/reduce_loops.h"  // reduce_run
#include "cpu/vector_exp.h"

namespace ember::cpu::EMBER_CPU_ISA {
namespace {

// A [rows..., C] tensor as rows: element k of row r is row(r)[k * stride].
template <class T> struct RowView {
  T* base;
  DimWalk rows;
  int64_t stride;
  explicit RowView(const Tensor& t)
      : base(t.data<T>()),
        rows(make_walk(t, 0, t.dim() - 1, false)),
        stride(t.stride(t.dim() - 1)) {}
  T* row(int64_t r) const { return base + rows.offset(r); }
};

// A per-sample tensor [rows...]: element r in row-major order.
template <class T> struct SampleView {
  T* base;
  DimWalk walk;
  explicit SampleView(const Tensor& t) : base(t.data<T>()), walk(make_walk(t, 0, t.dim(), false)) {}
  T& operator[](int64_t r) const { return base[walk.offset(r)]; }
};

int64_t last_size(const Tensor& t) { return t.size(t.dim() - 1); }

// The max of a row, NaNs skipped (a NaN makes its row NaN anyway, through exp(NaN - m)): 32
// lanes of `x > a ? x : a` (a max instruction) through the reduction engine's run folding.
template <class C> struct MaxSkippingNaN {
  using acc_t = C;
  C init() const { return -std::numeric_limits<C>::infinity(); }
  C step(C a, C x, int64_t) const { return x > a ? x : a; }
  C combine(C a, C b) const { return b > a ? b : a; }
};
template <class C> C row_max(const C* v, int64_t n) {
  return reduce_run<true>(v, 1, n, 0, MaxSkippingNaN<C>{});
}

// Sums of exps run in blocks of kBlock: each block's exps are written out (to the stack or to the
// output row), then summed in the lanes of reduce_run (GCC vectorises a loop of exps and a loop
// of sums, but not one loop that does both), and the block sums are added in double. The terms
// are positive, so a block's float sum (8 terms per lane, then 5 levels of lanes) is within
// 13 u = 8e-7 of its value relative to it, and so is the row's sum, however long the row: a plain
// float loop over 30000 exps would drift by 1e-5.
constexpr int64_t kBlock = 256;
template <class C> double block_sum(const C* v, int64_t n) {
  return double(reduce_run<true>(v, 1, n, 0, reducers::Sum<C>{}));
}

// The sum of exp(x[k] - m) over a row.
template <class C> double sum_exp(const C* x, int64_t n, C m) {
  C e[kBlock];
  double s = 0;
  for (int64_t k0 = 0; k0 < n; k0 += kBlock) {
    const int64_t len = std::min(kBlock, n - k0);
    for (int64_t k = 0; k < len; ++k) e[k] = exp_c(x[k0 + k] - m);
    s += block_sum(e, len);
  }
  return s;
}

// y[k] = exp(x[k] - m) over a row (y may be x); returns their sum.
template <class C> double store_exp(const C* x, int64_t n, C m, C* y) {
  double s = 0;
  for (int64_t k0 = 0; k0 < n; k0 += kBlock) {
    const int64_t len = std::min(kBlock, n - k0);
    for (int64_t k = 0; k < len; ++k) y[k0 + k] = exp_c(x[k0 + k] - m);
    s += block_sum(y + k0, len);
  }
  return s;
}

// A row in the compute type, unit stride: x's own memory when it already is one (float32 and
// float64 rows with stride 1), else a copy in buf.
template <class T, class C>
const C* row_in(const RowView<T>& x, int64_t r, int64_t n, std::vector<C>& buf) {
  const T* p = x.row(r);
  if constexpr (std::is_same_v<T, C>)
    if (x.stride == 1) return p;
  C* b = buf.data();
  for (int64_t k = 0; k < n; ++k) b[k] = C(p[k * x.stride]);
  return b;
}

// Where a row's results are computed: y's own memory when it can hold them as they are, else buf
// (then copied out by row_out).
template <class T, class C> C* row_target(const RowView<T>& y, int64_t r, std::vector<C>& buf) {
  if constexpr (std::is_same_v<T, C>)
    if (y.stride == 1) return y.row(r);
  return buf.data();
}
// The scratch row of one chunk for row_in or row_target over v: empty where v's rows already are
// the compute type at unit stride (their own memory serves), else n values.
template <class C, class T> std::vector<C> row_buffer(const RowView<T>& v, int64_t n) {
  std::vector<C> buf;
  if (!std::is_same_v<T, C> || v.stride != 1) buf.resize(size_t(n));
  return buf;
}
template <class T, class C> void row_out(const RowView<T>& y, int64_t r, int64_t n, const C* v) {
  T* out = y.row(r);
  if (static_cast<const void*>(out) == static_cast<const void*>(v)) return;
  for (int64_t k = 0; k < n; ++k) out[k * y.stride] = T(v[k]);
}

// log(sum(exp(x - m))) of a row whose max is m: log_softmax(x) = (x - m) - log_sum. Keeping the
// max out of the returned value avoids adding and then subtracting a large number.
template <class C> C log_sum_exp_shifted(const C* x, int64_t n, C m) {
  return C(std::log(sum_exp(x, n, m)));
}

// ---- softmax / log_softmax: x, y: [rows..., C] ----

template <class T> void softmax_rows(const Tensor& x, bool log, Tensor& y) {
  using C = compute_t<T>;
  const RowView<T> xv(x), yv(y);
  const int64_t n = last_size(x);
  parallel_for(xv.rows.numel, 4 * n, [&](int64_t b, int64_t e) {
    std::vector<C> in_buf = row_buffer<C>(xv, n), out_buf = row_buffer<C>(yv, n);
    for (int64_t r = b; r < e; ++r) {
      const C* in = row_in(xv, r, n, in_buf);
      C* out = row_target(yv, r, out_buf);
      const C m = row_max(in, n);
      if (log) {
        const C log_sum = log_sum_exp_shifted(in, n, m);
        for (int64_t k = 0; k < n; ++k) out[k] = (in[k] - m) - log_sum;
      } else {  // exp(x - max) / sum, one exp per element
        const C inv = C(1.0 / store_exp(in, n, m, out));
        for (int64_t k = 0; k < n; ++k) out[k] *= inv;
      }
      row_out(yv, r, n, out);
    }
  });
}

void softmax(const Tensor& x, bool log, Tensor& y) {
  dispatch_floating(x.dtype(), log ? "log_softmax" : "softmax",
                    [&](auto tag) { softmax_rows<typename decltype(tag)::type>(x, log, y); });
}

template <class T>
void softmax_backward_rows(const Tensor& grad_y, const Tensor& y, bool log, Tensor& grad_x) {
  using C = compute_t<T>;
  const RowView<T> gv(grad_y), yv(y), gxv(grad_x);
  const int64_t n = last_size(y);
  parallel_for(yv.rows.numel, 3 * n, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T *g = gv.row(r), *yr = yv.row(r);
      T* gx = gxv.row(r);
      double sum = 0;  // softmax: sum(grad_y * y); log_softmax: sum(grad_y)
      for (int64_t k = 0; k < n; ++k)
        sum += C(g[k * gv.stride]) * (log ? C(1) : C(yr[k * yv.stride]));
      const C dot = C(sum);
      for (int64_t k = 0; k < n; ++k) {
        C gk = C(g[k * gv.stride]), yk = C(yr[k * yv.stride]);
        gx[k * gxv.stride] = T(log ? gk - exp_c(yk) * dot : yk * (gk - dot));
      }
    }
  });
}

void softmax_backward(const Tensor& grad_y, const Tensor& y, bool log, Tensor& grad_x) {
  dispatch_floating(y.dtype(), log ? "log_softmax_backward" : "softmax_backward", [&](auto tag) {
    softmax_backward_rows<typename decltype(tag)::type>(grad_y, y, log, grad_x);
  });
}

// ---- targets ----

template <class C>
void target_weight_rows(const Tensor& target, const Tensor& weight, int64_t ignore_index,
                        int64_t num_classes, Tensor& sample_weight, const DeferredError& error) {
  const SampleView<int64_t> tv(target);
  const C* w = weight.defined() ? weight.data<C>() : nullptr;
  C* out = sample_weight.data<C>();
  for (int64_t r = 0; r < tv.walk.numel; ++r) {
    const int64_t t = tv[r];
    if (t == ignore_index) out[r] = C(0);
    else if (t < 0 || t >= num_classes) error.raise(t);
    else out[r] = w ? w[t] : C(1);
  }
}

void target_weight(const Tensor& target, const Tensor& weight, int64_t ignore_index,
                   int64_t num_classes, Tensor& sample_weight, const DeferredError& error) {
  dispatch_floating(sample_weight.dtype(), "cross_entropy", [&](auto tag) {
    target_weight_rows<typename decltype(tag)::type>(target, weight, ignore_index, num_classes,
                                                     sample_weight, error);
  });
}

// ---- cross entropy: logits [rows..., C], target [rows...] (validated by target_weight) ----

// The class weights (w = nullptr: all 1) and their sum, which label smoothing needs.
template <class C> struct ClassWeights {
  const C* w;
  C total;
  ClassWeights(const Tensor& weight, int64_t n) : w(weight.defined() ? weight.data<C>() : nullptr) {
    total = w ? C(0) : C(n);
    for (int64_t k = 0; w && k < n; ++k) total += w[k];
  }
  C operator[](int64_t k) const { return w ? w[k] : C(1); }
};

template <class T>
void cross_entropy_rows(const Tensor& logits, const Tensor& target, const Tensor& weight,
                        int64_t ignore_index, double label_smoothing, Tensor& loss) {
  using C = compute_t<T>;
  const RowView<T> xv(logits);
  const SampleView<int64_t> tv(target);
  const int64_t n = last_size(logits);
  const ClassWeights<C> w(weight, n);
  const C eps = C(label_smoothing);
  C* out = loss.data<C>();
  parallel_for(xv.rows.numel, 3 * n, [&](int64_t b, int64_t e) {
    std::vector<C> buf = row_buffer<C>(xv, n);
    for (int64_t r = b; r < e; ++r) {
      const int64_t t = tv[r];
      if (t == ignore_index) {
        out[r] = C(0);
        continue;
      }
      // -log_softmax(x)[k] = log_sum - (x[k] - m), m = max(x)
      const C* x = row_in(xv, r, n, buf);
      const C m = row_max(x, n), log_sum = log_sum_exp_shifted(x, n, m);
      C l = (C(1) - eps) * w[t] * (log_sum - (x[t] - m));
      if (eps != C(0)) {  // eps / C * sum_k w[k] * (log_sum - (x[k] - m))
        double dot = 0;
        for (int64_t k = 0; k < n; ++k) dot += w[k] * (x[k] - m);
        l += eps / C(n) * (w.total * log_sum - C(dot));
      }
      out[r] = l;
    }
  });
}

void cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight,
                   int64_t ignore_index, double label_smoothing, Tensor& loss) {
  dispatch_floating(logits.dtype(), "cross_entropy", [&](auto tag) {
    cross_entropy_rows<typename decltype(tag)::type>(logits, target, weight, ignore_index,
                                                     label_smoothing, loss);
  });
}

template <class T>
void cross_entropy_backward_rows(const Tensor& g, const Tensor& logits, const Tensor& target,
                                 const Tensor& weight, int64_t ignore_index, double label_smoothing,
                                 Tensor& grad_logits) {
  using C = compute_t<T>;
  const RowView<T> xv(logits), gxv(grad_logits);
  const SampleView<int64_t> tv(target);
  const SampleView<C> gv(g);
  const int64_t n = last_size(logits);
  const ClassWeights<C> w(weight, n);
  const C eps = C(label_smoothing);
  parallel_for(xv.rows.numel, 4 * n, [&](int64_t b, int64_t e) {
    std::vector<C> in_buf = row_buffer<C>(xv, n), out_buf = row_buffer<C>(gxv, n);
    for (int64_t r = b; r < e; ++r) {
      const int64_t t = tv[r];
      if (t == ignore_index) {
        T* gx = gxv.row(r);
        for (int64_t k = 0; k < n; ++k) gx[k * gxv.stride] = T(0);
        continue;
      }
      const C* x = row_in(xv, r, n, in_buf);
      C* d = row_target(gxv, r, out_buf);
      // p = softmax(x) = exp(x - m) / sum, the exps stored in d on the way, one exp per element.
      const C m = row_max(x, n), inv = C(1.0 / store_exp(x, n, m, d));
      const C scale = gv[r], hard = (C(1) - eps) * w[t], smooth = eps / C(n);
      // d[k] = scale (hard (p[k] - [k == t]) + smooth (p[k] sum(w) - w[k])), in one pass over the
      // row (a loop per case: a select inside one would not vectorise), then the [k == t] term.
      const C pt = d[t] * inv;
      if (eps == C(0)) {
        for (int64_t k = 0; k < n; ++k) d[k] = scale * (d[k] * inv * hard);
      } else {
        for (int64_t k = 0; k < n; ++k) {
          const C pk = d[k] * inv;
          d[k] = scale * (hard * pk + smooth * (pk * w.total - w[k]));
        }
      }
      d[t] =
          scale * ((eps == C(0) ? pt * hard : hard * pt + smooth * (pt * w.total - w[t])) - hard);
      row_out(gxv, r, n, d);
    }
  });
}

void cross_entropy_backward(const Tensor& g, const Tensor& logits, const Tensor& target,
                            const Tensor& weight, int64_t ignore_index, double label_smoothing,
                            Tensor& grad_logits) {
  dispatch_floating(logits.dtype(), "cross_entropy_backward", [&](auto tag) {
    cross_entropy_backward_rows<typename decltype(tag)::type>(g, logits, target, weight,
                                                              ignore_index, label_smoothing,
                                                              grad_logits);
  });
}

// ---- nll: log_probs [rows..., C], target [rows...] (validated) ----

template <class T>
void nll_rows(const Tensor& log_probs, const Tensor& target, const Tensor& weight,
              int64_t ignore_index, Tensor& loss) {
  using C = compute_t<T>;
  const RowView<T> xv(log_probs);
  const SampleView<int64_t> tv(target);
  const ClassWeights<C> w(weight, last_size(log_probs));
  C* out = loss.data<C>();
  parallel_for(xv.rows.numel, 1, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t t = tv[r];
      out[r] = t == ignore_index ? C(0) : -w[t] * C(xv.row(r)[t * xv.stride]);
    }
  });
}

void nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight,
              int64_t ignore_index, Tensor& loss) {
  dispatch_floating(log_probs.dtype(), "nll_loss", [&](auto tag) {
    nll_rows<typename decltype(tag)::type>(log_probs, target, weight, ignore_index, loss);
  });
}

template <class T>
void nll_backward_rows(const Tensor& g, const Tensor& target, const Tensor& weight,
                       int64_t ignore_index, Tensor& grad) {
  using C = compute_t<T>;
  const RowView<T> gxv(grad);
  const SampleView<int64_t> tv(target);
  const SampleView<C> gv(g);
  const int64_t n = last_size(grad);
  const ClassWeights<C> w(weight, n);
  parallel_for(gxv.rows.numel, n, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      T* gx = gxv.row(r);
      for (int64_t k = 0; k < n; ++k) gx[k * gxv.stride] = T(0);
      const int64_t t = tv[r];
      if (t != ignore_index) gx[t * gxv.stride] = T(-gv[r] * w[t]);
    }
  });
}

void nll_loss_backward(const Tensor& g, const Tensor& target, const Tensor& weight,
                       int64_t ignore_index, Tensor& grad) {
  dispatch_floating(grad.dtype(), "nll_loss_backward", [&](auto tag) {
    nll_backward_rows<typename decltype(tag)::type>(g, target, weight, ignore_index, grad);
  });
}

// ---- pointwise losses: every operand of x's shape and dtype ----

template <class T>
void pointwise_typed(PointwiseLoss kind, const Tensor& x, const Tensor& y, const Tensor& pw,
                     Tensor& loss) {
  using C = compute_t<T>;
  losses::visit<C>(kind, [&](auto f) {
    if (pw.defined())
      cpu_map<T, T, T, T>(loss, {x, y, pw},
                          [f](T a, T b, T w) { return T(f.value(C(a), C(b), C(w))); });
    else cpu_map<T, T, T>(loss, {x, y}, [f](T a, T b) { return T(f.value(C(a), C(b), C(1))); });
  });
}

void pointwise_loss(PointwiseLoss kind, const Tensor& x, const Tensor& y, const Tensor& pw,
                    Tensor& loss) {
  dispatch_floating(x.dtype(), "loss", [&](auto tag) {
    pointwise_typed<typename decltype(tag)::type>(kind, x, y, pw, loss);
  });
}

template <class T>
void pointwise_backward_typed(PointwiseLoss kind, const Tensor& g, double scale, const Tensor& x,
                              const Tensor& y, const Tensor& pw, Tensor& grad_x) {
  using C = compute_t<T>;
  const C s = C(scale);
  losses::visit<C>(kind, [&](auto f) {
    if (pw.defined())
      cpu_map<T, T, T, T, T>(grad_x, {g, x, y, pw}, [f, s](T gi, T a, T b, T w) {
        return T(s * C(gi) * f.grad(C(a), C(b), C(w)));
      });
    else
      cpu_map<T, T, T, T>(grad_x, {g, x, y}, [f, s](T gi, T a, T b) {
        return T(s * C(gi) * f.grad(C(a), C(b), C(1)));
      });
  });
}

void pointwise_loss_backward(PointwiseLoss kind, const Tensor& g, double scale, const Tensor& x,
                             const Tensor& y, const Tensor& pw, Tensor& grad_x) {
  dispatch_floating(x.dtype(), "loss_backward", [&](auto tag) {
    pointwise_backward_typed<typename decltype(tag)::type>(kind, g, scale, x, y, pw, grad_x);
  });
}

}  // namespace

void register_softmax_loss(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/softmax_loss.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cpu::EMBER_CPU_ISA

#include "cpu/isa_end.h"
