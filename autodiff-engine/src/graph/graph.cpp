// graph.cpp — values, attributes and adding nodes (the type check happens here).
#include "ember/autodiff/graph.h"

#include <algorithm>
#include <sstream>

#include "ember/autodiff/op.h"

namespace ember::autodiff {

const char* short_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return "bool";
    case DType::UInt8:
      return "u8";
    case DType::Int8:
      return "i8";
    case DType::Int16:
      return "i16";
    case DType::Int32:
      return "i32";
    case DType::Int64:
      return "i64";
    case DType::Float16:
      return "f16";
    case DType::BFloat16:
      return "bf16";
    case DType::Float32:
      return "f32";
    case DType::Float64:
      return "f64";
  }
  return "?";
}

std::string TensorType::str() const {
  std::ostringstream os;
  os << short_dtype_name(dtype) << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << "]";
  if (device.type != DeviceType::CPU) os << "@" << device.str();
  return os.str();
}

TensorType type_of(const Tensor& t) { return TensorType{t.shape(), t.dtype(), t.device()}; }

// ---- attributes ----

Attrs& Attrs::set(const std::string& name, Attr value) {
  for (auto& [key, old] : items_) {
    if (key == name) {
      old = std::move(value);
      return *this;
    }
  }
  items_.emplace_back(name, std::move(value));
  return *this;
}

const Attr* Attrs::find(const std::string& name) const {
  for (const auto& [key, value] : items_)
    if (key == name) return &value;
  return nullptr;
}

namespace {
template <class T> const T& get(const Attr* a, const std::string& name, const char* kind) {
  if (a == nullptr) throw ValueError("attrs", "no attribute '" + name + "'");
  const T* v = std::get_if<T>(a);
  if (v == nullptr)
    throw ValueError("attrs", "attribute '" + name + "' is not " + std::string(kind));
  return *v;
}
}  // namespace

int64_t Attrs::i(const std::string& name) const { return get<int64_t>(find(name), name, "an int"); }
double Attrs::f(const std::string& name) const {
  const Attr* a = find(name);
  if (a != nullptr && std::holds_alternative<int64_t>(*a)) return double(std::get<int64_t>(*a));
  return get<double>(a, name, "a float");
}
const std::vector<int64_t>& Attrs::ints(const std::string& name) const {
  return get<std::vector<int64_t>>(find(name), name, "an int list");
}
const std::string& Attrs::s(const std::string& name) const {
  return get<std::string>(find(name), name, "a string");
}

// An empty string is an attribute with no value (conv2d's padding_mode when not given): left out.
std::string Attrs::str() const {
  std::ostringstream os;
  bool first = true;
  for (const auto& [name, a] : items_) {
    const auto* text = std::get_if<std::string>(&a);
    if (text && text->empty()) continue;
    os << (first ? "{" : ", ") << name << "=";
    first = false;
    if (auto* i = std::get_if<int64_t>(&a)) {
      os << *i;
    } else if (auto* f = std::get_if<double>(&a)) {
      os << *f;
    } else if (auto* l = std::get_if<std::vector<int64_t>>(&a)) {
      os << "[";
      for (size_t j = 0; j < l->size(); ++j) os << (j ? "," : "") << (*l)[j];
      os << "]";
    } else {
      os << *text;
    }
  }
  if (!first) os << "}";
  return os.str();
}

// ---- values ----

const Value& Val::value() const { return graph->value(id); }

int64_t Val::size(int64_t d) const {
  return shape()[size_t(wrap_dim(d, dim(), "size", "value " + graph->value_name(id)))];
}

Val Graph::new_value(TensorType type, ValueKind kind, std::string name) {
  Value v;
  v.type = std::move(type);
  v.kind = kind;
  v.name = std::move(name);
  values_.push_back(std::move(v));
  return Val{this, ValueId(values_.size() - 1)};
}

Val Graph::input(TensorType type, std::string name) {
  return new_value(std::move(type), ValueKind::Input, std::move(name));
}
Val Graph::parameter(TensorType type, std::string name) {
  return new_value(std::move(type), ValueKind::Parameter, std::move(name));
}
Val Graph::buffer(TensorType type, std::string name) {
  return new_value(std::move(type), ValueKind::Buffer, std::move(name));
}
Val Graph::constant(Tensor value, std::string name) {
  Val v = new_value(type_of(value), ValueKind::Constant, std::move(name));
  values_[size_t(v.id)].constant = std::move(value);
  return v;
}

