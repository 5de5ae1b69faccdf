// cublas_handle.cu — per-device cuBLAS handles and the row-major GEMM (see cublas_handle.cuh).
#include <cublasLt.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/cublas_handle.cuh"
#include "cuda/launch.cuh"
#include "ember/cuda.h"
#include "ember/error.h"

namespace ember::cuda {
namespace {

[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* op, const char* call) {
  std::string what = std::string(cublasGetStatusName(status)) + " (" +
                     cublasGetStatusString(status) + ") from " + call;
  if (status == CUBLAS_STATUS_ALLOC_FAILED)
    throw OutOfMemoryError(op, "cuBLAS could not allocate GPU memory: " + what);
  if (status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH)
    throw NotSupportedError(op, "cuBLAS does not support this on this GPU: " + what);
  throw DeviceError(op, "cuBLAS error " + what);
}

#define EMBER_CUBLAS_CHECK(expr, op)                         \
  do {                                                       \
    cublasStatus_t ember_cublas_status_ = (expr);            \
    if (ember_cublas_status_ != CUBLAS_STATUS_SUCCESS)       \
      throw_cublas_error(ember_cublas_status_, (op), #expr); \
  } while (0)

// A cuBLAS handle is not safe to share between threads: binding it to a stream
// (cublasSetStream, cublasSetWorkspace) and the GEMM that follows are separate calls, so a GEMM
// of one thread could run on another thread's stream. Each thread therefore has its own handle per
// device. Handles are costly to create (cublasCreate allocates), so a thread that exits gives its
// handles back to a pool per device, and the next thread takes them from there.
//
// Workspaces belong to a (device, stream) pair and are shared by every thread's handle on that
// stream: GEMMs queued on one stream run one after another, so they never use the workspace at
// once, while GEMMs on two streams may, so they get two. Each workspace is a plain cudaMalloc,
// outside the caching allocator (so it is not in memory_stats): 32 MiB on Hopper and newer,
// 4 MiB before, the sizes the cuBLAS documentation recommends.
struct DeviceBlas {
  std::vector<cublasHandle_t> free_handles;  // given back by threads that exited
  std::map<cudaStream_t, void*> workspaces;
  size_t workspace_bytes = 0;
};

std::mutex g_mutex;  // guards g_devices and every DeviceBlas in it
// Indexed by device index, filled on first use. A deque, because growing it at the end keeps
// references to existing entries valid while other threads use them.
std::deque<DeviceBlas> g_devices;

DeviceBlas& device_blas(Device device) {  // g_mutex held
  if (int(g_devices.size()) <= device.index) g_devices.resize(size_t(device.index) + 1);
  DeviceBlas& d = g_devices[size_t(device.index)];
  if (d.workspace_bytes == 0)
    d.workspace_bytes = properties(device.index).major >= 9 ? (32u << 20) : (4u << 20);
  return d;
}

cublasHandle_t take_handle(Device device) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    DeviceBlas& d = device_blas(device);
    if (!d.free_handles.empty()) {
      cublasHandle_t h = d.free_handles.back();
      d.free_handles.pop_back();
      return h;
    }
  }
  DeviceGuard guard(device);
  cublasHandle_t h = nullptr;
  EMBER_CUBLAS_CHECK(cublasCreate(&h), "cuBLAS");
  return h;
}

// The calling thread's handles, by device index; given back to the pool when the thread exits.
struct ThreadHandles {
  std::vector<cublasHandle_t> by_device;
  ~ThreadHandles() {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (size_t i = 0; i < by_device.size(); ++i)
      if (by_device[i]) g_devices[i].free_handles.push_back(by_device[i]);
  }
};
thread_local ThreadHandles t_handles;

struct Workspace {
  void* data = nullptr;
  size_t bytes = 0;
};

// The workspace of stream s on `device`, made on its first GEMM.
Workspace workspace_of(Device device, cudaStream_t s) {
  std::lock_guard<std::mutex> lock(g_mutex);
  DeviceBlas& d = device_blas(device);
  void*& w = d.workspaces[s];
  if (!w) {
    DeviceGuard guard(device);
    EMBER_CUDA_CHECK(cudaMalloc(&w, d.workspace_bytes), "cuBLAS workspace");
  }
  return {w, d.workspace_bytes};
}

// How cuBLAS (column-major) sees a row-major logical [rows, cols] operand: stored row-major with
// leading dimension ld, or column-major (a transposed view) with leading dimension ld.
struct BlasLayout {
  bool ok = false;
  bool row_major = true;
  int64_t ld = 0;
};

// A dim of size 1 has no meaningful stride, so either layout accepts it.
template <class T> BlasLayout blas_layout(const MatrixRef<T>& m, int64_t rows, int64_t cols) {
  if (m.col_stride == 1 || cols == 1) {
    int64_t ld = rows == 1 ? std::max<int64_t>(cols, 1) : m.row_stride;
    if (ld >= std::max<int64_t>(cols, 1) && ld <= INT_MAX) return {true, true, ld};
  }
  if (m.row_stride == 1 || rows == 1) {
    int64_t ld = cols == 1 ? std::max<int64_t>(rows, 1) : m.col_stride;
    if (ld >= std::max<int64_t>(rows, 1) && ld <= INT_MAX) return {true, false, ld};
  }
  return {};
}

// ---- cuBLASLt, for the float16 / bfloat16 GEMMs ----
//
// cuBLASLt is cuBLAS's matmul with explicit layouts and algorithm choice (and epilogues). One
// handle per process (cuBLASLt handles are thread-safe); the workspace is the stream's cuBLAS
// workspace above, since Lt and classic GEMMs of one stream run one after another.

cublasLtHandle_t lt_handle() {
  static cublasLtHandle_t h = [] {
    cublasLtHandle_t made = nullptr;
    EMBER_CUBLAS_CHECK(cublasLtCreate(&made), "cuBLASLt");
    return made;
  }();
  return h;
}

// Owns the descriptors of one Lt call.
struct LtCall {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t preference = nullptr;
  ~LtCall() {
    if (preference) cublasLtMatmulPreferenceDestroy(preference);
    for (cublasLtMatrixLayout_t l : {a, b, c})
      if (l) cublasLtMatrixLayoutDestroy(l);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

// A column-major [rows, cols] layout with leading dimension ld, `batch` matrices apart by stride.
cublasLtMatrixLayout_t lt_layout(cudaDataType_t t, int rows, int cols, int ld, int batch,
                                 long long stride) {
  cublasLtMatrixLayout_t l = nullptr;
  EMBER_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, t, uint64_t(rows), uint64_t(cols), ld),
                     "cuBLASLt");
  if (batch > 1) {
    cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch));
    int64_t s = stride;
    cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &s, sizeof(s));
  }
  return l;
}

