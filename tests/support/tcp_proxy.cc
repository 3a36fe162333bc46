#include "tests/support/tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shard::testing {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

absl::Status Errno(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpProxy>> TcpProxy::Start(
    const std::string& target) {
  std::unique_ptr<TcpProxy> proxy(new TcpProxy());
  const size_t colon = target.rfind(':');
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(target.substr(colon + 1), &proxy->target_port_)) {
    return absl::InvalidArgumentError(
        absl::StrCat("proxy target \"", target, "\" is not HOST:PORT"));
  }
  proxy->listener_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address = Loopback(0);
  socklen_t length = sizeof(address);
  if (proxy->listener_ < 0 ||
      bind(proxy->listener_, reinterpret_cast<sockaddr*>(&address),
           sizeof(address)) != 0 ||
      listen(proxy->listener_, 64) != 0 ||
      getsockname(proxy->listener_, reinterpret_cast<sockaddr*>(&address),
                  &length) != 0) {
    return Errno("proxy listener");
  }
  if (pipe(proxy->wake_) != 0) return Errno("proxy pipe");
  proxy->endpoint_ = absl::StrCat("127.0.0.1:", ntohs(address.sin_port));
  proxy->thread_ = std::thread([raw = proxy.get()] { raw->Loop(); });
  return proxy;
}

TcpProxy::~TcpProxy() {
  stopping_ = true;
  Wake();
  if (thread_.joinable()) thread_.join();
  for (const auto& [client, target] : pairs_) {
    close(client);
    close(target);
  }
  for (int fd : {listener_, wake_[0], wake_[1]}) {
    if (fd >= 0) close(fd);
  }
}

void TcpProxy::Freeze() {
  frozen_ = true;
  Wake();
}

void TcpProxy::Thaw() {
  frozen_ = false;
  Wake();
}

void TcpProxy::CutAll() {
  cut_ = true;
  Wake();
  while (cut_) std::this_thread::yield();  // Until Loop() closed them.
}

void TcpProxy::Wake() {
  const char byte = 0;
  if (wake_[1] >= 0) (void)!write(wake_[1], &byte, 1);
}

void TcpProxy::Loop() {
  while (!stopping_) {
    // Frozen: only the wake pipe is watched; bytes wait in the kernel.
    std::vector<pollfd> watched = {{wake_[0], POLLIN, 0}};
    if (!frozen_) {
      watched.push_back({listener_, POLLIN, 0});
      for (const auto& [client, target] : pairs_) {
        watched.push_back({client, POLLIN, 0});
        watched.push_back({target, POLLIN, 0});
      }
    }
    if (poll(watched.data(), watched.size(), -1) < 0) continue;
    if (watched[0].revents != 0) {
      char drained[64];
      (void)!read(wake_[0], drained, sizeof(drained));
      if (cut_) {
        for (const auto& [client, target] : pairs_) {
          close(client);
          close(target);
        }
        pairs_.clear();
        cut_ = false;
      }
      continue;  // frozen_ or stopping_ may have changed.
    }
    if (watched.size() == 1) continue;  // Frozen: nothing else was asked.
    // The pairs polled are the first ones; Accept() appends.
    std::vector<std::pair<int, int>> open;
    for (size_t i = 0; 2 + 2 * i < watched.size(); ++i) {
      const auto [client, target] = pairs_[i];
      const bool ok =
          (watched[2 + 2 * i].revents == 0 || Pump(client, target)) &&
          (watched[3 + 2 * i].revents == 0 || Pump(target, client));
      if (ok) {
        open.push_back(pairs_[i]);
      } else {
        close(client);
        close(target);
      }
    }
    pairs_ = std::move(open);
    if (watched[1].revents != 0) Accept();
  }
}

void TcpProxy::Accept() {
  const int client = accept(listener_, nullptr, nullptr);
  if (client < 0) return;
  const int target = socket(AF_INET, SOCK_STREAM, 0);
  const sockaddr_in address = Loopback(target_port_);
  if (target < 0 || connect(target, reinterpret_cast<const sockaddr*>(&address),
                            sizeof(address)) != 0) {
    close(client);
    if (target >= 0) close(target);
    return;
  }
  const int one = 1;
  setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(target, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  pairs_.emplace_back(client, target);
  ++accepted_;
}

bool TcpProxy::Pump(int from, int to) {
  char buffer[64 << 10];
  const ssize_t got = recv(from, buffer, sizeof(buffer), 0);
  if (got <= 0) return false;
  for (ssize_t sent = 0; sent < got;) {
    // MSG_NOSIGNAL: a side that closed is an error here, not SIGPIPE.
    const ssize_t wrote = send(to, buffer + sent, got - sent, MSG_NOSIGNAL);
    if (wrote <= 0) return false;
    sent += wrote;
  }
  return true;
}

}  // namespace shard::testing
