// fused_kernels.cpp — the table of built fused kernels and the op that runs one (fused_kernels.h).
#include "fused_kernels.h"

#include <deque>
#include <mutex>

#include "ember/error.h"
#include "ember/ops/creation.h"
#include "ember/placement.h"

namespace ember::autodiff::compile {
namespace {

struct Table {
  std::mutex mutex;
  std::deque<std::shared_ptr<const FusedKernel>> kernels;  // a deque: entries never move
};

Table& table() {
  static Table* t = new Table();  // never destroyed: kernels may run during static teardown
  return *t;
}

// Whether `t` is laid out as input `in` of the kernel: its strides agree wherever a dim has more
// than one element (the index along a dim of one element is always 0).
bool laid_out_as(const Tensor& t, const FusedInput& in) {
  if (t.shape() != in.shape) return false;
  for (size_t d = 0; d < in.shape.size(); ++d)
    if (in.shape[d] > 1 && t.strides()[d] != in.strides[d]) return false;
  return true;
}

std::vector<TensorType> infer_fused(const std::vector<TensorType>& in, const Attrs& attrs) {
  const FusedKernel& k = fused_kernel(attrs.i("kernel"));
  if (in.size() != k.group.inputs().size())
    throw ValueError("fused", "got " + std::to_string(in.size()) + " inputs, the group has " +
                                  std::to_string(k.group.inputs().size()));
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i].shape != k.group.inputs()[i].shape || in[i].dtype != k.group.inputs()[i].dtype)
      throw ShapeError("fused", "input " + std::to_string(i) + " is " + in[i].str() +
                                    ", the group was built for " +
                                    shape_str(k.group.inputs()[i].shape));
  const Device device = in.empty() ? Device() : in[0].device;
  std::vector<TensorType> out = {TensorType{k.group.out_shape(), k.group.out_dtype(), device}};
  for (size_t o = 1; o < k.group.outputs().size(); ++o)
    out.push_back(TensorType{k.group.shape(), k.group.output_dtype(o), device});
  return out;
}

std::vector<Tensor> run_fused_node(const std::vector<Tensor>& in, const Attrs& attrs) {
  const FusedKernel& k = fused_kernel(attrs.i("kernel"));
  const FusionGroup& g = k.group;
  const Device device = in.empty() ? Device() : in[0].device();
  const size_t outputs = g.outputs().size();
  jit::CudaPointers pointers{};  // the outputs, then the inputs (codegen/render.cpp)
  std::vector<Tensor> copied;    // inputs of another layout, copied (rare: views the graph made)
  copied.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor* t = &in[i];
    if (!laid_out_as(*t, g.inputs()[i])) {
      // Outside the plan's slots: the plan placed one request per output.
      std::unique_ptr<PlacedAllocations> unplaced;
      if (detail::current_placement()) unplaced = std::make_unique<PlacedAllocations>(device);
      copied.push_back(t->contiguous());
      t = &copied.back();
    }
    pointers.data[outputs + i] = static_cast<char*>(t->data_ptr());
  }
  // The outputs in order: the memory plan's requests of this node, one per output.
  std::vector<Tensor> outs;
  for (size_t o = 0; o < outputs; ++o) {
    outs.push_back(empty(o == 0 ? g.out_shape() : g.shape(), g.output_dtype(o), device));
    pointers.data[o] = static_cast<char*>(outs.back().data_ptr());
  }
  if (k.rendered.items > 0 && outs[0].numel() > 0) {
    if (k.target == Target::Cpu) {
      k.cpu->run(pointers.data, k.rendered.items, k.rendered.cost_per_item);
    } else {
      jit::launch_cuda(k.cuda, device.index, pointers, k.rendered.items);
    }
  }
  return outs;
}

}  // namespace

int64_t add_fused_kernel(std::shared_ptr<const FusedKernel> kernel) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.kernels.push_back(std::move(kernel));
  return int64_t(t.kernels.size()) - 1;
}

const FusedKernel& fused_kernel(int64_t id) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (id < 0 || id >= int64_t(t.kernels.size()))
    throw ValueError("fused", "no fused kernel number " + std::to_string(id) + " (" +
                                  std::to_string(t.kernels.size()) + " built in this process)");
  return *t.kernels[size_t(id)];
}

const OpDef& fused_op() {
  static const OpDef def{"fused", infer_fused, run_fused_node, nullptr, false, false, false};
  return def;
}

}  // namespace ember::autodiff::compile
