// render_reduction.cpp — the loops of a group that ends in a reduction over its innermost dims
// (see render_parts.h).
//
// CPU: one row (output element) per item, threads taking ranges of rows as in every fused
// kernel. The row's elements are computed and folded in the order core-runtime's CPU reduction
// folds a contiguous row (cpu/reduce_loops.h: lanes of 128 bytes, blocks of 64 elements a lane
// combined pairwise as a binary counter carries, and, for fewer than 8 rows of at least 2^16
// elements, the same chunks as its threads take, combined in order): the fused sum, mean and amax
// equal the unfused ones bit for bit. Those few long rows then run on one thread each, where the
// library's threads share them.
//
// CUDA: one block per row (a grid-stride loop over rows), each thread folding a strided part of
// the row, then a warp shuffle and one shared-memory step across the warps. That order is not the
// library's CUDA kernel's: a sum or mean agrees within rounding, amax exactly but for the sign
// of a zero maximum and which NaN it keeps.
#include <algorithm>
#include <limits>

#include "c_types.h"
#include "render_parts.h"

namespace ember::autodiff::compile::codegen {
namespace {

constexpr int64_t kFewOutputs = 8;         // cpu/reduce_loops.h: kFewOutputs
constexpr int64_t kParallelGrain = 32768;  // cpu/parallel.h: kParallelGrain
constexpr int64_t kMaxChunks = 64;         // cpu/reduce_loops.h: the chunks of one output
constexpr int64_t kCudaThreads = 256;      // jit::launch_cuda's block

bool is_max(const FusionGroup& group) { return group.reduction() == FusedReduction::Max; }

// The library's reducer: its start, and one fold of b into a (step and combine are one op for
// sum and amax). Any NaN makes amax NaN, as ops/reduction_kernels.h's Extreme.
std::string start(const FusionGroup& group) {
  return literal(is_max(group) ? -std::numeric_limits<double>::infinity() : 0.0, group.out_dtype());
}
std::string join(const FusionGroup& group, const std::string& a, const std::string& b) {
  if (!is_max(group)) return a + " + " + b;
  return "(((" + b + ") > (" + a + ")) | ((" + b + ") != (" + b + "))) ? (" + b + ") : (" + a + ")";
}

// The stored result of a row's fold `acc`: the mean divides in the compute type, as the
// library's Mean::project.
std::string project(const FusionGroup& group, const Layout& layout, const std::string& acc) {
  const DType t = group.out_dtype();
  std::string value = acc;
  if (group.reduction() == FusedReduction::Mean)
    value = "(" + acc + ") / " + literal(double(layout.reduced_count), t);
  return store(t, in_dtype(t, value));
}

// Element j of the row whose inputs start at b<i>: the offsets along the reduced dims, the
// group's statements, and the stores of the values written beside the reduction.
std::string row_element(const FusionGroup& group, Target target, const Layout& layout,
                        const std::string& indent) {
  const size_t inputs = group.inputs().size();
  std::string text;
  std::function<std::string(size_t)> offset;
  if (layout.reduced.size() == 1) {
    const LoopDim& dim = layout.reduced[0];
    offset = [&dim](size_t i) { return base(i) + " + j * " + num(dim.steps[1 + i]); };
  } else {
    text += split_index(layout.reduced, inputs, "j", indent, "r", "b");
    offset = [](size_t i) { return "r" + std::to_string(i); };
  }
  text += element(group, target, indent, offset);
  const std::vector<int> outs = group.outputs();
  for (size_t k = 1; k < outs.size(); ++k)
    text += indent + out_name(k) + "[item * " + num(layout.reduced_count) +
            " + j] = " + store(group.output_dtype(k), "v" + std::to_string(outs[k])) + ";\n";
  return text;
}

}  // namespace

std::string cpu_reduction_body(const FusionGroup& group, const Layout& layout) {
  const std::string A = compute_type(group.out_dtype()), init = start(group);
  // cpu/reduce_loops.h: lanes<Acc>() (128 bytes, 8 to 32) and pairwise_block<Acc>().
  const int64_t acc_bytes = group.out_dtype() == DType::Float64 ? 8 : 4;  // compute_t's
  const int64_t lanes = std::clamp<int64_t>(128 / acc_bytes, 8, 32);
  const int64_t block = 64 * lanes, n = layout.reduced_count;
  const std::string L = std::to_string(lanes);
  auto fold = [&](const std::string& a, const std::string& b) { return join(group, a, b); };
  std::string text = "  for (e_i64 item = begin; item < end; ++item) {\n" +
                     split_index(layout.kept, group.inputs().size(), "item", "    ") +
                     "    auto e_at = [&](e_i64 j) -> " + A + " {\n" +
                     row_element(group, Target::Cpu, layout, "      ") + "      return " +
                     result(group) + ";\n    };\n";
  // fold_lanes: fewer than L elements one after another, else L interleaved lanes (the tail in
  // the first lanes) folded pairwise.
  text += "    auto e_fold = [&](e_i64 i0, e_i64 n) -> " + A + " {\n" + "      if (n < " + L +
          ") {\n        " + A + " acc = " + init + ";\n" +
          "        for (e_i64 i = 0; i < n; ++i) { const " + A +
          " x = e_at(i0 + i); acc = " + fold("acc", "x") + "; }\n        return acc;\n      }\n" +
          "      " + A + " lane[" + L + "];\n" + "      for (int k = 0; k < " + L +
          "; ++k) lane[k] = " + init + ";\n" + "      e_i64 i = 0;\n" + "      for (; i + " + L +
          " <= n; i += " + L + ")\n" + "        for (int k = 0; k < " + L + "; ++k) { const " + A +
          " x = e_at(i0 + i + k); lane[k] = " + fold("lane[k]", "x") + "; }\n" +
          "      for (int k = 0; k < " + L + " && i < n; ++i, ++k) { const " + A +
          " x = e_at(i0 + i); lane[k] = " + fold("lane[k]", "x") + "; }\n" +
          "      for (int w = " + L + " / 2; w > 0; w /= 2)\n" +
          "        for (int k = 0; k < w; ++k) lane[k] = " + fold("lane[k]", "lane[k + w]") +
          ";\n      return lane[0];\n    };\n";
  // reduce_run: blocks combined as a binary counter carries, then the levels from the earliest,
  // then the tail.
  const std::string B = num(block);
  text += "    auto e_run = [&](e_i64 i0, e_i64 n) -> " + A + " {\n" + "      if (n <= " + B +
          ") return e_fold(i0, n);\n" + "      " + A +
          " level[64];\n      e_i64 blocks = 0, i = 0;\n" + "      for (; i + " + B +
          " <= n; i += " + B + ", ++blocks) {\n" + "        " + A + " v = e_fold(i0 + i, " + B +
          ");\n        int k = 0;\n" +
          "        for (e_i64 carry = blocks; carry & 1; carry >>= 1, ++k) v = " +
          fold("level[k]", "v") + ";\n        level[k] = v;\n      }\n" +
          "      int k = 63;\n      while (!(blocks >> k & 1)) --k;\n" + "      " + A +
          " acc = level[k];\n" +
          "      while (--k >= 0) if (blocks >> k & 1) acc = " + fold("acc", "level[k]") + ";\n" +
          "      if (i < n) { const " + A +
          " tail = e_fold(i0 + i, n - i); acc = " + fold("acc", "tail") +
          "; }\n      return acc;\n    };\n";
  // cpu_reduce: few long rows are cut into the chunks its threads take; every chunk (or the
  // whole row) starts from the reducer's start.
  if (layout.items < kFewOutputs && n >= 2 * kParallelGrain) {
    const int64_t chunks = std::min(n / kParallelGrain, kMaxChunks);
    text += "    " + A + " acc = " + init + ";\n" + "    for (e_i64 c = 0; c < " + num(chunks) +
            "; ++c) {\n" + "      const e_i64 lo = " + num(n) + " * c / " + num(chunks) +
            ", hi = " + num(n) + " * (c + 1) / " + num(chunks) + ";\n" + "      const " + A +
            " part0 = e_run(lo, hi - lo);\n" + "      const " + A +
            " part = " + fold(init, "part0") + ";\n" +
            "      acc = c == 0 ? part : " + fold("acc", "part") + ";\n    }\n";
  } else {
    text += "    const " + A + " whole = e_run(0, " + num(n) + ");\n" + "    const " + A +
            " acc = " + fold(init, "whole") + ";\n";
  }
  return text + "    out[item] = " + project(group, layout, "acc") + ";\n  }\n";
}

std::string cuda_reduction_body(const FusionGroup& group, const Layout& layout) {
  const std::string A = compute_type(group.out_dtype()), init = start(group);
  auto fold = [&](const std::string& a, const std::string& b) { return join(group, a, b); };
  const std::string shuffle =
      "for (int o = 16; o > 0; o >>= 1) { const " + A +
      " x = __shfl_down_sync(0xffffffffu, acc, o); acc = " + fold("acc", "x") + "; }\n";
  return "  __shared__ " + A + " e_part[32];\n" + "  for (e_i64 item = blockIdx.x; item < " +
         num(layout.items) + "; item += gridDim.x) {\n" +
         split_index(layout.kept, group.inputs().size(), "item", "    ") + "    " + A +
         " acc = " + init + ";\n" + "    for (e_i64 j = threadIdx.x; j < " +
         num(layout.reduced_count) + "; j += blockDim.x) {\n" +
         row_element(group, Target::Cuda, layout, "      ") +
         "      acc = " + fold("acc", result(group)) + ";\n    }\n    " + shuffle +
         "    if ((threadIdx.x & 31) == 0) e_part[threadIdx.x >> 5] = acc;\n" +
         "    __syncthreads();\n" + "    if (threadIdx.x < 32) {\n" +
         "      acc = threadIdx.x < (blockDim.x >> 5) ? e_part[threadIdx.x] : " + init + ";\n" +
         "      " + shuffle +
         "      if (threadIdx.x == 0) out[item] = " + project(group, layout, "acc") + ";\n    }\n" +
         "    __syncthreads();  // e_part is the next row's\n  }\n";
}

int64_t cuda_reduction_threads(const Layout& layout) { return layout.items * kCudaThreads; }

}  // namespace ember::autodiff::compile::codegen
