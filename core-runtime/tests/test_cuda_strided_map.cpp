// test_cuda_strided_map.cpp — the strided paths of the GPU elementwise engine (src/cuda/loops.cuh):
// copies, casts and a broadcast add of views the engine walks by vectors (GPT's per-head view, a
// stride-0 outer dim, a large view) and of views it must walk by elements (a transpose, an inner
// size that is not a multiple of the vector, a misaligned base), empty and 0-d tensors too. Each
// result is checked bit for bit against a reference computed here by brute force over the
// indices of the input's host copy. GPU only: every test skips visibly without one.
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cuda_test.h"
#include "test_util.h"

namespace ember {
namespace {

using CudaStridedMap = test::CudaTest;
using View = std::function<Tensor(const Tensor&)>;

// How a test lays out its operand: `view` of a contiguous tensor of shape `base`. `writable`:
// the view may be written (no two of its elements share memory).
struct Layout {
  const char* name;
  Shape base;
  View view;
  bool writable = true;
};

// A contiguous host tensor of T with random values in [-4, 4), rounded to T.
template <class T> Tensor host_random(const Shape& shape, uint32_t seed) {
  const std::vector<double> v = test::random_values(shape_numel(shape), seed, -4.0, 4.0);
  std::vector<T> t(v.size());
  for (size_t i = 0; i < v.size(); ++i) t[i] = T(v[i]);
  return Tensor::from_vector(t, shape);
}

// The offset from v's first element of each of its elements, in row-major order: for each index
// (i0, i1, ...) of v's shape, sum i_d * stride_d.
std::vector<int64_t> offsets(const Tensor& v) {
  std::vector<int64_t> off;
  std::vector<int64_t> idx(size_t(v.dim()), 0);
  for (int64_t n = 0; n < v.numel(); ++n) {
    int64_t o = 0;
    for (int64_t d = 0; d < v.dim(); ++d) o += idx[size_t(d)] * v.stride(d);
    off.push_back(o);
    for (int64_t d = v.dim() - 1; d >= 0; --d) {  // the next index, last dim fastest
      if (++idx[size_t(d)] < v.size(d)) break;
      idx[size_t(d)] = 0;
    }
  }
  return off;
}

// The elements of the host view v, row-major, read through offsets().
template <class T> std::vector<T> gather(const Tensor& v) {
  std::vector<T> x;
  for (int64_t o : offsets(v)) x.push_back(v.data<T>()[o]);
  return x;
}

// got equals want bit for bit; one failure line, naming the first difference.
template <class T>
void expect_bits(const Tensor& got, const std::vector<T>& want, const std::string& what) {
  ASSERT_EQ(got.numel(), int64_t(want.size())) << what;
  const Tensor host = got.to(Device()).contiguous();
  const T* g = host.data<T>();
  int64_t wrong = 0, first = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&g[i], &want[i], sizeof(T)) != 0 && wrong++ == 0) first = int64_t(i);
  EXPECT_EQ(wrong, 0) << what << ": " << wrong << " of " << want.size()
                      << " elements differ; the first, element " << first << ", is "
                      << double(compute_t<T>(g[first])) << ", expected "
                      << double(compute_t<T>(want[first]));
}

template <class Out, class In> std::string pair_name(const Layout& l, const char* op) {
  return std::string(l.name) + ": " + op + " " + dtype_name(dtype_of_v<In>) + " -> " +
         dtype_name(dtype_of_v<Out>);
}

// Reading the view: a new contiguous tensor of Out copied (and cast) from view(x) on the GPU.
// Writing it: view(y) of a zero tensor y of Out copied from a contiguous x, checked over the
// whole of y (what lies outside the view stays zero).
template <class Out, class In> void check_copy(const Device& gpu, const Layout& l) {
  const Tensor base = host_random<In>(l.base, 1);
  const Tensor x = l.view(base);
  const Tensor out = Tensor::empty(x.shape(), dtype_of_v<Out>, gpu);
  out.copy_(l.view(base.to(gpu)));
  ASSERT_EQ(out.shape(), x.shape());
  std::vector<Out> want;
  for (const In& v : gather<In>(x)) want.push_back(static_cast<Out>(v));
  expect_bits(out, want, pair_name<Out, In>(l, "read"));
  if (!l.writable) return;

  const Tensor src = host_random<In>(x.shape(), 2);
  const Tensor y = Tensor::empty(l.base, dtype_of_v<Out>, gpu).zero_();
  l.view(y).copy_(src.to(gpu));
  std::vector<Out> want_y(size_t(shape_numel(l.base)), Out(0.0f));
  const Tensor y_host_view = l.view(Tensor::from_vector(want_y, l.base));
  const std::vector<In> s = gather<In>(src);
  const std::vector<int64_t> off = offsets(y_host_view);
  const int64_t first = y_host_view.offset();  // of the view's first element in y
  for (size_t i = 0; i < off.size(); ++i) want_y[size_t(first + off[i])] = static_cast<Out>(s[i]);
  expect_bits(y, want_y, pair_name<Out, In>(l, "write"));
}

