// masking.cu — CUDA kernels of the masking family (contracts in ops/masking_kernels.h).
// nonzero and masked_select are stream compactions, done on the device:
//   1. a flag per element, 1 where it is selected (gpu_map: any strides, broadcast views too);
//   2. an inclusive scan of the flags (CUB's device-wide scan), so element i, when selected, goes
//      to output row scan[i] - 1;
//   3. one read of scan[n - 1], the number of rows, to allocate the output. This is the only
//      synchronisation: the result's size depends on the data (PyTorch synchronises here too);
//   4. a scatter kernel that writes each selected element's row.
#include <algorithm>
#include <cub/device/device_scan.cuh>
#include <string>

#include "convert.h"
#include "cuda/launch.cuh"
#include "cuda/loops.cuh"
#include "kernels.h"
#include "ops/indexing_kernels.h"

namespace ember::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n, Device device) { return grid_size(n, kThreads, device.index); }

// A shape (and one operand's strides, in elements) that kernels unravel a row-major index over.
struct Unravel {
  int ndim;
  int64_t size[kMaxDims];
  int64_t stride[kMaxDims];
};

Unravel make_unravel(const char* op, const Tensor& t) {
  if (t.dim() > kMaxDims)
    throw NotSupportedError(op, "x is " + describe(t) + "; CUDA handles up to " +
                                    std::to_string(kMaxDims) + " dims, reshape first");
  Unravel u{int(t.dim()), {}, {}};
  for (int d = 0; d < u.ndim; ++d) {
    u.size[d] = t.size(d);
    u.stride[d] = t.stride(d);
  }
  return u;
}

template <class T> struct NonzeroFlag {  // a functor: gpu_map runs it inside dispatch_all
  __device__ int64_t operator()(T v) const { return convert<bool>(v) ? 1 : 0; }
};

struct MaskFlag {
  __device__ int64_t operator()(bool m) const { return m ? 1 : 0; }
};

// flags: contiguous int64 [n] -> their inclusive prefix sums, in place; returns the total, read
// on the host (this waits for the scan).
int64_t scan_flags(const char* op, const Tensor& flags) {
  const Device dev = flags.device();
  int64_t* p = flags.data<int64_t>();
  const int64_t n = flags.numel();
  size_t bytes = 0;  // CUB sizes its scratch space first, then scans with it
  EMBER_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, bytes, p, p, n, stream(dev)), op);
  Tensor scratch = Tensor::empty({int64_t(std::max<size_t>(bytes, 1))}, DType::UInt8, dev, op);
  EMBER_CUDA_CHECK(cub::DeviceScan::InclusiveSum(scratch.data_ptr(), bytes, p, p, n, stream(dev)),
                   op);
  return flags.select(0, n - 1).item<int64_t>();
}

// Element e is selected when the scan steps up at e; its output row is the count before it.
__device__ inline bool selected(const int64_t* scan, int64_t e, int64_t* row) {
  *row = e > 0 ? scan[e - 1] : 0;
  return scan[e] != *row;
}

// out: [rows, u.ndim]; row scan[e] - 1 = the coordinates of element e, for each selected e.
__global__ void nonzero_scatter(const int64_t* scan, int64_t n, Unravel u, int64_t* out) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += step) {
    int64_t row;
    if (!selected(scan, e, &row)) continue;
    int64_t rest = e;
#pragma unroll
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (d >= u.ndim) continue;
      out[row * u.ndim + d] = rest % u.size[d];
      rest /= u.size[d];
    }
  }
}

// out[scan[e] - 1] = x's element e (through x's strides), for each selected e.
template <class E>
__global__ void masked_scatter(const int64_t* scan, int64_t n, const E* x, Unravel u, E* out) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += step) {
    int64_t row;
    if (!selected(scan, e, &row)) continue;
    int64_t rest = e, offset = 0;
#pragma unroll
    for (int d = kMaxDims - 1; d >= 0; --d) {
      if (d >= u.ndim) continue;
      offset += (rest % u.size[d]) * u.stride[d];
      rest /= u.size[d];
    }
    out[row] = x[offset];
  }
}

