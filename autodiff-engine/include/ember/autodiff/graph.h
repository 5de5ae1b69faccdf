// graph.h — the graph IR: typed values, nodes in topological order, and the handle (Val) that the
// builder functions of ops.h take and return.
//
// A Graph is a list of values and a list of nodes. Every value has a type (shape, dtype, device)
// and is an input, a parameter, a constant or the output of exactly one node. Nodes only ever use
// values defined before them, so the node list *is* a topological order. Adding a node runs its
// op's shape/dtype rule at once, so a graph is always well typed, and a wrong shape is reported
// where the node is built:  `%7 = conv2d(%3, %4): ...`.
//
// Printed (str()), a graph reads like a JAX jaxpr, one typed line per node:
//   %7:f32[32,16,26,26] = conv2d(%3, %4) {stride=[1,1], padding=[0,0]}
// Inputs, parameters and buffers head the listing with their names (nn.Module's, in eager mode):
//   param %1:f32[16,1,3,3]  0.weight
// and the line where a gradient rule's result for an input is made says which, and the line of
// each final gradient says whose it is:
//   %12:f32[32,10] = mul(%11, %9)    # d/d %6 via tanh
//   %15:f32[10,64] = matmul(%14, %3)    # grad of 0.weight via linear
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <variant>
#include <vector>

#include "ember/tensor.h"

namespace ember::autodiff {

struct OpDef;

// The static type of a value: what a memory planner or a shape check needs to know without data.
struct TensorType {
  Shape shape;
  DType dtype = DType::Float32;
  Device device;

  int64_t dim() const { return int64_t(shape.size()); }
  int64_t numel() const { return shape_numel(shape); }
  std::string str() const;  // "f32[32,10]", with "@cuda:0" appended off the CPU
  bool operator==(const TensorType& o) const {
    return shape == o.shape && dtype == o.dtype && device == o.device;
  }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
};
TensorType type_of(const Tensor& t);
const char* short_dtype_name(DType dtype);  // "f32", "i64", "bool", ...

// Node attributes: named ints (bools are 0/1), floats, int lists and strings.
using Attr = std::variant<int64_t, double, std::vector<int64_t>, std::string>;

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, Attr>> items) : items_(items) {}

  Attrs& set(const std::string& name, Attr value);
  bool has(const std::string& name) const { return find(name) != nullptr; }
  // Typed reads; a missing name or another type is a ValueError naming `name`.
  int64_t i(const std::string& name) const;
  double f(const std::string& name) const;  // an int attr reads as a float too
  const std::vector<int64_t>& ints(const std::string& name) const;
  const std::string& s(const std::string& name) const;
  bool b(const std::string& name) const { return i(name) != 0; }

  const std::vector<std::pair<std::string, Attr>>& items() const { return items_; }
  // "{stride=[1,1], padding=[0,0]}", "" when empty; an empty string attribute is left out
  std::string str() const;
  bool operator==(const Attrs& o) const { return items_ == o.items_; }

 private:
  const Attr* find(const std::string& name) const;
  std::vector<std::pair<std::string, Attr>> items_;
};

using ValueId = int32_t;

enum class ValueKind : uint8_t {
  Input,      // bound to a tensor when the graph runs (data, labels, an incoming gradient)
  Parameter,  // an input that is trained: what gradients are usually taken with respect to
  Buffer,     // an input that is a model's state but not trained (batch norm's running stats)
  Constant,   // a tensor held by the graph itself
  Computed,   // the output of a node
};

struct Value {
  TensorType type;
  ValueKind kind = ValueKind::Computed;
  std::string name;    // optional, for printing ("x", "w1")
  int32_t node = -1;   // the node computing it (Computed only)
  int32_t output = 0;  // which of that node's outputs it is
  Tensor constant;     // the data of a Constant
  // For the printer, set by the gradient driver (grad.h): the forward values whose gradient a
  // rule returned as this value, and those whose whole gradient grad() returned it as.
  std::vector<ValueId> rule_grad_of, grad_of;
};

