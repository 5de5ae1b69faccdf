// tcp_store.cpp — the rendezvous store: a poll() loop on rank 0 holding a map of keys, and a
// blocking client on every rank.
//
// A message, either way, is [magic u32][command or status u8][key length u32][key][value length
// u32][value]; the reply has an empty key. Waiting for a key is the client asking again (every
// few milliseconds) until it is there or the timeout passes, so the server never holds a request.
#include "ember/tcp_store.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

namespace ember::distributed {

namespace {

constexpr uint32_t kMagic = 0x454d4253;  // "EMBS"
enum Command : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kCheck = 4 };
enum Status : uint8_t { kFound = 0, kMissing = 1 };
constexpr uint32_t kMaxField = 64u << 20;  // no key or value is this large: a foreign peer

using Clock = std::chrono::steady_clock;

std::string where(const std::string& host, int port) { return host + ":" + std::to_string(port); }

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> (8 * i)));
}
uint32_t get_u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

std::vector<uint8_t> encode(uint8_t code, const std::string& key,
                            const std::vector<uint8_t>& value) {
  std::vector<uint8_t> out;
  put_u32(out, kMagic);
  out.push_back(code);
  put_u32(out, uint32_t(key.size()));
  out.insert(out.end(), key.begin(), key.end());
  put_u32(out, uint32_t(value.size()));
  out.insert(out.end(), value.begin(), value.end());
  return out;
}

// A whole message at the front of `buf`: its length, 0 when incomplete, -1 when not ours.
int64_t message_length(const std::vector<uint8_t>& buf) {
  if (buf.size() >= 4 && get_u32(buf.data()) != kMagic) return -1;
  if (buf.size() < 9) return 0;
  const uint32_t key_len = get_u32(buf.data() + 5);
  if (key_len > kMaxField) return -1;
  if (buf.size() < 13 + size_t(key_len)) return 0;
  const uint32_t value_len = get_u32(buf.data() + 9 + key_len);
  if (value_len > kMaxField) return -1;
  const size_t total = 13 + size_t(key_len) + value_len;
  return buf.size() < total ? 0 : int64_t(total);
}

std::vector<uint8_t> int64_bytes(int64_t v) {
  std::vector<uint8_t> out(8);
  std::memcpy(out.data(), &v, 8);
  return out;
}

bool send_all(int fd, const std::vector<uint8_t>& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += size_t(n);
  }
  return true;
}

}  // namespace

// ---- the server: one thread, poll() over the listening socket, the clients and a wake-up pipe

