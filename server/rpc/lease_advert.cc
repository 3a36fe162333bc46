#include "server/rpc/lease_advert.h"

#include <string>
#include <utility>

#include "common/leader_hint.h"

namespace shard::server {
namespace {

using grpc::experimental::InterceptionHookPoints;

class LeaseAdvert : public grpc::experimental::Interceptor {
 public:
  explicit LeaseAdvert(const std::string* lease_ms) : lease_ms_(lease_ms) {}

  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace(kLeaderLeaseMetadataKey,
                                                 *lease_ms_);
    }
    methods->Proceed();
  }

 private:
  const std::string* lease_ms_;  // Owned by the factory.
};

class LeaseAdvertFactory
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit LeaseAdvertFactory(std::string lease_ms)
      : lease_ms_(std::move(lease_ms)) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo*) override {
    return new LeaseAdvert(&lease_ms_);
  }

 private:
  const std::string lease_ms_;
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
NewLeaseAdvertFactory(absl::Duration lease) {
  return std::make_unique<LeaseAdvertFactory>(
      std::to_string(absl::ToInt64Milliseconds(lease)));
}

}  // namespace shard::server