struct Node {
  const OpDef* op = nullptr;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  Attrs attrs;
  // For nodes added while differentiating: the forward node whose gradient rule added this node
  // (-1: not from a rule), and a short note for the nodes the driver adds itself.
  int32_t grad_of = -1;
  std::string note;
};

class Graph;

// A handle to one value of one graph: what builder functions and gradient rules pass around.
// Default-constructed it is undefined (a gradient that is zero or not needed).
struct Val {
  Graph* graph = nullptr;
  ValueId id = -1;

  bool defined() const { return graph != nullptr; }
  const Value& value() const;
  const TensorType& type() const { return value().type; }
  const Shape& shape() const { return type().shape; }
  DType dtype() const { return type().dtype; }
  Device device() const { return type().device; }
  int64_t dim() const { return int64_t(shape().size()); }
  int64_t size(int64_t d) const;  // negative d counts from the end
};

class Graph {
 public:
  Graph() = default;
  // Values refer to their graph by address, so a graph is neither copied nor moved.
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Val input(TensorType type, std::string name = "");
  Val parameter(TensorType type, std::string name = "");
  Val buffer(TensorType type, std::string name = "");
  Val constant(Tensor value, std::string name = "");

  // Appends a node of `op` over `inputs` after running the op's shape/dtype rule; returns its
  // outputs. A rule's error is rethrown with the node in front: "%7 = conv2d(%3, %4): ...".
  std::vector<Val> add(const OpDef& op, const std::vector<Val>& inputs, Attrs attrs = {});
  std::vector<Val> add(const std::string& op, const std::vector<Val>& inputs, Attrs attrs = {});

  void mark_output(Val v);
  const std::vector<ValueId>& outputs() const { return outputs_; }

  const Value& value(ValueId id) const { return values_[size_t(id)]; }
  const Node& node(int32_t index) const { return nodes_[size_t(index)]; }
  int32_t num_values() const { return int32_t(values_.size()); }
  int32_t num_nodes() const { return int32_t(nodes_.size()); }
  Val val(ValueId id) { return Val{this, id}; }

  // While set (>= 0), every node added is marked as made by that forward node's rule; the
  // gradient driver sets it around each rule. `note` is the driver's own remark, for its nodes.
  void set_provenance(int32_t forward_node, std::string note = "") {
    provenance_ = forward_node;
    provenance_note_ = std::move(note);
  }
  int32_t provenance() const { return provenance_; }
  const std::string& provenance_note() const { return provenance_note_; }
  // What the printer says of a gradient value: a rule returned `grad` as (part of) the gradient
  // of the forward value `of`; grad() returned `grad` as the whole gradient of `of`.
  void mark_rule_gradient(ValueId grad, ValueId of);
  void mark_gradient(ValueId grad, ValueId of);

  // "%3" or "%3 (w1)" when named: how the printer names a value.
  std::string value_name(ValueId id) const;
  // The text form: a header of inputs, one line per node, outputs. Each line of a node made by a
  // gradient rule carries the comment that the text form shows (also a DOT node's last line).
  std::string str() const;
  std::string to_dot() const;  // Graphviz DOT: a box per node, an ellipse per input or constant
  std::string comment(int32_t node) const;  // "d/d %7 (0.weight) via linear", "" for none

 private:
  friend struct Val;
  Val new_value(TensorType type, ValueKind kind, std::string name);
  // Deques: adding a value or node never moves the others, so a `const Shape&` or `const Node&`
  // taken from the graph stays valid while a rule goes on adding nodes.
  std::deque<Value> values_;
  std::deque<Node> nodes_;
  std::vector<ValueId> outputs_;
  int32_t provenance_ = -1;
  std::string provenance_note_;
};

}  // namespace ember::autodiff
