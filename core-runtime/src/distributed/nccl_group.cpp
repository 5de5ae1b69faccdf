// nccl_group.cpp — the "nccl" backend: CUDA tensors through NCCL, on a stream of the group's own.
//
// libnccl.so.2 is opened at the first NCCL group (dlopen), so that libember_core loads on
// machines without NCCL. Rank 0 makes the unique id and posts it to the store; every rank reads it
// and joins the communicator, non-blocking, so that a rank that never comes is a
// DistributedTimeoutError after the timeout instead of a hang.
//
// Ordering: the group's stream waits (an event) for the work queued so far on the caller's
// current stream, NCCL runs there, and Work::wait() makes the caller's current stream wait for
// the collective in turn: the host never waits, as with PyTorch's NCCL group. The tensors are
// held by the Work until then, so that their memory is not reused while NCCL reads it.
#include "nccl_group.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace ember::distributed {

namespace {

using Clock = std::chrono::steady_clock;

// The NCCL functions used, from libnccl.so.2.
struct NcclApi {
  decltype(&::ncclGetUniqueId) get_unique_id = nullptr;
  decltype(&::ncclCommInitRankConfig) init_rank_config = nullptr;
  decltype(&::ncclCommGetAsyncError) get_async_error = nullptr;
  decltype(&::ncclCommAbort) abort = nullptr;
  decltype(&::ncclCommDestroy) destroy = nullptr;
  decltype(&::ncclGetErrorString) error_string = nullptr;
  decltype(&::ncclAllReduce) all_reduce = nullptr;
  decltype(&::ncclBroadcast) broadcast = nullptr;
  decltype(&::ncclAllGather) all_gather = nullptr;
  decltype(&::ncclReduceScatter) reduce_scatter = nullptr;
};

const NcclApi& nccl() {
  static const NcclApi api = [] {
    void* lib = ::dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      throw NotSupportedError("init_process_group",
                              std::string("the nccl backend needs NCCL, and libnccl.so.2 could "
                                          "not be loaded (") +
                                  ::dlerror() +
                                  "). Fix: install NCCL (it ships with the CUDA toolkit and as "
                                  "the pip package nvidia-nccl-cu12) or add its folder to "
                                  "LD_LIBRARY_PATH");
    NcclApi a;
    auto load = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
      if (!fn)
        throw NotSupportedError("init_process_group", std::string("libnccl.so.2 lacks ") + name +
                                                          ": NCCL 2.14 or newer is needed");
    };
    load(a.get_unique_id, "ncclGetUniqueId");
    load(a.init_rank_config, "ncclCommInitRankConfig");
    load(a.get_async_error, "ncclCommGetAsyncError");
    load(a.abort, "ncclCommAbort");
    load(a.destroy, "ncclCommDestroy");
    load(a.error_string, "ncclGetErrorString");
    load(a.all_reduce, "ncclAllReduce");
    load(a.broadcast, "ncclBroadcast");
    load(a.all_gather, "ncclAllGather");
    load(a.reduce_scatter, "ncclReduceScatter");
    return a;
  }();
  return api;
}

ncclDataType_t nccl_type(const Tensor& t, const char* op) {
  switch (t.dtype()) {
    case DType::Bool:
    case DType::UInt8:
      return ncclUint8;
    case DType::Int8:
      return ncclInt8;
    case DType::Int32:
      return ncclInt32;
    case DType::Int64:
      return ncclInt64;
    case DType::Float16:
      return ncclFloat16;
    case DType::BFloat16:
      return ncclBfloat16;
    case DType::Float32:
      return ncclFloat32;
    case DType::Float64:
      return ncclFloat64;
    default:
      throw DTypeError(op, describe_tensor(t) + ": NCCL has no " + dtype_name(t.dtype()) +
                               " type. Fix: convert to int32 first");
  }
}

ncclRedOp_t nccl_op(ReduceOp op, DType dtype) {
  switch (op) {
    case ReduceOp::Sum:
      return dtype == DType::Bool ? ncclMax : ncclSum;  // bool's sum is an or
    case ReduceOp::Avg:
      return ncclAvg;
    case ReduceOp::Max:
      return ncclMax;
    case ReduceOp::Min:
      return ncclMin;
  }
  return ncclSum;
}

