// collective.cpp — all_reduce_start and all_reduce_wait (collective.h): a bucket's all-reduce as
// two graph ops. The start's Work is found by the wait through the flat buffer's address: while
// an all-reduce is in flight its buffer is alive, so no other one can have that address.
#include "ember/autodiff/collective.h"

#include <mutex>
#include <unordered_map>

#include "ember/ops/creation.h"
#include "ember/ops/elementwise.h"
#include "families.h"
#include "infer.h"

namespace ember::autodiff {

namespace collective {

namespace {

std::mutex table_mutex;
std::vector<std::weak_ptr<distributed::ProcessGroup>> groups;  // by id
std::unordered_map<const void*, std::shared_ptr<distributed::Work>> in_flight;

std::shared_ptr<distributed::ProcessGroup> group_of(const char* op, int64_t id) {
  std::lock_guard<std::mutex> lock(table_mutex);
  std::shared_ptr<distributed::ProcessGroup> g =
      id >= 0 && id < int64_t(groups.size()) ? groups[size_t(id)].lock() : nullptr;
  if (!g)
    throw ValueError(op, "process group " + std::to_string(id) +
                             " no longer exists (destroyed after the step was compiled). Fix: "
                             "compile the step again after init_process_group");
  return g;
}

std::shared_ptr<distributed::Work> take(const char* op, const Tensor& flat, bool keep) {
  std::lock_guard<std::mutex> lock(table_mutex);
  auto it = in_flight.find(flat.data_ptr());
  if (it == in_flight.end())
    throw ValueError(op, "no all-reduce is in flight on " + describe(flat) +
                             ": all_reduce_wait must read the output of an all_reduce_start");
  std::shared_ptr<distributed::Work> work = it->second;
  if (!keep) in_flight.erase(it);
  return work;
}

}  // namespace

int64_t group_id(const std::shared_ptr<distributed::ProcessGroup>& group) {
  std::lock_guard<std::mutex> lock(table_mutex);
  for (size_t i = 0; i < groups.size(); ++i)
    if (groups[i].lock() == group) return int64_t(i);
  groups.push_back(group);
  return int64_t(groups.size()) - 1;
}

void broadcast(const std::shared_ptr<distributed::ProcessGroup>& group, const Tensor& tensor,
               int64_t root) {
  run_op(op_def("broadcast_"), {tensor}, {{"group", group_id(group)}, {"root", root}});
}

void finish(const Tensor& flat) { take("all_reduce_wait", flat, /*keep=*/true)->wait(); }

}  // namespace collective

namespace {

using collective::Part;

int64_t total(const std::vector<int64_t>& numels) {
  int64_t n = 0;
  for (int64_t k : numels) n += k;
  return n;
}

// The element type and device of the bucket (attributes: a bucket none of whose parameters has
// a gradient on this rank has no input to take them from, and still takes part).
TensorType flat_type(const Attrs& a) {
  const auto& numels = a.ints("numels");
  return {Shape{total(numels) + int64_t(numels.size())}, DType(a.i("dtype")),
          Device(a.s("device"))};
}

// The inputs, in order: per parameter nothing (kNone), its gradient (kGrad), its earlier .grad
// (kBefore), or the earlier .grad then the gradient (kBoth). Every one has its parameter's size.
Types all_reduce_start_infer(const Types& in, const Attrs& a) {
  const char* op = "all_reduce_start";
  const auto& parts = a.ints("parts");
  const auto& numels = a.ints("numels");
  if (parts.size() != numels.size())
    throw ValueError(op, std::to_string(parts.size()) + " parts for " +
                             std::to_string(numels.size()) + " parameters");
  const TensorType flat = flat_type(a);
  size_t next = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    const int64_t count = parts[k] == Part::kBoth ? 2 : parts[k] == Part::kNone ? 0 : 1;
    for (int64_t c = 0; c < count; ++c, ++next) {
      if (next >= in.size()) break;
      const TensorType& t = in[next];
      if (t.numel() != numels[k] || t.dtype != flat.dtype || t.device != flat.device)
        throw ShapeError(op, infer::describe(("gradient " + std::to_string(next)).c_str(), t) +
                                 " but parameter " + std::to_string(k) + " of the bucket has " +
                                 std::to_string(numels[k]) + " elements of " +
                                 short_dtype_name(flat.dtype) + " on " + flat.device.str());
    }
  }
  infer::arity(op, in, next);
  return {flat};
}

Tensors all_reduce_start_run(const Tensors& in, const Attrs& a) {
  const auto& parts = a.ints("parts");
  const auto& numels = a.ints("numels");
  const TensorType type = flat_type(a);
  Tensor flat = empty(type.shape, type.dtype, type.device);
  const int64_t flags = type.numel() - int64_t(numels.size());
  int64_t offset = 0;
  size_t next = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    Tensor slot = flat.narrow(0, offset, numels[k]);
    offset += numels[k];
    // As the eager Reducer fills its bucket (reducer.cpp, fill), so the sums are the same bits.
    switch (parts[k]) {
      case Part::kBoth: {
        const Tensor& before = in[next++];
        add_out(slot.view(before.shape()), before, in[next++]);
        break;
      }
      case Part::kNone:
        slot.fill_(0.0);
        break;
      default:
        slot.view(in[next].shape()).copy_(in[next]);
        ++next;
    }
    flat.narrow(0, flags + int64_t(k), 1).fill_(parts[k] == Part::kNone ? 0.0 : 1.0);
  }
  auto group = collective::group_of("all_reduce_start", a.i("group"));
  auto work = group->all_reduce(flat, distributed::ReduceOp::Avg, /*async=*/true);
  std::lock_guard<std::mutex> lock(collective::table_mutex);
  if (!collective::in_flight.emplace(flat.data_ptr(), std::move(work)).second)
    throw Error("all_reduce_start", "an all-reduce is already in flight on " + describe(flat));
  return {flat};
}

