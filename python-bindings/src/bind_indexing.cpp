// bind_indexing.cpp — NumPy indexing, x[index] and x[index] = value, reduced to a few core ops:
//   int -> select, slice -> slice (a negative step: flip first), None -> unsqueeze,
//   ... -> full slices, integer tensors/lists -> index_select on the indexed dims (flattened
//   together when there are several), boolean masks -> their nonzero positions (core-runtime's
//   nonzero).
// NumPy's placement rule: the dims of the advanced indices replace the indexed dims where they
// are adjacent, and go first when a slice or None separates them (ints then count as advanced).
// Reads are differentiable. A write x[index] = v is index_put(x, coordinates, v), one coordinate
// tensor per dim of x (target_of); without history to record it goes into x's storage, through a
// view for a basic index (no copy) and with index_put_ otherwise.
#include <ember/autodiff/compile/trace.h>
#include <ember/autodiff/ops.h>
#include <ember/error.h>
#include <ember/ops/creation.h>
#include <ember/ops/elementwise.h>
#include <ember/ops/masking.h>
#include <ember/ops/reduction.h>

#include <algorithm>

#include "def_op.h"

namespace ember::python {

namespace ad = ember::autodiff;

namespace {

using V = Variable;

struct Entry {
  enum Kind { Int, Slice, NewAxis, Array } kind;
  int64_t i = 0;
  py::object slice;
  Tensor array;  // int64 indices (Array)
  Shape mask;    // on the first coordinate entry of a bool mask: the mask's shape
  bool from_mask = false;
};

// The int64 coordinates of the true elements of a bool mask, one tensor per mask dim
// (core-runtime's nonzero, on the mask's device).
std::vector<Tensor> mask_coordinates(const Tensor& mask) {
  const Tensor rows = ember::nonzero(mask);  // [n, mask.dim()]
  std::vector<Tensor> out;
  for (int64_t d = 0; d < mask.dim(); ++d) out.push_back(rows.select(1, d).contiguous());
  return out;
}

[[noreturn]] void bad_index(py::handle obj) {
  throw ember::IndexError("index",
                          "only ints, slices, None, ..., and integer or bool tensors "
                          "(or lists) are valid indices, got " +
                              std::string(py::repr(obj)));
}

// "index 5 is out of range for dim 1 (size 4) of x, which is [3, 4] float32 cpu; valid indices are
// -4 to 3": the dim of x itself, not of the view left after the indices before it.
[[noreturn]] void out_of_range(const char* op, int64_t i, int64_t d, const Tensor& x) {
  const int64_t n = x.size(d);
  throw ember::IndexError(op, "index " + std::to_string(i) + " is out of range for dim " +
                                  std::to_string(d) + " (size " + std::to_string(n) +
                                  ") of x, which is " + x.str() + "; valid indices are " +
                                  std::to_string(-n) + " to " + std::to_string(n - 1));
}

// Checks each entry against the dim of x it indexes: ints and integer arrays in [-n, n) (an
// array's values are read here on the CPU only; CUDA checks them in the kernel, without a wait),
// a bool mask's shape equal to the dims it covers.
void check_against(const std::vector<Entry>& entries, const Tensor& x, const char* op) {
  int64_t d = 0;
  for (const Entry& e : entries) {
    if (e.kind == Entry::NewAxis) continue;
    if (e.kind == Entry::Int && (e.i < -x.size(d) || e.i >= x.size(d))) out_of_range(op, e.i, d, x);
    if (!e.mask.empty()) {
      const Shape covered(x.shape().begin() + d, x.shape().begin() + d + int64_t(e.mask.size()));
      if (covered != e.mask) {
        const int64_t last = d + int64_t(e.mask.size()) - 1;
        const std::string dims = last == d
                                     ? "dim " + std::to_string(d)
                                     : "dims " + std::to_string(d) + " to " + std::to_string(last);
        throw ember::IndexError(op, "the boolean mask is " + shape_str(e.mask) + " but the " +
                                        dims + " it covers of x (" + x.str() + ") are " +
                                        shape_str(covered) +
                                        "; a mask must have the shape of the dims it indexes");
      }
    }
    if (e.kind == Entry::Array && !e.from_mask && e.array.device().is_cpu() &&
        e.array.numel() > 0) {
      const int64_t low = ember::amin(e.array).item<int64_t>();
      const int64_t high = ember::amax(e.array).item<int64_t>();
      if (low < -x.size(d)) out_of_range(op, low, d, x);
      if (high >= x.size(d)) out_of_range(op, high, d, x);
    }
    ++d;
  }
}

// The index as a list of entries, with ... expanded and masks turned into integer arrays; `op`
// names the read or the write in the errors of check_against.
std::vector<Entry> parse(py::handle index, const Tensor& x, const char* op = "index") {
  std::vector<py::object> items;
  if (PyTuple_Check(index.ptr()))
    for (py::handle h : index) items.push_back(py::reinterpret_borrow<py::object>(h));
  else items.push_back(py::reinterpret_borrow<py::object>(index));

  std::vector<Entry> entries;
  int64_t consumed = 0, ellipsis_at = -1;
  for (const py::object& it : items) {
    if (it.ptr() == Py_Ellipsis) {
      if (ellipsis_at >= 0) throw ember::IndexError("index", "an index can only have one '...'");
      ellipsis_at = int64_t(entries.size());
    } else if (it.is_none()) {
      entries.push_back({Entry::NewAxis});
    } else if (PySlice_Check(it.ptr())) {
      entries.push_back({Entry::Slice, 0, it});
      ++consumed;
    } else if (PyBool_Check(it.ptr())) {
      bad_index(it);
    } else if (py::isinstance<V>(it) || PyList_Check(it.ptr()) ||
               py::hasattr(it, "__array_interface__")) {
      Tensor t = to_variable(it, std::nullopt, x.device()).data();
      if (PyList_Check(it.ptr()) && t.numel() == 0) t = t.to(DType::Int64);
      if (t.dtype() == DType::Bool) {
        if (t.dim() == 0) bad_index(it);
        const size_t first = entries.size();
        for (Tensor& c : mask_coordinates(t)) entries.push_back({Entry::Array, 0, {}, c, {}, true});
        entries[first].mask = t.shape();
        consumed += t.dim();
      } else if (is_integral(t.dtype())) {
        entries.push_back({Entry::Array, 0, {}, t.to(DType::Int64)});
        ++consumed;
      } else {
        throw ember::IndexError("index",
                                "tensors used as indices must be integer or bool, not " + t.str());
      }
    } else if (PyIndex_Check(it.ptr())) {
      entries.push_back({Entry::Int, py::cast<int64_t>(it)});
      ++consumed;
    } else {
      bad_index(it);
    }
  }
  if (consumed > x.dim())
    throw ember::IndexError("index", "too many indices for a tensor of " + x.str() + ": " +
                                         std::to_string(consumed) + " dims indexed");
  std::vector<Entry> full(int(x.dim() - consumed),
                          Entry{Entry::Slice, 0, py::slice(py::none(), py::none(), py::none())});
  const auto at = ellipsis_at >= 0 ? entries.begin() + ellipsis_at : entries.end();
  entries.insert(at, full.begin(), full.end());
  check_against(entries, x, op);
  return entries;
}

bool has_array(const std::vector<Entry>& entries) {
  for (const Entry& e : entries)
    if (e.kind == Entry::Array) return true;
  return false;
}

// The index tensor with negative entries counted from the end of a dim of `size`.
Tensor wrapped(const Tensor& index, int64_t size) {
  return ember::where(ember::lt(index, 0.0), ember::add(index, double(size)), index);
}

V read(V x, std::vector<Entry> entries) {
  if (has_array(entries))  // NumPy: beside arrays, ints are 0-d arrays too
    for (Entry& e : entries)
      if (e.kind == Entry::Int)
        e = {Entry::Array, 0, {}, Tensor::from_vector<int64_t>({e.i}, {}).to(x.device())};
  std::vector<std::pair<int64_t, Tensor>> arrays;  // (dim of x, index)
  int64_t d = 0;
  for (const Entry& e : entries) {
    switch (e.kind) {
      case Entry::Int:
        x = ad::select(x, d, e.i);
        break;
      case Entry::NewAxis:
        x = ad::unsqueeze(x, d++);
        break;
      case Entry::Array:
        arrays.push_back({d++, e.array});
        break;
      case Entry::Slice: {
        const int64_t n = x.size(d);
        py::tuple r = e.slice.attr("indices")(n);
        int64_t start = r[0].cast<int64_t>(), stop = r[1].cast<int64_t>(),
                step = r[2].cast<int64_t>();
        if (step < 0) {  // x[a:b:-s] is flip(x)[n-1-a : n-1-b : s]
          x = ad::flip(x, {d});
          start = n - 1 - start, stop = n - 1 - stop, step = -step;
        }
        if (start != 0 || stop != n || step != 1) x = ad::slice(x, d, start, stop, step);
        ++d;
        break;
      }
    }
  }
  if (arrays.empty()) return x;

  Shape batch;  // the broadcast shape of the index tensors
  for (auto& [dim, idx] : arrays) batch = broadcast_shapes(batch, idx.shape(), "index");
  bool adjacent = true;
  for (size_t k = 0; k < arrays.size(); ++k)
    adjacent = adjacent && arrays[k].first == arrays[0].first + int64_t(k);

  Tensor flat =
      ember::zeros(batch, DType::Int64, x.device());  // flat positions in the indexed dims
  int64_t span = 1;
  for (size_t k = arrays.size(); k-- > 0;) {
    const int64_t n = x.size(arrays[k].first);
    flat = ember::add(flat, ember::mul(wrapped(arrays[k].second, n), double(span)));
    span *= n;
  }
  const V positions(flat.reshape({flat.numel()}));
  const int64_t first = arrays[0].first;
  if (arrays.size() == 1) {  // one index: index_select in place of its dim
    Shape out(x.shape().begin(), x.shape().begin() + first);
    out.insert(out.end(), batch.begin(), batch.end());
    out.insert(out.end(), x.shape().begin() + first + 1, x.shape().end());
    return ad::reshape(ad::index_select(x, first, positions), out);
  }
  // Several: move the indexed dims to the front, merge them into one and pick flat positions.
  std::vector<int64_t> perm;
  Shape rest;
  for (auto& a : arrays) perm.push_back(a.first);
  for (int64_t k = 0; k < x.dim(); ++k)
    if (std::find(perm.begin(), perm.end(), k) == perm.end())
      perm.push_back(k), rest.push_back(x.size(k));
  Shape merged = {span}, out = batch;
  merged.insert(merged.end(), rest.begin(), rest.end());
  out.insert(out.end(), rest.begin(), rest.end());
  V y = ad::reshape(ad::index_select(ad::reshape(ad::permute(x, perm), merged), 0, positions), out);
  const int64_t nb = int64_t(batch.size());
  if (!adjacent || first == 0) return y;
  std::vector<int64_t> back;  // rest[:first] + batch + rest[first:]
  for (int64_t k = 0; k < first; ++k) back.push_back(nb + k);
  for (int64_t k = 0; k < nb; ++k) back.push_back(k);
  for (int64_t k = nb + first; k < y.dim(); ++k) back.push_back(k);
  return ad::permute(y, back);
}

// A view of x for an index of ints, slices with positive steps, None and ...; or nothing.
std::optional<Tensor> basic_view(Tensor x, const std::vector<Entry>& entries) {
  int64_t d = 0;
  for (const Entry& e : entries) {
    if (e.kind == Entry::Array) return std::nullopt;
    if (e.kind == Entry::Int) x = x.select(d, e.i);
    else if (e.kind == Entry::NewAxis) x = x.unsqueeze(d++);
    else {
      py::tuple r = e.slice.attr("indices")(x.size(d));
      if (r[2].cast<int64_t>() < 0) return std::nullopt;
      x = x.slice(d++, r[0].cast<int64_t>(), r[1].cast<int64_t>(), r[2].cast<int64_t>());
    }
  }
  return x;
}

// The positions a slice picks along a dim of size n: start, start + step, ... (length of them).
struct Range {
  int64_t start, step, length;
};
Range range_of(const py::object& slice, int64_t n) {
  py::tuple r = slice.attr("indices")(n);
  const int64_t start = r[0].cast<int64_t>(), stop = r[1].cast<int64_t>(),
                step = r[2].cast<int64_t>();
  const int64_t length =
      step > 0 ? (stop - start + step - 1) / step : (start - stop - step - 1) / -step;
  return {start, step, std::max<int64_t>(0, length)};
}

// Where x[index] lies in x: its shape R (NumPy's, laid out as read() lays it out) and, for every
// dim of x, an int64 tensor of the coordinates along that dim, shaped to broadcast to R: an int
// is 0-d, a slice an arange along its dim of R, an index array lies along the dims of the arrays'
// broadcast shape B. So x[index] = v is index_put(x, coords, v), for every index and any layout
// of x, and the work is that of the elements written.
struct Target {
  IndexList coords;
  Shape shape;
};

Target target_of(std::vector<Entry> entries, const Tensor& x) {
  const Device device = x.device();
  if (has_array(entries))  // NumPy: beside arrays, ints are 0-d arrays too
    for (Entry& e : entries)
      if (e.kind == Entry::Int)
        e = {Entry::Array, 0, {}, Tensor::from_vector<int64_t>({e.i}, {}).to(device)};
  // R is the slices' and Nones' sizes in order, with B at `place`: where the arrays are when they
  // are adjacent, else first.
  Shape basic, batch;
  std::vector<Range> ranges;  // per slice, in order
  int64_t place = 0, first = -1, last = -1, arrays = 0, pos = 0, dim = 0;
  for (const Entry& e : entries) {
    if (e.kind == Entry::Array) {
      batch = broadcast_shapes(batch, e.array.shape(), "index");
      if (first < 0) first = pos, place = int64_t(basic.size());
      last = pos++, ++arrays, ++dim;
    } else if (e.kind == Entry::Slice) {
      ranges.push_back(range_of(e.slice, x.size(dim++)));
      basic.push_back(ranges.back().length), ++pos;
    } else if (e.kind == Entry::NewAxis) {
      basic.push_back(1), ++pos;
    } else {
      ++dim;
    }
  }
  if (last - first + 1 != arrays) place = 0;
  Target t;
  t.shape = basic;
  t.shape.insert(t.shape.begin() + place, batch.begin(), batch.end());
  const int64_t rank = int64_t(t.shape.size()), nb = int64_t(batch.size());
  int64_t j = 0;  // slices and Nones seen: the basic dim of R an entry is
  auto next_range = ranges.begin();
  for (const Entry& e : entries) {
    Shape s(size_t(rank), 1);
    if (e.kind == Entry::Int) {
      t.coords.push_back(Tensor::from_vector<int64_t>({e.i}, {}).to(device));
    } else if (e.kind == Entry::Slice) {
      const Range r = *next_range++;
      s[size_t(j < place ? j : j + nb)] = r.length;
      const Tensor steps = ember::arange(0, double(r.length), 1, DType::Int64, device);
      t.coords.push_back(ember::add(ember::mul(steps, double(r.step)), double(r.start)).reshape(s));
      ++j;
    } else if (e.kind == Entry::Array) {
      for (int64_t i = 0; i < e.array.dim(); ++i)
        s[size_t(place + nb - e.array.dim() + i)] = e.array.size(i);
      t.coords.push_back(e.array.reshape(s));
    } else {
      ++j;
    }
  }
  return t;
}

// Whether `from` broadcasts to `to` (NumPy's rules, `to` not stretched).
bool broadcasts(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 1; i <= from.size(); ++i)
    if (from[from.size() - i] != 1 && from[from.size() - i] != to[to.size() - i]) return false;
  return true;
}

// The value of x[index] = value, as index_put's values: on x's device, of x's dtype, with the
// leading dims of size 1 beyond R's rank dropped (as NumPy does), broadcasting to R.
V values_for(py::handle value, const V& x, const Shape& r) {
  V v = is_scalar(value)
            ? V(Tensor::empty({}, x.dtype(), x.device(), "__setitem__").fill_(scalar_value(value)))
            : to_variable(value, std::nullopt, x.device());
  if (v.device() != x.device()) v = ad::to(v, x.device());
  if (v.dtype() != x.dtype()) v = ad::to(v, x.dtype());
  Shape shape = v.shape();
  while (shape.size() > r.size() && shape.front() == 1) shape.erase(shape.begin());
  if (!broadcasts(shape, r))
    throw ember::ShapeError("__setitem__", "x is " + x.str() + ", x[index] is " + shape_str(r) +
                                               " and the value is " + v.str() +
                                               "; the value must broadcast to " + shape_str(r) +
                                               ". Fix: reshape the value, or index a region of "
                                               "its shape");
  if (x.dim() == 0) shape = {};  // R is all ones there, and index_put writes one 0-d value
  return shape == v.shape() ? v : ad::reshape(v, shape);
}

// x[index] = value while a compiled step is traced: a write of the whole tensor (x[...] = v, as
// batch norm counts its batches) is the op copy_, which the step records; a write into part of it
// is refused rather than missed.
void traced_write(const V& x, const std::vector<Entry>& entries, py::handle value) {
  std::optional<Tensor> view = basic_view(x.data(), entries);
  if (!view || view->shape() != x.shape() || view->strides() != x.data().strides() ||
      view->offset() != x.data().offset())
    ad::compile::check_capturable("__setitem__",
                                  "writing into part of a tensor without history (x[index] = v)",
                                  "compute the new tensor out of place (ember.where, index_put) "
                                  "and copy_ it into x whole, or write outside the step");
  x.copy_(values_for(value, x, x.shape()));
}

// x[index] = value. With history to record (grad mode on, x or the value requires grad) the write
// is index_put out of place, and the Tensor object takes the result (assign_recorded). Otherwise
// it goes into x's storage: through a view for a basic index (no copy), else index_put_.
void write(py::object self, py::handle index, py::handle value) {
  const V& x = py::cast<const V&>(self);
  const std::vector<Entry> entries = parse(index, x.data(), "__setitem__");
  if (records_in_place(x, value)) {
    const Target t = target_of(entries, x.data());
    const std::vector<V> coords(t.coords.begin(), t.coords.end());
    assign_recorded(self, ad::index_put(x, coords, values_for(value, x, t.shape)), "__setitem__");
    return;
  }
  ad::NoGradGuard no_grad;
  if (ad::compile::tracing()) return traced_write(x, entries, value);
  if (std::optional<Tensor> view = basic_view(x.data(), entries)) {
    if (is_scalar(value)) view->fill_(scalar_value(value));
    else view->copy_(values_for(value, x, view->shape()).data());
    return;
  }
  const Target t = target_of(entries, x.data());
  ember::index_put_(x.data(), t.coords, values_for(value, x, t.shape).data());
}

// index_put's index list from Python: a tuple or list of integer tensors (or lists), one per
// leading dim, and bool masks, each standing for its nonzero coordinates (one tensor per dim).
std::vector<V> index_list(py::handle indices, const V& x, const char* op) {
  if (!PyTuple_Check(indices.ptr()) && !PyList_Check(indices.ptr()))
    throw ember::IndexError(op, "indices must be a tuple of tensors, one per leading dim of " +
                                    x.str() + ", got " + std::string(py::repr(indices)));
  std::vector<V> out;
  for (py::handle item : indices) {
    const Tensor t = to_variable(item, std::nullopt, x.device()).data();
    if (t.dtype() == DType::Bool) {
      for (Tensor& c : mask_coordinates(t)) out.emplace_back(c);
    } else if (is_integral(t.dtype())) {
      out.emplace_back(t.dtype() == DType::Int32 ? t : t.to(DType::Int64));
    } else {
      throw ember::IndexError(op,
                              "tensors used as indices must be integer or bool, not " + t.str());
    }
  }
  return out;
}

// index_put's values: on x's device and of x's dtype (index_put checks that they broadcast).
V values_of(py::handle values, const V& x) {
  V v = to_variable(values, std::nullopt, x.device());
  if (v.device() != x.device()) v = ad::to(v, x.device());
  return v.dtype() == x.dtype() ? v : ad::to(v, x.dtype());
}

}  // namespace

