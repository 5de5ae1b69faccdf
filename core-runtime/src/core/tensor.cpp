// tensor.cpp — construction, metadata, copies, fill and element access.
#include "ember/tensor.h"

#include <algorithm>
#include <memory>

#include "ember/backend.h"
#include "kernels.h"
#include "ops/checks.h"

namespace ember {

Tensor::Tensor(Storage storage, Shape shape, Strides strides, int64_t offset, DType dtype)
    : storage_(std::move(storage)),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      offset_(offset),
      dtype_(dtype) {
  check_layout("Tensor");
}

void Tensor::check_layout(const char* op) const {
  if (!storage_) throw ValueError(op, "the storage is null; views need a defined tensor");
  const int64_t reached = storage_extent(shape_, strides_, offset_, op);
  shape_nbytes(shape_, itemsize(), op);  // nbytes() must not overflow either, even for a view
  const int64_t held = int64_t(storage_->nbytes() / itemsize());
  if (reached > held)
    throw ShapeError(op, "shape " + shape_str(shape_) + " with strides " + shape_str(strides_) +
                             " and offset " + std::to_string(offset_) + " reaches element " +
                             std::to_string(reached - 1) + " of a storage holding " +
                             std::to_string(held) + " " + dtype_name(dtype_) + " elements on " +
                             device().str() + "; keep offset + sum((size - 1) * stride) below " +
                             std::to_string(held));
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device, const char* op) {
  const int64_t nbytes = shape_nbytes(shape, ember::itemsize(dtype), op);
  backend_for(device, op);
  auto storage = std::make_shared<StorageImpl>(size_t(nbytes), device, op);
  return Tensor(storage, shape, contiguous_strides(shape), 0, dtype);
}

Device Tensor::device() const { return storage_ ? storage_->device() : Device(); }

int64_t Tensor::wrap(int64_t d, const char* op) const {
  // The message (with str()) is built only on failure: size() and stride() are on hot paths.
  if (d >= -dim() && d < dim()) return d < 0 ? d + dim() : d;
  return wrap_dim(d, dim(), op, str());
}

int64_t Tensor::size(int64_t d) const { return shape_[size_t(wrap(d, "size"))]; }
int64_t Tensor::stride(int64_t d) const { return strides_[size_t(wrap(d, "stride"))]; }

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;  // as PyTorch: no element is out of place
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

void* Tensor::data_ptr() const {
  if (!storage_) return nullptr;
  return static_cast<char*>(storage_->data()) + offset_ * int64_t(itemsize());
}

void Tensor::check_dtype_access(DType requested) const {
  if (requested != dtype_)
    throw DTypeError("data", "tensor is " + str() + " but was accessed as " +
                                 dtype_name(requested) + "; use data<T>() with the matching T");
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor out = empty(shape_, dtype_, device(), "clone");
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(Device device, bool non_blocking) const {
  return to(device, dtype_, non_blocking);
}
Tensor Tensor::to(DType dtype) const { return to(device(), dtype); }
Tensor Tensor::to(Device device, DType dtype, bool non_blocking) const {
  if (device == this->device() && dtype == dtype_) return *this;
  Tensor out = empty(shape_, dtype, device, "to");
  out.copy_(*this, non_blocking);
  return out;
}

const Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) const {
  if (!defined() || !src.defined())
    throw ValueError("copy_", "cannot copy between undefined tensors");
  bool fits = src.dim() <= dim();
  for (int64_t i = 1; fits && i <= src.dim(); ++i)
    fits = src.size(-i) == 1 || src.size(-i) == size(-i);
  if (!fits)
    throw ShapeError("copy_", "src " + src.str() + " cannot be broadcast to dst " + str() +
                                  "; src must broadcast to dst's shape");
  bump_version();
  if (numel() == 0) return *this;
  if (src.device() == device()) {
    Tensor expanded = src.expand(shape_);
    Tensor dst = *this;  // the kernels take the handle by reference
    copy_kernel(device())(expanded, dst);
    return *this;
  }
  // Across devices: make src contiguous where it is, move the bytes, then cast/scatter here.
  // When this tensor already has src's shape, dtype and a dense layout (the common .to(device)),
  // the bytes go straight into it: no staging tensor, no second copy.
  Tensor packed = src.contiguous();
  const bool direct = is_contiguous() && packed.dtype() == dtype_ && packed.shape() == shape_;
  if (non_blocking && direct && packed.is_pinned() && !device().is_cpu()) {
    // The GPU's copy engine reads the pinned bytes itself, in its stream's order.
    backend_for(device(), "copy_")
        .copy_from_pinned_async(data_ptr(), device(), packed.data_ptr(), size_t(packed.nbytes()));
    return *this;
  }
  Tensor staged = direct ? *this : empty(packed.shape(), packed.dtype(), device(), "copy_");
  copy_bytes_between(backend_for(device(), "copy_"), staged.data_ptr(), device(),
                     backend_for(src.device(), "copy_"), packed.data_ptr(), src.device(),
                     size_t(packed.nbytes()), "copy_");
  if (direct) return *this;
  Tensor expanded = staged.expand(shape_);
  Tensor dst = *this;
  copy_kernel(device())(expanded, dst);
  return *this;
}

const Tensor& Tensor::fill_(double value) const {
  check_value_fits("fill_", value, dtype_);
  bump_version();
  Tensor dst = *this;
  if (numel() > 0) fill_kernel(device())(dst, value);
  return *this;
}

template <class T> std::vector<T> Tensor::to_vector() const {
  Tensor host = to(Device(), dtype_of_v<T>).contiguous();
  const T* p = host.data<T>();
  return std::vector<T>(p, p + host.numel());
}

template <class T> T Tensor::item() const {
  if (numel() != 1)
    throw ValueError("item", "tensor is " + str() +
                                 "; item() needs exactly one element (index or reduce first)");
  return to_vector<T>()[0];
}

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape, Device device) {
  const int64_t numel = shape_numel(shape, "from_vector");
  backend_for(device, "from_vector");
  if (int64_t(values.size()) != numel)
    throw ShapeError("from_vector", std::to_string(values.size()) + " values cannot fill shape " +
                                        shape_str(shape) + " (" + std::to_string(numel) +
                                        " elements)");
  Tensor host = empty(shape, dtype_of_v<T>, Device(), "from_vector");
  std::copy(values.begin(), values.end(), static_cast<T*>(host.data_ptr()));
  return host.to(device);
}

#define EMBER_INSTANTIATE(T)                            \
  template std::vector<T> Tensor::to_vector<T>() const; \
  template T Tensor::item<T>() const;                   \
  template Tensor Tensor::from_vector<T>(const std::vector<T>&, const Shape&, Device);
EMBER_INSTANTIATE(bool)
EMBER_INSTANTIATE(uint8_t)
EMBER_INSTANTIATE(int8_t)
EMBER_INSTANTIATE(int16_t)
EMBER_INSTANTIATE(int32_t)
EMBER_INSTANTIATE(int64_t)
EMBER_INSTANTIATE(Half)
EMBER_INSTANTIATE(BFloat16)
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
#undef EMBER_INSTANTIATE

}  // namespace ember
