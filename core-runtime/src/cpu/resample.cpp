// resample.cpp — CPU kernels of the resample family (contracts in ops/resample_kernels.h).
// Both walk one (n, c) plane per task. The backward accumulates each plane into a buffer of the
// compute type (float32, or float64 for float64) before storing it, so float16 gradients are
// summed in float32 and the result does not depend on the thread count.
#include <vector>

#include "convert.h"
#include "cpu/isa.h"
#include "cpu/parallel.h"
#include "kernels.h"
#include "ops/resample_kernels.h"

namespace ember::cpu::EMBER_CPU_ISA {
namespace {

// Element strides of a 4-d tensor, and the offset of plane p = n * C + c.
struct Strides4 {
  int64_t n, c, h, w, channels;
  explicit Strides4(const Tensor& t)
      : n(t.stride(0)), c(t.stride(1)), h(t.stride(2)), w(t.stride(3)), channels(t.size(1)) {}
  int64_t plane(int64_t p) const { return (p / channels) * n + (p % channels) * c; }
};

// The per-axis taps of every output position, computed once per call.
template <class Acc>
std::vector<LinearTaps<Acc>> axis_taps(const ResampleAxis& a, const Resample& r) {
  std::vector<LinearTaps<Acc>> taps(size_t(a.out));
  const Acc step = source_step<Acc>(a, r.align_corners);
  for (int64_t o = 0; o < a.out; ++o)
    taps[size_t(o)] = r.mode == ResampleMode::Nearest
                          ? LinearTaps<Acc>{nearest_source(o, a), nearest_source(o, a), Acc(0)}
                          : linear_source<Acc>(o, step, a.in, r.align_corners);
  return taps;
}

// x: [N, C, H, W] -> out: [N, C, H_out, W_out].
template <class T> void interpolate_typed(const Tensor& x, const Resample& r, const Tensor& out) {
  using Acc = compute_t<T>;
  const std::vector<LinearTaps<Acc>> th = axis_taps<Acc>(r.h, r), tw = axis_taps<Acc>(r.w, r);
  const Strides4 xs(x), os(out);
  const T* px = x.data<T>();
  T* po = out.data<T>();
  const int64_t planes = x.size(0) * x.size(1), plane_size = r.h.out * r.w.out;
  parallel_for(planes, plane_size, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const T* xp = px + xs.plane(p);
      T* op = po + os.plane(p);
      for (int64_t oh = 0; oh < r.h.out; ++oh) {
        const LinearTaps<Acc>& h = th[size_t(oh)];
        for (int64_t ow = 0; ow < r.w.out; ++ow) {
          const LinearTaps<Acc>& w = tw[size_t(ow)];
          auto at = [&](int64_t i, int64_t j) { return Acc(xp[i * xs.h + j * xs.w]); };
          Acc v;
          if (r.mode == ResampleMode::Nearest) {
            v = at(h.i0, w.i0);
          } else {  // PyTorch's order of operations
            const Acc h0 = Acc(1) - h.w1, w0 = Acc(1) - w.w1;
            v = h0 * (w0 * at(h.i0, w.i0) + w.w1 * at(h.i0, w.i1)) +
                h.w1 * (w0 * at(h.i1, w.i0) + w.w1 * at(h.i1, w.i1));
          }
          op[oh * os.h + ow * os.w] = T(v);
        }
      }
    }
  });
}

// grad_output: [N, C, H_out, W_out] -> grad_input: [N, C, H, W], each output's gradient added
// into the inputs it read, with the weights it read them with.
template <class T>
void interpolate_backward_typed(const Tensor& grad_output, const Resample& r,
                                const Tensor& grad_input) {
  using Acc = compute_t<T>;
  const std::vector<LinearTaps<Acc>> th = axis_taps<Acc>(r.h, r), tw = axis_taps<Acc>(r.w, r);
  const Strides4 gs(grad_output), is(grad_input);
  const T* pg = grad_output.data<T>();
  T* pi = grad_input.data<T>();
  const int64_t planes = grad_input.size(0) * grad_input.size(1);
  parallel_for(planes, r.h.out * r.w.out, [&](int64_t p0, int64_t p1) {
    std::vector<Acc> acc(size_t(r.h.in * r.w.in));  // one input plane
    for (int64_t p = p0; p < p1; ++p) {
      std::fill(acc.begin(), acc.end(), Acc(0));
      const T* gp = pg + gs.plane(p);
      for (int64_t oh = 0; oh < r.h.out; ++oh) {
        const LinearTaps<Acc>& h = th[size_t(oh)];
        for (int64_t ow = 0; ow < r.w.out; ++ow) {
          const LinearTaps<Acc>& w = tw[size_t(ow)];
          const Acc g = Acc(gp[oh * gs.h + ow * gs.w]);
          auto add = [&](int64_t i, int64_t j, Acc weight) {
            acc[size_t(i * r.w.in + j)] += weight * g;
          };
          if (r.mode == ResampleMode::Nearest) {
            add(h.i0, w.i0, Acc(1));
            continue;
          }
          const Acc h0 = Acc(1) - h.w1, w0 = Acc(1) - w.w1;
          add(h.i0, w.i0, h0 * w0);
          add(h.i0, w.i1, h0 * w.w1);
          add(h.i1, w.i0, h.w1 * w0);
          add(h.i1, w.i1, h.w1 * w.w1);
        }
      }
      T* ip = pi + is.plane(p);
      for (int64_t i = 0; i < r.h.in; ++i)
        for (int64_t j = 0; j < r.w.in; ++j)
          ip[i * is.h + j * is.w] = T(acc[size_t(i * r.w.in + j)]);
    }
  });
}

void interpolate(const Tensor& x, const Resample& r, const Tensor& out) {
  dispatch_floating(x.dtype(), "interpolate",
                    [&](auto tag) { interpolate_typed<typename decltype(tag)::type>(x, r, out); });
}

void interpolate_backward(const Tensor& grad_output, const Resample& r, const Tensor& grad_input) {
  dispatch_floating(grad_output.dtype(), "interpolate_backward", [&](auto tag) {
    interpolate_backward_typed<typename decltype(tag)::type>(grad_output, r, grad_input);
  });
}

}  // namespace

void register_resample(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/resample.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cpu::EMBER_CPU_ISA