// Flags of `source` (x's shape), scanned: contiguous int64 [n].
template <class F> Tensor flags_of(const char* op, const Tensor& source, F&& make_flags) {
  Tensor flags = Tensor::empty({source.numel()}, DType::Int64, source.device(), op);
  Tensor shaped = flags.view(source.shape());
  make_flags(shaped);
  return flags;
}

Tensor nonzero(const Tensor& x) {
  const char* op = "nonzero";
  DeviceGuard guard(x.device());
  const Unravel u = make_unravel(op, x);
  Tensor flags = flags_of(op, x, [&](Tensor& out) {
    dispatch_all(x.dtype(), op, [&](auto tag) {
      using T = typename decltype(tag)::type;
      gpu_map<int64_t, T>(op, out, {x}, NonzeroFlag<T>{});
    });
  });
  const int64_t rows = scan_flags(op, flags);
  Tensor out = Tensor::empty({rows, x.dim()}, DType::Int64, x.device(), op);
  if (out.numel() == 0) return out;
  const int64_t n = flags.numel();
  nonzero_scatter<<<blocks_for(n, x.device()), kThreads, 0, stream(x.device())>>>(
      flags.data<int64_t>(), n, u, out.data<int64_t>());
  check_launch(op, {&x, &out});
  return out;
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  const char* op = "masked_select";
  DeviceGuard guard(x.device());
  const Unravel u = make_unravel(op, x);
  Tensor flags =
      flags_of(op, mask, [&](Tensor& out) { gpu_map<int64_t, bool>(op, out, {mask}, MaskFlag{}); });
  const int64_t rows = scan_flags(op, flags);
  Tensor out = Tensor::empty({rows}, x.dtype(), x.device(), op);
  if (rows == 0) return out;
  const int64_t n = flags.numel();
  dispatch_by_size(x.itemsize(), op, [&](auto tag) {
    using E = typename decltype(tag)::type;
    masked_scatter<E><<<blocks_for(n, x.device()), kThreads, 0, stream(x.device())>>>(
        flags.data<int64_t>(), n, static_cast<const E*>(x.data_ptr()), u,
        static_cast<E*>(out.data_ptr()));
  });
  check_launch(op, {&x, &mask, &out});
  return out;
}

// flat[offsets[i]] = values[i]; with repeated offsets, whichever thread stores last wins. An
// offset outside [0, size) comes from an index the range check has reported to the device's
// error flag (raised at the next synchronising point): it is skipped, never written.
template <class E>
__global__ void put_elements(E* flat, int64_t size, const int64_t* offsets, const E* values,
                             int64_t n) {
  const int64_t step = int64_t(blockDim.x) * gridDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    const int64_t at = offsets[i];
    if (at >= 0 && at < size) flat[at] = values[i];
  }
}

void put(const Tensor& flat, const Tensor& offsets, const Tensor& values) {
  DeviceGuard guard(flat.device());
  const int64_t n = offsets.numel();
  dispatch_by_size(flat.itemsize(), "index_put", [&](auto tag) {
    using E = typename decltype(tag)::type;
    put_elements<E><<<blocks_for(n, flat.device()), kThreads, 0, stream(flat.device())>>>(
        static_cast<E*>(flat.data_ptr()), flat.numel(), offsets.data<int64_t>(),
        static_cast<const E*>(values.data_ptr()), n);
  });
  check_launch("index_put", {&flat, &offsets, &values});
}

}  // namespace

void register_masking(KernelTable& table) {
#define EMBER_KERNEL EMBER_REGISTER_SLOT
#include "kernels/masking.def"
#undef EMBER_KERNEL
}

}  // namespace ember::cuda
