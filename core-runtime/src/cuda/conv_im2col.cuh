// conv_im2col.cuh — conv2d forward, backward-input and backward-weight through im2col + cuBLAS.
//
// im2col writes, for each image, the [C * kh * kw, Ho * Wo] matrix whose column p holds every
// input value output position p reads (zeros where the window hangs over the padding). The
// convolution is then an ordinary GEMM, which cuBLAS runs near the GPU's peak:
//   forward          out[img, g]   [Og, P]  = weight[g] [Og, R] · cols[img, g] [R, P]
//   backward-input   cols[img, g]  [R, P]   = weight[g]^T [R, Og] · grad_out[img, g] [Og, P],
//                    then col2im adds each column entry back to the input pixel it came from
//   backward-weight  grad_w[g]     [Og, R]  = grad_out[g] [Og, N*P] · cols[g]^T [N*P, R],
//                    or, with one group and R < P, the sum over images of
//                    grad_out[img] [O, P] · cols[img]^T [P, R]
// (R = C/G * kh * kw, P = Ho * Wo.) The price is the cols buffer: kh * kw times the input, written
// and read once per pass. Images are processed in chunks so that cols stays under kColsBudget
// elements. A 1x1 convolution with stride 1 and no padding needs no im2col at all: x itself is
// the cols matrix (forward, backward-input).
//
// col2im is a gather: each input pixel sums the (at most kh * kw) column entries that read it,
// so no two threads write one address and no atomics are needed.
#pragma once
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cuda/conv_implicit_gemm.cuh"
#include "cuda/cublas_handle.cuh"
#include "cuda/launch.cuh"
#include "ember/tensor.h"

namespace ember::cuda::conv {

constexpr int64_t kColsBudget = int64_t(1) << 24;  // elements of cols per chunk (64 MiB float32)

// cols element (img, r, p) lives at cols[img * s_img + r * s_r + p], r = (c * kh + i) * kw + j;
// images n0 .. n0 + nb - 1. One thread per (img, c, oh, ow), looping over the kh * kw taps;
// consecutive threads take consecutive ow, so the writes coalesce.
template <class T>
__global__ void im2col_kernel(const T* x, ConvShape s, int n0, int nb, int64_t s_img, int64_t s_r,
                              T* cols) {
  const int64_t total = int64_t(nb) * s.C * s.P;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int p = int(e % s.P);
    const int64_t cimg = e / s.P;
    const int c = int(cimg % s.C), img = int(cimg / s.C);
    const int oh = p / s.Wo, ow = p - oh * s.Wo;
    const T* plane = x + (int64_t(n0 + img) * s.C + c) * s.HW;
    T* col = cols + img * s_img + int64_t(c) * s.khw * s_r + p;
    for (int i = 0; i < s.kh; ++i) {
      const int ih = oh * s.sh - s.ph + i * s.dh;
      for (int j = 0; j < s.kw; ++j, col += s_r) {
        const int iw = ow * s.sw - s.pw + j * s.dw;
        const bool in = unsigned(ih) < unsigned(s.H) && unsigned(iw) < unsigned(s.W);
        *col = in ? plane[int64_t(ih) * s.W + iw] : T(0);
      }
    }
  }
}

// grad_x[n0 + img][c][ih][iw] = sum over taps (i, j) and the output position (oh, ow) that read
// (ih, iw) through them, of cols[img][(c, i, j)][(oh, ow)]; cols laid out [nb, C*kh*kw, P].
template <class T>
__global__ void col2im_kernel(const T* cols, ConvShape s, int n0, int nb, T* grad_x) {
  using Acc = compute_t<T>;
  const int64_t total = int64_t(nb) * s.C * s.HW;
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < total;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int q = int(e % s.HW);
    const int64_t cimg = e / s.HW;
    const int c = int(cimg % s.C), img = int(cimg / s.C);
    const int ih = q / s.W, iw = q - ih * s.W;
    const T* col = cols + (int64_t(img) * s.C + c) * s.khw * s.P;
    Acc sum = 0;
    for (int i = 0; i < s.kh; ++i) {
      const int th = ih + s.ph - i * s.dh;  // = oh * sh if some output row read this pixel
      if (th < 0 || th % s.sh != 0 || th / s.sh >= s.Ho) continue;
      for (int j = 0; j < s.kw; ++j) {
        const int tw = iw + s.pw - j * s.dw;
        if (tw < 0 || tw % s.sw != 0 || tw / s.sw >= s.Wo) continue;
        sum += Acc(col[int64_t(i * s.kw + j) * s.P + (th / s.sh) * s.Wo + tw / s.sw]);
      }
    }
    grad_x[(int64_t(n0 + img) * s.C + c) * s.HW + q] = T(sum);
  }
}