// The largest power of two (at most 256, cuBLASLt's default assumption) that divides p's address:
// what the heuristic is told of an operand's alignment, so that it never picks an algorithm
// needing more than a view's pointer has.
uint32_t alignment_of(const void* p) {
  uint32_t a = 256;
  while (a > 1 && reinterpret_cast<uintptr_t>(p) % a != 0) a /= 2;
  return a;
}

template <class T> constexpr cudaDataType_t lt_type() {
  if constexpr (std::is_same_v<T, float>) return CUDA_R_32F;
  else if constexpr (std::is_same_v<T, Half>) return CUDA_R_16F;
  else return CUDA_R_16BF;
}

// blas_gemm's column-major product C^T = B^T · A^T (see blas_gemm) as cuBLAS takes it: B's and
// A's transpose flags, the leading dimensions, the batch and the batch strides (0 for a single
// matrix, whose batch strides are unused).
struct ColumnMajor {
  cublasOperation_t op_b, op_a;
  int ldb, lda, ldc, batch;
  long long sb, sa, sc;
};

template <class T>
ColumnMajor column_major(const GemmArgs<T>& g, const BlasLayout& la, const BlasLayout& lb,
                         const BlasLayout& lc) {
  const bool one = g.batch == 1;
  ColumnMajor c;
  c.op_b = lb.row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  c.op_a = la.row_major ? CUBLAS_OP_N : CUBLAS_OP_T;
  c.ldb = int(lb.ld);
  c.lda = int(la.ld);
  c.ldc = int(lc.ld);
  c.batch = int(g.batch);
  c.sb = one ? 0 : g.b.batch_stride;
  c.sa = one ? 0 : g.a.batch_stride;
  c.sc = one ? 0 : g.c.batch_stride;
  return c;
}