class TCPStore::Server {
 public:
  Server(const std::string& host, int port) {
    listen_fd_ = ::socket(AF_INET6, SOCK_STREAM, 0);
    const bool v6 = listen_fd_ >= 0;
    if (!v6) listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (listen_fd_ < 0) fail(host, port, "socket", errno);
    int one = 1, zero = 0;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc;
    if (v6) {  // every interface, IPv4 and IPv6: other machines reach rank 0 by any address
      ::setsockopt(listen_fd_, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
      sockaddr_in6 addr{};
      addr.sin6_family = AF_INET6;
      addr.sin6_addr = in6addr_any;
      addr.sin6_port = htons(uint16_t(port));
      rc = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    } else {
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_ANY);
      addr.sin_port = htons(uint16_t(port));
      rc = ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    }
    if (rc != 0 || ::listen(listen_fd_, 128) != 0) {
      const int err = errno;
      ::close(listen_fd_);
      fail(host, port, "bind", err);
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    if (::pipe(wake_) != 0) fail(host, port, "pipe", errno);
    thread_ = std::thread([this] { loop(); });
  }

  ~Server() {
    const char byte = 0;
    (void)!::write(wake_[1], &byte, 1);
    thread_.join();
    for (auto& c : clients_) ::close(c.fd);
    ::close(listen_fd_);
    ::close(wake_[0]);
    ::close(wake_[1]);
  }

  int port() const { return port_; }

 private:
  struct Client {
    int fd;
    std::vector<uint8_t> buf;
  };

  [[noreturn]] static void fail(const std::string& host, int port, const char* call, int err) {
    std::string msg = "rank 0 cannot serve the rendezvous store on port " + std::to_string(port) +
                      " (" + call + ": " + std::strerror(err) + ")";
    if (err == EADDRINUSE)
      msg +=
          ": another process listens there (an earlier run still alive?). Fix: choose "
          "another MASTER_PORT, or end the process that holds port " +
          std::to_string(port);
    throw DistributedError("init_process_group", msg);
  }

  void loop() {
    for (;;) {
      std::vector<pollfd> fds{{wake_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
      for (auto& c : clients_) fds.push_back({c.fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
      if (fds[0].revents) return;
      // The clients polled this round: one accepted below joins at the end, polled next round.
      const size_t polled = fds.size() - 2;
      if (fds[1].revents & POLLIN) {
        const int fd = ::accept(listen_fd_, nullptr, nullptr);
        if (fd >= 0) {
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          clients_.push_back({fd, {}});
        }
      }
      for (size_t i = polled; i-- > 0;) {
        if (!fds[i + 2].revents) continue;
        if (!serve(clients_[i])) {
          ::close(clients_[i].fd);
          clients_.erase(clients_.begin() + int64_t(i));
        }
      }
    }
  }

  // Reads what the client sent and answers every whole request; false drops the client.
  bool serve(Client& c) {
    uint8_t chunk[65536];
    const ssize_t n = ::recv(c.fd, chunk, sizeof chunk, 0);
    if (n <= 0) return n < 0 && errno == EINTR;
    c.buf.insert(c.buf.end(), chunk, chunk + n);
    for (;;) {
      const int64_t len = message_length(c.buf);
      if (len < 0) return false;
      if (len == 0) return true;
      const uint8_t command = c.buf[4];
      const uint32_t key_len = get_u32(c.buf.data() + 5);
      std::string key(c.buf.begin() + 9, c.buf.begin() + 9 + key_len);
      std::vector<uint8_t> value(c.buf.begin() + 13 + key_len, c.buf.begin() + len);
      c.buf.erase(c.buf.begin(), c.buf.begin() + len);
      if (!send_all(c.fd, answer(command, key, std::move(value)))) return false;
    }
  }

  std::vector<uint8_t> answer(uint8_t command, const std::string& key, std::vector<uint8_t> value) {
    switch (command) {
      case kSet:
        data_[key] = std::move(value);
        return encode(kFound, "", {});
      case kGet: {
        auto it = data_.find(key);
        return it == data_.end() ? encode(kMissing, "", {}) : encode(kFound, "", it->second);
      }
      case kAdd: {
        int64_t amount = 0, current = 0;
        if (value.size() == 8) std::memcpy(&amount, value.data(), 8);
        auto it = data_.find(key);
        if (it != data_.end() && it->second.size() == 8)
          std::memcpy(&current, it->second.data(), 8);
        data_[key] = int64_bytes(current + amount);
        return encode(kFound, "", data_[key]);
      }
      case kCheck:
        return encode(data_.count(key) ? kFound : kMissing, "", {});
      default:
        return encode(kMissing, "", {});
    }
  }

  int listen_fd_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};
  std::vector<Client> clients_;
  std::map<std::string, std::vector<uint8_t>> data_;
  std::thread thread_;
};

// ---- the client

namespace {

// Connects to host:port, trying again until the deadline (rank 0 may start after the others).
int connect_until(const std::string& host, int port, Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  std::string last_error = "no attempt";
  for (;;) {
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
    if (rc != 0) {
      last_error = std::string("cannot resolve the host: ") + gai_strerror(rc);
    } else {
      for (addrinfo* a = found; a; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          ::freeaddrinfo(found);
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          return fd;
        }
        last_error = std::strerror(errno);
        ::close(fd);
      }
      ::freeaddrinfo(found);
    }
    if (Clock::now() >= deadline)
      throw DistributedTimeoutError(
          "init_process_group",
          "no rendezvous store answered at " + where(host, port) + " within the timeout (" +
              last_error + "). Rank 0 serves it: check that rank 0 was started, that " +
              "MASTER_ADDR/MASTER_PORT name rank 0's machine and port on every rank, and that " +
              "no firewall is in between");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void set_receive_timeout(int fd, Milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = long(timeout.count() / 1000);
  tv.tv_usec = long(timeout.count() % 1000) * 1000;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

}  // namespace

TCPStore::TCPStore(const std::string& host, int port, bool is_server, Milliseconds timeout)
    : host_(host), port_(port), timeout_(timeout) {
  if (port < 0 || port > 65535 || (port == 0 && !is_server))
    throw ValueError("TCPStore", "port " + std::to_string(port) +
                                     " is not a TCP port; expected 1..65535 (0: any free port, "
                                     "on the rank that serves the store only)");
  if (is_server) {
    server_ = std::make_unique<Server>(host, port);
    port_ = server_->port();
  }
  socket_ = connect_until(host_, port_, Clock::now() + timeout_);
  set_receive_timeout(socket_, timeout_);
}

TCPStore::~TCPStore() {
  if (socket_ >= 0) ::close(socket_);
}

std::vector<uint8_t> TCPStore::request(uint8_t command, const std::string& key,
                                       const std::vector<uint8_t>& value) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string peer = "the rendezvous store at " + where(host_, port_);
  if (!send_all(socket_, encode(command, key, value)))
    throw DistributedError("TCPStore", peer + " closed the connection (" + std::strerror(errno) +
                                           "): rank 0, which serves it, has ended");
  std::vector<uint8_t> buf;
  for (;;) {
    const int64_t len = message_length(buf);
    if (len < 0)
      throw DistributedError("TCPStore", "what answers at " + where(host_, port_) +
                                             " is not an Ember rendezvous store. Fix: choose "
                                             "a MASTER_PORT that no other program uses");
    if (len > 0) {
      if (buf[4] == kMissing) return {};
      const uint32_t key_len = get_u32(buf.data() + 5);
      std::vector<uint8_t> out(buf.begin() + 13 + key_len, buf.begin() + len);
      if (out.empty()) out.push_back(0);  // found, empty: one byte so it differs from missing
      return out;
    }
    uint8_t chunk[65536];
    const ssize_t n = ::recv(socket_, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      throw DistributedTimeoutError("TCPStore", peer + " did not answer within " +
                                                    std::to_string(timeout_.count()) + " ms");
    if (n <= 0)
      throw DistributedError("TCPStore",
                             peer +
                                 " closed the connection: rank 0, which serves it, has ended, "
                                 "or what listens there is not an Ember rendezvous store");
    buf.insert(buf.end(), chunk, chunk + n);
  }
}

// Values are stored with one leading byte, so that an empty value is not "missing".
void TCPStore::set(const std::string& key, const std::vector<uint8_t>& value) {
  std::vector<uint8_t> tagged{1};
  tagged.insert(tagged.end(), value.begin(), value.end());
  request(kSet, key, tagged);
}

std::vector<uint8_t> TCPStore::get(const std::string& key) { return get(key, timeout_); }

std::vector<uint8_t> TCPStore::get(const std::string& key, Milliseconds timeout) {
  wait({key}, timeout);
  std::vector<uint8_t> tagged = request(kGet, key, {});
  return std::vector<uint8_t>(tagged.begin() + 1, tagged.end());
}

int64_t TCPStore::add(const std::string& key, int64_t amount) {
  std::vector<uint8_t> out = request(kAdd, key, int64_bytes(amount));
  int64_t sum = 0;
  if (out.size() == 8) std::memcpy(&sum, out.data(), 8);
  return sum;
}

bool TCPStore::check(const std::string& key) { return !request(kCheck, key, {}).empty(); }

void TCPStore::wait(const std::vector<std::string>& keys, Milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::microseconds(200);
  for (const std::string& key : keys) {
    while (!check(key)) {
      if (Clock::now() >= deadline)
        throw DistributedTimeoutError("TCPStore", "key '" + key + "' was not set within " +
                                                      std::to_string(timeout.count()) + " ms");
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(10000));
    }
  }
}

}  // namespace ember::distributed
