// test_cuda_matches_cpu.cpp — every op family run on CUDA and on the CPU backend with the same
// random inputs, in three layouts (contiguous, transposed, stepped slice) and at odd sizes; the
// CPU result is the reference. Skips visibly where no GPU is present.
#include <functional>

#include "test_util.h"

namespace ember {
namespace {

using Op = std::function<Tensor(const TensorList&)>;

struct Case {
  const char* name;
  std::vector<Shape> shapes;  // one per input
  Op op;
  double lo = -2.0, hi = 2.0;  // input range (positive for log/sqrt)
  double tol = 1e-4;
};

// How an input is laid out in memory: the same values, different strides.
enum class Layout { Contiguous, Transposed, Stepped };

// `shape`'s values on `device`, laid out as asked (same values on every device for a seed).
Tensor make_input(const Shape& shape, uint32_t seed, Layout layout, Device device, double lo,
                  double hi) {
  if (shape.size() < 2 || layout == Layout::Contiguous)
    return test::random_tensor(shape, seed, DType::Float32, device, lo, hi);
  if (layout == Layout::Transposed) {
    Shape swapped = shape;
    std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
    return test::random_tensor(swapped, seed, DType::Float32, device, lo, hi).transpose(-1, -2);
  }
  Shape wide = shape;
  wide.back() *= 2;
  return test::random_tensor(wide, seed, DType::Float32, device, lo, hi)
      .slice(-1, 0, Slice::kEnd, 2);
}

std::vector<Case> cases() {
  return {
      {"add_broadcast", {{33, 17}, {17}}, [](const TensorList& x) { return add(x[0], x[1]); }},
      {"mul", {{65, 31}, {65, 31}}, [](const TensorList& x) { return mul(x[0], x[1]); }},
      {"div", {{7, 9}, {7, 9}}, [](const TensorList& x) { return div(x[0], x[1]); }, 0.5, 2.0},
      {"pow", {{7, 9}, {7, 9}}, [](const TensorList& x) { return pow(x[0], x[1]); }, 0.5, 2.0},
      {"maximum", {{5, 13}, {5, 13}}, [](const TensorList& x) { return maximum(x[0], x[1]); }},
      {"exp", {{31, 9}}, [](const TensorList& x) { return exp(x[0]); }},
      {"log", {{31, 9}}, [](const TensorList& x) { return log(x[0]); }, 0.1, 3.0},
      {"sqrt", {{31, 9}}, [](const TensorList& x) { return sqrt(x[0]); }, 0.1, 3.0},
      {"tanh", {{31, 9}}, [](const TensorList& x) { return tanh(x[0]); }},
      {"sigmoid", {{31, 9}}, [](const TensorList& x) { return sigmoid(x[0]); }},
      {"gelu", {{31, 9}}, [](const TensorList& x) { return gelu(x[0]); }},
      {"gelu_tanh", {{31, 9}}, [](const TensorList& x) { return gelu(x[0], "tanh"); }},
      {"silu", {{31, 9}}, [](const TensorList& x) { return silu(x[0]); }},
      {"softplus", {{31, 9}}, [](const TensorList& x) { return softplus(x[0]); }},
      {"gelu_backward",
       {{31, 9}, {31, 9}},
       [](const TensorList& x) { return gelu_backward(x[0], x[1]); }},
      {"where_gt",
       {{11, 6}, {11, 6}},
       [](const TensorList& x) { return where(gt(x[0], x[1]), x[0], x[1]); }},
      {"clamp", {{11, 6}}, [](const TensorList& x) { return clamp(x[0], -0.5, 0.7); }},
      {"sum_dim0", {{129, 7}}, [](const TensorList& x) { return sum(x[0], {0}); }},
      {"sum_all", {{257, 33}}, [](const TensorList& x) { return sum(x[0]); }, -2, 2, 1e-3},
      {"mean_keepdim", {{3, 17, 5}}, [](const TensorList& x) { return mean(x[0], {1}, true); }},
      {"var", {{19, 23}}, [](const TensorList& x) { return var(x[0], {1}); }},
      {"amax", {{19, 23}}, [](const TensorList& x) { return amax(x[0], {0}); }},
      {"argmax", {{19, 23}}, [](const TensorList& x) { return argmax(x[0], 1); }},
      {"logsumexp", {{19, 23}}, [](const TensorList& x) { return logsumexp(x[0], {1}); }},
      {"norm", {{19, 23}}, [](const TensorList& x) { return norm(x[0], 2.0, {1}); }},
      {"softmax", {{37, 1001}}, [](const TensorList& x) { return softmax(x[0], -1); }},
      {"log_softmax_dim0", {{37, 19}}, [](const TensorList& x) { return log_softmax(x[0], 0); }},
      {"softmax_backward",
       {{9, 65}, {9, 65}},
       [](const TensorList& x) { return softmax_backward(x[0], softmax(x[1], 1), 1); }},
      {"mse_loss", {{9, 13}, {9, 13}}, [](const TensorList& x) { return mse_loss(x[0], x[1]); }},
      {"bce_logits",
       {{9, 13}, {9, 13}},
       [](const TensorList& x) { return binary_cross_entropy_with_logits(x[0], sigmoid(x[1])); }},
      {"cross_entropy",
       {{17, 10}},
       [](const TensorList& x) {
         Tensor target = argmax(x[0].slice(1, 0, 5), 1);  // a deterministic int64 target
         return cross_entropy(x[0], target, Tensor(), -100, LossReduction::Mean, 0.1);
       }},
      {"cross_entropy_backward",
       {{17, 10}},
       [](const TensorList& x) {
         Tensor target = argmax(x[0].slice(1, 3, 9), 1);
         Tensor g = scalar_tensor(1.0, DType::Float32, x[0].device());
         return cross_entropy_backward(g, x[0], target);
       }},
      {"matmul", {{33, 65}, {65, 17}}, [](const TensorList& x) { return matmul(x[0], x[1]); }},
      {"matmul_tiled",
       {{33, 65}, {65, 17}},
       [](const TensorList& x) { return matmul(x[0], x[1], MatmulAlgo::Tiled); }},
      {"matmul_batched",
       {{3, 9, 5}, {5, 7}},
       [](const TensorList& x) { return matmul(x[0], x[1]); }},
      {"conv2d",
       {{2, 3, 11, 9}, {4, 3, 3, 3}, {4}},
       [](const TensorList& x) { return conv2d(x[0], x[1], x[2], 2, 1); }},
      {"conv2d_groups_dilation",
       {{2, 4, 12, 10}, {6, 2, 3, 3}},
       [](const TensorList& x) { return conv2d(x[0], x[1], Tensor(), 1, 2, 2, 2); }},
      {"conv2d_backward_input",
       {{2, 4, 9, 9}, {4, 3, 3, 3}},
       [](const TensorList& x) {
         return conv2d_backward_input(x[0], x[1], {2, 3, 11, 11}, 1, 0);
       }},
      {"conv2d_backward_weight",
       {{2, 4, 9, 9}, {2, 3, 11, 11}},
       [](const TensorList& x) {
         return conv2d_backward_weight(x[0], x[1], {4, 3, 3, 3}, 1, 0);
       },
       -2,
       2,
       1e-3},
      {"max_pool2d",
       {{2, 3, 9, 11}},
       [](const TensorList& x) { return max_pool2d(x[0], 2).values; }},
      {"max_pool2d_with_offsets",  // the compact form: values, offsets and their backward
       {{2, 3, 9, 11}, {2, 3, 5, 6}},
       [](const TensorList& x) {
         const MaxPoolOffsets r = max_pool2d_with_offsets(x[0], 3, 2, 1);
         const Shape in = x[0].shape();
         const Tensor indices = max_pool2d_offsets_to_indices(r.offsets, in, 3, 2, 1);
         const Tensor gx = max_pool2d_offsets_backward(x[1], r.offsets, in, 3, 2, 1);
         return cat({r.values.flatten(), r.offsets.to(DType::Float32).flatten(),
                     indices.to(DType::Float32).flatten(), gx.flatten()});
       }},
      {"max_pool2d_with_offsets_int32",  // 17 x 16 windows: int32 offsets
       {{1, 2, 21, 19}, {1, 2, 2, 8}},
       [](const TensorList& x) {
         const Size2 k(17, 16), s(7, 3), d(2, 1);
         const MaxPoolOffsets r = max_pool2d_with_offsets(x[0], k, s, 8, d, true);
         const Tensor gx =
             max_pool2d_offsets_backward(x[1], r.offsets, x[0].shape(), k, s, 8, d, true);
         return cat({r.values.flatten(), r.offsets.to(DType::Float32).flatten(), gx.flatten()});
       }},
      {"avg_pool2d",
       {{2, 3, 9, 11}},
       [](const TensorList& x) { return avg_pool2d(x[0], 3, 2, 1, true); }},
      {"adaptive_avg_pool2d",
       {{2, 3, 9, 11}},
       [](const TensorList& x) {
         return adaptive_avg_pool2d(x[0], {4, 3});
       }},
      {"batch_norm_train",
       {{8, 3, 5, 7}, {3}, {3}},
       [](const TensorList& x) {
         return batch_norm(x[0], x[1], x[2], Tensor(), Tensor(), true).output;
       }},
      {"layer_norm",
       {{6, 33}, {33}, {33}},
       [](const TensorList& x) { return layer_norm(x[0], {33}, x[1], x[2]).output; }},
      {"index_select",
       {{9, 7}},
       [](const TensorList& x) {
         Tensor idx = Tensor::from_vector(std::vector<int64_t>{4, 0, 8, 4}, {4}).to(x[0].device());
         return index_select(x[0], 0, idx);
       }},
      {"embedding_backward",
       {{5, 4}},
       [](const TensorList& x) {
         Tensor idx =
             Tensor::from_vector(std::vector<int64_t>{1, 3, 1, 0, 1}, {5}).to(x[0].device());
         return embedding_backward(x[0], idx, 6);
       }},
      {"pad_reflect",
       {{2, 5, 6}},
       [](const TensorList& x) {
         return pad(x[0], {2, 1, 1, 3}, "reflect");
       }},
  };
}

TEST(CudaMatchesCpu, EveryOpFamilyInThreeLayouts) {
  if (!cuda_is_available()) GTEST_SKIP() << "no CUDA device here";
  const Device gpu("cuda:0");
  for (const Case& c : cases()) {
    for (Layout layout : {Layout::Contiguous, Layout::Transposed, Layout::Stepped}) {
      SCOPED_TRACE(std::string(c.name) + " layout " + std::to_string(int(layout)));
      TensorList on_cpu, on_gpu;
      for (size_t i = 0; i < c.shapes.size(); ++i) {
        uint32_t seed = uint32_t(1000 + 17 * i);
        on_cpu.push_back(make_input(c.shapes[i], seed, layout, Device(), c.lo, c.hi));
        on_gpu.push_back(make_input(c.shapes[i], seed, layout, gpu, c.lo, c.hi));
      }
      Tensor want = c.op(on_cpu);
      Tensor got = c.op(on_gpu);
      ASSERT_EQ(got.device(), gpu);
      test::expect_close(got.to(Device()), want, c.tol, c.tol);
    }
  }
}

TEST(CudaMatchesCpu, RandomStreamsAreIdentical) {
  if (!cuda_is_available()) GTEST_SKIP() << "no CUDA device here";
  Generator cpu_gen{1234}, gpu_gen{1234};
  Tensor a = uniform({1001}, 0.0, 1.0, DType::Float32, Device(), &cpu_gen);
  Tensor b = uniform({1001}, 0.0, 1.0, DType::Float32, Device("cuda:0"), &gpu_gen);
  test::expect_close(b.to(Device()), a, 0, 0);
}

// index_add sorts its indices on CUDA and adds each row's sources in index order, as the CPU
// loop does: the bits equal the CPU's and repeat from run to run (embedding's backward too, which
// PyTorch also keeps deterministic). Many repeats (1 000 rows into 7) and an [outer, k, inner]
// shape; the sums are also checked against float64 sums of the same sources.
TEST(CudaMatchesCpu, IndexAddIsTheCpusBitsAndRepeats) {
  if (!cuda_is_available()) GTEST_SKIP() << "no CUDA device here";
  const Device gpu("cuda:0");
  const int64_t k = 1000, n = 7, outer = 3, inner = 37;
  std::vector<int64_t> rows(k);
  for (int64_t j = 0; j < k; ++j) rows[size_t(j)] = (j * 5 + j / 3) % n;
  const Tensor idx = Tensor::from_vector(rows, {k});
  for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float64, DType::Int64}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor src =
        test::random_tensor({outer, k, inner}, 77, DType::Float64, Device(), -3, 3).to(dtype);
    const Tensor base =
        test::random_tensor({outer, n, inner}, 78, DType::Float64, Device(), -3, 3).to(dtype);
    Tensor want = base.clone();
    index_add_(want, 1, idx, src);
    Tensor first = base.to(gpu), second = base.to(gpu);
    index_add_(first, 1, idx.to(gpu), src.to(gpu));
    index_add_(second, 1, idx.to(gpu), src.to(gpu));
    test::expect_close(first.to(Device()), want, 0, 0);
    test::expect_close(second.to(Device()), want, 0, 0);
    if (dtype == DType::Float32 || dtype == DType::Float64) {  // against float64 sums
      Tensor exact = base.to(DType::Float64);
      index_add_(exact, 1, idx, src.to(DType::Float64));
      test::expect_close(first.to(Device()).to(DType::Float64), exact, 1e-3, 1e-5);
    }
  }
  Tensor grad = test::random_tensor({k, inner}, 79, DType::Float32, gpu);
  test::expect_close(embedding_backward(grad, idx.to(gpu), n).to(Device()),
                     embedding_backward(grad.to(Device()), idx, n), 0, 0);
}

}  // namespace
}  // namespace ember
