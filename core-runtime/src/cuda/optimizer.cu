// optimizer.cu — CUDA kernels of the fused optimizer updates: one launch updates every tensor of
// the group, whatever their number and sizes.
//
// The host lays out a table in one small device buffer: per tensor, the address in each list and
// the element count; then one (tensor, first element) pair per chunk of kChunk elements. Block b
// updates chunk b. A model's hundreds of parameters thus cost one copy of the table and one
// launch per step instead of hundreds of launches, which for small tensors would take longer than
// the arithmetic. Each element is updated by the formula in ops/optimizer_kernels.h.
#include <cstdint>
#include <vector>

#include "cuda/launch.cuh"
#include "kernels.h"
#include "ops/optimizer_kernels.h"

namespace ember::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kChunk = 65536;    // elements per block
constexpr int kMaxLists = 5;         // params, grads and up to three state lists
constexpr int kRow = kMaxLists + 1;  // table words per tensor: kMaxLists addresses, then numel

// table: [tensors][kRow] words; chunks: [blocks][2] words (tensor, first element).
template <class T, class Update>
__global__ void __launch_bounds__(kThreads)
    multi_tensor_step(const int64_t* table, const int64_t* chunks, Update update) {
  const int64_t* row = table + chunks[2 * blockIdx.x] * kRow;
  const int64_t begin = chunks[2 * blockIdx.x + 1];
  const int64_t end = min(begin + kChunk, row[kMaxLists]);
  T* p[kMaxLists];
#pragma unroll
  for (int k = 0; k < kMaxLists; ++k) p[k] = reinterpret_cast<T*>(row[k]);  // null: unused list
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) update(p, i);
}

// Builds the table for `lists` on the params' device and launches one multi_tensor_step.
template <class T, class Update>
void launch(const char* op, const std::vector<TensorList>& lists, const Update& update) {
  const TensorList& params = lists[0];
  std::vector<int64_t> words;
  for (size_t i = 0; i < params.size(); ++i) {
    for (size_t k = 0; k < size_t(kMaxLists); ++k) {
      const bool used = k < lists.size() && !lists[k].empty();
      words.push_back(used ? int64_t(reinterpret_cast<uintptr_t>(lists[k][i].data_ptr())) : 0);
    }
    words.push_back(params[i].numel());
  }
  const size_t table_words = words.size();
  int64_t blocks = 0;
  for (size_t i = 0; i < params.size(); ++i)
    for (int64_t b = 0; b < params[i].numel(); b += kChunk, ++blocks) {
      words.push_back(int64_t(i));
      words.push_back(b);
    }
  if (blocks == 0) return;  // only empty tensors
  const Device dev = params[0].device();
  DeviceGuard guard(dev);
  // Freed when this function returns, which is safe: its memory is reused only by later work on
  // the same stream, which runs after this kernel.
  Tensor table = Tensor::from_vector(words, {int64_t(words.size())}, dev);
  const int64_t* t = table.data<int64_t>();
  multi_tensor_step<T><<<unsigned(blocks), kThreads, 0, stream(dev)>>>(t, t + table_words, update);
  check_launch(op, {&params[0]});
}

// The per-element functors: load the element of every used list, update, store.
template <class T> struct SgdElement {
  SgdHyper h;
  __device__ void operator()(T* const* p, int64_t i) const {
    using C = compute_t<T>;
    C param = C(p[0][i]), buf = p[2] ? C(p[2][i]) : C(0);
    sgd_update(param, C(p[1][i]), buf, h);
    p[0][i] = T(param);
    if (p[2]) p[2][i] = T(buf);
  }
};

template <class T> struct AdamElement {
  AdamHyper h;
  __device__ void operator()(T* const* p, int64_t i) const {
    using C = compute_t<T>;
    C param = C(p[0][i]), m = C(p[2][i]), v = C(p[3][i]);
    adam_update(param, C(p[1][i]), m, v, h);
    p[0][i] = T(param);
    p[2][i] = T(m);
    p[3][i] = T(v);
  }
};

template <class T> struct RmspropElement {
  RmspropHyper h;
  __device__ void operator()(T* const* p, int64_t i) const {
    using C = compute_t<T>;
    C param = C(p[0][i]), sq = C(p[2][i]);
    C buf = p[3] ? C(p[3][i]) : C(0), grad_avg = p[4] ? C(p[4][i]) : C(0);
    rmsprop_update(param, C(p[1][i]), sq, buf, grad_avg, h);
    p[0][i] = T(param);
    p[2][i] = T(sq);
    if (p[3]) p[3][i] = T(buf);
    if (p[4]) p[4][i] = T(grad_avg);
  }
};

void sgd(const std::vector<TensorList>& lists, const SgdHyper& h) {
  dispatch_floating(lists[0][0].dtype(), "sgd_step", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch<T>("sgd_step", lists, SgdElement<T>{h});
  });
}

void adam(const std::vector<TensorList>& lists, const AdamHyper& h) {
  dispatch_floating(lists[0][0].dtype(), "adam_step", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch<T>("adam_step", lists, AdamElement<T>{h});
  });
}

void rmsprop(const std::vector<TensorList>& lists, const RmspropHyper& h) {
  dispatch_floating(lists[0][0].dtype(), "rmsprop_step", [&](auto tag) {
    using T = typename decltype(tag)::type;
    launch<T>("rmsprop_step", lists, RmspropElement<T>{h});
  });
}

}  // namespace

void register_optimizer(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/optimizer.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cuda
