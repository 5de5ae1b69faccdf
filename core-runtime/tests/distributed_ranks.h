// distributed_ranks.h — ranks of a Gloo process group as threads of one test process, talking
// over 127.0.0.1, for the collective tests (test_distributed*.cpp).
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ember/distributed.h"
#include "ember/tcp_store.h"

namespace ember::test {

// Runs body(group) on `world` threads as ranks (rank 0 serves the store); returns what each
// threw ("" when nothing). sizes: the world size each rank is started with (default: `world`).
inline std::vector<std::string> run_ranks(
    int world, const std::function<void(distributed::ProcessGroup&)>& body,
    std::vector<int> sizes = {},
    distributed::Milliseconds timeout = distributed::Milliseconds{4000}) {
  using distributed::TCPStore;
  if (sizes.empty()) sizes.assign(size_t(world), world);
  auto server = std::make_shared<TCPStore>("127.0.0.1", 0, true, timeout);
  std::vector<std::string> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      try {
        auto store = r == 0
                         ? server
                         : std::make_shared<TCPStore>("127.0.0.1", server->port(), false, timeout);
        auto group = distributed::new_process_group("gloo", store, r, sizes[size_t(r)], timeout);
        body(*group);
      } catch (const std::exception& e) {
        errors[size_t(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

// Skips a test in a build without the gloo backend.
class GlooTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!distributed::backend_available("gloo"))
      GTEST_SKIP() << "this build has no gloo backend (Gloo was not found at build time)";
  }
};

}  // namespace ember::test