std::string Graph::value_name(ValueId id) const {
  std::string s = "%" + std::to_string(id);
  const std::string& name = values_[size_t(id)].name;
  return name.empty() ? s : s + " (" + name + ")";
}

// ---- nodes ----

std::vector<Val> Graph::add(const std::string& op, const std::vector<Val>& inputs, Attrs attrs) {
  return add(op_def(op), inputs, std::move(attrs));
}

std::vector<Val> Graph::add(const OpDef& op, const std::vector<Val>& inputs, Attrs attrs) {
  std::vector<TensorType> types;
  std::vector<ValueId> ids;
  types.reserve(inputs.size());
  for (const Val& v : inputs) {
    if (v.graph != this)
      throw ValueError(op.name,
                       v.defined() ? "an input belongs to another graph" : "an input is undefined");
    types.push_back(values_[size_t(v.id)].type);
    ids.push_back(v.id);
  }
  std::vector<TensorType> out_types;
  try {
    out_types = op.infer(types, attrs);
  } catch (const Error& e) {
    // Name the node being built in front of the rule's own message. The error keeps its type.
    std::ostringstream where;
    where << "%" << values_.size() << " = " << op.name << "(";
    for (size_t k = 0; k < ids.size(); ++k) where << (k ? ", " : "") << "%" << ids[k];
    where << ")";
    std::string message = e.what();
    if (dynamic_cast<const ShapeError*>(&e)) throw ShapeError(where.str(), message);
    if (dynamic_cast<const DTypeError*>(&e)) throw DTypeError(where.str(), message);
    if (dynamic_cast<const DeviceError*>(&e)) throw DeviceError(where.str(), message);
    if (dynamic_cast<const IndexError*>(&e)) throw IndexError(where.str(), message);
    if (dynamic_cast<const NotSupportedError*>(&e)) throw NotSupportedError(where.str(), message);
    if (dynamic_cast<const ValueError*>(&e)) throw ValueError(where.str(), message);
    throw Error(where.str(), message);
  }
  Node node;
  node.op = &op;
  node.inputs = std::move(ids);
  node.attrs = std::move(attrs);
  node.grad_of = provenance_;
  node.note = provenance_note_;
  const int32_t index = int32_t(nodes_.size());
  std::vector<Val> outs;
  for (size_t k = 0; k < out_types.size(); ++k) {
    Val v = new_value(std::move(out_types[k]), ValueKind::Computed, "");
    values_[size_t(v.id)].node = index;
    values_[size_t(v.id)].output = int32_t(k);
    node.outputs.push_back(v.id);
    outs.push_back(v);
  }
  nodes_.push_back(std::move(node));
  return outs;
}

namespace {
void add_once(std::vector<ValueId>& list, ValueId id) {
  if (std::find(list.begin(), list.end(), id) == list.end()) list.push_back(id);
}
}  // namespace

void Graph::mark_rule_gradient(ValueId grad, ValueId of) {
  add_once(values_[size_t(grad)].rule_grad_of, of);
}
void Graph::mark_gradient(ValueId grad, ValueId of) { add_once(values_[size_t(grad)].grad_of, of); }

void Graph::mark_output(Val v) {
  if (v.graph != this) throw ValueError("mark_output", "the value belongs to another graph");
  outputs_.push_back(v.id);
}

// ---- apply for symbolic handles (ops/apply.h) ----

std::vector<Val> apply(const OpDef& op, const std::vector<Val>& inputs, Attrs attrs) {
  std::vector<Val> defined;
  Graph* graph = nullptr;
  for (const Val& v : inputs) {
    if (!v.defined()) continue;
    if (graph == nullptr) graph = v.graph;
    defined.push_back(v);
  }
  if (graph == nullptr) throw ValueError(op.name, "every input is undefined");
  return graph->add(op, defined, std::move(attrs));
}

}  // namespace ember::autodiff