inline bool is_pointwise(const ConvShape& s) {
  return s.kh == 1 && s.kw == 1 && s.sh == 1 && s.sw == 1 && s.ph == 0 && s.pw == 0;
}

// Images per chunk: as many as keep cols under kColsBudget (at least one).
inline int images_per_chunk(const ConvShape& s) {
  const int64_t per_image = int64_t(s.C) * s.khw * s.P;
  return int(std::clamp<int64_t>(kColsBudget / std::max<int64_t>(per_image, 1), 1, s.N));
}

// A row-major [rows, cols] matrix (batch stride bs) as a GEMM operand, and its transpose.
template <class T> MatrixRef<T> rows_of(T* data, int64_t ld, int64_t bs) {
  return {data, ld, 1, bs};
}
template <class T> MatrixRef<T> transposed(T* data, int64_t ld, int64_t bs) {
  return {data, 1, ld, bs};
}

template <class T>
void launch_im2col(const Tensor& x, const ConvShape& s, int n0, int nb, int64_t s_img, int64_t s_r,
                   T* cols, const char* op) {
  const int dev = x.device().index;
  im2col_kernel<T>
      <<<grid_size(int64_t(nb) * s.C * s.P, 256, dev), 256, 0, stream(dev)>>>(x.data<T>(), s, n0,
                                                                              nb, s_img, s_r, cols);
  check_launch(op, {&x});
}

// out = conv2d(x, weight) + bias.
template <class T>
void forward_im2col(const Tensor& x, const Tensor& w, const Tensor& bias, Tensor& out,
                    const ConvShape& s) {
  const char* op = "conv2d";
  const bool pointwise = is_pointwise(s);
  if (bias.defined()) out.copy_(bias.view({1, s.O, 1, 1}));  // the GEMMs add onto it (beta = 1)
  const int nb = images_per_chunk(s);
  const int64_t per_image = int64_t(s.C) * s.khw * s.P;
  Tensor cols = pointwise ? Tensor() : Tensor::empty({nb * per_image}, x.dtype(), x.device(), op);
  for (int n0 = 0; n0 < s.N; n0 += nb) {
    const int count = std::min(nb, s.N - n0);
    if (!pointwise) launch_im2col<T>(x, s, n0, count, per_image, s.P, cols.data<T>(), op);
    for (int g = 0; g < s.G; ++g) {  // one strided-batched GEMM over the chunk's images
      GemmArgs<T> ga;
      ga.batch = count;
      ga.m = s.Og;
      ga.n = s.P;
      ga.k = s.R;
      ga.a = rows_of<const T>(w.data<T>() + int64_t(g) * s.Og * s.R, s.R, 0);
      ga.b = pointwise ? rows_of<const T>(x.data<T>() + (int64_t(n0) * s.C + g * s.Cg) * s.HW, s.HW,
                                          int64_t(s.C) * s.HW)
                       : rows_of<const T>(cols.data<T>() + int64_t(g) * s.R * s.P, s.P, per_image);
      ga.c =
          rows_of<T>(out.data<T>() + (int64_t(n0) * s.O + g * s.Og) * s.P, s.P, int64_t(s.O) * s.P);
      ga.beta = bias.defined() ? 1 : 0;
      blas_gemm(x.device(), ga, op);
    }
  }
}

// grad_x = conv2d_backward_input(grad_out, weight).
template <class T>
void backward_input_im2col(const Tensor& go, const Tensor& w, Tensor& grad_x, const ConvShape& s) {
  const char* op = "conv2d_backward_input";
  const bool pointwise = is_pointwise(s);
  const int nb = images_per_chunk(s);
  const int64_t per_image = int64_t(s.C) * s.khw * s.P;
  Tensor cols = pointwise ? Tensor() : Tensor::empty({nb * per_image}, go.dtype(), go.device(), op);
  for (int n0 = 0; n0 < s.N; n0 += nb) {
    const int count = std::min(nb, s.N - n0);
    for (int g = 0; g < s.G; ++g) {
      GemmArgs<T> ga;
      ga.batch = count;
      ga.m = s.R;
      ga.n = s.P;
      ga.k = s.Og;
      ga.a = transposed<const T>(w.data<T>() + int64_t(g) * s.Og * s.R, s.R, 0);
      ga.b = rows_of<const T>(go.data<T>() + (int64_t(n0) * s.O + g * s.Og) * s.P, s.P,
                              int64_t(s.O) * s.P);
      ga.c = pointwise ? rows_of<T>(grad_x.data<T>() + (int64_t(n0) * s.C + g * s.Cg) * s.HW, s.HW,
                                    int64_t(s.C) * s.HW)
                       : rows_of<T>(cols.data<T>() + int64_t(g) * s.R * s.P, s.P, per_image);
      blas_gemm(go.device(), ga, op);
    }
    if (!pointwise) {
      const int dev = go.device().index;
      col2im_kernel<T><<<grid_size(int64_t(count) * s.C * s.HW, 256, dev), 256, 0, stream(dev)>>>(
          cols.data<T>(), s, n0, count, grad_x.data<T>());
      check_launch(op, {&go, &grad_x});
    }
  }
}

