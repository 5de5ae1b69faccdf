// bind_movement.cpp — views and data movement (autodiff-engine's ops/movement.h): reshape, view,
// transpose, permute, squeeze, expand, cat, stack, split, pad, gather, index_select, ...
// as ember.<op> and as Tensor methods, with PyTorch's argument forms (x.view(2, 3) or
// x.view((2, 3)), dims as an int or a tuple).
#include <ember/autodiff/ops.h>
#include <ember/error.h>

#include "def_op.h"

namespace ember::python {

namespace ad = ember::autodiff;

namespace {

using V = Variable;

std::vector<int64_t> reversed_dims(int64_t n) {
  std::vector<int64_t> dims;
  for (int64_t d = n - 1; d >= 0; --d) dims.push_back(d);
  return dims;
}

// expand's sizes: -1 keeps x's size (aligned from the right).
Shape expanded_shape(const V& x, Shape sizes) {
  const int64_t lead = int64_t(sizes.size()) - x.dim();
  for (int64_t i = 0; i < int64_t(sizes.size()); ++i)
    if (sizes[size_t(i)] == -1 && i >= lead) sizes[size_t(i)] = x.size(i - lead);
  return sizes;
}

V view(const V& x, const Shape& shape) {
  x.data().view(shape);  // throws ShapeError, as PyTorch's view, when the strides forbid a view
  return ad::reshape(x, shape);
}

// split_size_or_sections: an int (pieces of that size) or a list of section sizes, which must
// be >= 0 and sum to the dim's size; the message names the list and x's shape.
std::vector<V> split(const V& x, py::handle sizes, int64_t dim) {
  if (!PyList_Check(sizes.ptr()) && !PyTuple_Check(sizes.ptr())) {
    const int64_t split_size = py::cast<int64_t>(sizes);
    if (split_size <= 0)
      throw ember::ValueError("split", "split_size is " + std::to_string(split_size) + " (x is " +
                                           x.str() +
                                           "); pass a positive size, or a list of section sizes");
    return ad::split(x, split_size, dim);
  }
  const int64_t d = ember::wrap_dim(dim, x.dim(), "split", "x is " + x.str());
  std::vector<int64_t> sections;
  int64_t total = 0;
  for (py::handle s : sizes) {
    sections.push_back(py::cast<int64_t>(s));
    total += sections.back();
  }
  const std::string given = "split sizes " + shape_str(sections) + " along dim " +
                            std::to_string(d) + " of x (" + x.str() + ", size " +
                            std::to_string(x.size(d)) + " there)";
  for (int64_t n : sections)
    if (n < 0)
      throw ember::ValueError("split", given + ": " + std::to_string(n) +
                                           " is negative; every section size must be >= 0");
  if (total != x.size(d))
    throw ember::ShapeError("split", given + ": they sum to " + std::to_string(total) +
                                         "; pass sizes that sum to " + std::to_string(x.size(d)));
  std::vector<V> out;
  int64_t start = 0;
  for (int64_t n : sections) {
    out.push_back(ad::slice(x, d, start, start + n));
    start += n;
  }
  return out;
}

std::vector<V> tensors_of(py::handle seq, const char* op) {
  std::vector<V> out;
  for (py::handle t : seq) {
    if (!py::isinstance<V>(t)) not_a_tensor(op, t);
    out.push_back(py::cast<V>(t));
  }
  return out;
}

}  // namespace

void bind_movement(py::module_& m, TensorClass& cls) {
  def_op(
      m, cls, "reshape",
      [](const V& x, const py::args& shape) {
        return ad::reshape(x, shape_from_args(shape, "reshape"));
      },
      "The same elements in another shape (one size may be -1); a view when strides allow.");
  cls.def(
      "view",
      [](const V& x, const py::args& shape) { return view(x, shape_from_args(shape, "view")); },
      "A view in another shape (one size may be -1); ShapeError when the strides forbid it.");
  cls.def(
      "view_as", [](const V& x, const V& other) { return view(x, other.shape()); },
      py::arg("other"));
  cls.def(
      "reshape_as", [](const V& x, const V& other) { return ad::reshape(x, other.shape()); },
      py::arg("other"));
  def_op(
      m, cls, "transpose", [](const V& x, int64_t a, int64_t b) { return ad::transpose(x, a, b); },
      "Swaps two dims (a view).", py::arg("dim0"), py::arg("dim1"));
  def_op(
      m, cls, "swapaxes", [](const V& x, int64_t a, int64_t b) { return ad::transpose(x, a, b); },
      "Another name of transpose.", py::arg("axis0"), py::arg("axis1"));
  def_op(
      m, cls, "t", [](const V& x) { return x.dim() < 2 ? x : ad::transpose(x, 0, 1); },
      "The transpose of a matrix (a 0-d or 1-d tensor is itself).");
  cls.def_property_readonly(
      "T", [](const V& x) { return x.dim() < 2 ? x : ad::permute(x, reversed_dims(x.dim())); },
      "The tensor with its dims reversed.");
  cls.def(
      "permute",
      [](const V& x, const py::args& dims) {
        return ad::permute(x, shape_from_args(dims, "permute"));
      },
      "The dims reordered: x.permute(2, 0, 1) (a view).");
  m.def(
      "permute", [](const V& x, const std::vector<int64_t>& dims) { return ad::permute(x, dims); },
      py::arg("input"), py::arg("dims"), "The dims reordered (a view).");
  def_op(
      m, cls, "select", [](const V& x, int64_t d, int64_t i) { return ad::select(x, d, i); },
      "x[..., index, ...] along dim, dropping it.", py::arg("dim"), py::arg("index"));
  def_op(
      m, cls, "narrow",
      [](const V& x, int64_t d, int64_t start, int64_t len) {
        return ad::narrow(x, d, start, len);
      },
      "length elements from start along dim (a view).", py::arg("dim"), py::arg("start"),
      py::arg("length"));
  def_op(
      m, cls, "squeeze",
      [](const V& x, py::handle d) { return ad::squeeze(x, dims_from_object(d)); },
      "Drops dims of size 1 (every one, or those given).", py::arg("dim") = py::none());
  def_op(
      m, cls, "unsqueeze", [](const V& x, int64_t d) { return ad::unsqueeze(x, d); },
      "Inserts a dim of size 1 at dim.", py::arg("dim"));
  def_op(
      m, cls, "flatten", [](const V& x, int64_t s, int64_t e) { return ad::flatten(x, s, e); },
      "Merges dims start_dim .. end_dim into one.", py::arg("start_dim") = 0,
      py::arg("end_dim") = -1);
  def_op(
      m, cls, "contiguous",
      [](const V& x) { return x.data().is_contiguous() ? x : ad::contiguous(x); },
      "A contiguous copy, or x itself when it is contiguous.");
  def_op(
      m, cls, "flip", [](const V& x, py::handle d) { return ad::flip(x, dims_from_object(d)); },
      "The order of the elements along dims reversed.", py::arg("dims"));
  cls.def(
      "expand",
      [](const V& x, const py::args& sizes) {
        return ad::expand(x, expanded_shape(x, shape_from_args(sizes, "expand")));
      },
      "A broadcast view to sizes (-1 keeps a size): x.expand(4, -1).");
  cls.def(
      "expand_as", [](const V& x, const V& other) { return ad::expand(x, other.shape()); },
      py::arg("other"));
  def_op(
      m, cls, "broadcast_to",
      [](const V& x, const Shape& s) { return ad::expand(x, expanded_shape(x, s)); },
      "A broadcast view to shape.", py::arg("shape"));

  // ---- joining and splitting ----
  for (const char* name : {"cat", "concat", "concatenate"})
    m.def(
        name, [](py::handle xs, int64_t d) { return ad::cat(tensors_of(xs, "cat"), d); },
        py::arg("tensors"), py::arg("dim") = 0, "Joins tensors along an existing dim.");
  m.def(
      "stack", [](py::handle xs, int64_t d) { return ad::stack(tensors_of(xs, "stack"), d); },
      py::arg("tensors"), py::arg("dim") = 0, "Joins tensors of one shape along a new dim.");
  def_op(m, cls, "split", &split,
         "Pieces of split_size along dim (the last may be smaller), or of the given sizes.",
         py::arg("split_size_or_sections"), py::arg("dim") = 0);
  def_op(
      m, cls, "chunk", [](const V& x, int64_t n, int64_t d) { return ad::chunk(x, n, d); },
      "About equal pieces along dim.", py::arg("chunks"), py::arg("dim") = 0);
  def_op(
      m, cls, "unbind",
      [](const V& x, int64_t d) {
        std::vector<V> out;
        for (int64_t i = 0; i < x.size(d); ++i) out.push_back(ad::select(x, d, i));
        return py::tuple(py::cast(out));
      },
      "The slices along dim, each without it.", py::arg("dim") = 0);

  // ---- padding and indexing ----
  m.def(
      "pad",
      [](const V& x, const std::vector<int64_t>& pads, const std::string& mode, double value) {
        return ad::pad(x, pads, mode, value);
      },
      py::arg("input"), py::arg("pad"), py::arg("mode") = "constant", py::arg("value") = 0.0,
      "Pads (left, right) pairs from the last dim backwards, as torch.nn.functional.pad.");
  m.def(
      "pad_backward",
      [](const V& g, const Shape& s, const std::vector<int64_t>& pads, const std::string& mode) {
        return ad::pad_backward(g, s, pads, mode);
      },
      py::arg("grad"), py::arg("input_shape"), py::arg("pad"), py::arg("mode") = "constant");
  def_op(
      m, cls, "index_select",
      [](const V& x, int64_t d, const V& i) { return ad::index_select(x, d, i); },
      "The slices index[0], index[1], ... along dim.", py::arg("dim"), py::arg("index"));
  def_op(
      m, cls, "index_add",
      [](const V& x, int64_t d, const V& i, const V& s) { return ad::index_add(x, d, i, s); },
      "A copy of x with source's slice j added to slice index[j] along dim.", py::arg("dim"),
      py::arg("index"), py::arg("source"));
  def_op(
      m, cls, "gather", [](const V& x, int64_t d, const V& i) { return ad::gather(x, d, i); },
      "out[i][j] = x[index[i][j]][j] (dim 0), x[i][index[i][j]] (dim 1), ...", py::arg("dim"),
      py::arg("index"));
  def_op(
      m, cls, "scatter_add",
      [](const V& x, int64_t d, const V& i, const V& s) { return ad::scatter_add(x, d, i, s); },
      "A copy of x with src added at the positions index names along dim (gather's adjoint).",
      py::arg("dim"), py::arg("index"), py::arg("src"));
  m.def(
      "embedding", [](const V& indices, const V& weight) { return ad::embedding(weight, indices); },
      py::arg("input"), py::arg("weight"), "Rows of weight [V, D] at input's indices -> [*, D].");
  m.def(
      "embedding_backward",
      [](const V& g, const V& i, int64_t n) { return ad::embedding_backward(g, i, n); },
      py::arg("grad"), py::arg("indices"), py::arg("num_weights"));
  m.def(
      "one_hot", [](const V& i, int64_t n) { return ad::one_hot(i, n); }, py::arg("input"),
      py::arg("num_classes") = -1, "int64 [*, num_classes] with a 1 at each index.");
}

}  // namespace ember::python
