// fusion_group.h — what one fused kernel computes: a small DAG of elementwise ops over strided
// inputs that broadcast to one shape, optionally ending in a reduction over the innermost dims.
//
//   FusionGroup g(/*shape=*/{64, 128});
//   int x = g.input({64, 128}, {128, 1}, DType::Float32);     // strides in elements
//   int b = g.input({128}, {1}, DType::Float32);              // broadcast over the rows
//   int y = g.unary(FusedOp::Gelu, g.binary(FusedOp::Add, x, b));
//   g.reduce(FusedReduction::Sum, /*dims=*/1);                // -> [64]
//
// A group writes one value, its last node's, unless output() names the values it writes: then
// the kernel stores each of them, in that order, in the same loop (the values a program reads
// outside the group, computed once). A group that ends in a reduction writes that reduction first;
// output(), called after reduce(), names values of shape() it writes beside it (in the same loop).
// On the CPU the reduction adds in the library's order (core-runtime's cpu/reduce_loops.h), so its
// result equals the unfused sum, mean or amax bit for bit; on CUDA one block reduces each row.
//
// Every node has a dtype, and its value is exactly what the library's eager kernel of that op
// would produce in that dtype (float16/bfloat16 round after every op, as eager ones do), so that a
// fused kernel's result equals the unfused chain's. Operands of a binary op share one dtype: a
// change of dtype is an explicit Cast node. The builder checks every node and throws the typed
// error the eager op would (DTypeError for exp of an int32, ShapeError for shapes that do not
// broadcast), naming the op.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ember/dtype.h"
#include "ember/shape.h"

namespace ember::autodiff::compile {

enum class FusedOp : uint8_t {
  Input,     // a group input
  Constant,  // scalars[0] in the node's dtype (a 0-d value broadcast everywhere)
  // unary, dtype kept. Neg, Abs, Relu: any numeric dtype; the rest floating only.
  Neg,
  Abs,
  Relu,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Sin,
  Cos,
  Tanh,
  Sigmoid,
  Gelu,
  GeluTanh,
  Silu,
  Erf,
  Reciprocal,
  // binary, one numeric dtype in and out (Div: floating only)
  Add,
  Sub,
  Mul,
  Div,
  Maximum,
  Minimum,
  // comparisons: operands of one dtype (bool allowed), bool out
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  // activation backwards (grad, x); Sigmoid and Tanh take the forward output y: (grad, y)
  ReluBackward,
  GeluBackward,
  GeluTanhBackward,
  SiluBackward,
  SigmoidBackward,
  TanhBackward,
  Where,  // (cond: bool, a, b): a and b of one dtype
  Clamp,  // x clamped to [scalars[0], scalars[1]] (+-infinity: no bound); any numeric dtype
  Cast,   // x converted to the node's dtype (float -> integer truncates, anything -> bool is != 0)
};
const char* fused_op_name(FusedOp op);  // "add", "gelu_backward", ...
int fused_op_arity(FusedOp op);         // operands: 0, 1, 2 or 3

enum class FusedReduction : uint8_t { None, Sum, Mean, Max };
const char* fused_reduction_name(FusedReduction r);

struct FusedInput {
  Shape shape;
  std::vector<int64_t> strides;  // in elements, may be 0 (broadcast) or any positive step
  DType dtype;
};

struct FusedNode {
  FusedOp op;
  DType dtype;
  std::vector<int> args;  // earlier nodes
  int input = -1;         // Input: the index into inputs
  double scalars[2] = {0.0, 0.0};
};

class FusionGroup {
 public:
  // shape: the elementwise shape every input broadcasts to (NumPy's rules, aligned at the right).
  explicit FusionGroup(Shape shape) : shape_(std::move(shape)) {}

  // Each returns the new node's index. Inputs may have fewer dims than shape().
  int input(const Shape& shape, const std::vector<int64_t>& strides, DType dtype);
  int constant(double value, DType dtype);
  int unary(FusedOp op, int x);
  int binary(FusedOp op, int a, int b);  // arithmetic, comparisons and activation backwards
  int where(int cond, int a, int b);
  int clamp(int x, double lo, double hi);
  int cast(int x, DType dtype);
  // Reduces the last node's value over the innermost `dims` dims of shape() (floating dtypes);
  // called before output() names any value.
  void reduce(FusedReduction reduction, int dims, bool keepdim = false);
  // Makes node `index`'s value (of shape()) one of the values the kernel writes, after those
  // named before (in a reducing group: after the reduction, which may also be written unreduced).
  // ValueError for an input or constant or a node named twice.
  void output(int index);

  // The nodes whose values the kernel writes, in order: those output() named, else the last.
  std::vector<int> outputs() const;

  const Shape& shape() const { return shape_; }
  const std::vector<FusedInput>& inputs() const { return inputs_; }
  const std::vector<FusedNode>& nodes() const { return nodes_; }
  FusedReduction reduction() const { return reduction_; }
  int reduced_dims() const { return reduced_dims_; }
  bool keepdim() const { return keepdim_; }
  // The first output: the last node (or the first output() named), reduced when reduce() was
  // called. Any other output is of shape() and its node's dtype.
  DType out_dtype() const;
  Shape out_shape() const;
  DType output_dtype(size_t k) const;  // output k's dtype

  // One line per node, as explain() prints a group: "%3:f32 = add(%1, %2)".
  std::string str() const;

 private:
  int push(FusedNode node);
  const FusedNode& node(int index, const char* op) const;

  Shape shape_;
  std::vector<FusedInput> inputs_;
  std::vector<FusedNode> nodes_;
  std::vector<int> outputs_;  // empty: the last node
  FusedReduction reduction_ = FusedReduction::None;
  int reduced_dims_ = 0;
  bool keepdim_ = false;
};

}  // namespace ember::autodiff::compile