// (flat) -> one average per parameter of the bucket, of the shapes in "dims" ("ndims" each).
Types all_reduce_wait_infer(const Types& in, const Attrs& a) {
  const char* op = "all_reduce_wait";
  infer::arity(op, in, 1);
  const auto& numels = a.ints("numels");
  const auto& ndims = a.ints("ndims");
  const auto& dims = a.ints("dims");
  if (in[0].shape != Shape{total(numels) + int64_t(numels.size())} || ndims.size() != numels.size())
    throw ShapeError(op, infer::describe("flat", in[0]) + " does not hold " +
                             std::to_string(numels.size()) + " parameters of " +
                             std::to_string(total(numels)) + " elements and their flags");
  Types out;
  size_t d = 0;
  for (int64_t n : ndims) {
    Shape shape(dims.begin() + std::ptrdiff_t(d), dims.begin() + std::ptrdiff_t(d + size_t(n)));
    d += size_t(n);
    out.push_back({shape, in[0].dtype, in[0].device});
  }
  return out;
}

Tensors all_reduce_wait_run(const Tensors& in, const Attrs& a) {
  collective::take("all_reduce_wait", in[0], /*keep=*/false)->wait();
  const Types types = all_reduce_wait_infer({type_of(in[0])}, a);
  const auto& numels = a.ints("numels");
  Tensors out;
  int64_t offset = 0;
  for (size_t k = 0; k < numels.size(); ++k) {
    out.push_back(in[0].narrow(0, offset, numels[k]).view(types[k].shape).clone());
    offset += numels[k];
  }
  return out;
}

// (tensor) -> tensor with root's values, in place (synchronous: the next op reads it).
Tensors broadcast_run(const Tensors& in, const Attrs& a) {
  collective::group_of("broadcast_", a.i("group"))->broadcast(in[0], int(a.i("root")));
  return {in[0]};
}

}  // namespace

std::vector<OpDef> collective_ops() {
  OpDef start{"all_reduce_start", all_reduce_start_infer, all_reduce_start_run};
  OpDef wait{"all_reduce_wait", all_reduce_wait_infer, all_reduce_wait_run};
  OpDef broadcast{"broadcast_", infer::same_as_first, broadcast_run};
  broadcast.in_place = true;
  start.collective = wait.collective = broadcast.collective = true;
  return {start, wait, broadcast};
}

}  // namespace ember::autodiff
