// fuse_elementwise.cpp — the fusion pass (passes.h): chains and small DAGs of elementwise nodes
// become one node of op "fused" that runs one generated kernel (codegen.h), reading the group's
// inputs once and writing only the values read outside the group, instead of every intermediate
// value once each.
//
// Groups grow backwards from their root (the last node, in program order), taking in the node
// computing one of the group's inputs when its op has a fused formula that computes what the
// library's kernel computes, bit for bit (fusion_group.h), and its value is not what the step
// returns or leaves in state. A value also read outside the group becomes one more output of the
// kernel (written in the same loop), provided it has the group's shape and every such reader
// comes after the root: the fused node runs where the root ran, so a reader before it would read
// a value not computed yet. That rule also keeps a group convex: a path from a member through an
// outside node back into the group starts with an outside reader before the root, so no cycle
// can form through outside nodes. The fused node reads its inputs later than the nodes it
// replaces read them: a node is taken in only when no in-place node in between writes the buffer
// of one of its inputs (program.h's rule). In-place, view and random nodes are never fused, nor
// matmul, convolutions, normalisations and the like: they have their own kernels.
//
// A sum, mean or amax over the innermost dims of a floating value (or a sum_to, a broadcast's
// gradient, over innermost dims) may be a group's root: the group is then the elementwise shape
// of its input, and the kernel folds each row as it computes it (render_reduction.cpp), writing
// the reduction first and, beside it, the elementwise values read outside as above. On the CPU it
// folds in the library's order, so the result is the same bits; explain() says why each reduction
// that did not fuse stayed out.
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "../fused_kernels.h"
#include "../rewrite.h"
#include "ember/autodiff/compile/passes.h"
#include "ember/error.h"

