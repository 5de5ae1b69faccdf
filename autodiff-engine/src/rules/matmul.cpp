// matmul.cpp — matrix products: matmul (NumPy's, every form), linear (x weight^T + bias) and
// linear_act (linear then relu or gelu, one op: the GEMM's epilogue applies the activation).
#include "ember/ops/matmul.h"

#include "ember/autodiff/ops.h"
#include "families.h"
#include "infer.h"

namespace ember::autodiff {

namespace {

// What core-runtime's matmul and linear check of their operands' dtypes: one, and not bool. The
// advice casts the integer operand to the floating one's dtype, else b to a's.
void check_gemm_dtypes(const char* op, const std::string& who, DType a, DType b,
                       const char* an = "a", const char* bn = "b") {
  if (a != b) {
    static const char* const names[] = {"Bool",  "UInt8",   "Int8",     "Int16",   "Int32",
                                        "Int64", "Float16", "BFloat16", "Float32", "Float64"};
    const bool cast_a = !is_floating(a) && is_floating(b);
    const std::string name = cast_a ? an : bn;
    throw DTypeError(op, who + "; both operands must have one dtype, cast " + name + " with " +
                             name + ".to(DType::" + names[int(cast_a ? b : a)] + ") first");
  }
  if (a == DType::Bool)
    throw DTypeError(op, who + "; bool is not supported, cast with .to(DType::Float32) first");
}

// NumPy's promotion of 1-D operands: a vector a is a row [1, k], a vector b a column [k, 1].
Shape as_matrix_a(const Shape& a) { return a.size() == 1 ? Shape{1, a[0]} : a; }
Shape as_matrix_b(const Shape& b) { return b.size() == 1 ? Shape{b[0], 1} : b; }
Shape batch_of(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

// a [*A, m, k] (or [k]), b [*B, k, n] (or [k]) -> [*broadcast(A, B), m, n], without the dims
// that a 1-D operand added.
Types matmul_infer(const Types& in, const Attrs&) {
  infer::arity("matmul", in, 2);
  infer::same_device("matmul", in);
  const std::string who = "a is " + in[0].str() + ", b is " + in[1].str();
  check_gemm_dtypes("matmul", who, in[0].dtype, in[1].dtype);
  if (in[0].shape.empty() || in[1].shape.empty())
    throw ShapeError("matmul", who + "; both operands need at least 1 dim, use mul() for a scalar");
  const Shape a = as_matrix_a(in[0].shape), b = as_matrix_b(in[1].shape);
  const int64_t k = a.back(), kb = b[b.size() - 2];
  if (k != kb)
    throw ShapeError("matmul", who + "; a.shape[-1] (" + std::to_string(k) + ") must equal " +
                                   (in[1].shape.size() == 1 ? "b.shape[0]" : "b.shape[-2]") + " (" +
                                   std::to_string(kb) + ")");
  Shape out;
  try {
    out = broadcast_shapes(batch_of(a), batch_of(b), "matmul");
  } catch (const ShapeError&) {
    throw ShapeError("matmul", who + "; the batch dims " + shape_str(batch_of(a)) + " and " +
                                   shape_str(batch_of(b)) +
                                   " must broadcast (each pair equal, or one of them 1)");
  }
  if (in[0].shape.size() > 1) out.push_back(a[a.size() - 2]);
  if (in[1].shape.size() > 1) out.push_back(b.back());
  return {TensorType{out, in[0].dtype, in[0].device}};
}

// A gradient of an operand promoted to `promoted` (batch dims broadcast) back to the operand's
// own shape: summed over the broadcast batch dims, the dim a 1-D operand gained dropped.
Val unpromote(Val g, const Shape& promoted, const Shape& shape) {
  if (g.shape() != promoted) g = sum_to(g, promoted);
  return promoted == shape ? g : reshape(g, shape);
}

// y = a @ b; with a2 [*A, m, k], b2 [*B, k, n] the promoted operands and dy2 [*, m, n]:
// da = dy2 @ b2^T, db = a2^T @ dy2, each summed back to its operand's shape.
Grads matmul_grad(const GradContext& c) {
  const Shape a_shape = c.x(0).shape(), b_shape = c.x(1).shape();
  const Shape a2_shape = as_matrix_a(a_shape), b2_shape = as_matrix_b(b_shape);
  const Val a2 = a2_shape == a_shape ? c.x(0) : reshape(c.x(0), a2_shape);
  const Val b2 = b2_shape == b_shape ? c.x(1) : reshape(c.x(1), b2_shape);
  Shape dy2_shape = broadcast_shapes(batch_of(a2_shape), batch_of(b2_shape), "matmul");
  dy2_shape.push_back(a2_shape[a2_shape.size() - 2]);
  dy2_shape.push_back(b2_shape.back());
  const Val dy2 = c.dy().shape() == dy2_shape ? c.dy() : reshape(c.dy(), dy2_shape);

  Val da, db;
  if (c.needs_grad[0]) da = unpromote(matmul(dy2, transpose(b2, -1, -2)), a2_shape, a_shape);
  if (c.needs_grad[1] && b2_shape.size() == 2 && a2_shape.size() > 2) {
    // b is one matrix for every batch: db = (a2 rows)^T @ (dy2 rows), one GEMM, no batch sum.
    const int64_t k = a2_shape.back(), n = b2_shape.back();
    const int64_t rows = shape_numel(Shape(a2_shape.begin(), a2_shape.end() - 1));
    const Val a_rows = reshape(a2, {rows, k}), dy_rows = reshape(dy2, {rows, n});
    db = unpromote(matmul(transpose(a_rows, 0, 1), dy_rows), b2_shape, b_shape);
  } else if (c.needs_grad[1]) {
    db = unpromote(matmul(transpose(a2, -1, -2), dy2), b2_shape, b_shape);
  }
  return {da, db};
}

// x [*, in], weight [out, in], bias [out] (optional) -> [*, out], checked under `op`'s name
// (linear or linear_act).
TensorType linear_type(const char* op, const Types& in) {
  if (in.size() != 2 && in.size() != 3)
    throw ValueError(op, "takes 2 or 3 inputs (x, weight, bias), got " + std::to_string(in.size()));
  infer::same_device(op, in);
  const bool has_bias = in.size() == 3;
  const std::string who = "x is " + in[0].str() + ", weight is " + in[1].str() +
                          (has_bias ? ", bias is " + in[2].str() : "");
  check_gemm_dtypes(op, who, in[0].dtype, in[1].dtype, "x", "weight");
  if (has_bias && in[2].dtype != in[0].dtype)
    throw DTypeError(op, who + "; bias must have x's dtype, cast it with .to(" +
                             dtype_name(in[0].dtype) + ")");
  const Shape& x = in[0].shape;
  const Shape& w = in[1].shape;
  if (w.size() != 2) throw ShapeError(op, who + "; weight must be 2-D [out_features, in_features]");
  if (x.empty() || x.back() != w[1])
    throw ShapeError(op, who + "; x.shape[-1] must equal weight.shape[1] (" + std::to_string(w[1]) +
                             ")");
  if (has_bias && in[2].shape != Shape{w[0]})
    throw ShapeError(op, who + "; bias must be [" + std::to_string(w[0]) + "] (weight.shape[0])");
  Shape out(x.begin(), x.end() - 1);
  out.push_back(w[0]);
  return TensorType{out, in[0].dtype, in[0].device};
}

Types linear_infer(const Types& in, const Attrs&) { return {linear_type("linear", in)}; }

// y = x W^T + b;  dx = dy W, dW = dy^T x (over the rows of every leading dim), db = sum of dy
// over the leading dims
Grads linear_grad(const GradContext& c) {
  const Val x = c.x(0), w = c.x(1), dy = c.dy();
  Grads grads(c.inputs.size());
  if (c.needs_grad[0]) grads[0] = matmul(dy, w);
  if (c.needs_grad[1]) {
    const int64_t in = w.size(1), out = w.size(0);
    const int64_t rows = shape_numel(Shape(x.shape().begin(), x.shape().end() - 1));
    auto as_rows = [&](const Val& v, int64_t width) {  // [*, width] -> [rows, width]
      return v.dim() == 2 ? v : reshape(v, {rows, width});
    };
    grads[1] = matmul(transpose(as_rows(dy, out), 0, 1), as_rows(x, in));
  }
  if (grads.size() == 3 && c.needs_grad[2]) {
    std::vector<int64_t> leading;
    for (int64_t d = 0; d + 1 < dy.dim(); ++d) leading.push_back(d);
    grads[2] = leading.empty() ? dy : sum(dy, leading);
  }
  return grads;
}

// linear_act: attributes activation ("relu", "gelu", "gelu_tanh", core's linear_act) and pre
// (1: linear's value is a second output). Outputs y = activation(pre), then pre when kept.
Types linear_act_infer(const Types& in, const Attrs& attrs) {
  const std::string& activation = attrs.s("activation");
  if (activation != "relu" && activation != "gelu" && activation != "gelu_tanh")
    throw ValueError("linear_act", "activation is \"" + activation +
                                       "\"; expected \"relu\", \"gelu\" or \"gelu_tanh\"");
  const TensorType y = linear_type("linear_act", in);
  if (!is_floating(y.dtype))
    throw DTypeError("linear_act", "x is " + in[0].str() +
                                       "; the activation needs a floating dtype, cast x, weight "
                                       "and bias with .to(DType::Float32) first");
  if (attrs.b("pre")) return {y, y};
  return {y};
}

Tensors linear_act_run(const Tensors& in, const Attrs& attrs) {
  const bool keep_pre = attrs.b("pre");
  LinearActResult r =
      linear_act(in[0], in[1], in.size() == 3 ? in[2] : Tensor(), attrs.s("activation"), keep_pre);
  if (keep_pre) return {r.output, r.pre};
  return {r.output};
}

// y = act(pre), pre = x W^T + b: dpre = dy act'(pre) (plus the gradient arriving at pre when it
// is an output), then linear's gradients with dpre. relu's derivative is read from y (y > 0 where
// pre > 0, as relu's own rule reads it), gelu's from pre: the kept output, or linear recomputed
// when the node did not keep it.
Grads linear_act_grad(const GradContext& c) {
  const std::string& activation = c.attrs.s("activation");
  const bool kept = c.outputs.size() > 1;
  Val dpre;
  if (c.dy(0).defined()) {
    if (activation == "relu") {
      dpre = relu_backward(c.dy(0), c.y(0));
    } else {
      const Val pre = kept ? c.y(1) : linear(c.x(0), c.x(1), c.inputs.size() == 3 ? c.x(2) : Val());
      dpre = gelu_backward(c.dy(0), pre, activation == "gelu" ? "none" : "tanh");
    }
  }
  if (kept && c.dy(1).defined()) dpre = dpre.defined() ? dpre + c.dy(1) : c.dy(1);
  if (!dpre.defined()) return Grads(c.inputs.size());
  const GradContext lin{c.graph, c.inputs, {c.y(0)}, {dpre}, c.needs_grad, c.attrs};
  return linear_grad(lin);
}

}  // namespace

std::vector<OpDef> matmul_ops() {
  return {
      {"matmul", matmul_infer,
       [](const Tensors& in, const Attrs&) -> Tensors { return {matmul(in[0], in[1])}; },
       matmul_grad},
      {"linear", linear_infer,
       [](const Tensors& in, const Attrs&) -> Tensors {
         return {linear(in[0], in[1], in.size() == 3 ? in[2] : Tensor())};
       },
       linear_grad},
      {"linear_act", linear_act_infer, linear_act_run, linear_act_grad},
  };
}

}  // namespace ember::autodiff
