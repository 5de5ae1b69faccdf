// tcp_store.h — the key-value store the ranks of a process group meet through (PyTorch's
// TCPStore): rank 0 serves it on host:port from a thread of its own, every rank (rank 0
// included) is a client. Gloo exchanges its peers' addresses through it, NCCL its unique id,
// and the group its checks (world size, the collective each rank called when one timed out).
//
// Small on purpose: one request per message over a TCP connection, keys and values as bytes,
// every wait bounded by the timeout. Errors:
//   - the port is taken on rank 0: DistributedError naming host:port and the fix;
//   - rank 0 is not there after `timeout`: DistributedTimeoutError;
//   - something else answers on the port: DistributedError (it does not speak the protocol);
//   - get()/wait() of keys not set within the timeout: DistributedTimeoutError naming them.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ember/distributed.h"

namespace ember::distributed {

class EMBER_API TCPStore {
 public:
  // is_server: serve the store here (rank 0) before connecting to it. port 0 with is_server
  // picks a free port (port() tells which).
  TCPStore(const std::string& host, int port, bool is_server, Milliseconds timeout);
  ~TCPStore();
  TCPStore(const TCPStore&) = delete;
  TCPStore& operator=(const TCPStore&) = delete;

  void set(const std::string& key, const std::vector<uint8_t>& value);
  // Waits up to the timeout for the key to be set.
  std::vector<uint8_t> get(const std::string& key);
  std::vector<uint8_t> get(const std::string& key, Milliseconds timeout);
  // Adds `amount` to the integer stored at key (0 when unset) and returns the sum, atomically.
  int64_t add(const std::string& key, int64_t amount);
  bool check(const std::string& key);  // whether the key is set (never waits)
  void wait(const std::vector<std::string>& keys, Milliseconds timeout);

  // "g0/", "g1/", ...: the key prefix of the next process group made over this store. Every rank
  // makes its groups in the same order, so the n-th group's keys meet under the same prefix.
  std::string next_group_prefix() { return "g" + std::to_string(groups_made_++) + "/"; }

  int port() const { return port_; }
  bool serves() const { return server_ != nullptr; }  // this is the rank that serves the store
  const std::string& host() const { return host_; }
  Milliseconds timeout() const { return timeout_; }

 private:
  class Server;
  std::vector<uint8_t> request(uint8_t command, const std::string& key,
                               const std::vector<uint8_t>& value);

  std::string host_;
  int port_;
  Milliseconds timeout_;
  std::unique_ptr<Server> server_;
  int socket_ = -1;
  std::mutex mutex_;  // one request at a time on the connection
  int groups_made_ = 0;
};

}  // namespace ember::distributed
