#include "tests/support/grpc_probes.h"

#include <chrono>
#include <vector>

#include "grpcpp/completion_queue.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/support/byte_buffer.h"

namespace shard::testing {

absl::StatusOr<Health> CheckHealth(
    const std::shared_ptr<grpc::Channel>& channel, const std::string& service) {
  return client::CheckHealth(channel, service, absl::Seconds(5));
}

absl::StatusOr<std::string> ListServicesRaw(
    const std::shared_ptr<grpc::Channel>& channel) {
  grpc::CompletionQueue queue;
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(5));
  auto call = stub.PrepareCall(
      &context,
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &queue);
  // Runs one step of the call and waits for it.
  auto await = [&queue](int step) {
    void* tag = nullptr;
    bool ok = false;
    return queue.Next(&tag, &ok) && ok &&
           tag == reinterpret_cast<void*>(static_cast<intptr_t>(step));
  };
  auto tag = [](int step) {
    return reinterpret_cast<void*>(static_cast<intptr_t>(step));
  };
  // ServerReflectionRequest { string list_services = 7; } with "".
  grpc::Slice slice(std::string("\x3a\x00", 2));
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  call->StartCall(tag(1));
  if (!await(1)) return absl::UnavailableError("cannot start the call");
  call->Write(request, tag(2));
  if (!await(2)) return absl::UnavailableError("cannot send the request");
  call->Read(&response, tag(3));
  if (!await(3)) return absl::UnavailableError("no reflection response");
  call->WritesDone(tag(4));
  await(4);
  grpc::Status status;
  call->Finish(&status, tag(5));
  await(5);
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return absl::InternalError("bad response");
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return bytes;
}

}  // namespace shard::testing
