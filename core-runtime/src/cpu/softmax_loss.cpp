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

// Copies row r of x into buf (compute type) and returns its max.
template <class T, class C> C load_row(const RowView<T>& x, int64_t r, std::vector<C>& buf) {
  const T* p = x.row(r);
  const int64_t n = int64_t(buf.size());
  C* b = buf.data();
  for (int64_t k = 0; k < n; ++k) b[k] = C(p[k * x.stride]);
  C m = -std::numeric_limits<C>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t k = 0; k < n; ++k) m = b[k] > m ? b[k] : m;
  return m;
}

// The sum of v's values in double.
template <class C> double sum(const C* v, int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t k = 0; k < n; ++k) s += double(v[k]);
  return s;
}

// The sum of exp(v[k]) in double. The exps of each block of 64 go to the stack first: GCC
// vectorises a loop of exps and a loop of double sums, but not one loop that does both.
template <class C> double sum_exp(const C* v, int64_t n) {
  constexpr int64_t kBlock = 64;
  C e[kBlock];
  double s = 0;
  for (int64_t k0 = 0; k0 < n; k0 += kBlock) {
    const int64_t len = std::min(kBlock, n - k0);
    for (int64_t k = 0; k < len; ++k) e[k] = exp_c(v[k0 + k]);
    s += sum(e, len);
  }
  return s;
}

// Copies row r of x into buf as x - max(x) and returns log(sum(exp(buf))), so that
// log_softmax(x) = buf - log_sum. Keeping the max out of the returned value avoids adding and
// then subtracting a large number.
template <class T, class C>
C load_row_shifted(const RowView<T>& x, int64_t r, std::vector<C>& buf) {
  const C m = load_row(x, r, buf);
  const int64_t n = int64_t(buf.size());
  C* b = buf.data();
  for (int64_t k = 0; k < n; ++k) b[k] -= m;
  return C(std::log(sum_exp(b, n)));
}

// ---- softmax / log_softmax: x, y: [rows..., C] ----

template <class T> void softmax_rows(const Tensor& x, bool log, Tensor& y) {
  using C = compute_t<T>;
  const RowView<T> xv(x), yv(y);
  const int64_t n = last_size(x);
  parallel_for(xv.rows.numel, 4 * n, [&](int64_t b, int64_t e) {
    std::vector<C> buf(static_cast<size_t>(n));
    for (int64_t r = b; r < e; ++r) {
      T* out = yv.row(r);
      if (log) {
        const C log_sum = load_row_shifted(xv, r, buf);
        for (int64_t k = 0; k < n; ++k) out[k * yv.stride] = T(buf[size_t(k)] - log_sum);
        continue;
      }
      const C m = load_row(xv, r, buf);  // softmax: exp(x - max) / sum, one exp per element
      C* v = buf.data();
      for (int64_t k = 0; k < n; ++k) v[k] = exp_c(v[k] - m);
      const C inv = C(1.0 / sum(v, n));
      for (int64_t k = 0; k < n; ++k) out[k * yv.stride] = T(v[k] * inv);
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
    std::vector<C> buf(static_cast<size_t>(n));
    for (int64_t r = b; r < e; ++r) {
      const int64_t t = tv[r];
      if (t == ignore_index) {
        out[r] = C(0);
        continue;
      }
      // -log_softmax(x)[k] = log_sum - buf[k], buf = x - max(x)
      const C log_sum = load_row_shifted(xv, r, buf);
      C l = (C(1) - eps) * w[t] * (log_sum - buf[size_t(t)]);
      if (eps != C(0)) {  // eps / C * sum_k w[k] * (log_sum - buf[k])
        double dot = 0;
        for (int64_t k = 0; k < n; ++k) dot += w[k] * buf[size_t(k)];
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
    std::vector<C> buf(static_cast<size_t>(n));
    for (int64_t r = b; r < e; ++r) {
      T* gx = gxv.row(r);
      const int64_t t = tv[r];
      if (t == ignore_index) {
        for (int64_t k = 0; k < n; ++k) gx[k * gxv.stride] = T(0);
        continue;
      }
      const C log_sum = load_row_shifted(xv, r, buf);
      // d[k] = hard (p[k] - [k == t]) + smooth (p[k] sum(w) - w[k]), built in buf in unit-stride
      // loops (which vectorise), then scaled into the strided gradient row.
      const C scale = gv[r], hard = (C(1) - eps) * w[t], smooth = eps / C(n);
      C* d = buf.data();
      for (int64_t k = 0; k < n; ++k) d[k] = exp_c(d[k] - log_sum);  // p[k]
      if (eps == C(0)) {
        for (int64_t k = 0; k < n; ++k) d[k] *= hard;
      } else {
        for (int64_t k = 0; k < n; ++k) d[k] = hard * d[k] + smooth * (d[k] * w.total - w[k]);
      }
      d[t] -= hard;
      for (int64_t k = 0; k < n; ++k) gx[k * gxv.stride] = T(scale * d[k]);
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
  table.softmax_kernel = &softmax;
  table.softmax_backward_kernel = &softmax_backward;
  table.target_weight_kernel = &target_weight;
  table.cross_entropy_kernel = &cross_entropy;
  table.cross_entropy_backward_kernel = &cross_entropy_backward;
  table.nll_loss_kernel = &nll_loss;
  table.nll_loss_backward_kernel = &nll_loss_backward;
  table.pointwise_loss_kernel = &pointwise_loss;
  table.pointwise_loss_backward_kernel = &pointwise_loss_backward;
}

}  // namespace ember::cpu::EMBER_CPU_ISA

#include "cpu/isa_end.h"
