// A unary gRPC call answered through the callback API by a service call
// that replies later (StartX of a service): no thread waits for the answer.
// The Reply carries the call's Cancellation, so the client cancelling a
// call that waits (joins, store gets and waits) ends the wait at once.
#ifndef SERVER_RPC_UNARY_CALL_REACTOR_H_
#define SERVER_RPC_UNARY_CALL_REACTOR_H_

#include <memory>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "server/rpc/grpc_status.h"
#include "server/waiting/reply.h"

namespace shard::server {

template <typename Response>
class UnaryCallReactor final : public grpc::ServerUnaryReactor {
 public:
  // Runs `start` with the reply that finishes the call (into `response`,
  // which gRPC owns until OnDone) and carries its cancellation. The call
  // holds `held` (the service it is served by, see ServingSlot) until it
  // is done. The reactor deletes itself when done.
  static grpc::ServerUnaryReactor* Run(
      Response* response, std::shared_ptr<const void> held,
      absl::FunctionRef<void(Reply<Response>)> start) {
    auto* reactor = new UnaryCallReactor(response, std::move(held));
    start(Reply<Response>(
        [reactor](absl::StatusOr<Response> answer) {
          reactor->Answer(std::move(answer));
        },
        reactor->cancellation_));
    return reactor;
  }

  void OnCancel() override { cancellation_->Cancel(); }
  void OnDone() override { delete this; }

 private:
  UnaryCallReactor(Response* response, std::shared_ptr<const void> held)
      : response_(response), held_(std::move(held)) {}

  void Answer(absl::StatusOr<Response> answer) {
    if (answer.ok()) *response_ = *std::move(answer);
    Finish(ToGrpcStatus(answer.status()));
  }

  Response* const response_;
  const std::shared_ptr<const void> held_;
  const std::shared_ptr<Cancellation> cancellation_ =
      std::make_shared<Cancellation>();
};

}  // namespace shard::server

#endif  // SERVER_RPC_UNARY_CALL_REACTOR_H_
