// conv_pool.cpp — CPU kernels of conv2d and pooling.
//   conv2d:  im2col (cpu/im2col.h) + one BLAS GEMM per (image, group); images are spread over
//            threads, each with its own column buffer. float16/bfloat16 run in float32.
//   pooling: direct loops over each window; (image, channel) planes are spread over threads.
//            Max pooling records each max by its window tap and writes it as the tap (the
//            compact window offsets) or as the plane index the public op returns.
#include <atomic>
#include <cmath>
#include <limits>
#include <mutex>

#include "convert.h"
#include "kernels.h"
#include "ops/conv_pool_kernels.h"

// From here on compiled for this file's instruction set; cpu/isa_begin.h says why the CPU
// backend's own headers come after it.
#include "cpu/isa_begin.h"
// The CPU backend's headers.
#include "cpu/blas.h"
#include "cpu/im2col.h"
#include "cpu/parallel.h"
#include "cpu/workspace.h"

namespace ember::cpu::EMBER_CPU_ISA {
namespace {

// ---- convolution --------------------------------------------------------------------------

// Sizes of a convolution x: [N, C, H, W] * weight: [O, C / groups, kh, kw] -> [N, O, Ho, Wo].
struct ConvDims {
  int64_t N, C, H, W, O, kh, kw, Ho, Wo, groups;
  // How many ranges of images run at once, each with its scratch, and how many images a GEMM
  // takes (set_slots).
  int64_t slots = 1, images = 1;
  int64_t Cg() const { return C / groups; }     // input channels per group
  int64_t Og() const { return O / groups; }     // output channels per group
  int64_t K() const { return Cg() * kh * kw; }  // rows of im2col = GEMM inner size
  int64_t P() const { return Ho * Wo; }         // output positions = columns of im2col
  ConvSlice slice() const { return {Cg(), H, W, kh, kw, Ho, Wo}; }
  int64_t x_offset(int64_t n, int64_t g) const { return (n * C + g * Cg()) * H * W; }
  int64_t out_offset(int64_t n, int64_t g) const { return (n * O + g * Og()) * P(); }
};

ConvDims conv_dims(const Shape& x, const Shape& w, const Shape& out, int64_t groups) {
  return {x[0], x[1], x[2], x[3], w[0], w[2], w[3], out[2], out[3], groups};
}

// A 1x1 kernel with stride 1 and no padding reads x as it is: x's [Cg, H * W] slice is already
// the im2col matrix, so no copy is made.
bool is_pointwise(const ConvDims& d, const Conv2dParams& p) {
  return d.kh == 1 && d.kw == 1 && p.stride_h == 1 && p.stride_w == 1 && p.pad_h == 0 &&
         p.pad_w == 0;
}

// How many threads over_images may run at once.
int64_t image_threads(const ConvDims& d) { return d.slots; }

// Calls fn(begin, end, slot) on ranges of the N images, slot in [0, image_threads(d)) naming the
// range's scratch buffers. With at least one image per thread the images are spread over
// threads, each running its GEMMs single-threaded; with fewer (a single image, say) they run in
// turn and each GEMM is split over the threads (gemm_row_major).
template <class Fn> void over_images(const ConvDims& d, Fn&& fn) {
  const int64_t slots = image_threads(d);
  if (slots == 1) {
    fn(int64_t(0), d.N, int64_t(0));
    return;
  }
  parallel_for(slots, d.N / slots * d.O * d.K() * d.P(), [&](int64_t first, int64_t last) {
    for (int64_t slot = first; slot < last; ++slot)
      fn(d.N * slot / slots, d.N * (slot + 1) / slots, slot);
  });
}

// A scratch buffer of `count` elements for each slot of over_images, from the CPU allocator
// (allocated before the threads start: an out-of-memory error cannot leave a parallel region).
template <class T> class PerSlot {
 public:
  PerSlot(const ConvDims& d, int64_t count, const char* op)
      : count_(count),
        all_(checked_size_mul(image_threads(d), count, op, "the scratch buffers"), op) {}
  T* of(int64_t slot) const { return all_.data() + slot * count_; }

 private:
  int64_t count_;
  Workspace<T> all_;
};

// The forward's GEMM takes the columns of several images at once, about kGemmColumns of them: BLAS
// runs [Og, K] @ [K, a few thousand] at nearly twice the rate of one image's hundred-odd columns
// (a 13 x 13 output), whose packing and edge tiles it repeats per call.
// A few hundred columns get most of that rate, while the scratch buffers (the columns of each
// thread's images) stay small beside the activations a training step holds at its peak.
constexpr int64_t kGemmColumns = 512;

// Images per forward GEMM with `slots` slots: 1 for a pointwise conv, which reads x in place. No
// more than a slot of over_images gets, so that its scratch buffers are no larger than it uses.
int64_t gemm_images(const ConvDims& d, bool pointwise, int64_t slots) {
  const int64_t per_slot = (d.N + slots - 1) / slots;
  return pointwise ? 1
                   : std::clamp<int64_t>(kGemmColumns / std::max<int64_t>(d.P(), 1), 1,
                                         std::max<int64_t>(per_slot, 1));
}

// d.slots and d.images for a kernel whose slots each hold (K + Og) scratch elements per im2col
// column (none for a pointwise conv) and `fixed` more. With at least one image per thread, one
// slot per thread; with fewer, one slot whose GEMMs are split over the threads. On many cores the
// slots' scratch together can pass the activations a training step holds (16 threads, each
// unfolding 4 images of a batch of 64, hold five times the output of the digits CNN's second
// conv). It is kept within the larger of the conv's input and output (bytes the step holds
// anyway): by fewer images per GEMM first (BLAS runs them a little slower), then by fewer slots
// (idle threads), never below two slots. Two slots hold little and keep their images per GEMM,
// so a 2-core machine runs as before.
void set_slots(ConvDims& d, bool pointwise, int64_t fixed) {
  const int64_t threads = num_threads();
  d.slots = d.N < threads ? 1 : threads;
  d.images = gemm_images(d, pointwise, d.slots);
  if (d.slots <= 2) return;
  const int64_t column = (pointwise ? 0 : d.K() + d.Og()) * d.P();  // scratch per image
  const int64_t budget = std::max(d.N * d.O * d.P(), d.N * d.C * d.H * d.W);
  for (; d.slots > 2; --d.slots) {
    const int64_t room = budget / d.slots - fixed;  // what each slot's images may take
    if (room < column) continue;
    d.images = std::min(gemm_images(d, pointwise, d.slots), column ? room / column : 1);
    return;
  }
  d.images = 1;  // two slots, each the least it can hold
}

// Images [n0, n0 + count), group g: out_g [Og, P] per image = weight_g [Og, K] @ cols + bias,
// with cols [K, count * P] the images' im2col side by side and acc [Og, count * P] the product.
template <class T>
void forward_images(const ConvDims& d, const Conv2dParams& p, const T* px, const T* pw, const T* pb,
                    int64_t n0, int64_t count, int64_t g, T* col, T* acc, T* po) {
  const int64_t P = d.P(), ld = count * P;
  for (int64_t b = 0; b < count; ++b)
    im2col(d.slice(), p, px + d.x_offset(n0 + b, g), col + b * P, ld);
  gemm_row_major<T>(false, false, d.Og(), ld, d.K(), pw + g * d.Og() * d.K(), d.K(), col, ld, T(0),
                    acc, ld);
  for (int64_t b = 0; b < count; ++b)
    for (int64_t o = 0; o < d.Og(); ++o) {  // row o of image b, plus the bias
      const T* from = acc + o * ld + b * P;
      T* to = po + d.out_offset(n0 + b, g) + o * P;
      const T bias = pb ? pb[g * d.Og() + o] : T(0);
      for (int64_t q = 0; q < P; ++q) to[q] = from[q] + bias;
    }
}

template <class T>
void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& out,
                    const Conv2dParams& p) {
  ConvDims d = conv_dims(x.shape(), w.shape(), out.shape(), p.groups);
  const bool pointwise = is_pointwise(d, p);
  set_slots(d, pointwise, 0);
  const int64_t batch = d.images;
  const T* px = x.data<T>();
  const T* pw = w.data<T>();
  const T* pb = bias.defined() ? bias.data<T>() : nullptr;
  T* po = out.data<T>();
  const PerSlot<T> cols_buffers(d, pointwise ? 0 : d.K() * batch * d.P(), "conv2d");
  const PerSlot<T> acc_buffers(d, pointwise ? 0 : d.Og() * batch * d.P(), "conv2d");
  over_images(d, [&](int64_t begin, int64_t end, int64_t slot) {
    for (int64_t n0 = begin; n0 < end; n0 += batch)
      for (int64_t g = 0; g < d.groups; ++g) {
        if (!pointwise) {
          forward_images(d, p, px, pw, pb, n0, std::min(batch, end - n0), g, cols_buffers.of(slot),
                         acc_buffers.of(slot), po);
          continue;
        }
        T* og = po + d.out_offset(n0, g);  // [Og, P]
        if (pb)                            // the bias goes in first; the GEMM adds onto it
          for (int64_t o = 0; o < d.Og(); ++o)
            std::fill(og + o * d.P(), og + (o + 1) * d.P(), pb[g * d.Og() + o]);
        // og [Og, P] (+)= weight_g [Og, K] @ x_g [K, P]
        gemm_row_major<T>(false, false, d.Og(), d.P(), d.K(), pw + g * d.Og() * d.K(), d.K(),
                          px + d.x_offset(n0, g), d.P(), pb ? T(1) : T(0), og, d.P());
      }
  });
}

// grad_out of images [n0, n0 + count), group g, side by side: [Og, count * P], copied into `to`;
// a single image's slice is that matrix already and is returned as it is.
template <class T>
const T* gather_images(const ConvDims& d, const T* pg, int64_t n0, int64_t count, int64_t g,
                       T* to) {
  const int64_t P = d.P(), ld = count * P;
  if (count == 1) return pg + d.out_offset(n0, g);
  for (int64_t b = 0; b < count; ++b)
    for (int64_t o = 0; o < d.Og(); ++o)
      std::copy_n(pg + d.out_offset(n0 + b, g) + o * P, P, to + o * ld + b * P);
  return to;
}

// The backward GEMMs batch images as the forward's (d.images, set_slots). A pointwise conv runs one
// image at a time on x and grad_x in place.
template <class T>
void conv2d_grad_input(const Tensor& grad_out, const Tensor& w, Tensor& grad_x,
                       const Conv2dParams& p) {
  ConvDims d = conv_dims(grad_x.shape(), w.shape(), grad_out.shape(), p.groups);
  const bool pointwise = is_pointwise(d, p);
  set_slots(d, pointwise, 0);
  const int64_t batch = d.images, P = d.P();
  const T* pg = grad_out.data<T>();
  const T* pw = w.data<T>();
  T* px = grad_x.data<T>();
  const char* op = "conv2d_backward_input";
  const PerSlot<T> cols_buffers(d, pointwise ? 0 : d.K() * batch * P, op);
  const PerSlot<T> grad_buffers(d, pointwise ? 0 : d.Og() * batch * P, op);
  over_images(d, [&](int64_t begin, int64_t end, int64_t slot) {
    if (!pointwise) std::fill(px + d.x_offset(begin, 0), px + d.x_offset(end, 0), T(0));
    for (int64_t n0 = begin; n0 < end; n0 += batch) {
      const int64_t count = std::min(batch, end - n0), ld = count * P;
      for (int64_t g = 0; g < d.groups; ++g) {
        const T* grads = gather_images(d, pg, n0, count, g, grad_buffers.of(slot));
        T* cols = pointwise ? px + d.x_offset(n0, g) : cols_buffers.of(slot);
        // cols [K, count * P] = weight_g^T [K, Og] @ grads [Og, count * P]
        gemm_row_major<T>(true, false, d.K(), ld, d.Og(), pw + g * d.Og() * d.K(), d.K(), grads, ld,
                          T(0), cols, ld);
        if (pointwise) continue;
        for (int64_t b = 0; b < count; ++b)
          col2im_add(d.slice(), p, cols + b * P, ld, px + d.x_offset(n0 + b, g));
      }
    }
  });
}

template <class T>
void conv2d_grad_weight(const Tensor& grad_out, const Tensor& x, Tensor& grad_w,
                        const Conv2dParams& p) {
  ConvDims d = conv_dims(x.shape(), grad_w.shape(), grad_out.shape(), p.groups);
  const bool pointwise = is_pointwise(d, p);
  set_slots(d, pointwise, grad_w.numel());  // each slot sums into a copy of grad_w
  const int64_t batch = d.images, P = d.P();
  const T* pg = grad_out.data<T>();
  const T* px = x.data<T>();
  T* pw = grad_w.data<T>();
  std::fill(pw, pw + grad_w.numel(), T(0));
  std::mutex add_to_grad_w;
  // Each thread sums its images' contributions in its own buffer, then adds that to grad_w. The
  // buffer holds grad_w transposed, per group [K, Og]: computed as cols @ grad_out^T that GEMM
  // has its long dimension (K) as rows, which BLAS runs about a quarter faster than the
  // [Og, K] = grad_out @ cols^T form when Og is a few dozen channels.
  const char* op = "conv2d_backward_weight";
  const PerSlot<T> cols_buffers(d, pointwise ? 0 : d.K() * batch * P, op);
  const PerSlot<T> grad_buffers(d, pointwise ? 0 : d.Og() * batch * P, op);
  const PerSlot<T> acc_buffers(d, grad_w.numel(), op);
  over_images(d, [&](int64_t begin, int64_t end, int64_t slot) {
    T* acc_t = acc_buffers.of(slot);
    std::fill(acc_t, acc_t + grad_w.numel(), T(0));
    for (int64_t n0 = begin; n0 < end; n0 += batch) {
      const int64_t count = std::min(batch, end - n0), ld = count * P;
      for (int64_t g = 0; g < d.groups; ++g) {
        const T* cols = px + d.x_offset(n0, g);  // [K, count * P]
        if (!pointwise) {
          T* col = cols_buffers.of(slot);
          for (int64_t b = 0; b < count; ++b)
            im2col(d.slice(), p, px + d.x_offset(n0 + b, g), col + b * P, ld);
          cols = col;
        }
        const T* grads = gather_images(d, pg, n0, count, g, grad_buffers.of(slot));
        // acc_t_g [K, Og] += cols [K, count * P] @ grads^T [count * P, Og]
        gemm_row_major<T>(false, true, d.K(), d.Og(), ld, cols, ld, grads, ld, T(1),
                          acc_t + g * d.K() * d.Og(), d.Og());
      }
    }
    std::lock_guard<std::mutex> lock(add_to_grad_w);
    for (int64_t g = 0; g < d.groups; ++g)
      for (int64_t o = 0; o < d.Og(); ++o)
        for (int64_t k = 0; k < d.K(); ++k)
          pw[(g * d.Og() + o) * d.K() + k] += acc_t[(g * d.K() + k) * d.Og() + o];
  });
}

// grad_out: [N, O, Ho, Wo] -> grad_bias: [O], summed in double.
template <class T> void conv2d_grad_bias(const Tensor& grad_out, Tensor& grad_bias) {
  const int64_t N = grad_out.size(0), O = grad_out.size(1);
  const int64_t P = grad_out.size(2) * grad_out.size(3);
  const T* pg = grad_out.data<T>();
  T* pb = grad_bias.data<T>();
  // kLanes independent partial sums: one running sum would chain every add to the previous one
  // (the compiler may not reorder floating-point adds), these vectorise.
  constexpr int64_t kLanes = 8;
  parallel_for(O, N * P, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      double lanes[kLanes] = {};
      for (int64_t n = 0; n < N; ++n) {
        const T* row = pg + (n * O + o) * P;
        int64_t q = 0;
        for (; q + kLanes <= P; q += kLanes)
          for (int64_t l = 0; l < kLanes; ++l) lanes[l] += convert<double>(row[q + l]);
        for (; q < P; ++q) lanes[0] += convert<double>(row[q]);
      }
      double sum = 0;
      for (double v : lanes) sum += v;
      pb[o] = convert<T>(sum);
    }
  });
}

