// A unary gRPC call answered through the callback API by a service call that
// may park (CoordinatorService::StartJoinJob, StartStoreGet, ...): no thread
// waits for it, and the client cancelling the call ends the wait at once.
#ifndef SERVER_PARKED_CALL_REACTOR_H_
#define SERVER_PARKED_CALL_REACTOR_H_

#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "server/coordinator_service.h"
#include "server/grpc_status.h"
#include "server/parked_calls.h"

namespace shard::server {

template <typename Response>
class ParkedCallReactor final : public grpc::ServerUnaryReactor {
 public:
  using Reply = CoordinatorService::Reply<Response>;

  // Runs `start` with the reply that finishes the call (into `response`,
  // which gRPC owns until OnDone). The reactor deletes itself when done.
  static grpc::ServerUnaryReactor* Run(
      Response* response, absl::FunctionRef<ParkedCalls::Handle(Reply)> start) {
    auto* reactor = new ParkedCallReactor(response);
    // gRPC calls OnCancel and OnDone only after this handler returned the
    // reactor, so parked_ is set before either can read it.
    reactor->parked_ = start([reactor](absl::StatusOr<Response> answer) {
      reactor->Answer(std::move(answer));
    });
    return reactor;
  }

  void OnCancel() override { parked_.Cancel(); }
  void OnDone() override { delete this; }

 private:
  explicit ParkedCallReactor(Response* response) : response_(response) {}

  void Answer(absl::StatusOr<Response> answer) {
    if (answer.ok()) *response_ = *std::move(answer);
    Finish(ToGrpcStatus(answer.status()));
  }

  Response* const response_;
  ParkedCalls::Handle parked_;
};

}  // namespace shard::server

#endif  // SERVER_PARKED_CALL_REACTOR_H_
