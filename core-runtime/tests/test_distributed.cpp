// test_distributed.cpp — the rendezvous store and the gloo backend's collectives, with threads of
// this process as the ranks (each with its own store client and Gloo context, as separate
// processes would have). Python's test_distributed*.py runs real processes and every dtype.
// Every wait here is bounded by a timeout of a few seconds.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <thread>

#include "distributed_ranks.h"
#include "ember/distributed.h"
#include "ember/tcp_store.h"
#include "test_util.h"

namespace ember::test {
namespace {

using distributed::DistributedError;
using distributed::DistributedTimeoutError;
using distributed::Milliseconds;
using distributed::ProcessGroup;
using distributed::ReduceOp;
using distributed::TCPStore;

constexpr Milliseconds kTimeout{4000};

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

template <class E> std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TCPStore, SetGetAddCheckBetweenClients) {
  TCPStore server("127.0.0.1", 0, true, kTimeout);
  TCPStore client("127.0.0.1", server.port(), false, kTimeout);
  EXPECT_FALSE(client.check("a"));
  server.set("a", bytes("hello"));
  EXPECT_TRUE(client.check("a"));
  EXPECT_EQ(client.get("a"), bytes("hello"));
  client.set("empty", {});
  EXPECT_EQ(server.get("empty"), std::vector<uint8_t>{});
  EXPECT_EQ(client.add("n", 2), 2);
  EXPECT_EQ(server.add("n", 5), 7);
  // A get waits for a key that another client sets later.
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    server.set("late", bytes("x"));
  });
  EXPECT_EQ(client.get("late"), bytes("x"));
  later.join();
}

TEST(TCPStore, MissingKeyTimesOutNamingIt) {
  TCPStore server("127.0.0.1", 0, true, kTimeout);
  const std::string msg =
      message_of<DistributedTimeoutError>([&] { server.get("never", Milliseconds(100)); });
  EXPECT_NE(msg.find("'never'"), std::string::npos) << msg;
}

TEST(TCPStore, PortInUseIsAnErrorWithTheFix) {
  TCPStore first("127.0.0.1", 0, true, kTimeout);
  const std::string msg = message_of<DistributedError>(
      [&] { TCPStore second("127.0.0.1", first.port(), true, kTimeout); });
  EXPECT_NE(msg.find("MASTER_PORT"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(first.port())), std::string::npos) << msg;
}

TEST(TCPStore, NoServerIsATimeout) {
  int port;
  {  // a port nobody listens on
    TCPStore s("127.0.0.1", 0, true, kTimeout);
    port = s.port();
  }
  const std::string msg = message_of<DistributedTimeoutError>(
      [&] { TCPStore client("127.0.0.1", port, false, Milliseconds(200)); });
  EXPECT_NE(msg.find("Rank 0 serves it"), std::string::npos) << msg;
}

TEST(TCPStore, AForeignServerIsRecognised) {
  // A listener that answers anything with text, as a web server would.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::thread foreign([fd] {
    const int c = ::accept(fd, nullptr, nullptr);
    char buf[256];
    (void)!::recv(c, buf, sizeof buf, 0);
    const char reply[] = "HTTP/1.0 400 Bad Request\r\n\r\n";
    (void)!::send(c, reply, sizeof reply - 1, 0);
    ::close(c);
  });
  const std::string msg = message_of<DistributedError>([&] {
    TCPStore client("127.0.0.1", ntohs(addr.sin_port), false, kTimeout);
    client.check("x");
  });
  foreign.join();
  ::close(fd);
  EXPECT_NE(msg.find("not an Ember rendezvous store"), std::string::npos) << msg;
}

class Gloo : public GlooTest {};