bool is_half(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
Tensor to_float32(const Tensor& t) { return t.defined() ? t.to(DType::Float32) : t; }

// Runs run(TypeTag<T>{}, cast, result) with T the type result is computed in. float16/bfloat16:
// BLAS has no half GEMM, so these run in float32 (cast converts each input, into a float32
// result) and round the result once.
template <class Run> void in_gemm_precision(Tensor& result, const char* op, Run run) {
  if (is_half(result.dtype())) {
    Tensor result32 = Tensor::empty(result.shape(), DType::Float32, Device(), op);
    run(TypeTag<float>{}, to_float32, result32);
    result.copy_(result32);
  } else {
    const auto as_is = [](const Tensor& t) -> const Tensor& { return t; };
    if (result.dtype() == DType::Float32) {
      run(TypeTag<float>{}, as_is, result);
    } else {
      run(TypeTag<double>{}, as_is, result);
    }
  }
}

void conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& out,
            const Conv2dParams& p) {
  in_gemm_precision(out, "conv2d", [&](auto tag, auto cast, Tensor& result) {
    conv2d_forward<typename decltype(tag)::type>(cast(x), cast(w), cast(bias), result, p);
  });
}

void conv2d_backward_input(const Tensor& grad_out, const Tensor& w, Tensor& grad_x,
                           const Conv2dParams& p) {
  in_gemm_precision(grad_x, "conv2d_backward_input", [&](auto tag, auto cast, Tensor& result) {
    conv2d_grad_input<typename decltype(tag)::type>(cast(grad_out), cast(w), result, p);
  });
}