// One cuBLASLt call of blas_gemm's column-major product C^T = B^T · A^T (see blas_gemm), over
// g.batch matrices, accumulating in `compute` with float alpha and beta. `describe` sets further
// attributes of the descriptor (an epilogue and its pointers) before the heuristic, which is also
// told every operand's alignment, so that it never picks an algorithm a view's pointer cannot
// take. Returns false, having queued nothing, when the heuristic offers no algorithm.
template <class T, class Describe>
bool lt_matmul(Device device, const GemmArgs<T>& g, const ColumnMajor& c,
               cublasComputeType_t compute, const Describe& describe, const char* op) {
  const cudaDataType_t t = lt_type<T>();
  LtCall lt;
  EMBER_CUBLAS_CHECK(cublasLtMatmulDescCreate(&lt.desc, compute, CUDA_R_32F), op);
  cublasLtMatmulDescSetAttribute(lt.desc, CUBLASLT_MATMUL_DESC_TRANSA, &c.op_b, sizeof(c.op_b));
  cublasLtMatmulDescSetAttribute(lt.desc, CUBLASLT_MATMUL_DESC_TRANSB, &c.op_a, sizeof(c.op_a));
  describe(lt.desc);
  // Column-major as stored: B^T is [n, k] (or [k, n] when transposed), A^T [k, m], C^T [n, m].
  lt.a = c.op_b == CUBLAS_OP_N ? lt_layout(t, g.n, g.k, c.ldb, c.batch, c.sb)
                               : lt_layout(t, g.k, g.n, c.ldb, c.batch, c.sb);
  lt.b = c.op_a == CUBLAS_OP_N ? lt_layout(t, g.k, g.m, c.lda, c.batch, c.sa)
                               : lt_layout(t, g.m, g.k, c.lda, c.batch, c.sa);
  lt.c = lt_layout(t, g.n, g.m, c.ldc, c.batch, c.sc);
  const Workspace workspace = workspace_of(device, stream(device));
  EMBER_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&lt.preference), op);
  cublasLtMatmulPreferenceSetAttribute(lt.preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                       &workspace.bytes, sizeof(workspace.bytes));
  // Lt's A is our B and its B our A (the swap above); C and D are our C.
  const uint32_t align_a = alignment_of(g.b.data), align_b = alignment_of(g.a.data);
  const uint32_t align_c = alignment_of(g.c.data);
  cublasLtMatmulPreferenceSetAttribute(lt.preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                       &align_a, sizeof(align_a));
  cublasLtMatmulPreferenceSetAttribute(lt.preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                       &align_b, sizeof(align_b));
  cublasLtMatmulPreferenceSetAttribute(lt.preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                       &align_c, sizeof(align_c));
  cublasLtMatmulPreferenceSetAttribute(lt.preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                       &align_c, sizeof(align_c));
  cublasLtMatmulHeuristicResult_t best{};
  int found = 0;
  if (cublasLtMatmulAlgoGetHeuristic(lt_handle(), lt.desc, lt.a, lt.b, lt.c, lt.c, lt.preference, 1,
                                     &best, &found) != CUBLAS_STATUS_SUCCESS ||
      found == 0 || best.state != CUBLAS_STATUS_SUCCESS)
    return false;
  const float alpha = float(g.alpha), beta = float(g.beta);
  EMBER_CUBLAS_CHECK(cublasLtMatmul(lt_handle(), lt.desc, &alpha, g.b.data, lt.a, g.a.data, lt.b,
                                    &beta, g.c.data, lt.c, g.c.data, lt.c, &best.algo,
                                    workspace.data, workspace.bytes, stream(device)),
                     op);
  return true;
}

}  // namespace

