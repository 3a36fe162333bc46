// c10d::Store over the coordinator's rendezvous key-value space, so that
// ProcessGroupGloo / ProcessGroupNCCL form through the coordinator: a
// trainer needs only the coordinator's address.
//
// Keys live in the member's job generation. get() and wait() block up to the
// store timeout (c10d semantics, however short shardd's --max-wait) and then
// throw StatusError (status_error.h, a std::runtime_error) with
// DEADLINE_EXCEEDED; any coordinator error is thrown as StatusError with its
// status (the libtorch boundary). Thread-safe: every call is one RPC. clone()
// (declared where libtorch's Store has it) returns a store on the same client
// and membership, which is all "the same underlying store" means here.
#ifndef SHARD_CLIENT_TORCH_COORDINATOR_STORE_H_
#define SHARD_CLIENT_TORCH_COORDINATOR_STORE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shard/client/coordinator_client.h"
#include "torch/csrc/distributed/c10d/Store.hpp"

namespace shard::torch_adapter {

class CoordinatorStore : public c10d::Store {
 public:
  CoordinatorStore(std::shared_ptr<client::CoordinatorClient> client,
                   client::Membership membership,
                   std::chrono::milliseconds timeout = kDefaultTimeout);

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> compareSet(const std::string& key,
                                  const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override;
  std::vector<uint8_t> get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;
#ifdef SHARD_TORCH_STORE_HAS_CLONE
  c10::intrusive_ptr<c10d::Store> clone() override;
#endif

 private:
  std::shared_ptr<client::CoordinatorClient> client_;
  client::Membership membership_;
};

}  // namespace shard::torch_adapter

#endif  // SHARD_CLIENT_TORCH_COORDINATOR_STORE_H_