void conv2d_backward_weight(const Tensor& grad_out, const Tensor& x, Tensor& grad_w,
                            const Conv2dParams& p) {
  in_gemm_precision(grad_w, "conv2d_backward_weight", [&](auto tag, auto cast, Tensor& result) {
    conv2d_grad_weight<typename decltype(tag)::type>(cast(grad_out), cast(x), result, p);
  });
}

void conv2d_backward_bias(const Tensor& grad_out, Tensor& grad_bias) {
  dispatch_floating(grad_out.dtype(), "conv2d_backward_bias", [&](auto tag) {
    conv2d_grad_bias<typename decltype(tag)::type>(grad_out, grad_bias);
  });
}

// ---- pooling ------------------------------------------------------------------------------

// Sizes of a pooling x: [N, C, H, W] -> [N, C, Ho, Wo], as planes of H x W -> Ho x Wo.
struct PoolDims {
  int64_t planes, H, W, Ho, Wo;
};

PoolDims pool_dims(const Shape& x, const Shape& out) {
  return {x[0] * x[1], x[2], x[3], out[2], out[3]};
}

// Replaces (best, best_tap) by (v, tap) where max pooling would: the first NaN sticks; otherwise
// strictly greater keeps the first of equals. A select, not a branch, so that loops vectorise.
template <class Acc> void take_max(Acc v, int64_t tap, Acc& best, int64_t& best_tap) {
  const bool take = !std::isnan(best) && (std::isnan(v) || v > best);
  best = take ? v : best;
  best_tap = take ? tap : best_tap;
}