cublasHandle_t cublas_handle(Device device) {
  std::vector<cublasHandle_t>& mine = t_handles.by_device;
  if (mine.size() <= size_t(device.index)) mine.resize(size_t(device.index) + 1, nullptr);
  cublasHandle_t& h = mine[size_t(device.index)];
  if (!h) h = take_handle(device);
  const cudaStream_t s = stream(device);  // the current stream
  const Workspace workspace = workspace_of(device, s);
  // cublasSetStream also resets the workspace to cuBLAS's own pool, so set ours after it.
  EMBER_CUBLAS_CHECK(cublasSetStream(h, s), "cuBLAS");
  EMBER_CUBLAS_CHECK(cublasSetWorkspace(h, workspace.data, workspace.bytes), "cuBLAS");
  // Read at every GEMM, so that set_allow_tf32 applies to the next one (a host-side setting).
  EMBER_CUBLAS_CHECK(cublasSetMathMode(h, allow_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH
                                                       : CUBLAS_DEFAULT_MATH),
                     "cuBLAS");
  return h;
}

template <class T> bool blas_readable(const MatrixRef<T>& m, int64_t rows, int64_t cols) {
  return blas_layout(m, rows, cols).ok;
}

// cuBLAS is column-major, and a row-major matrix read as column-major is its transpose. So the
// row-major product C = A·B is computed as the column-major product C^T = B^T · A^T: B goes
// first, the sizes are (n, m, k), and an operand stored row-major needs no transpose flag (its
// column-major reading already is the transpose we want), while one stored column-major (a
// transposed view) gets CUBLAS_OP_T. Nothing is copied.
template <class T> void blas_gemm(Device device, const GemmArgs<T>& g, const char* op) {
  if (g.batch == 0 || g.m == 0 || g.n == 0) return;
  const BlasLayout la = blas_layout(g.a, g.m, g.k), lb = blas_layout(g.b, g.k, g.n);
  const BlasLayout lc = blas_layout(g.c, g.m, g.n);
  if (!la.ok || !lb.ok || !lc.ok || !lc.row_major)
    throw ValueError(op, "internal: blas_gemm given an operand cuBLAS cannot read in place");
  if (g.batch > INT_MAX)
    throw NotSupportedError(op, "batch of " + std::to_string(g.batch) +
                                    " matrices exceeds cuBLAS's limit of 2^31 - 1");
  DeviceGuard guard(device);
  cublasHandle_t h = cublas_handle(device);
  const ColumnMajor c = column_major(g, la, lb, lc);
  const auto alpha = g.alpha, beta = g.beta;
  if constexpr (std::is_same_v<T, float>) {
    EMBER_CUBLAS_CHECK(cublasSgemmStridedBatched(h, c.op_b, c.op_a, g.n, g.m, g.k, &alpha, g.b.data,
                                                 c.ldb, c.sb, g.a.data, c.lda, c.sa, &beta,
                                                 g.c.data, c.ldc, c.sc, c.batch),
                       op);
  } else if constexpr (std::is_same_v<T, double>) {
    EMBER_CUBLAS_CHECK(cublasDgemmStridedBatched(h, c.op_b, c.op_a, g.n, g.m, g.k, &alpha, g.b.data,
                                                 c.ldb, c.sb, g.a.data, c.lda, c.sa, &beta,
                                                 g.c.data, c.ldc, c.sc, c.batch),
                       op);
  } else {
    // float16 / bfloat16 storage, float32 accumulation (alpha and beta are float): cuBLASLt's
    // best algorithm for these layouts, or cublasGemmEx where its heuristic offers none.
    if (lt_matmul(
            device, g, c, CUBLAS_COMPUTE_32F, [](cublasLtMatmulDesc_t) {}, op))
      return;
    const cudaDataType_t t = lt_type<T>();
    EMBER_CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, c.op_b, c.op_a, g.n, g.m, g.k, &alpha,
                                                  g.b.data, t, c.ldb, c.sb, g.a.data, t, c.lda,
                                                  c.sa, &beta, g.c.data, t, c.ldc, c.sc, c.batch,
                                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                       op);
  }
}

