// tensor.h — the Tensor: shared storage + shape + strides + offset + dtype + device.
//
// Copying a Tensor copies a handle (like torch.Tensor or a shared_ptr), not the data. Views
// (transpose, slice, expand, ...) return Tensors on the same storage with new shape/strides;
// writes through a view are visible through every other view of the storage.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/error.h"
#include "ember/shape.h"
#include "ember/storage.h"

namespace ember {

class Tensor;
using TensorList = std::vector<Tensor>;

// A Python-like slice for Tensor::slice: start/stop may be negative (counted from the end) and are
// clamped like Python's; step must be positive.
struct Slice {
  static constexpr int64_t kEnd = INT64_MAX;
  int64_t start = 0, stop = kEnd, step = 1;
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor (defined() is false)
  // A view of `storage`: throws (see as_strided) unless every element it reaches lies inside it.
  Tensor(Storage storage, Shape shape, Strides strides, int64_t offset, DType dtype);

  // Uninitialised contiguous tensor. `op` is the op named in errors: a negative size
  // (ValueError), a size that overflows (ShapeError), a missing device, an out-of-memory.
  static Tensor empty(const Shape& shape, DType dtype = DType::Float32, Device device = Device(),
                      const char* op = "empty");
  // A tensor holding `values` (row-major) with the dtype of T; numel(shape) must equal
  // values.size().
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape,
                            Device device = Device());

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  int64_t size(int64_t dim) const;
  int64_t stride(int64_t dim) const;
  int64_t dim() const { return int64_t(shape_.size()); }
  int64_t numel() const { return shape_numel(shape_); }
  int64_t offset() const { return offset_; }  // in elements from the storage start
  DType dtype() const { return dtype_; }
  Device device() const;
  size_t itemsize() const { return ember::itemsize(dtype_); }
  int64_t nbytes() const { return numel() * int64_t(itemsize()); }
  bool is_contiguous() const;
  const Storage& storage() const { return storage_; }
  bool shares_storage(const Tensor& other) const { return storage_ == other.storage_; }

  // The storage's version counter (see storage.h), shared by every view: every in-place op,
  // copy_ and fill_ bumps it; out-of-place ops leave their inputs' alone. Code that writes
  // through data_ptr() itself calls bump_version() after.
  int64_t version() const { return storage_ ? storage_->version() : 0; }
  void bump_version() const {
    if (storage_) storage_->bump_version();
  }

  // Address of element 0 (storage start + offset). data<T>() checks that T matches dtype().
  void* data_ptr() const;
  template <class T> T* data() const {
    check_dtype_access(dtype_of_v<T>);
    return static_cast<T*>(data_ptr());
  }

  // ---- views (no copy) ----
  // Throws, naming `op`, unless sizes, strides and offset are >= 0 (Ember has no negative
  // strides) and the last element reached lies inside the storage (ShapeError).
  Tensor as_strided(const Shape& shape, const Strides& strides, int64_t offset,
                    const char* op = "as_strided") const;
  Tensor view(const Shape& shape) const;     // throws ShapeError if strides forbid a view
  Tensor reshape(const Shape& shape) const;  // a view when possible, else a contiguous copy
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;  // transpose of a 2-D tensor
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor slice(int64_t dim, Slice s) const;
  Tensor slice(int64_t dim, int64_t start, int64_t stop, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;  // drops dim; negative index counts from end
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor expand(const Shape& shape) const;  // -1 keeps a size; new leading dims allowed
  Tensor broadcast_to(const Shape& shape) const { return expand(shape); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor operator[](int64_t index) const { return select(0, index); }

  // ---- copies ----
  Tensor contiguous() const;  // *this if already contiguous
  Tensor clone() const;       // always a fresh contiguous copy
  // non_blocking: a copy from pinned host memory (pin_memory) to a GPU is queued on the GPU's
  // current stream and returns at once; the caller leaves the source unchanged until the copy
  // has run (later work on that stream, an Event, or synchronize()). Any other copy behaves as
  // without it: from pageable memory it returns once the bytes are staged, to the CPU it waits.
  Tensor to(Device device, bool non_blocking = false) const;
  Tensor to(DType dtype) const;
  Tensor to(Device device, DType dtype, bool non_blocking = false) const;
  // In place, as every in-place op: const on the handle (the data changes), returns *this and
  // bumps the version. src is broadcast to this shape and cast, from any device.
  const Tensor& copy_(const Tensor& src, bool non_blocking = false) const;
  const Tensor& fill_(double value) const;  // ValueError when dtype cannot hold value (dtype_holds)
  const Tensor& zero_() const { return fill_(0.0); }

  // ---- pinned host memory (src/core/pinned.cpp) ----
  // A contiguous copy of this CPU tensor in page-locked host memory (cudaHostAlloc, through a
  // caching allocator of its own): a CPU tensor like any other, which copies to a GPU read
  // directly and, with non_blocking, without the host waiting. The memory goes back to the cache
  // when the last view dies, and is reused only once the copies queued from it have run. Already
  // pinned: this tensor itself. NotSupportedError in a build without CUDA, DeviceError with no
  // GPU (or driver) present, DeviceError for a tensor not on the CPU.
  Tensor pin_memory() const;
  bool is_pinned() const;  // in pin_memory()'s memory (never throws: false without CUDA)

  // The single element of a 1-element tensor, converted to T (synchronises on CUDA).
  template <class T> T item() const;
  // Every element, row-major, converted to T (synchronises on CUDA). For tests and printing.
  template <class T> std::vector<T> to_vector() const;

  std::string str() const;        // "[2, 3] float32 cpu", used in error messages
  std::string to_string() const;  // values, with dtype and device, NumPy-like layout

 private:
  void check_dtype_access(DType requested) const;
  void check_layout(const char* op) const;
  int64_t wrap(int64_t d, const char* op) const;  // wrap_dim naming this tensor in the error
  Storage storage_;
  Shape shape_;
  Strides strides_;
  int64_t offset_ = 0;
  DType dtype_ = DType::Float32;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// "[32, 784] float32 cpu" — the form every error message uses for an operand.
inline std::string describe(const Tensor& t) { return t.defined() ? t.str() : "undefined"; }

}  // namespace ember