// Where window (oh, ow)'s tap (i, j) = tap i * kernel_w + j reads the plane: ih * W + iw, or -1
// where it lies in the padding.
int64_t tap_position(const PoolDims& d, const Pool2dParams& p, int64_t oh, int64_t ow,
                     int64_t tap) {
  const int64_t ih = oh * p.stride_h - p.pad_h + tap / p.kernel_w * p.dilation_h;
  const int64_t iw = ow * p.stride_w - p.pad_w + tap % p.kernel_w * p.dilation_w;
  return ih < 0 || ih >= d.H || iw < 0 || iw >= d.W ? -1 : ih * d.W + iw;
}

// What the forward records of a window's max, found at `tap` (-1: the window has no input
// element): its window offset (0 for no element: a tap in the padding) or its index in the plane.
template <class I>
I record_of(const PoolDims& d, const Pool2dParams& p, int64_t oh, int64_t ow, int64_t tap) {
  if (p.window_offsets) return I(tap < 0 ? 0 : tap);
  return I(tap < 0 ? -1 : tap_position(d, p, oh, ow, tap));
}

// Window (oh, ow) of a plane: its max and the tap it came from (-1 for none), with bounds tests.
template <class T>
compute_t<T> max_window(const T* in, const PoolDims& d, const Pool2dParams& p, int64_t oh,
                        int64_t ow, int64_t& best_tap) {
  using Acc = compute_t<T>;
  const int64_t h0 = oh * p.stride_h - p.pad_h, w0 = ow * p.stride_w - p.pad_w;
  // A window wholly in the padding (possible with dilation) gives -inf from no tap.
  Acc best = -std::numeric_limits<Acc>::infinity();
  best_tap = -1;
  for (int64_t i = 0; i < p.kernel_h; ++i) {
    const int64_t ih = h0 + i * p.dilation_h;
    if (ih < 0 || ih >= d.H) continue;
    for (int64_t j = 0; j < p.kernel_w; ++j) {
      const int64_t iw = w0 + j * p.dilation_w;
      if (iw < 0 || iw >= d.W) continue;
      const Acc v = convert<Acc>(in[ih * d.W + iw]);
      if (best_tap < 0) {
        best = v;
        best_tap = i * p.kernel_w + j;
      } else {
        take_max(v, i * p.kernel_w + j, best, best_tap);
      }
    }
  }
  return best;
}

