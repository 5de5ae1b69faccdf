// normalization.cpp — CPU kernels of batch norm, layer norm and dropout (layouts in
// ops/normalization_kernels.h). Batch norm is parallel over channels (or (n, c) runs for the
// elementwise parts), layer norm over rows. Arithmetic is in compute_t<T> (float for half types).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels.h"
#include "ops/normalization_kernels.h"

// From here on compiled for this file's instruction set; cpu/isa_begin.h says why the CPU
// backend's own headers come after it.
#include "cpu/isa_begin.h"
// The CPU backend's headers.
#include "cpu/loops.h"
#include "cpu/parallel.h"

namespace ember::cpu::EMBER_CPU_ISA {
namespace {

constexpr int64_t kChunk = 512;  // values per two-pass statistics chunk: they stay in L1
constexpr int kLanes = 16;       // independent partial sums, so the compiler can vectorise a sum

// sum of f(i) for i in [0, n), with kLanes partial sums (a single running sum is a dependency
// chain the compiler may not reorder).
template <class Acc, class F> Acc lane_sum(int64_t n, F&& f) {
  Acc lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) lane[k] += f(i + k);
  Acc s = 0;
  for (; i < n; ++i) s += f(i);
  for (int k = 0; k < kLanes; ++k) s += lane[k];
  return s;
}

// Adds p[0, n) to s: per chunk, a sum then the squared deviations from the chunk's mean (two
// passes over L1, exact enough and vectorisable); chunks merge with Chan's combine. The data is
// read from memory once, like a one-pass Welford, without Welford's per-element division.
template <class Acc, class T> void accumulate(MeanM2<Acc>& s, const T* p, int64_t n) {
  for (int64_t b = 0; b < n; b += kChunk) {
    const T* q = p + b;
    const int64_t len = std::min(kChunk, n - b);
    const Acc mean = lane_sum<Acc>(len, [&](int64_t i) { return Acc(q[i]); }) / Acc(len);
    const Acc m2 = lane_sum<Acc>(len, [&](int64_t i) {
      Acc d = Acc(q[i]) - mean;
      return d * d;
    });
    s.combine({Acc(len), mean, m2});
  }
}

// Element c of an optional 1-D parameter, or `fallback` when it is absent.
template <class Acc, class T> Acc param(const T* p, int64_t c, Acc fallback) {
  return p ? Acc(p[c]) : fallback;
}

template <class T> const T* data_or_null(const Tensor& t) {
  return t.defined() ? t.data<T>() : nullptr;
}

// ---- batch norm: x [N, C, S] ----

void batch_norm_stats(const Tensor& x, double eps, Tensor& save_mean, Tensor& save_invstd,
                      Tensor& batch_var) {
  dispatch_floating(x.dtype(), "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = compute_t<T>;
    const int64_t n = x.size(0), c = x.size(1), s = x.size(2);
    const T* px = x.data<T>();
    Acc* mean = save_mean.data<Acc>();
    Acc* invstd = save_invstd.data<Acc>();
    Acc* var = batch_var.data<Acc>();
    parallel_for(c, n * s, [&](int64_t c0, int64_t c1) {
      for (int64_t ch = c0; ch < c1; ++ch) {
        MeanM2<Acc> st;
        for (int64_t i = 0; i < n; ++i) accumulate(st, px + (i * c + ch) * s, s);
        mean[ch] = st.mean;
        var[ch] = st.m2 / st.n;
        invstd[ch] = Acc(1) / std::sqrt(var[ch] + Acc(eps));
      }
    });
  });
}

void batch_norm_update_stats(const Tensor& batch_mean, const Tensor& batch_var, double momentum,
                             double unbias, const Tensor& running_mean, const Tensor& running_var) {
  dispatch_floating(running_mean.dtype(), "batch_norm_update_stats", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = compute_t<T>;
    const Acc* mean = batch_mean.data<Acc>();
    const Acc* var = batch_var.data<Acc>();
    T* rmean = running_mean.data<T>();
    T* rvar = running_var.data<T>();
    const Acc keep = Acc(1 - momentum), take = Acc(momentum);
    for (int64_t ch = 0; ch < running_mean.size(0); ++ch) {
      T& rm = rmean[ch * running_mean.stride(0)];
      T& rv = rvar[ch * running_var.stride(0)];
      rm = T(keep * Acc(rm) + take * mean[ch]);
      rv = T(keep * Acc(rv) + take * var[ch] * Acc(unbias));
    }
  });
}

