// render_parts.h — pieces of a fused kernel's source that render.cpp and render_reduction.cpp
// share (internal header).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "ember/autodiff/compile/codegen.h"
#include "layout.h"

namespace ember::autodiff::compile::codegen {

std::string num(int64_t n);                    // "12LL"
std::string base(size_t input);                // "b3": input 3's offset of the current item
std::string out_name(size_t k);                // "out", "out1", ...
std::string result(const FusionGroup& group);  // the last node's value: "v7"
// The group's statements at one position: input i's element is in<i>[<offset(i)>].
std::string element(const FusionGroup& group, Target target, const std::string& indent,
                    const std::function<std::string(size_t)>& offset);
// Splits `index` over dims (outermost first), adding each input's offset into <prefix><i>,
// declared here from <start><i> (from 0 when start is empty).
std::string split_index(const std::vector<LoopDim>& dims, size_t inputs, const std::string& index,
                        const std::string& indent, const std::string& prefix = "b",
                        const std::string& start = "");

// The loop of a reducing group over its rows [begin, end) (CPU) or a grid-stride loop of blocks
// over its rows (CUDA), inside the kernel's braces after its pointers.
std::string cpu_reduction_body(const FusionGroup& group, const Layout& layout);
std::string cuda_reduction_body(const FusionGroup& group, const Layout& layout);
// The threads a reducing CUDA kernel is launched with: one 256-thread block per row, as
// jit::launch_cuda makes its blocks.
int64_t cuda_reduction_threads(const Layout& layout);

}  // namespace ember::autodiff::compile::codegen