// As blas_gemm's cuBLASLt call (C^T = B^T · A^T, column-major), with the epilogue. In that
// column-major view C^T is [n, m]: the bias [n] runs down its rows, as cuBLASLt's BIAS epilogue
// broadcasts it, and pre (the aux matrix) has C^T's layout and leading dimension.
template <class T>
bool blas_gemm_act(Device device, const GemmArgs<T>& g, const T* bias, T* pre, GemmActivation act,
                   const char* op) {
  const BlasLayout la = blas_layout(g.a, g.m, g.k), lb = blas_layout(g.b, g.k, g.n);
  const BlasLayout lc = blas_layout(g.c, g.m, g.n);
  if (g.batch != 1 || g.m == 0 || g.n == 0 || g.k == 0) return false;
  if (act == GemmActivation::Gelu || (act != GemmActivation::GeluTanh && pre) ||
      (act == GemmActivation::None && !bias))
    return false;
  if (!la.ok || !lb.ok || !lc.ok || !lc.row_major) return false;
  // CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: a multiple of 8 elements for GELU's aux matrix.
  if (pre && lc.ld % 8 != 0) return false;
  // lt_matmul tells the heuristic A's, B's, C's and D's alignment, but not the bias's; the epilogue
  // reads the bias and writes the aux matrix with vector accesses, so both must be 16-byte aligned
  // (an allocation always is; a view at an odd offset goes the unfused way).
  if ((bias && alignment_of(bias) < 16) || (pre && alignment_of(pre) < 16)) return false;
  DeviceGuard guard(device);
  // float32 follows set_allow_tf32 as blas_gemm's cuBLAS handle does.
  const cublasComputeType_t compute =
      std::is_same_v<T, float> && allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
  if (act == GemmActivation::Relu)
    epilogue = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  else if (act == GemmActivation::GeluTanh && pre)
    epilogue = bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
  else if (act == GemmActivation::GeluTanh)
    epilogue = bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
  // The pointers go in before the heuristic, which reads their alignment from them.
  const auto describe = [&](cublasLtMatmulDesc_t desc) {
    EMBER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                      &epilogue, sizeof(epilogue)),
                       op);
    if (bias) {
      const void* bias_ptr = bias;
      EMBER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                        &bias_ptr, sizeof(bias_ptr)),
                         op);
    }
    if (pre) {
      void* aux = pre;
      const int64_t aux_ld = lc.ld;
      EMBER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc,
                                                        CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
                                                        &aux, sizeof(aux)),
                         op);
      EMBER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD,
                                                        &aux_ld, sizeof(aux_ld)),
                         op);
    }
  };
  return lt_matmul(device, g, column_major(g, la, lb, lc), compute, describe, op);
}

template bool blas_gemm_act(Device, const GemmArgs<float>&, const float*, float*, GemmActivation,
                            const char*);
template bool blas_gemm_act(Device, const GemmArgs<Half>&, const Half*, Half*, GemmActivation,
                            const char*);
template bool blas_gemm_act(Device, const GemmArgs<BFloat16>&, const BFloat16*, BFloat16*,
                            GemmActivation, const char*);

#define EMBER_INSTANTIATE_BLAS(T)                                           \
  template bool blas_readable(const MatrixRef<const T>&, int64_t, int64_t); \
  template bool blas_readable(const MatrixRef<T>&, int64_t, int64_t);       \
  template void blas_gemm(Device, const GemmArgs<T>&, const char*);
EMBER_INSTANTIATE_BLAS(float)
EMBER_INSTANTIATE_BLAS(double)
EMBER_INSTANTIATE_BLAS(Half)
EMBER_INSTANTIATE_BLAS(BFloat16)
#undef EMBER_INSTANTIATE_BLAS

}  // namespace ember::cuda