// The Work of a collective queued on the group's stream.
class NcclWork : public Work {
 public:
  NcclWork(int device, std::vector<Tensor> keep) : device_(device), keep_(std::move(keep)) {}
  void wait() override {
    done.wait(cuda::current_stream(device_));
    keep_.clear();
  }
  bool is_completed() const override { return done.query(); }
  cuda::Event done{false};

 private:
  int device_;
  std::vector<Tensor> keep_;
};

}  // namespace

struct NcclProcessGroup::Comm {
  ncclComm_t comm = nullptr;
  int device = -1;
  cuda::Stream stream = cuda::Stream::ember_stream(0);
};

NcclProcessGroup::NcclProcessGroup(std::shared_ptr<TCPStore> store, std::string prefix, int rank,
                                   int world_size, Milliseconds timeout)
    : ProcessGroup(rank, world_size, timeout),
      store_(std::move(store)),
      prefix_(std::move(prefix)) {
  check_arrival(*store_, prefix_, rank, world_size, timeout);
}

NcclProcessGroup::~NcclProcessGroup() {
  if (comm_ && comm_->comm) {
    comm_->stream.synchronize();
    nccl().destroy(comm_->comm);
  }
}

NcclProcessGroup::Comm& NcclProcessGroup::comm_for(const Tensor& t, const char* op) {
  if (!t.defined()) throw ValueError(op, "the tensor is undefined");
  if (!t.device().is_cuda())
    throw DeviceError(op, describe_tensor(t) +
                              " is on the CPU, but the nccl backend reduces "
                              "CUDA tensors. Fix: move it to the rank's GPU "
                              "(cuda:LOCAL_RANK), or use the gloo backend");
  if (!t.is_contiguous())
    throw ValueError(op, describe_tensor(t) +
                             " is not contiguous; NCCL reads and writes dense "
                             "memory. Fix: pass t.contiguous()");
  if (comm_) {
    if (comm_->device != t.device().index)
      throw DeviceError(op, describe_tensor(t) + " is on another GPU than this rank's group (" +
                                "cuda:" + std::to_string(comm_->device) +
                                "). Fix: one GPU per rank: move it to cuda:" +
                                std::to_string(comm_->device));
    return *comm_;
  }
  const NcclApi& api = nccl();
  auto comm = std::make_unique<Comm>();
  comm->device = t.device().index;
  cudaSetDevice(comm->device);
  ncclUniqueId id;
  const std::string key = prefix_ + "nccl_unique_id";
  if (rank_ == 0) {
    api.get_unique_id(&id);
    store_->set(key, std::vector<uint8_t>(reinterpret_cast<uint8_t*>(&id),
                                          reinterpret_cast<uint8_t*>(&id) + sizeof id));
  } else {
    std::vector<uint8_t> bytes = store_->get(key, timeout_);
    std::memcpy(&id, bytes.data(), std::min(bytes.size(), sizeof id));
  }
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t rc = api.init_rank_config(&comm->comm, world_size_, id, rank_, &config);
  const auto deadline = Clock::now() + timeout_;
  while (rc == ncclInProgress) {
    if (Clock::now() >= deadline) {
      api.abort(comm->comm);
      throw DistributedTimeoutError(op, "the NCCL communicator of " + std::to_string(world_size_) +
                                            " ranks was not complete within " +
                                            std::to_string(timeout_.count()) +
                                            " ms: a rank did not reach its first collective");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    api.get_async_error(comm->comm, &rc);
  }
  if (rc != ncclSuccess)
    throw DistributedError(op, std::string("NCCL could not make the communicator: ") +
                                   api.error_string(rc));
  comm->stream = cuda::Stream::create(comm->device);
  comm_ = std::move(comm);
  return *comm_;
}

std::shared_ptr<Work> NcclProcessGroup::launch(
    const Tensor& t, const char* op, bool async, const std::vector<Tensor>& keep,
    const std::function<int(void* comm, void* stream)>& call) {
  Comm& c = comm_for(t, op);
  const NcclApi& api = nccl();
  const int64_t seq = seq_++;
  cuda::Stream caller = cuda::current_stream(c.device);
  cuda::Event ready(false);
  ready.record(caller);
  ready.wait(c.stream);
  ncclResult_t rc = ncclResult_t(call(c.comm, c.stream.handle()));
  const auto deadline = Clock::now() + timeout_;
  while (rc == ncclInProgress) {  // a non-blocking communicator may still be queuing the call
    if (Clock::now() >= deadline) break;
    std::this_thread::yield();
    api.get_async_error(c.comm, &rc);
  }
  if (rc != ncclSuccess) {
    api.abort(c.comm);
    c.comm = nullptr;
    throw DistributedError(op, "collective #" + std::to_string(seq) + " on rank " +
                                   std::to_string(rank_) + " failed in NCCL: " +
                                   (rc == ncclInProgress ? "not queued within the timeout"
                                                         : api.error_string(rc)));
  }
  auto work = std::make_shared<NcclWork>(c.device, keep);
  work->done.record(c.stream);
  if (!async) work->wait();
  return work;
}

std::shared_ptr<Work> NcclProcessGroup::all_reduce(const Tensor& tensor, ReduceOp op, bool async) {
  if (op == ReduceOp::Avg && !is_floating(tensor.dtype()))
    throw DTypeError("all_reduce", "avg of " + describe_tensor(tensor) +
                                       " would truncate; avg needs a floating dtype");
  const ncclDataType_t type = nccl_type(tensor, "all_reduce");
  const ncclRedOp_t red = nccl_op(op, tensor.dtype());
  return launch(tensor, "all_reduce", async, {tensor}, [&](void* comm, void* stream) {
    return nccl().all_reduce(tensor.data_ptr(), tensor.data_ptr(), size_t(tensor.numel()), type,
                             red, ncclComm_t(comm), cudaStream_t(stream));
  });
}

std::shared_ptr<Work> NcclProcessGroup::broadcast(const Tensor& tensor, int root, bool async) {
  if (root < 0 || root >= world_size_)
    throw ValueError("broadcast", "root " + std::to_string(root) +
                                      " is not a rank of this group "
                                      "of " +
                                      std::to_string(world_size_));
  const ncclDataType_t type = nccl_type(tensor, "broadcast");
  return launch(tensor, "broadcast", async, {tensor}, [&](void* comm, void* stream) {
    return nccl().broadcast(tensor.data_ptr(), tensor.data_ptr(), size_t(tensor.numel()), type,
                            root, ncclComm_t(comm), cudaStream_t(stream));
  });
}

std::shared_ptr<Work> NcclProcessGroup::all_gather(const Tensor& output, const Tensor& input,
                                                   bool async) {
  check_gather_shapes("all_gather", output, input, world_size_);
  comm_for(output, "all_gather");
  const ncclDataType_t type = nccl_type(input, "all_gather");
  return launch(input, "all_gather", async, {output, input}, [&](void* comm, void* stream) {
    return nccl().all_gather(input.data_ptr(), output.data_ptr(), size_t(input.numel()), type,
                             ncclComm_t(comm), cudaStream_t(stream));
  });
}

std::shared_ptr<Work> NcclProcessGroup::reduce_scatter(const Tensor& output, const Tensor& input,
                                                       ReduceOp op, bool async) {
  check_gather_shapes("reduce_scatter", input, output, world_size_);
  comm_for(output, "reduce_scatter");
  if (op == ReduceOp::Avg && !is_floating(input.dtype()))
    throw DTypeError("reduce_scatter", "avg of " + describe_tensor(input) +
                                           " would truncate; avg needs a floating dtype");
  const ncclDataType_t type = nccl_type(input, "reduce_scatter");
  const ncclRedOp_t red = nccl_op(op, input.dtype());
  return launch(input, "reduce_scatter", async, {output, input}, [&](void* comm, void* stream) {
    return nccl().reduce_scatter(input.data_ptr(), output.data_ptr(), size_t(output.numel()), type,
                                 red, ncclComm_t(comm), cudaStream_t(stream));
  });
}

std::shared_ptr<Work> NcclProcessGroup::barrier(bool async) {
  if (!comm_)
    throw ValueError("barrier",
                     "the nccl group has no GPU yet: its first collective chooses it. "
                     "Fix: run a collective on this rank's GPU first (DDP's wrap does)");
  Tensor one = Tensor::empty({1}, DType::Float32, Device(DeviceType::CUDA, comm_->device));
  return all_reduce(one, ReduceOp::Sum, async);
}

}  // namespace ember::distributed