// 2x2 windows of adjacent elements (no dilation) at stride 2, wholly inside the plane (no padding;
// ceil_mode's partial windows excluded): CNNs' usual pooling. Four in-bounds values per window,
// no bounds tests. Every parameter of max_window's geometry is pinned: one left free would make
// this path pool other elements than the window's.
bool is_2x2_stride_2(const PoolDims& d, const Pool2dParams& p) {
  return p.kernel_h == 2 && p.kernel_w == 2 && p.stride_h == 2 && p.stride_w == 2 &&
         p.dilation_h == 1 && p.dilation_w == 1 && p.pad_h == 0 && p.pad_w == 0 &&
         2 * d.Ho <= d.H && 2 * d.Wo <= d.W;
}

// One plane in [H, W] -> out, record [Ho, Wo] (record_of's, without its bounds tests: every tap
// is inside).
template <class T, class I>
void max_pool_2x2_plane(const T* in, const PoolDims& d, bool offsets, T* out, I* record) {
  using Acc = compute_t<T>;
  for (int64_t oh = 0; oh < d.Ho; ++oh) {
    const int64_t row = 2 * oh * d.W;  // the windows' top row in the plane
    const T* top = in + row;
    const T* bottom = top + d.W;
    for (int64_t ow = 0; ow < d.Wo; ++ow) {
      Acc best = convert<Acc>(top[2 * ow]);
      int64_t tap = 0;
      take_max(convert<Acc>(top[2 * ow + 1]), 1, best, tap);
      take_max(convert<Acc>(bottom[2 * ow]), 2, best, tap);
      take_max(convert<Acc>(bottom[2 * ow + 1]), 3, best, tap);
      out[oh * d.Wo + ow] = convert<T>(best);
      record[oh * d.Wo + ow] = I(offsets ? tap : row + 2 * ow + (tap >> 1) * d.W + (tap & 1));
    }
  }
}

template <class T, class I>
void max_pool_forward(const Tensor& x, Tensor& out, Tensor& indices, const Pool2dParams& p) {
  const PoolDims d = pool_dims(x.shape(), out.shape());
  const bool two_by_two = is_2x2_stride_2(d, p);
  const T* px = x.data<T>();
  T* po = out.data<T>();
  I* pi = indices.data<I>();
  parallel_for(d.planes, d.Ho * d.Wo * p.kernel_h * p.kernel_w, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const T* in = px + plane * d.H * d.W;
      T* out_plane = po + plane * d.Ho * d.Wo;
      I* record = pi + plane * d.Ho * d.Wo;
      if (two_by_two) {
        max_pool_2x2_plane(in, d, p.window_offsets, out_plane, record);
        continue;
      }
      for (int64_t oh = 0; oh < d.Ho; ++oh)
        for (int64_t ow = 0; ow < d.Wo; ++ow) {
          int64_t tap;
          out_plane[oh * d.Wo + ow] = convert<T>(max_window(in, d, p, oh, ow, tap));
          record[oh * d.Wo + ow] = record_of<I>(d, p, oh, ow, tap);
        }
    }
  });
}

