// gloo_group.h — the "gloo" backend's group (gloo_group.cpp), made by new_process_group.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "collective_queue.h"

namespace gloo {
class Context;
}

namespace ember::distributed {

class GlooProcessGroup : public ProcessGroup {
 public:
  // Checks that every rank arrives (check_arrival), then connects Gloo's full mesh.
  GlooProcessGroup(std::shared_ptr<TCPStore> store, std::string prefix, int rank, int world_size,
                   Milliseconds timeout);
  ~GlooProcessGroup() override;
  const char* backend() const override { return "gloo"; }

  std::shared_ptr<Work> all_reduce(const Tensor& tensor, ReduceOp op, bool async) override;
  std::shared_ptr<Work> broadcast(const Tensor& tensor, int root, bool async) override;
  std::shared_ptr<Work> all_gather(const Tensor& output, const Tensor& input, bool async) override;
  std::shared_ptr<Work> reduce_scatter(const Tensor& output, const Tensor& input, ReduceOp op,
                                       bool async) override;
  std::shared_ptr<Work> barrier(bool async) override;
  int64_t sequence_number() const override { return seq_; }

 private:
  // Queues body(tag) as the next collective, described by `call`, and translates Gloo's errors.
  std::shared_ptr<Work> enqueue(const std::string& call, bool async,
                                std::function<void(uint32_t tag)> body);

  std::shared_ptr<TCPStore> store_;
  std::string prefix_;
  std::shared_ptr<gloo::Context> context_;
  int64_t seq_ = 0;
  std::unique_ptr<CollectiveQueue> queue_;
};

}  // namespace ember::distributed