void batch_norm_eval_stats(const Tensor& running_mean, const Tensor& running_var, double eps,
                           Tensor& save_mean, Tensor& save_invstd) {
  dispatch_floating(running_mean.dtype(), "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = compute_t<T>;
    const T* rm = running_mean.data<T>();
    const T* rv = running_var.data<T>();
    Acc* mean = save_mean.data<Acc>();
    Acc* invstd = save_invstd.data<Acc>();
    for (int64_t ch = 0; ch < running_mean.size(0); ++ch) {
      mean[ch] = Acc(rm[ch * running_mean.stride(0)]);
      invstd[ch] = Acc(1) / std::sqrt(Acc(rv[ch * running_var.stride(0)]) + Acc(eps));
    }
  });
}

void batch_norm_apply(const Tensor& x, const Tensor& save_mean, const Tensor& save_invstd,
                      const Tensor& weight, const Tensor& bias, Tensor& y) {
  dispatch_floating(x.dtype(), "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = compute_t<T>;
    const int64_t n = x.size(0), c = x.size(1), s = x.size(2);
    const Acc* mean = save_mean.data<Acc>();
    const Acc* invstd = save_invstd.data<Acc>();
    const T* w = data_or_null<T>(weight);
    const T* b = data_or_null<T>(bias);
    // y = x * scale + shift with scale = invstd * w, shift = b - mean * scale.
    const size_t channels = size_t(c);
    std::vector<Acc> scale(channels), shift(channels);
    for (int64_t ch = 0; ch < c; ++ch) {
      scale[size_t(ch)] = invstd[ch] * param(w, ch, Acc(1));
      shift[size_t(ch)] = param(b, ch, Acc(0)) - mean[ch] * scale[size_t(ch)];
    }
    const T* px = x.data<T>();
    T* py = y.data<T>();
    parallel_for(n * c, s, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {  // r = i * C + ch: one run of S values
        const Acc a = scale[size_t(r % c)], d = shift[size_t(r % c)];
        const T* xr = px + r * s;
        T* yr = py + r * s;
        for (int64_t j = 0; j < s; ++j) yr[j] = T(Acc(xr[j]) * a + d);
      }
    });
  });
}

void batch_norm_backward_reduce(const Tensor& dy, const Tensor& x, const Tensor& save_mean,
                                const Tensor& save_invstd, Tensor& sum_dy, Tensor& sum_dy_xhat) {
  dispatch_floating(x.dtype(), "batch_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = compute_t<T>;
    const int64_t n = x.size(0), c = x.size(1), s = x.size(2);
    const T* px = x.data<T>();
    const T* pdy = dy.data<T>();
    const Acc* mean = save_mean.data<Acc>();
    const Acc* invstd = save_invstd.data<Acc>();
    Acc* out_dy = sum_dy.data<Acc>();
    Acc* out_dy_xhat = sum_dy_xhat.data<Acc>();
    parallel_for(c, 2 * n * s, [&](int64_t c0, int64_t c1) {
      for (int64_t ch = c0; ch < c1; ++ch) {
        const Acc mu = mean[ch];
        double total_dy = 0, total_dy_xmu = 0;  // totals over N runs accumulate in double
        for (int64_t i = 0; i < n; ++i) {
          const T* xr = px + (i * c + ch) * s;
          const T* dr = pdy + (i * c + ch) * s;
          total_dy += lane_sum<Acc>(s, [&](int64_t j) { return Acc(dr[j]); });
          total_dy_xmu +=
              lane_sum<Acc>(s, [&](int64_t j) { return Acc(dr[j]) * (Acc(xr[j]) - mu); });
        }
        out_dy[ch] = Acc(total_dy);
        out_dy_xhat[ch] = Acc(total_dy_xmu * double(invstd[ch]));
      }
    });
  });
}

