// families.h — each op family's table of definitions (src/rules/<family>.cpp). The registry
// (registry.cpp) asks each once; adding a family is one line there and one here.
#pragma once
#include <vector>

#include "ember/autodiff/op.h"

namespace ember::autodiff {

std::vector<OpDef> elementwise_ops();    // unary, binary, scalar, comparisons, where, clamp, casts
std::vector<OpDef> reduction_ops();      // sum, mean, max, ..., sum_to and expand (broadcasting)
std::vector<OpDef> movement_ops();       // views, flip, cat/stack
std::vector<OpDef> indexing_ops();       // pad, index_select/add/put, gather/scatter, embedding
std::vector<OpDef> matmul_ops();         // matmul, linear
std::vector<OpDef> conv_pool_ops();      // conv2d, pooling and their backward ops
std::vector<OpDef> normalization_ops();  // batch/layer norm, dropout and their backward ops
std::vector<OpDef> attention_ops();      // scaled dot-product attention and its backward
std::vector<OpDef> softmax_loss_ops();   // softmax, log_softmax, the losses and their backward ops
std::vector<OpDef> creation_ops();       // zeros_like, ones_like, full_like, ...
std::vector<OpDef> rearrange_ops();      // sort, topk, cumsum, cumprod, tril, roll, repeat, resize
std::vector<OpDef> custom_function_ops();  // the caller's forward and backward (src/eager)
std::vector<OpDef> update_ops();  // copy_ and the optimizers' in-place updates (compiled steps)
std::vector<OpDef>
collective_ops();  // a bucket's all-reduce, start and wait (autodiff/collective.h)

}  // namespace ember::autodiff