// grad_w = conv2d_backward_weight(grad_out, x), where the per-image products are smaller than
// grad_out (R < P: few taps over many positions, as a small CNN's first layer) and the sum is
// exact enough in T (float32, float64) and there is one group: per chunk, one strided-batched
// GEMM writes each image's product
//   partial[img] [O, R] = grad_out[img] [O, P] · cols[img]^T [P, R]
// reading grad_out in place, and one kernel adds the images' products up. Its scratch is
// N * O * R elements where the general form below copies grad_out's O * count * P.
template <class T>
void backward_weight_per_image(const Tensor& go, const Tensor& x, Tensor& grad_w,
                               const ConvShape& s) {
  const char* op = "conv2d_backward_weight";
  const int nb = images_per_chunk(s);
  const int64_t per_image = int64_t(s.O) * s.R;
  Tensor cols = Tensor::empty({int64_t(s.R) * nb * s.P}, x.dtype(), x.device(), op);
  Tensor partial = Tensor::empty({s.N * per_image}, x.dtype(), x.device(), op);
  for (int n0 = 0; n0 < s.N; n0 += nb) {
    const int count = std::min(nb, s.N - n0);
    const int64_t kdim = int64_t(count) * s.P;
    launch_im2col<T>(x, s, n0, count, s.P, kdim, cols.data<T>(), op);
    GemmArgs<T> ga;
    ga.batch = count;
    ga.m = s.O;
    ga.n = s.R;
    ga.k = s.P;
    ga.a = rows_of<const T>(go.data<T>() + int64_t(n0) * s.O * s.P, s.P, int64_t(s.O) * s.P);
    ga.b = transposed<const T>(cols.data<T>(), kdim, s.P);  // image img's [R, P] starts at img P
    ga.c = rows_of<T>(partial.data<T>() + n0 * per_image, s.R, per_image);
    blas_gemm(x.device(), ga, op);
  }
  const int dev = x.device().index;
  sum_splits<T, T><<<grid_size(per_image, 256, dev), 256, 0, stream(dev)>>>(partial.data<T>(), s.N,
                                                                            per_image,
                                                                            grad_w.data<T>());
  check_launch(op, {&go, &x, &grad_w});
}

// grad_w = conv2d_backward_weight(grad_out, x). Per chunk of images, cols is laid out
// [C*kh*kw, count*P] (image-major within a row) and grad_out's chunk is copied to
// [O, count*P], so that the sum over images and positions is one GEMM inner dimension; the
// groups are the batch of one strided-batched GEMM, and later chunks accumulate (beta = 1).
template <class T>
void backward_weight_im2col(const Tensor& go, const Tensor& x, Tensor& grad_w, const ConvShape& s) {
  if constexpr (std::is_same_v<T, compute_t<T>>)
    if (s.G == 1 && s.R < s.P) return backward_weight_per_image<T>(go, x, grad_w, s);
  const char* op = "conv2d_backward_weight";
  const int nb = images_per_chunk(s);
  const int64_t rows = int64_t(s.C) * s.khw;  // of cols, all groups
  Tensor cols = Tensor::empty({rows * nb * s.P}, x.dtype(), x.device(), op);
  for (int n0 = 0; n0 < s.N; n0 += nb) {
    const int count = std::min(nb, s.N - n0);
    const int64_t kdim = int64_t(count) * s.P;
    launch_im2col<T>(x, s, n0, count, s.P, kdim, cols.data<T>(), op);
    const Tensor go_t =
        go.narrow(0, n0, count).permute({1, 0, 2, 3}).contiguous();  // [O, count, P]
    GemmArgs<T> ga;
    ga.batch = s.G;
    ga.m = s.Og;
    ga.n = s.R;
    ga.k = int(kdim);
    ga.a = rows_of<const T>(go_t.data<T>(), kdim, int64_t(s.Og) * kdim);
    ga.b = transposed<const T>(cols.data<T>(), kdim, int64_t(s.R) * kdim);
    ga.c = rows_of<T>(grad_w.data<T>(), s.R, int64_t(s.Og) * s.R);
    ga.beta = n0 == 0 ? 0 : 1;
    blas_gemm(x.device(), ga, op);
  }
}

}  // namespace ember::cuda::conv
