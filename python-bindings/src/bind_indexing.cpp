// bind_indexing.cpp — NumPy indexing, x[index] and x[index] = value, reduced to a few core ops:
//   int -> select, slice -> slice (a negative step: flip first), None -> unsqueeze,
//   ... -> full slices, integer tensors/lists -> index_select on the indexed dims (flattened
//   together when there are several), boolean masks -> their nonzero positions (core-runtime's
//   nonzero).
// NumPy's placement rule: the dims of the advanced indices replace the indexed dims where they
// are adjacent, and go first when a slice or None separates them (ints then count as advanced).
// Reads are differentiable. A write goes into the storage: basic indices write through a view;
// advanced ones compute the positions they reach and write them with where().
#include <ember/autodiff/ops.h>
#include <ember/error.h>
#include <ember/ops/creation.h>
#include <ember/ops/elementwise.h>
#include <ember/ops/indexing.h>
#include <ember/ops/masking.h>

#include <algorithm>
#include <map>

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

// The index as a list of entries, with ... expanded and masks turned into integer arrays.
std::vector<Entry> parse(py::handle index, const Tensor& x) {
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
        for (Tensor& c : mask_coordinates(t)) entries.push_back({Entry::Array, 0, {}, c});
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

void write(const V& self, py::handle index, py::handle value) {
  if (self.requires_grad() && ad::grad_enabled())
    throw ember::ValueError("__setitem__", "an in-place write to a tensor that requires grad (" +
                                               self.str() + "). Fix: write under ember.no_grad()");
  if (py::isinstance<V>(value) && py::cast<const V&>(value).requires_grad() && ad::grad_enabled())
    throw ember::NotSupportedError("__setitem__",
                                   "writing a tensor that requires grad into another would not "
                                   "be recorded. Fix: build the result with ember.where, "
                                   "ember.cat or index_add, or write under ember.no_grad()");
  const Tensor& x = self.data();
  const bool scalar = is_scalar(value);
  const Tensor v = scalar ? Tensor() : to_variable(value, std::nullopt, x.device()).data();
  const std::vector<Entry> entries = parse(index, x);
  if (std::optional<Tensor> view = basic_view(x, entries)) {
    if (scalar) view->fill_(scalar_value(value));
    else view->copy_(v);
    return;
  }
  // The flat positions the index reaches (last write wins for repeated ones, as NumPy).
  ad::NoGradGuard no_grad;
  const int64_t n = x.numel();
  const Tensor where_at =
      read(V(ember::arange(0, double(n), 1, DType::Int64, x.device()).reshape(x.shape())), entries)
          .data();
  const std::vector<int64_t> pos = where_at.to(Device()).to_vector<int64_t>();
  std::map<int64_t, int64_t> last;  // position -> which value writes it
  for (size_t k = 0; k < pos.size(); ++k) last[pos[k]] = int64_t(k);
  std::vector<bool> hit(size_t(n), false);
  std::vector<int64_t> at, from;
  for (auto [p, k] : last) hit[size_t(p)] = true, at.push_back(p), from.push_back(k);
  const Tensor mask = Tensor::from_vector(hit, {n}).to(x.device());
  const Tensor flat = x.reshape({n});
  Tensor result;
  if (scalar) {
    result = ember::masked_fill(flat, mask, scalar_value(value));
  } else {
    const int64_t m = int64_t(at.size());
    const Tensor values = v.to(x.dtype()).expand(where_at.shape()).reshape({where_at.numel()});
    const Tensor chosen =
        ember::index_select(values, 0, Tensor::from_vector(from, {m}).to(x.device()));
    const Tensor placed = ember::index_add(ember::zeros({n}, x.dtype(), x.device()), 0,
                                           Tensor::from_vector(at, {m}).to(x.device()), chosen);
    result = ember::where(mask, placed, flat);
  }
  Tensor target = x;
  target.copy_(result.reshape(x.shape()));
}

}  // namespace

void bind_indexing(TensorClass& cls) {
  cls.def(
      "__getitem__", [](const V& x, py::handle index) { return read(x, parse(index, x.data())); },
      "NumPy indexing: ints, slices, None, ..., integer and bool tensors or lists.");
  cls.def("__setitem__", &write, "NumPy indexed assignment of a number or tensor (broadcast).");
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
