// debug_log.h — EMBER_DEBUG=1: one line on stderr per op that runs, eager or in a graph:
//   [ember] conv2d(f32[32,1,28,28], f32[16,1,3,3], f32[16]) -> f32[32,16,26,26] on cpu: 0.412 ms
// The time is the host's: on CUDA, the launch (kernels run asynchronously).
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "ember/tensor.h"

namespace ember::autodiff {

bool debug_enabled();  // EMBER_DEBUG is set to something other than "" or "0" (read once)
void log_op(const std::string& op, const std::vector<Tensor>& inputs,
            const std::vector<Tensor>& outputs, std::chrono::steady_clock::time_point start);

}  // namespace ember::autodiff