void batch_norm_backward_input(const Tensor& dy, const Tensor& x, const Tensor& save_mean,
                               const Tensor& save_invstd, const Tensor& weight,
                               const Tensor& sum_dy, const Tensor& sum_dy_xhat, bool training,
                               Tensor& dx) {
  dispatch_floating(x.dtype(), "batch_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = compute_t<T>;
    const int64_t n = x.size(0), c = x.size(1), s = x.size(2);
    const Acc m = Acc(n * s);
    const Acc* mean = save_mean.data<Acc>();
    const Acc* invstd = save_invstd.data<Acc>();
    const Acc* sdy = sum_dy.data<Acc>();
    const Acc* sdy_xhat = sum_dy_xhat.data<Acc>();
    const T* w = data_or_null<T>(weight);
    // dx = a * dy - b - g * (x - mean), per channel:
    //   a = w * invstd, b = a * sum_dy / M, g = a * invstd * sum_dy_xhat / M (b = g = 0 in eval).
    const size_t channels = size_t(c);
    std::vector<Acc> a(channels), b(channels), g(channels);
    for (int64_t ch = 0; ch < c; ++ch) {
      a[size_t(ch)] = param(w, ch, Acc(1)) * invstd[ch];
      b[size_t(ch)] = training ? a[size_t(ch)] * sdy[ch] / m : Acc(0);
      g[size_t(ch)] = training ? a[size_t(ch)] * invstd[ch] * sdy_xhat[ch] / m : Acc(0);
    }
    const T* px = x.data<T>();
    const T* pdy = dy.data<T>();
    T* pdx = dx.data<T>();
    parallel_for(n * c, s, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const size_t ch = size_t(r % c);
        const Acc ac = a[ch], bc = b[ch], gc = g[ch], mu = mean[ch];
        const T* xr = px + r * s;
        const T* dr = pdy + r * s;
        T* out = pdx + r * s;
        for (int64_t j = 0; j < s; ++j) out[j] = T(ac * Acc(dr[j]) - bc - gc * (Acc(xr[j]) - mu));
      }
    });
  });
}

// ---- layer norm: x [M, D] ----

// Calls fn(w_j, b_j) -> the loop over one row, with w_j(j) and b_j(j) reading the optional
// weight and bias (1 and 0 when absent). Each of the four combinations gets its own loop: a
// null test per element would keep the compiler from vectorising it.
template <class Acc, class T, class Fn> void with_params(const T* w, const T* b, Fn&& fn) {
  auto weight = [w](int64_t j) { return Acc(w[j]); };
  auto bias = [b](int64_t j) { return Acc(b[j]); };
  auto one = [](int64_t) { return Acc(1); };
  auto zero = [](int64_t) { return Acc(0); };
  if (w && b) fn(weight, bias);
  else if (w) fn(weight, zero);
  else if (b) fn(one, bias);
  else fn(one, zero);
}

void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& y,
                Tensor& mean, Tensor& rstd) {
  dispatch_floating(x.dtype(), "layer_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = compute_t<T>;
    const int64_t m = x.size(0), d = x.size(1);
    const T* px = x.data<T>();
    const T* w = data_or_null<T>(weight);
    const T* b = data_or_null<T>(bias);
    T* py = y.data<T>();
    Acc* pmean = mean.data<Acc>();
    Acc* prstd = rstd.data<Acc>();
    with_params<Acc>(w, b, [&](auto w_j, auto b_j) {
      parallel_for(m, d, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          const T* xr = px + i * d;
          T* yr = py + i * d;
          MeanM2<Acc> st;
          accumulate(st, xr, d);
          const Acc mu = st.mean, r = Acc(1) / std::sqrt(st.m2 / st.n + Acc(eps));
          pmean[i] = mu;
          prstd[i] = r;
          for (int64_t j = 0; j < d; ++j) yr[j] = T((Acc(xr[j]) - mu) * r * w_j(j) + b_j(j));
        }
      });
    });
  });
}

// Both sums of the layer-norm gradient over one row, in one pass with kLanes partial sums each:
// sum_g = sum of g(j), sum_gx = sum of g(j) * xhat(j).
template <class Acc, class G, class X>
void row_grad_sums(int64_t d, G&& g, X&& xhat, Acc& sum_g, Acc& sum_gx) {
  Acc lane_g[kLanes] = {}, lane_gx[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= d; j += kLanes)
    for (int k = 0; k < kLanes; ++k) {
      const Acc gj = g(j + k);
      lane_g[k] += gj;
      lane_gx[k] += gj * xhat(j + k);
    }
  sum_g = 0;
  sum_gx = 0;
  for (; j < d; ++j) {
    sum_g += g(j);
    sum_gx += g(j) * xhat(j);
  }
  for (int k = 0; k < kLanes; ++k) {
    sum_g += lane_g[k];
    sum_gx += lane_gx[k];
  }
}

