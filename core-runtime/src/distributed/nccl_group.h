// nccl_group.h — the "nccl" backend's group (nccl_group.cpp), made by new_process_group.
#pragma once
#include <memory>
#include <string>

#include "collective_queue.h"
#include "ember/cuda.h"

namespace ember::distributed {

class NcclProcessGroup : public ProcessGroup {
 public:
  // Checks that every rank arrives; the communicator is made at the first collective, on the
  // GPU of its tensor (each rank drives one GPU: its LOCAL_RANK's).
  NcclProcessGroup(std::shared_ptr<TCPStore> store, std::string prefix, int rank, int world_size,
                   Milliseconds timeout);
  ~NcclProcessGroup() override;
  const char* backend() const override { return "nccl"; }

  std::shared_ptr<Work> all_reduce(const Tensor& tensor, ReduceOp op, bool async) override;
  std::shared_ptr<Work> broadcast(const Tensor& tensor, int root, bool async) override;
  std::shared_ptr<Work> all_gather(const Tensor& output, const Tensor& input, bool async) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op,
                                       bool async) override;
  std::shared_ptr<Work> barrier(bool async) override;
  int64_t sequence_number() const override { return seq_; }

 private:
  struct Comm;
  // The communicator of `device`'s GPU and its stream, made at the first use.
  Comm& comm_for(const Tensor& t, const char* op);
  // Orders the group's stream after the caller's, runs launch(comm, stream), and returns the
  // Work that the caller's stream waits for; `keep` stays alive until then.
  std::shared_ptr<Work> launch(const Tensor& t, const char* op, bool async,
                               const std::vector<Tensor>& keep,
                               const std::function<int(void* comm, void* stream)>& call);

  std::shared_ptr<TCPStore> store_;
  std::string prefix_;
  std::unique_ptr<Comm> comm_;
  int64_t seq_ = 0;
};

}  // namespace ember::distributed