// The frame of the max-pool backwards: each plane of grad_x zeroed, then route(plane, gx, bad)
// adds the gradients of the plane's windows into gx (its H * W values), setting bad where an index
// or offset is out of range. Returns whether one was, in any plane.
template <class T, class Route>
bool route_max_pool_grad(const PoolDims& d, Tensor& grad_x, Route&& route) {
  T* px = grad_x.data<T>();
  std::atomic<bool> out_of_range{false};
  parallel_for(d.planes, d.H * d.W + d.Ho * d.Wo, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      T* gx = px + plane * d.H * d.W;
      std::fill(gx, gx + d.H * d.W, T(0));
      bool bad = false;
      route(plane, gx, bad);
      if (bad) out_of_range = true;
    }
  });
  return out_of_range;
}

// grad += g, added in T's compute type.
template <class T> void add_grad(T& grad, T g) {
  using Acc = compute_t<T>;
  grad = convert<T>(convert<Acc>(grad) + convert<Acc>(g));
}

template <class T>
void max_pool_backward(const Tensor& grad_out, const Tensor& indices, Tensor& grad_x) {
  const PoolDims d = pool_dims(grad_x.shape(), grad_out.shape());
  const T* pg = grad_out.data<T>();
  const int64_t* pi = indices.data<int64_t>();
  const bool out_of_range = route_max_pool_grad<T>(d, grad_x, [&](int64_t plane, T* gx, bool& bad) {
    for (int64_t q = plane * d.Ho * d.Wo; q < (plane + 1) * d.Ho * d.Wo; ++q) {
      const int64_t at = pi[q];
      if (at == -1) continue;  // a window wholly in the padding: nothing to route back
      if (at < 0 || at >= d.H * d.W) {
        bad = true;
        continue;
      }
      add_grad(gx[at], pg[q]);
    }
  });
  if (out_of_range)
    throw IndexError("max_pool2d_backward",
                     "indices hold values outside [0, H * W) = [0, " + std::to_string(d.H * d.W) +
                         ") for input planes of " + std::to_string(d.H) + " x " +
                         std::to_string(d.W) + "; pass the indices max_pool2d returned");
}

[[noreturn]] void throw_bad_offsets(const char* op, const Pool2dParams& p) {
  const int64_t taps = p.kernel_h * p.kernel_w;
  throw IndexError(op, "offsets hold values outside [0, kernel_h * kernel_w) = [0, " +
                           std::to_string(taps) + ") for a " + std::to_string(p.kernel_h) + " x " +
                           std::to_string(p.kernel_w) +
                           " window; pass the offsets max_pool2d_with_offsets returned");
}

template <class T, class I>
void max_pool_offsets_backward(const Tensor& grad_out, const Tensor& offsets, Tensor& grad_x,
                               const Pool2dParams& p) {
  const PoolDims d = pool_dims(grad_x.shape(), grad_out.shape());
  const int64_t taps = p.kernel_h * p.kernel_w;
  const bool two_by_two = is_2x2_stride_2(d, p);
  const T* pg = grad_out.data<T>();
  const I* po = offsets.data<I>();
  const bool out_of_range = route_max_pool_grad<T>(d, grad_x, [&](int64_t plane, T* gx, bool& bad) {
    const T* g = pg + plane * d.Ho * d.Wo;
    const I* off = po + plane * d.Ho * d.Wo;
    for (int64_t oh = 0; oh < d.Ho; ++oh)
      for (int64_t ow = 0; ow < d.Wo; ++ow) {
        const int64_t tap = int64_t(off[oh * d.Wo + ow]);
        if (tap < 0 || tap >= taps) {
          bad = true;
          continue;
        }
        // The usual 2x2 pool without tap_position's divisions and bounds tests.
        const int64_t at = two_by_two ? 2 * oh * d.W + 2 * ow + (tap >> 1) * d.W + (tap & 1)
                                      : tap_position(d, p, oh, ow, tap);
        if (at < 0) continue;  // a tap in the padding: a window with no input element
        add_grad(gx[at], g[oh * d.Wo + ow]);
      }
  });
  if (out_of_range) throw_bad_offsets("max_pool2d_offsets_backward", p);
}