TEST_F(Gloo, CollectivesOfThreeRanksOnOddSizes) {
  constexpr int kWorld = 3;
  constexpr int64_t n = 7;  // not divisible by the world size
  auto errors = run_ranks(kWorld, [&](ProcessGroup& g) {
    const int r = g.rank();
    std::vector<float> mine(n);
    for (int64_t i = 0; i < n; ++i) mine[size_t(i)] = float(r * 10 + i);
    // all_reduce: sum, max, min, avg
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Avg}) {
      Tensor t = Tensor::from_vector(mine, {n});
      g.all_reduce(t, op);
      for (int64_t i = 0; i < n; ++i) {
        const float sum = float(0 + 10 + 20 + 3 * i);
        const float want = op == ReduceOp::Sum   ? sum
                           : op == ReduceOp::Max ? float(20 + i)
                           : op == ReduceOp::Min ? float(i)
                                                 : sum / 3;
        EXPECT_FLOAT_EQ(t.to_vector<float>()[size_t(i)], want) << reduce_op_name(op);
      }
    }
    // a non-contiguous tensor, asynchronously
    Tensor wide = Tensor::from_vector(std::vector<int64_t>(2 * n, r + 1), {n, 2});
    Tensor column = wide.narrow(1, 0, 1);
    g.all_reduce(column, ReduceOp::Sum, /*async=*/true)->wait();
    EXPECT_EQ(wide.to_vector<int64_t>()[0], 6);
    EXPECT_EQ(wide.to_vector<int64_t>()[1], r + 1);  // the other column untouched
    // broadcast from rank 2
    Tensor b = Tensor::from_vector(mine, {n});
    g.broadcast(b, 2);
    EXPECT_FLOAT_EQ(b.to_vector<float>()[3], 23.0f);
    // all_gather and reduce_scatter
    Tensor gathered = Tensor::empty({kWorld * n});
    g.all_gather(gathered, Tensor::from_vector(mine, {n}));
    for (int q = 0; q < kWorld; ++q)
      EXPECT_FLOAT_EQ(gathered.to_vector<float>()[size_t(q * n + 1)], float(q * 10 + 1));
    Tensor part = Tensor::empty({n});
    g.reduce_scatter(part, gathered, ReduceOp::Sum);  // every rank's gathered is the same
    EXPECT_FLOAT_EQ(part.to_vector<float>()[0], float(3 * (r * 10)));
    g.barrier();
    EXPECT_EQ(g.sequence_number(), 9);
  });
  for (int r = 0; r < kWorld; ++r) EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
}

TEST_F(Gloo, DifferentCollectivesAreReportedOnEveryRank) {
  auto errors = run_ranks(
      2,
      [](ProcessGroup& g) {
        Tensor t = Tensor::from_vector(std::vector<float>(5, 1.0f), {5});
        g.all_reduce(t);  // collective #0: the same on both
        if (g.rank() == 0) g.all_reduce(t);
        else g.broadcast(t, 0);
      },
      // Long enough for the rendezvous and both ranks' reports on a loaded machine under ASan.
      {}, Milliseconds(3000));
  EXPECT_NE(errors[0].find("rank 1 called broadcast(float32[5], root 0) as its collective #1"),
            std::string::npos)
      << errors[0];
  EXPECT_NE(errors[1].find("rank 0 called all_reduce(float32[5], sum)"), std::string::npos)
      << errors[1];
}

TEST_F(Gloo, AMismatchedWorldSizeIsReported) {
  auto errors = run_ranks(
      2, [](ProcessGroup&) {}, {2, 3}, Milliseconds(3000));
  EXPECT_NE(errors[0].find("world size 3"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("world size"), std::string::npos) << errors[1];
}

TEST_F(Gloo, ARankThatNeverComesIsATimeout) {
  auto server = std::make_shared<TCPStore>("127.0.0.1", 0, true, kTimeout);
  const std::string msg = message_of<DistributedTimeoutError>(
      [&] { distributed::new_process_group("gloo", server, 0, 2, Milliseconds(300)); });
  EXPECT_NE(msg.find("rank(s) 1 of 2 did not join"), std::string::npos) << msg;
}

TEST_F(Gloo, BadArgumentsAreTypedErrors) {
  auto errors = run_ranks(1, [](ProcessGroup& g) {
    Tensor i = Tensor::from_vector(std::vector<int32_t>{1, 2}, {2});
    EXPECT_THROW(g.all_reduce(i, ReduceOp::Avg), DTypeError);
    EXPECT_THROW(g.broadcast(i, 1), ValueError);
    EXPECT_THROW(g.all_gather(Tensor::empty({3}, DType::Int32), i), ShapeError);
    EXPECT_THROW(g.all_gather(Tensor::empty({2}), i), DTypeError);
    g.all_reduce(i, ReduceOp::Max);  // a world of one: unchanged
    EXPECT_EQ(i.to_vector<int32_t>(), (std::vector<int32_t>{1, 2}));
  });
  EXPECT_EQ(errors[0], "");
  auto server = std::make_shared<TCPStore>("127.0.0.1", 0, true, kTimeout);
  EXPECT_THROW(distributed::new_process_group("mpi", server, 0, 1, kTimeout), ValueError);
  EXPECT_THROW(distributed::new_process_group("gloo", server, 1, 1, kTimeout), ValueError);
}

}  // namespace
}  // namespace ember::test
