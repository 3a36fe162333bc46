// A TCP proxy on loopback for fault tests: forwards every connection to a
// target, and can freeze: connections stay open and new ones are accepted
// by the kernel, but no byte moves either way until it thaws. That is how
// a hung peer looks from the other side (a SIGSTOPped process, a frozen
// VM, a stalled disk) and how a partition that drops packets looks to TCP
// before it times out.
//
// Not a mock: the bytes are the real protocol's. Thread-safe; one thread
// moves all the bytes.
#ifndef TESTS_SUPPORT_TCP_PROXY_H_
#define TESTS_SUPPORT_TCP_PROXY_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace shard::testing {

class TcpProxy {
 public:
  // Listens on 127.0.0.1 (a free port) and forwards to `target`
  // ("127.0.0.1:PORT").
  static absl::StatusOr<std::unique_ptr<TcpProxy>> Start(
      const std::string& target);
  // Closes every connection and the listener.
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  // HOST:PORT clients dial instead of the target.
  const std::string& endpoint() const { return endpoint_; }
  // Stops moving bytes (and taking connections) until Thaw().
  void Freeze();
  void Thaw();
  // Closes every connection open now (as a peer that restarted or a
  // network that reset them); new ones are taken as before.
  void CutAll();
  // Connections taken so far.
  int accepted() const { return accepted_; }

 private:
  TcpProxy() = default;
  void Loop();
  // Connects a client just accepted to the target.
  void Accept();
  // Moves what `from` has to `to`; false when either side closed.
  static bool Pump(int from, int to);
  // Wakes Loop() to see a change of frozen_ or stopping_.
  void Wake();

  std::string endpoint_;
  int target_port_ = 0;
  int listener_ = -1;
  int wake_[2] = {-1, -1};
  std::atomic<bool> frozen_{false};
  std::atomic<bool> cut_{false};
  std::atomic<int> accepted_{0};
  std::atomic<bool> stopping_{false};
  // (client, target) of each connection; Loop()'s thread only.
  std::vector<std::pair<int, int>> pairs_;
  std::thread thread_;
};

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_TCP_PROXY_H_
