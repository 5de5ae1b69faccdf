// optimizer.cu — CUDA kernels of the fused optimizer updates: one launch updates every tensor of
// the group (or a few launches, for a group of very many tensors), whatever their sizes.
//
// The host lays out a table that travels as the kernel's parameter (by value, like PyTorch's
// multi_tensor_apply): per tensor, its address in each list and its element count; then one
// (tensor, first element) pair per chunk of kChunk elements. Chunk c is updated by the kSplit
// blocks of grid row c, each taking every kSplit-th stretch of kThreads elements. A model's
// hundreds of parameters thus cost one or a few launches per step instead of hundreds, which for
// small tensors would take longer than the arithmetic. Passing the table by value rather than in
// a device buffer needs no allocation and no copy from the host, so the launch never waits for
// the host and can be captured into a CUDA graph (a compiled step's replay). Each element is
// updated by the formula in ops/optimizer_kernels.h.
#include <cstdint>
#include <vector>

#include "cuda/launch.cuh"
#include "kernels.h"
#include "ops/optimizer_kernels.h"

namespace ember::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kChunk = 65536;  // elements per table entry
// Blocks per chunk: 16 give each thread 16 elements and a launch 2560 blocks, enough to fill every
// SM of a large GPU several times over; a block a chunk (160 blocks a launch, 8 warps an SM on an
// H100) left the update at a third of the memory bandwidth, bound by the loads in flight.
constexpr int kSplit = 16;
constexpr int kMaxLists = 5;  // params, grads and up to three state lists
// One launch's share of the group, sized to stay under the 4 KB of kernel parameters every
// architecture takes: 24 tensors (5 addresses and a count each, 1152 B) and 160 chunks (12 B
// each, 1920 B). A larger group takes more launches.
constexpr int kMaxTensors = 24;
constexpr int kMaxChunks = 160;

struct Table {
  int64_t address[kMaxTensors][kMaxLists];  // null: an unused list
  int64_t numel[kMaxTensors];
  int64_t chunk_begin[kMaxChunks];   // first element of block b's chunk
  int32_t chunk_tensor[kMaxChunks];  // its tensor's row
};
static_assert(sizeof(Table) <= 4000, "a kernel's parameters must stay under 4 KB");

template <class T, class Update>
__global__ void __launch_bounds__(kThreads) multi_tensor_step(const Table table, Update update) {
  const int row = table.chunk_tensor[blockIdx.y];
  const int64_t begin = table.chunk_begin[blockIdx.y];
  const int64_t end = min(begin + kChunk, table.numel[row]);
  T* p[kMaxLists];
#pragma unroll
  for (int k = 0; k < kMaxLists; ++k) p[k] = reinterpret_cast<T*>(table.address[row][k]);
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = begin + blockIdx.x * blockDim.x + threadIdx.x; i < end; i += stride)
    update(p, i);
}

// Fills tables with `lists`' tensors and their chunks in order, launching one multi_tensor_step
// each time a table is full (a tensor whose chunks straddle two tables gets a row in both).
template <class T, class Update>
void launch(const char* op, const std::vector<TensorList>& lists, const Update& update) {
  const TensorList& params = lists[0];
  const Device dev = params[0].device();
  DeviceGuard guard(dev);
  Table table{};
  int rows = 0, chunks = 0;
  auto flush = [&] {
    if (chunks > 0) {
      const dim3 grid(kSplit, unsigned(chunks));
      multi_tensor_step<T><<<grid, kThreads, 0, stream(dev)>>>(table, update);
      check_launch(op, {&params[0]});
    }
    table = Table{};
    rows = chunks = 0;
  };
  for (size_t i = 0; i < params.size(); ++i) {
    bool has_row = false;
    for (int64_t b = 0; b < params[i].numel(); b += kChunk) {
      if (chunks == kMaxChunks || (!has_row && rows == kMaxTensors)) {
        flush();
        has_row = false;
      }
      if (!has_row) {
        for (size_t k = 0; k < size_t(kMaxLists); ++k) {
          const bool used = k < lists.size() && !lists[k].empty();
          table.address[rows][k] =
              used ? int64_t(reinterpret_cast<uintptr_t>(lists[k][i].data_ptr())) : 0;
        }
        table.numel[rows++] = params[i].numel();
        has_row = true;
      }
      table.chunk_tensor[chunks] = rows - 1;
      table.chunk_begin[chunks++] = b;
    }
  }
  flush();  // empty tensors add no chunk: a group of only those launches nothing
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