template <class I>
void max_pool_offsets_to_indices(const Tensor& offsets, Tensor& indices, int64_t H, int64_t W,
                                 const Pool2dParams& p) {
  const PoolDims d = pool_dims({offsets.size(0), offsets.size(1), H, W}, offsets.shape());
  const int64_t taps = p.kernel_h * p.kernel_w;
  const I* po = offsets.data<I>();
  int64_t* pi = indices.data<int64_t>();
  std::atomic<bool> out_of_range{false};
  parallel_for(d.planes, d.Ho * d.Wo, [&](int64_t begin, int64_t end) {
    for (int64_t q = begin * d.Ho * d.Wo; q < end * d.Ho * d.Wo; ++q) {
      const int64_t tap = int64_t(po[q]);
      if (tap < 0 || tap >= taps) {
        out_of_range = true;
        continue;
      }
      pi[q] = tap_position(d, p, q / d.Wo % d.Ho, q % d.Wo, tap);
    }
  });
  if (out_of_range) throw_bad_offsets("max_pool2d_offsets_to_indices", p);
}

// Calls fn(hs, he, ws, we, divisor) for the in-bounds rows [hs, he) and columns [ws, we) of
// avg-pooling window (oh, ow), with the divisor of conv_pool_kernels.h.
template <class Fn>
void for_avg_window(const PoolDims& d, const Pool2dParams& p, int64_t oh, int64_t ow, Fn&& fn) {
  const int64_t h0 = oh * p.stride_h - p.pad_h, w0 = ow * p.stride_w - p.pad_w;
  const int64_t h1 = std::min(h0 + p.kernel_h, d.H + p.pad_h);
  const int64_t w1 = std::min(w0 + p.kernel_w, d.W + p.pad_w);
  const int64_t padded_size = (h1 - h0) * (w1 - w0);
  const int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h1, d.H);
  const int64_t ws = std::max<int64_t>(w0, 0), we = std::min(w1, d.W);
  fn(hs, he, ws, we, p.count_include_pad ? padded_size : (he - hs) * (we - ws));
}

template <class T> void avg_pool_forward(const Tensor& x, Tensor& out, const Pool2dParams& p) {
  using Acc = compute_t<T>;
  const PoolDims d = pool_dims(x.shape(), out.shape());
  const T* px = x.data<T>();
  T* po = out.data<T>();
  parallel_for(d.planes, d.Ho * d.Wo * p.kernel_h * p.kernel_w, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const T* in = px + plane * d.H * d.W;
      for (int64_t oh = 0; oh < d.Ho; ++oh)
        for (int64_t ow = 0; ow < d.Wo; ++ow)
          for_avg_window(d, p, oh, ow,
                         [&](int64_t hs, int64_t he, int64_t ws, int64_t we, int64_t divisor) {
                           Acc sum = 0;
                           for (int64_t ih = hs; ih < he; ++ih)
                             for (int64_t iw = ws; iw < we; ++iw)
                               sum += convert<Acc>(in[ih * d.W + iw]);
                           po[(plane * d.Ho + oh) * d.Wo + ow] = convert<T>(sum / Acc(divisor));
                         });
    }
  });
}

template <class T>
void avg_pool_backward(const Tensor& grad_out, Tensor& grad_x, const Pool2dParams& p) {
  using Acc = compute_t<T>;
  const PoolDims d = pool_dims(grad_x.shape(), grad_out.shape());
  const T* pg = grad_out.data<T>();
  T* px = grad_x.data<T>();
  parallel_for(d.planes, d.Ho * d.Wo * p.kernel_h * p.kernel_w, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      T* gx = px + plane * d.H * d.W;
      std::fill(gx, gx + d.H * d.W, T(0));
      for (int64_t oh = 0; oh < d.Ho; ++oh)
        for (int64_t ow = 0; ow < d.Wo; ++ow)
          for_avg_window(d, p, oh, ow,
                         [&](int64_t hs, int64_t he, int64_t ws, int64_t we, int64_t divisor) {
                           const Acc g =
                               convert<Acc>(pg[(plane * d.Ho + oh) * d.Wo + ow]) / Acc(divisor);
                           for (int64_t ih = hs; ih < he; ++ih)
                             for (int64_t iw = ws; iw < we; ++iw)
                               gx[ih * d.W + iw] = convert<T>(convert<Acc>(gx[ih * d.W + iw]) + g);
                         });
    }
  });
}

// Adaptive window of output index i: input [floor(i * in / out), ceil((i + 1) * in / out)).
int64_t adaptive_start(int64_t i, int64_t in, int64_t out) { return i * in / out; }
int64_t adaptive_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }

template <class T> void adaptive_avg_forward(const Tensor& x, Tensor& out) {
  using Acc = compute_t<T>;
  const PoolDims d = pool_dims(x.shape(), out.shape());
  const T* px = x.data<T>();
  T* po = out.data<T>();
  parallel_for(d.planes, d.H * d.W, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      const T* in = px + plane * d.H * d.W;
      for (int64_t oh = 0; oh < d.Ho; ++oh) {
        const int64_t hs = adaptive_start(oh, d.H, d.Ho), he = adaptive_end(oh, d.H, d.Ho);
        for (int64_t ow = 0; ow < d.Wo; ++ow) {
          const int64_t ws = adaptive_start(ow, d.W, d.Wo), we = adaptive_end(ow, d.W, d.Wo);
          Acc sum = 0;
          for (int64_t ih = hs; ih < he; ++ih)
            for (int64_t iw = ws; iw < we; ++iw) sum += convert<Acc>(in[ih * d.W + iw]);
          po[(plane * d.Ho + oh) * d.Wo + ow] = convert<T>(sum / Acc((he - hs) * (we - ws)));
        }
      }
    }
  });
}