void layer_norm_backward_input(const Tensor& dy, const Tensor& x, const Tensor& mean,
                               const Tensor& rstd, const Tensor& weight, Tensor& dx) {
  dispatch_floating(x.dtype(), "layer_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = compute_t<T>;
    const int64_t m = x.size(0), d = x.size(1);
    const T* px = x.data<T>();
    const T* pdy = dy.data<T>();
    const T* w = data_or_null<T>(weight);
    const Acc* pmean = mean.data<Acc>();
    const Acc* prstd = rstd.data<Acc>();
    T* pdx = dx.data<T>();
    with_params<Acc>(w, static_cast<const T*>(nullptr), [&](auto w_j, auto) {
      parallel_for(m, 3 * d, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          const T* xr = px + i * d;
          const T* dr = pdy + i * d;
          T* out = pdx + i * d;
          const Acc mu = pmean[i], r = prstd[i];
          auto g = [&](int64_t j) { return Acc(dr[j]) * w_j(j); };
          auto xhat = [&](int64_t j) { return (Acc(xr[j]) - mu) * r; };
          Acc sum_g, sum_gx;
          row_grad_sums(d, g, xhat, sum_g, sum_gx);
          const Acc mean_g = sum_g / Acc(d), mean_g_xhat = sum_gx / Acc(d);
          for (int64_t j = 0; j < d; ++j) out[j] = T(r * (g(j) - mean_g - xhat(j) * mean_g_xhat));
        }
      });
    });
  });
}

void layer_norm_backward_params(const Tensor& dy, const Tensor& x, const Tensor& mean,
                                const Tensor& rstd, Tensor& grad_weight, Tensor& grad_bias) {
  dispatch_floating(x.dtype(), "layer_norm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = compute_t<T>;
    const int64_t m = x.size(0), d = x.size(1);
    const T* px = x.data<T>();
    const T* pdy = dy.data<T>();
    const Acc* pmean = mean.data<Acc>();
    const Acc* prstd = rstd.data<Acc>();
    // Column sums: rows split into a fixed number of groups (independent of the thread count, so
    // results are reproducible), each summed into its own row of partials, then the groups added
    // in order.
    const int64_t groups = std::min<int64_t>(m, 32);
    std::vector<Acc> part_w(size_t(groups * d), Acc(0)), part_b(size_t(groups * d), Acc(0));
    parallel_for(groups, (m / std::max<int64_t>(groups, 1) + 1) * d, [&](int64_t g0, int64_t g1) {
      for (int64_t g = g0; g < g1; ++g) {
        Acc* pw = part_w.data() + g * d;
        Acc* pb = part_b.data() + g * d;
        for (int64_t i = m * g / groups; i < m * (g + 1) / groups; ++i) {
          const T* xr = px + i * d;
          const T* dr = pdy + i * d;
          const Acc mu = pmean[i], r = prstd[i];
          for (int64_t j = 0; j < d; ++j) {
            pw[j] += Acc(dr[j]) * (Acc(xr[j]) - mu) * r;
            pb[j] += Acc(dr[j]);
          }
        }
      }
    });
    T* gw = grad_weight.data<T>();
    T* gb = grad_bias.data<T>();
    for (int64_t j = 0; j < d; ++j) {
      Acc sw = 0, sb = 0;
      for (int64_t g = 0; g < groups; ++g) {
        sw += part_w[size_t(g * d + j)];
        sb += part_b[size_t(g * d + j)];
      }
      gw[j] = T(sw);
      gb[j] = T(sb);
    }
  });
}

// ---- dropout ----

void dropout_apply(const Tensor& x, const Tensor& mask, double scale, Tensor& out) {
  dispatch_floating(x.dtype(), "dropout", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc = compute_t<T>;
    const Acc s = Acc(scale);
    cpu_map<T, T, bool>(out, {x, mask},
                        [s](T v, bool keep) { return keep ? T(Acc(v) * s) : T(0); });
  });
}

}  // namespace

void register_normalization(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/normalization.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cpu::EMBER_CPU_ISA

#include "cpu/isa_end.h"