namespace ember::autodiff::compile {

namespace {

const char* kPass = "fusion";

const std::map<std::string, FusedOp>& unary_ops() {
  static const std::map<std::string, FusedOp> ops = {
      {"neg", FusedOp::Neg},         {"abs", FusedOp::Abs},
      {"relu", FusedOp::Relu},       {"exp", FusedOp::Exp},
      {"log", FusedOp::Log},         {"sqrt", FusedOp::Sqrt},
      {"rsqrt", FusedOp::Rsqrt},     {"sin", FusedOp::Sin},
      {"cos", FusedOp::Cos},         {"tanh", FusedOp::Tanh},
      {"sigmoid", FusedOp::Sigmoid}, {"silu", FusedOp::Silu},
      {"erf", FusedOp::Erf},         {"reciprocal", FusedOp::Reciprocal}};
  return ops;
}

// Two operands of one dtype; comparisons give bool, the others that dtype.
const std::map<std::string, FusedOp>& binary_ops() {
  static const std::map<std::string, FusedOp> ops = {{"add", FusedOp::Add},
                                                     {"sub", FusedOp::Sub},
                                                     {"mul", FusedOp::Mul},
                                                     {"div", FusedOp::Div},
                                                     {"maximum", FusedOp::Maximum},
                                                     {"minimum", FusedOp::Minimum},
                                                     {"eq", FusedOp::Eq},
                                                     {"ne", FusedOp::Ne},
                                                     {"lt", FusedOp::Lt},
                                                     {"le", FusedOp::Le},
                                                     {"gt", FusedOp::Gt},
                                                     {"ge", FusedOp::Ge},
                                                     {"relu_backward", FusedOp::ReluBackward},
                                                     {"silu_backward", FusedOp::SiluBackward},
                                                     {"sigmoid_backward", FusedOp::SigmoidBackward},
                                                     {"tanh_backward", FusedOp::TanhBackward}};
  return ops;
}

// x op s: the library runs these as op(x, a 0-d tensor of s in x's dtype) (ember/ops/
// elementwise.h), which a Constant node of the group is. `reversed`: s op x.
struct ScalarOp {
  FusedOp op;
  bool reversed;
};
const std::map<std::string, ScalarOp>& scalar_ops() {
  static const std::map<std::string, ScalarOp> ops = {{"add_scalar", {FusedOp::Add, false}},
                                                      {"mul_scalar", {FusedOp::Mul, false}},
                                                      {"rsub_scalar", {FusedOp::Sub, true}},
                                                      {"div_scalar", {FusedOp::Div, false}},
                                                      {"rdiv_scalar", {FusedOp::Div, true}},
                                                      {"maximum_scalar", {FusedOp::Maximum, false}},
                                                      {"minimum_scalar", {FusedOp::Minimum, false}},
                                                      {"eq_scalar", {FusedOp::Eq, false}},
                                                      {"ne_scalar", {FusedOp::Ne, false}},
                                                      {"lt_scalar", {FusedOp::Lt, false}},
                                                      {"le_scalar", {FusedOp::Le, false}},
                                                      {"gt_scalar", {FusedOp::Gt, false}},
                                                      {"ge_scalar", {FusedOp::Ge, false}}};
  return ops;
}

bool is_comparison(FusedOp op) {
  return op == FusedOp::Eq || op == FusedOp::Ne || op == FusedOp::Lt || op == FusedOp::Le ||
         op == FusedOp::Gt || op == FusedOp::Ge;
}

// Why a node can never be in a group ("" when it can, as far as its op and types go).
std::string why_not_fusible(const Graph& g, const Node& node) {
  const std::string& op = node.op->name;
  if (node.op->in_place) return "it writes in place";
  if (node.op->view) return "a view (no kernel of its own)";
  if (node.op->random) return "it draws random numbers";
  if (node.op->collective) return "it talks to the other ranks";
  if (op == "linear" || op == "linear_act")
    return "its own tuned kernel (an activation after it joins its epilogue: gemm epilogue)";
  if (op == "matmul" || op == "conv2d" || op.rfind("conv2d_backward", 0) == 0)
    return "its own tuned kernel (no epilogue fusion for it)";
  if (op == "sum" || op == "mean" || op == "amax" || op == "sum_to")
    return "a reduction (one ends a group, never stands inside one)";
  if (op == "amin" || op == "prod" || op == "var" || op == "std" || op == "norm" ||
      op == "logsumexp")
    return "a reduction with no fused form (a group may end in sum, mean or amax)";
  const bool elementwise = unary_ops().count(op) || binary_ops().count(op) ||
                           scalar_ops().count(op) || op == "gelu" || op == "gelu_backward" ||
                           op == "where" || op == "masked_fill" || op == "clamp" ||
                           op == "to_dtype";
  if (!elementwise) return "its own kernel (no fused formula for " + op + ")";
  if (node.outputs.size() != 1) return "it has several outputs";
  const TensorType& y = g.value(node.outputs[0]).type;
  auto in = [&](size_t i) -> const TensorType& { return g.value(node.inputs[i]).type; };
  for (ValueId v : node.inputs)
    if (g.value(v).type.device != y.device) return "it moves between devices";
  auto same_dtypes = [&](bool bool_out) {
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (in(i).dtype != in(0).dtype) return false;
    return bool_out ? y.dtype == DType::Bool : y.dtype == in(0).dtype;
  };
  const char* mixed = "its operands' dtypes differ (the fused kernel takes one dtype)";
  if (unary_ops().count(op)) return same_dtypes(false) ? "" : mixed;
  if (auto it = binary_ops().find(op); it != binary_ops().end())
    return same_dtypes(is_comparison(it->second)) ? "" : mixed;
  if (auto it = scalar_ops().find(op); it != scalar_ops().end()) {
    if (is_comparison(it->second.op))
      return is_floating(in(0).dtype) ? "" : "a comparison of integers with a scalar";
    return same_dtypes(false) ? "" : mixed;
  }
  if (op == "gelu" || op == "gelu_backward") {
    const std::string& form = node.attrs.s("approximate");
    if (form != "none" && form != "tanh") return "an unknown form of gelu";
    return same_dtypes(false) ? "" : mixed;
  }
  if (op == "where")
    return in(0).dtype == DType::Bool && in(1).dtype == in(2).dtype && y.dtype == in(1).dtype
               ? ""
               : mixed;
  if (op == "masked_fill" || op == "clamp") return y.dtype == in(0).dtype ? "" : mixed;
  return "";  // to_dtype: a cast between any two dtypes
}

// Adds node's formula to `group`; `arg(i)` is the group node of its input i.
template <class Arg>
int add_formula(FusionGroup& group, const Graph& g, const Node& node, Arg arg) {
  const std::string& op = node.op->name;
  const DType x_dtype = g.value(node.inputs[0]).type.dtype;
  if (auto it = unary_ops().find(op); it != unary_ops().end())
    return group.unary(it->second, arg(0));
  if (auto it = binary_ops().find(op); it != binary_ops().end())
    return group.binary(it->second, arg(0), arg(1));
  if (auto it = scalar_ops().find(op); it != scalar_ops().end()) {
    const int s = group.constant(node.attrs.f("value"), x_dtype);
    return it->second.reversed ? group.binary(it->second.op, s, arg(0))
                               : group.binary(it->second.op, arg(0), s);
  }
  if (op == "gelu")
    return group.unary(node.attrs.s("approximate") == "tanh" ? FusedOp::GeluTanh : FusedOp::Gelu,
                       arg(0));
  if (op == "gelu_backward")
    return group.binary(node.attrs.s("approximate") == "tanh" ? FusedOp::GeluTanhBackward
                                                              : FusedOp::GeluBackward,
                        arg(0), arg(1));
  if (op == "where") return group.where(arg(0), arg(1), arg(2));
  if (op == "masked_fill")
    return group.where(arg(1), group.constant(node.attrs.f("value"), x_dtype), arg(0));
  if (op == "clamp") {
    const double inf = std::numeric_limits<double>::infinity();
    return group.clamp(arg(0), node.attrs.has("min") ? node.attrs.f("min") : -inf,
                       node.attrs.has("max") ? node.attrs.f("max") : inf);
  }
  if (op == "to_dtype") return group.cast(arg(0), g.value(node.outputs[0]).type.dtype);
  throw NotSupportedError("fuse_elementwise", "no fused formula for " + op);
}

// Whether `shape` broadcasts to `to` (NumPy's rules) without changing it.
bool broadcasts_to(const Shape& shape, const Shape& to) {
  if (shape.size() > to.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const int64_t a = shape[shape.size() - 1 - i], b = to[to.size() - 1 - i];
    if (a != b && a != 1) return false;
  }
  return true;
}

const std::map<std::string, FusedReduction>& reduction_ops() {
  // sum_to (a broadcast's gradient) is a sum over the dims the broadcast added or stretched.
  static const std::map<std::string, FusedReduction> ops = {{"sum", FusedReduction::Sum},
                                                            {"mean", FusedReduction::Mean},
                                                            {"amax", FusedReduction::Max},
                                                            {"sum_to", FusedReduction::Sum}};
  return ops;
}

// How a reduction node ends a group: over its input's innermost `dims` dims.
struct Reduction {
  FusedReduction kind = FusedReduction::None;
  int dims = 0;
  bool keepdim = false;
  std::string why_not;  // why it cannot end a group ("" when it can)
};

// sum_to's reduced dims: the library sums over the dims the broadcast added or stretched,
// keeping them as 1s, then reshapes to the target. A fused kernel takes the innermost dims of
// the same rank (keepdim; a dim of size 1 among them changes neither the values nor the order),
// or every dim into a 0-d value; "" or why not.
std::string sum_to_dims(const TensorType& x, const Shape& to, Reduction& r) {
  const int64_t rank = int64_t(x.shape.size());
  if (to.empty()) {
    r.dims = int(rank);
    return "";
  }
  if (to == x.shape) return "it sums " + x.str() + " to its own shape (nothing to sum)";
  int64_t kept = rank;  // dims [kept, rank) are reduced
  if (int64_t(to.size()) == rank)
    while (kept > 0 && to[size_t(kept - 1)] == 1) --kept;
  const bool rest_same =
      int64_t(to.size()) == rank && std::equal(to.begin(), to.begin() + kept, x.shape.begin());
  if (!rest_same || kept == rank)
    return "it sums " + x.str() + " to " + shape_str(to) +
           ", not over the innermost dims alone (a fused kernel folds rows of the innermost dims)";
  r.dims = int(rank - kept);
  r.keepdim = true;
  return "";
}

Reduction reduction_of(const Graph& g, const Node& node) {
  Reduction r;
  auto it = reduction_ops().find(node.op->name);
  if (it == reduction_ops().end() || node.inputs.size() != 1 || node.outputs.size() != 1) {
    r.why_not = "not a sum, mean, amax or sum_to";
    return r;
  }
  const TensorType& x = g.value(node.inputs[0]).type;
  const TensorType& y = g.value(node.outputs[0]).type;
  const int64_t rank = int64_t(x.shape.size());
  if (x.device != y.device) r.why_not = "it moves between devices";
  else if (!is_floating(x.dtype) || y.dtype != x.dtype)
    r.why_not = std::string("it reduces ") + dtype_name(x.dtype) + " into " + dtype_name(y.dtype) +
                " (a fused reduction takes a floating dtype and keeps it)";
  else if (rank == 0) r.why_not = "it reduces a 0-d value (nothing to fold)";
  if (!r.why_not.empty()) return r;
  if (node.op->name == "sum_to") {
    r.why_not = sum_to_dims(x, y.shape, r);
    if (r.why_not.empty()) r.kind = it->second;
    return r;
  }
  std::vector<int64_t> dims = node.attrs.ints("dims");
  if (dims.empty())
    for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  for (int64_t& d : dims) d = d < 0 ? d + rank : d;
  std::sort(dims.begin(), dims.end());
  for (size_t k = 0; k < dims.size(); ++k)
    if (dims[k] != rank - int64_t(dims.size()) + int64_t(k)) {
      r.why_not = "it reduces dims " + shape_str(node.attrs.ints("dims")) + " of " + x.str() +
                  ", not the innermost ones (a fused kernel folds rows of the innermost dims)";
      return r;
    }
  int64_t count = 1;
  for (int64_t d : dims) count *= x.shape[size_t(d)];
  if (it->second == FusedReduction::Max && count == 0) {
    r.why_not = "amax of no elements has no value (the library's kernel says so)";
    return r;
  }
  r.kind = it->second;
  r.dims = int(dims.size());
  r.keepdim = node.attrs.has("keepdim") && node.attrs.b("keepdim");
  return r;
}

struct Group {
  std::vector<int32_t> nodes;    // in program order; the last is the root
  std::vector<ValueId> inputs;   // the values read from outside, in the group's input order
  std::vector<ValueId> outputs;  // the values it writes: the root's, then those read outside
  std::shared_ptr<FusedKernel> kernel;
};

std::string shape_text(const TensorType& t) { return t.str(); }

// "%7 = matmul" (the first output, or the op alone for a node without one).
std::string node_text(const Graph& g, int32_t k) {
  const Node& node = g.node(k);
  return node.outputs.empty() ? node.op->name
                              : g.value_name(node.outputs[0]) + " = " + node.op->name;
}

}  // namespace

Program fuse_elementwise(const Program& program, Explain& explain) {
  const Graph& g = *program.graph;
  if (!jit::enabled()) {
    const std::string reason = "EMBER_FUSION=0 turns fused kernels off";
    jit::warn_fallback_once("a compiled step's fused kernels", reason);
    explain.add(kPass, "off: " + reason + "; the step runs the library's kernels");
    Program out = clone(program);
    explain.after(kPass, out);
    return out;
  }
  const int32_t n = g.num_nodes();
  const std::vector<ValueId> buffer = buffers(program);
  // Values that must stay values of their own: what the step returns or leaves in state.
  std::vector<bool> kept(size_t(g.num_values()), false);
  for (const StateSlot& s : program.state) {
    kept[size_t(s.value)] = true;
    if (s.final_value >= 0) kept[size_t(s.final_value)] = true;
  }
  for (ValueId v : program.returned) kept[size_t(v)] = true;
  for (ValueId v : g.outputs()) kept[size_t(v)] = true;
  for (const auto& [out, in] : program.reuse) kept[size_t(out)] = kept[size_t(in)] = true;
  std::vector<std::vector<int32_t>> readers(size_t(g.num_values()));
  for (int32_t k = 0; k < n; ++k)
    for (ValueId in : g.node(k).inputs) readers[size_t(in)].push_back(k);
  // writes[k]: the buffers node k writes in place.
  std::vector<std::vector<ValueId>> writes(static_cast<size_t>(n));
  for (int32_t k = 0; k < n; ++k) {
    const Node& node = g.node(k);
    if (node.op->in_place)
      for (size_t o = 0; o < node.inputs.size() && o < node.outputs.size(); ++o)
        writes[size_t(k)].push_back(buffer[size_t(node.inputs[o])]);
  }
  auto written_between = [&](ValueId v, int32_t from, int32_t to) {
    for (int32_t j = from + 1; j < to; ++j)
      for (ValueId b : writes[size_t(j)])
        if (b == buffer[size_t(v)]) return true;
    return false;
  };

  std::vector<std::string> why_out(static_cast<size_t>(n));
  for (int32_t k = 0; k < n; ++k) why_out[size_t(k)] = why_not_fusible(g, g.node(k));
  std::vector<int32_t> group_of(static_cast<size_t>(n), -1);
  // Per node left out of a group it borders: why (the first reason found).
  std::map<int32_t, std::string> left_out;
  std::vector<Group> groups;
  int alone = 0;

  // Reductions that may end a group; the others, with why not, for explain().
  std::vector<Reduction> reduction(static_cast<size_t>(n));
  std::map<int32_t, std::string> reductions_left;
  for (int32_t k = 0; k < n; ++k)
    if (reduction_ops().count(g.node(k).op->name)) {
      reduction[size_t(k)] = reduction_of(g, g.node(k));
      if (!reduction[size_t(k)].why_not.empty())
        reductions_left.emplace(k, reduction[size_t(k)].why_not);
    }
  auto reduces = [&](int32_t k) { return reduction[size_t(k)].kind != FusedReduction::None; };

  for (int32_t root = n - 1; root >= 0; --root) {
    if (group_of[size_t(root)] >= 0 || (!why_out[size_t(root)].empty() && !reduces(root))) continue;
    // The group's elementwise shape: its root's, or what a reducing root reduces.
    const Shape& shape =
        g.value(reduces(root) ? g.node(root).inputs[0] : g.node(root).outputs[0]).type.shape;
    std::set<int32_t> members = {root};
    std::map<int32_t, std::string> rejected;  // candidate -> why, as of the last round
    for (bool grew = true; grew;) {
      grew = false;
      rejected.clear();
      for (auto it = members.rbegin(); it != members.rend(); ++it) {
        for (ValueId v : g.node(*it).inputs) {
          const int32_t p = g.value(v).node;
          if (p < 0 || members.count(p)) continue;
          std::string why;
          if (!why_out[size_t(p)].empty()) {
            why = why_out[size_t(p)];
          } else if (group_of[size_t(p)] >= 0) {
            why = "in another group";
          } else if (kept[size_t(v)]) {
            why = "its value is returned or kept in state";
          } else if (!broadcasts_to(g.value(v).type.shape, shape)) {
            why = "its shape " + g.value(v).type.str() + " does not broadcast to the group's";
          } else {
            // Read outside too: the kernel writes it as well, when every such reader runs after
            // the fused node (which stands where the root stood) and it has the group's shape.
            for (int32_t r : readers[size_t(v)]) {
              if (members.count(r)) continue;
              if (r < root)
                why = "its value is read outside the group before the group's end (by " +
                      g.node(r).op->name + ")";
              else if (g.value(v).type.shape != shape)
                why = "its value, read outside the group (by " + g.node(r).op->name + "), is " +
                      g.value(v).type.str() + ", not of the group's shape";
              if (!why.empty()) break;
            }
            for (ValueId in : g.node(p).inputs)
              if (why.empty() && written_between(in, p, root))
                why = "an in-place write to its input " + g.value_name(in) +
                      " comes before the group's end";
          }
          if (why.empty()) {
            members.insert(p);
            grew = true;
            break;  // members changed: start the round again
          }
          rejected.emplace(p, why);
        }
        if (grew) break;
      }
    }
    if (members.size() < 2) {
      if (!reduces(root)) ++alone;
      else
        reductions_left.emplace(root,
                                "its input " + g.value_name(g.node(root).inputs[0]) +
                                    " joins no group: " +
                                    (rejected.empty() ? std::string("it is not computed by a node")
                                                      : rejected.begin()->second));
      continue;
    }
    Group group;
    group.nodes.assign(members.begin(), members.end());
    for (int32_t k : group.nodes) group_of[size_t(k)] = int32_t(groups.size());
    for (const auto& [p, why] : rejected) left_out.emplace(p, why);
    for (ValueId v : g.node(root).outputs)
      for (int32_t r : readers[size_t(v)])
        if (!why_out[size_t(r)].empty()) left_out.emplace(r, why_out[size_t(r)]);
    groups.push_back(std::move(group));
  }

  // Build each group's kernel, for the device of its values (every node's operands share the
  // node's device, so a group's do too). A group the builder or renderer refuses stays unfused.
  std::string failure;
  int64_t kernels_from_cache = 0;
  for (Group& group : groups) {
    const int32_t root = group.nodes.back();
    const Reduction& red = reduction[size_t(root)];
    const Shape& root_shape = g.value(g.node(root).outputs[0]).type.shape;
    const Shape& shape =
        red.kind != FusedReduction::None ? g.value(g.node(root).inputs[0]).type.shape : root_shape;
    const Target target =
        g.value(g.node(root).outputs[0]).type.device.is_cuda() ? Target::Cuda : Target::Cpu;
    auto kernel =
        std::make_shared<FusedKernel>(FusedKernel{FusionGroup(shape), {}, target, {}, {}, {}});
    FusionGroup& fg = kernel->group;
    std::map<ValueId, int> node_of;  // graph value -> group node
    try {
      for (int32_t k : group.nodes) {
        const Node& node = g.node(k);
        if (k == root && red.kind != FusedReduction::None) {
          // The group's last node is the value reduced: the root's input.
          if (node_of.at(node.inputs[0]) + 1 != int(fg.nodes().size()))
            throw Error("fuse_elementwise", "the reduced value is not the group's last");
          fg.reduce(red.kind, red.dims, red.keepdim);
          kernel->ops.push_back(node.op->name);
          continue;
        }
        auto arg = [&](size_t i) {
          ValueId v = node.inputs[i];
          auto it = node_of.find(v);
          if (it != node_of.end()) return it->second;
          // A value from outside: a group input, laid out contiguously. An expand's input is
          // taken instead of the expanded view: the kernel broadcasts it itself.
          ValueId source = v;
          const int32_t p = g.value(v).node;
          if (p >= 0 && g.node(p).op->name == "expand" &&
              broadcasts_to(g.value(g.node(p).inputs[0]).type.shape, shape))
            source = g.node(p).inputs[0];
          const TensorType& t = g.value(source).type;
          const int index = fg.input(t.shape, contiguous_strides(t.shape), t.dtype);
          group.inputs.push_back(source);
          node_of[v] = index;
          return index;
        };
        node_of[node.outputs[0]] = add_formula(fg, g, node, arg);
        kernel->ops.push_back(node.op->name);
      }
      // The root's value first, then each member's that is read outside, in program order.
      group.outputs = {g.node(root).outputs[0]};
      for (int32_t k : group.nodes) {
        const ValueId v = g.node(k).outputs[0];
        if (k == root) continue;
        for (int32_t r : readers[size_t(v)])
          if (group_of[size_t(r)] != group_of[size_t(root)]) {
            group.outputs.push_back(v);
            break;
          }
      }
      if (red.kind != FusedReduction::None) {
        for (size_t o = 1; o < group.outputs.size(); ++o) fg.output(node_of.at(group.outputs[o]));
      } else if (group.outputs.size() > 1) {
        for (ValueId v : group.outputs) fg.output(node_of.at(v));
      }
      if (fg.out_shape() != root_shape ||
          fg.out_dtype() != g.value(g.node(root).outputs[0]).type.dtype)
        throw Error("fuse_elementwise", "the group's result is " + shape_str(fg.out_shape()) +
                                            ", its root's " + shape_str(root_shape));
      kernel->rendered = render(fg, target);
    } catch (const Error& e) {
      explain.add(kPass,
                  "left unfused: " + g.value_name(g.node(root).outputs[0]) + ": " + e.what());
      group.kernel = nullptr;
      group.inputs.clear();
      group.outputs.clear();
      continue;
    }
    if (target == Target::Cpu) {
      const jit::CpuCompile built =
          jit::compile_cpu(kernel->rendered.source, kernel->rendered.entry);
      if (built.status != jit::Status::Ok) {
        failure = built.reason;
        break;
      }
      kernels_from_cache += built.from_cache;
      kernel->cpu = built.kernel;
    } else {
      const jit::CudaCompile built = jit::compile_cuda(kernel->rendered.source, /*sm=*/0);
      if (built.status != jit::Status::Ok) {
        failure = built.reason;
        break;
      }
      kernels_from_cache += built.from_cache;
      try {
        kernel->cuda = jit::load_cuda(built.image, kernel->rendered.entry);
      } catch (const Error& e) {  // the driver refused the cubin: run unfused, as for no compiler
        failure = e.what();
        break;
      }
    }
    group.kernel = kernel;
  }
  if (!failure.empty()) {
    // No compiler, or it failed: the step keeps the library's kernels, and says why once.
    jit::warn_fallback_once("a compiled step's fused kernels", failure);
    explain.add(kPass, "off: the fused kernels could not be built (" + failure +
                           "); the step runs the library's kernels");
    Program out = clone(program);
    explain.after(kPass, out);
    return out;
  }

  // The new program: each group's nodes become one fused node where its root was.
  Rewriter rw(program);
  std::vector<int64_t> kernel_ids(groups.size(), -1);
  int fused_groups = 0, fused_ops = 0, extra_outputs = 0;
  int64_t saved = 0;
  for (int32_t k = 0; k < n; ++k) {
    const int32_t gi = group_of[size_t(k)];
    if (gi < 0 || !groups[size_t(gi)].kernel) {
      rw.copy(k);
      continue;
    }
    Group& group = groups[size_t(gi)];
    if (k != group.nodes.back()) {
      // Its value is written by the fused node (when read outside) or never.
      const ValueId v = g.node(k).outputs[0];
      if (std::find(group.outputs.begin(), group.outputs.end(), v) == group.outputs.end())
        saved += g.value(v).type.numel() * int64_t(itemsize(g.value(v).type.dtype));
      rw.drop(k, {-1});
      continue;
    }
    const int64_t id = add_fused_kernel(group.kernel);
    rw.replace(k, fused_op(), group.inputs, Attrs{{"kernel", id}}, group.outputs);
    std::ostringstream line;
    line << "group " << fused_groups << ": " << g.value_name(g.node(k).outputs[0]) << " "
         << shape_text(g.value(g.node(k).outputs[0]).type) << " = ";
    for (size_t i = 0; i < group.kernel->ops.size(); ++i)
      line << (i ? ", " : "") << group.kernel->ops[i];
    line << " (" << group.kernel->ops.size() << " ops";
    if (const FusionGroup& fg = group.kernel->group; fg.reduction() != FusedReduction::None)
      line << "; " << fused_reduction_name(fg.reduction()) << " of " << shape_str(fg.shape())
           << " over its innermost " << fg.reduced_dims() << " dims"
           << (fg.keepdim() ? " (keepdim)" : "") << " fused";
    line << ") over ";
    for (size_t i = 0; i < group.inputs.size(); ++i)
      line << (i ? ", " : "") << g.value_name(group.inputs[i]) << " "
           << shape_text(g.value(group.inputs[i]).type);
    line << "; writes ";
    for (size_t o = 0; o < group.outputs.size(); ++o)
      line << (o ? ", " : "") << g.value_name(group.outputs[o]);
    if (group.outputs.size() > 1) line << " (" << group.outputs.size() << " outputs)";
    explain.add(kPass, line.str());
    ++fused_groups;
    fused_ops += int(group.kernel->ops.size());
    extra_outputs += int(group.outputs.size()) - 1;
  }
  for (const auto& [k, why] : left_out)
    if ((group_of[size_t(k)] < 0 || !groups[size_t(group_of[size_t(k)])].kernel) &&
        !reductions_left.count(k))
      explain.add(kPass, "left out: " + node_text(g, k) + ": " + why);
  for (const auto& [k, why] : reductions_left)
    explain.add(kPass, "reduction not fused: " + node_text(g, k) + ": " + why);
  explain.add(kPass, std::to_string(fused_groups) + " groups of " + std::to_string(fused_ops) +
                         " ops fused into one kernel each (" +
                         std::to_string(fused_ops - fused_groups - extra_outputs) +
                         " intermediate values, " + bytes_text(saved) + ", never written; " +
                         std::to_string(extra_outputs) +
                         " more written by the group computing "
                         "them, for readers outside); " +
                         std::to_string(alone) +
                         " elementwise ops left alone (a group of one op is "
                         "not worth a kernel); " +
                         std::to_string(kernels_from_cache) + " kernels from the cache, " +
                         std::to_string(fused_groups - kernels_from_cache) + " compiled");
  Program out = rw.finish();
  explain.after(kPass, out);
  return out;
}

}  // namespace ember::autodiff::compile