template <class T> void adaptive_avg_backward(const Tensor& grad_out, Tensor& grad_x) {
  using Acc = compute_t<T>;
  const PoolDims d = pool_dims(grad_x.shape(), grad_out.shape());
  const T* pg = grad_out.data<T>();
  T* px = grad_x.data<T>();
  parallel_for(d.planes, d.H * d.W, [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      T* gx = px + plane * d.H * d.W;
      std::fill(gx, gx + d.H * d.W, T(0));
      for (int64_t oh = 0; oh < d.Ho; ++oh) {
        const int64_t hs = adaptive_start(oh, d.H, d.Ho), he = adaptive_end(oh, d.H, d.Ho);
        for (int64_t ow = 0; ow < d.Wo; ++ow) {
          const int64_t ws = adaptive_start(ow, d.W, d.Wo), we = adaptive_end(ow, d.W, d.Wo);
          const Acc g =
              convert<Acc>(pg[(plane * d.Ho + oh) * d.Wo + ow]) / Acc((he - hs) * (we - ws));
          for (int64_t ih = hs; ih < he; ++ih)
            for (int64_t iw = ws; iw < we; ++iw)
              gx[ih * d.W + iw] = convert<T>(convert<Acc>(gx[ih * d.W + iw]) + g);
        }
      }
    }
  });
}

// The pooling kernels run in every floating dtype (half types compute in float).
void max_pool2d(const Tensor& x, Tensor& out, Tensor& indices, const Pool2dParams& p) {
  dispatch_floating(x.dtype(), "max_pool2d", [&](auto tag) {
    dispatch_window_offsets(indices.dtype(), "max_pool2d", [&](auto offset_tag) {
      max_pool_forward<typename decltype(tag)::type, typename decltype(offset_tag)::type>(x, out,
                                                                                          indices,
                                                                                          p);
    });
  });
}
void max_pool2d_offsets_backward(const Tensor& grad_out, const Tensor& offsets, Tensor& grad_x,
                                 const Pool2dParams& p) {
  dispatch_floating(grad_out.dtype(), "max_pool2d_offsets_backward", [&](auto tag) {
    dispatch_window_offsets(offsets.dtype(), "max_pool2d_offsets_backward", [&](auto offset_tag) {
      max_pool_offsets_backward<typename decltype(tag)::type, typename decltype(offset_tag)::type>(
          grad_out, offsets, grad_x, p);
    });
  });
}
void max_pool2d_offsets_to_indices(const Tensor& offsets, Tensor& indices, int64_t H, int64_t W,
                                   const Pool2dParams& p) {
  dispatch_window_offsets(offsets.dtype(), "max_pool2d_offsets_to_indices", [&](auto offset_tag) {
    max_pool_offsets_to_indices<typename decltype(offset_tag)::type>(offsets, indices, H, W, p);
  });
}
void max_pool2d_backward(const Tensor& grad_out, const Tensor& indices, Tensor& grad_x) {
  dispatch_floating(grad_out.dtype(), "max_pool2d_backward", [&](auto tag) {
    max_pool_backward<typename decltype(tag)::type>(grad_out, indices, grad_x);
  });
}
void avg_pool2d(const Tensor& x, Tensor& out, const Pool2dParams& p) {
  dispatch_floating(x.dtype(), "avg_pool2d",
                    [&](auto tag) { avg_pool_forward<typename decltype(tag)::type>(x, out, p); });
}
void avg_pool2d_backward(const Tensor& grad_out, Tensor& grad_x, const Pool2dParams& p) {
  dispatch_floating(grad_out.dtype(), "avg_pool2d_backward", [&](auto tag) {
    avg_pool_backward<typename decltype(tag)::type>(grad_out, grad_x, p);
  });
}
void adaptive_avg_pool2d(const Tensor& x, Tensor& out) {
  dispatch_floating(x.dtype(), "adaptive_avg_pool2d",
                    [&](auto tag) { adaptive_avg_forward<typename decltype(tag)::type>(x, out); });
}
void adaptive_avg_pool2d_backward(const Tensor& grad_out, Tensor& grad_x) {
  dispatch_floating(grad_out.dtype(), "adaptive_avg_pool2d_backward", [&](auto tag) {
    adaptive_avg_backward<typename decltype(tag)::type>(grad_out, grad_x);
  });
}

}  // namespace

void register_conv_pool(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/conv_pool.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cpu::EMBER_CPU_ISA

#include "cpu/isa_end.h"
