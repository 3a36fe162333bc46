// A real single-member etcd on loopback ports, in a temporary data
// directory, for the duration of a test (never a mock). Not thread-safe.
#ifndef TESTS_SUPPORT_ETCD_PROCESS_H_
#define TESTS_SUPPORT_ETCD_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace shard::testing {

class EtcdProcess {
 public:
  // PEM files for an etcd that serves its clients over TLS and requires a
  // client certificate signed by `ca_file` (the same CA signs its own).
  struct Tls {
    std::string ca_file;
    std::string cert_file;
    std::string key_file;
    // The client certificate etcd's own readiness probe presents.
    std::string client_cert_file;
    std::string client_key_file;
  };

  // Starts `etcd` (from PATH), plaintext or with `tls`, and waits until it
  // answers; FAILED_PRECONDITION when there is no etcd binary, UNAVAILABLE
  // when it did not come up (its log is in the message).
  static absl::StatusOr<std::unique_ptr<EtcdProcess>> Start(
      const Tls* tls = nullptr);
  // Kills etcd and removes its data directory.
  ~EtcdProcess();
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  // HOST:PORT of its client endpoint.
  const std::string& endpoint() const { return endpoint_; }

  // SIGSTOP / SIGCONT: a paused etcd accepts connections but answers
  // nothing (calls wait for their deadline).
  void Pause();
  void Resume();

 private:
  EtcdProcess() = default;

  pid_t pid_ = -1;
  std::string dir_;
  std::string endpoint_;
};

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_ETCD_PROCESS_H_