// view(x) + b on the GPU, b a contiguous [C] broadcast along the view's last dim (size C).
template <class T> void check_add(const Device& gpu, const Layout& l) {
  using C = compute_t<T>;
  const Tensor base = host_random<T>(l.base, 3);
  const Tensor x = l.view(base);
  const Shape b_shape = x.dim() == 0 ? Shape{} : Shape{x.size(-1)};
  const Tensor b = host_random<T>(b_shape, 4);
  const Tensor out = add(l.view(base.to(gpu)), b.to(gpu));
  ASSERT_EQ(out.shape(), x.shape());
  const std::vector<T> xv = gather<T>(x), bv = gather<T>(b);
  std::vector<T> want;
  for (size_t i = 0; i < xv.size(); ++i) want.push_back(T(C(xv[i]) + C(bv[i % bv.size()])));
  expect_bits(out, want, pair_name<T, T>(l, "add"));
}

// Every check on one layout: the four copies and casts both ways, and the add in two dtypes.
void check_layout(const Device& gpu, const Layout& l) {
  check_copy<BFloat16, float>(gpu, l);
  check_copy<float, BFloat16>(gpu, l);
  check_copy<Half, Half>(gpu, l);
  check_copy<double, double>(gpu, l);
  check_add<float>(gpu, l);
  check_add<BFloat16>(gpu, l);
}

// GPT's attention heads: q, k, v side by side in the rows of a [B, T, 3C] projection, C = H * D;
// head h of k is the [B, H, T, D] view with strides [T * 3C, D, 3C, 1] starting at element C.
Layout heads_of_k(int64_t B, int64_t T, int64_t H, int64_t D) {
  const int64_t C = H * D;
  return {"k heads", {B, T, 3 * C}, [=](const Tensor& qkv) {
            return qkv.narrow(2, C, C).view({B, T, H, D}).transpose(1, 2);
          }};
}

TEST_F(CudaStridedMap, GptPerHeadView) {
  const Layout l = heads_of_k(2, 5, 3, 64);
  const Tensor k = l.view(Tensor::empty(l.base));
  ASSERT_EQ(k.shape(), (Shape{2, 3, 5, 64}));
  ASSERT_EQ(k.strides(), (Strides{5 * 576, 64, 576, 1}));
  check_layout(gpu, l);
}

TEST_F(CudaStridedMap, TransposeWalksElements) {  // inner stride 37 in the input
  check_layout(gpu, {"transpose", {64, 37}, [](const Tensor& x) { return x.t(); }});
}

TEST_F(CudaStridedMap, InnerSizeNotAMultipleOfTheVector) {
  check_layout(gpu,
               {"narrow to 61", {7, 11, 64}, [](const Tensor& x) { return x.narrow(-1, 0, 61); }});
}

TEST_F(CudaStridedMap, MisalignedBase) {  // all a vector needs but the alignment of element 0
  check_layout(gpu,
               {"rows from 1", {7, 11, 72}, [](const Tensor& x) { return x.narrow(-1, 1, 64); }});
  check_layout(gpu,
               {"contiguous from 1", {193}, [](const Tensor& x) { return x.narrow(0, 1, 192); }});
}

TEST_F(CudaStridedMap, StrideZeroOuterDim) {  // [5, 9, 64], strides [64, 0, 1]
  Layout l{"expand", {5, 1, 64}, [](const Tensor& x) { return x.expand({5, 9, 64}); }};
  l.writable = false;  // its elements share memory
  check_layout(gpu, l);
}

TEST_F(CudaStridedMap, EmptyTensor) {
  check_layout(gpu, {"empty", {4, 8, 64}, [](const Tensor& x) { return x.narrow(1, 3, 0); }});
}

TEST_F(CudaStridedMap, ZeroDimTensor) {  // element 69: misaligned
  check_layout(gpu, {"0-d", {3, 64}, [](const Tensor& x) { return x.select(0, 1).select(0, 5); }});
}

TEST_F(CudaStridedMap, LargeViews) {
  // 3 x 1001 x 1024 = 3 075 072 elements, rows of 1024 out of 1088, starting at element 64.
  check_layout(gpu, {"large rows", {3, 1001, 1088}, [](const Tensor& x) {
                       return x.narrow(-1, 64, 1024);
                     }});
  check_layout(gpu, heads_of_k(3, 1001, 5, 64));  // [3, 5, 1001, 64] of [3, 1001, 960]
}

}  // namespace
}  // namespace ember