void bind_indexing(py::module_& m, TensorClass& cls) {
  cls.def(
      "__getitem__", [](const V& x, py::handle index) { return read(x, parse(index, x.data())); },
      "NumPy indexing: ints, slices, None, ..., integer and bool tensors or lists.");
  cls.def("__setitem__", &write, "NumPy indexed assignment of a number or tensor (broadcast).");
  def_op(
      m, cls, "index_put",
      [](const V& x, py::handle indices, py::handle values, bool accumulate) {
        return ad::index_put(x, index_list(indices, x, "index_put"), values_of(values, x),
                             accumulate);
      },
      "A copy of x with x[indices] = values, or += with accumulate (repeated positions then add "
      "up); indices: a tuple of integer or bool tensors for the leading dims.",
      py::arg("indices"), py::arg("values"), py::arg("accumulate") = false);
  cls.def(
      "index_put_",
      [](py::object self, py::handle indices, py::handle values, bool accumulate) {
        const V& x = py::cast<const V&>(self);
        const std::vector<V> list = index_list(indices, x, "index_put_");
        const V v = values_of(values, x);
        if (records_in_place(x, values)) {
          assign_recorded(self, ad::index_put(x, list, v, accumulate), "index_put_");
        } else {
          IndexList tensors;
          for (const V& i : list) tensors.push_back(i.data());
          ember::index_put_(x.data(), tensors, v.data(), accumulate);
        }
        return self;
      },
      py::arg("indices"), py::arg("values"), py::arg("accumulate") = false,
      "In place: self[indices] = values (or += with accumulate); returns self.");
  cls.def(
      "nonzero",
      [](const V& x, bool as_tuple) -> py::object {
        const Tensor mask = x.dtype() == DType::Bool ? x.data() : ember::ne(x.data(), 0.0);
        if (!as_tuple) return py::cast(V(ember::nonzero(mask)));
        std::vector<Tensor> coords = mask_coordinates(mask);
        py::tuple out(coords.size());
        for (size_t d = 0; d < coords.size(); ++d) out[d] = V(coords[d]);
        return std::move(out);
      },
      py::arg("as_tuple") = false,
      "The indices of the non-zero elements: [count, ndim], or one tensor per dim (reads the "
      "tensor on the host).");
}

}  // namespace ember::python
