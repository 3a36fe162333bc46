// CoordinatorService: the rendezvous key-value RPCs (c10d Store).
#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/plan/job_spec.h"
#include "server/coordinator_service.h"
#include "server/event_log.h"

namespace shard::server {

absl::StatusOr<RendezvousStore::Scope> CoordinatorService::CheckScope(
    const shard::v1::StoreScope& scope) {
  if (absl::Status s = plan::ValidateJobId(scope.job_id()); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  if (absl::Status s = CheckServing(); !s.ok()) return s;
  absl::StatusOr<const JobState*> job =
      FindFormedJob(scope.job_id(), scope.generation());
  if (!job.ok()) return job.status();
  return RendezvousStore::Scope(scope.job_id(), scope.generation());
}

absl::StatusOr<shard::v1::StoreSetResponse> CoordinatorService::StoreSet(
    const shard::v1::StoreSetRequest& request) {
  absl::StatusOr<RendezvousStore::Scope> scope = CheckScope(request.scope());
  if (!scope.ok()) return scope.status();
  absl::Status status = rendezvous_.Set(*scope, request.key(), request.value());
  if (!status.ok()) return status;
  return shard::v1::StoreSetResponse();
}

absl::StatusOr<CoordinatorService::StoreWaitStart>
CoordinatorService::StartStoreWaiting(const shard::v1::StoreScope& scope,
                                      uint32_t wait_ms, WaitingCalls::Kind kind,
                                      absl::Time call_deadline) {
  absl::StatusOr<RendezvousStore::Scope> checked = CheckScope(scope);
  if (!checked.ok()) return checked.status();
  StoreWaitStart start{*std::move(checked), std::nullopt,
                       WaitDeadline(wait_ms, call_deadline)};
  if (wait_ms > 0) {
    absl::StatusOr<WaitingCalls::Slot> entered = waiting_calls_.Enter(kind);
    if (!entered.ok()) return entered.status();
    start.slot.emplace(*std::move(entered));
  }
  return start;
}

ParkedCalls::Handle CoordinatorService::StartStoreGet(
    const shard::v1::StoreGetRequest& request, absl::Time call_deadline,
    Reply<shard::v1::StoreGetResponse> reply) {
  absl::StatusOr<StoreWaitStart> start =
      StartStoreWaiting(request.scope(), request.wait_ms(),
                        WaitingCalls::Kind::kStoreGet, call_deadline);
  if (!start.ok()) {
    std::move(reply)(start.status());
    return {};
  }
  return rendezvous_.StartGet(
      start->scope, request.key(), start->deadline,
      [slot = std::move(start->slot), reply = std::move(reply)](
          absl::StatusOr<std::optional<std::string>> value) mutable {
        slot.reset();  // Free before answering: the caller may wait again.
        if (!value.ok()) return std::move(reply)(value.status());
        shard::v1::StoreGetResponse response;
        response.set_found(value->has_value());
        if (value->has_value()) response.set_value(**value);
        std::move(reply)(std::move(response));
      });
}

absl::StatusOr<shard::v1::StoreAddResponse> CoordinatorService::StoreAdd(
    const shard::v1::StoreAddRequest& request) {
  absl::StatusOr<RendezvousStore::Scope> scope = CheckScope(request.scope());
  if (!scope.ok()) return scope.status();
  absl::StatusOr<int64_t> value =
      rendezvous_.Add(*scope, request.key(), request.delta());
  if (!value.ok()) return value.status();
  shard::v1::StoreAddResponse response;
  response.set_value(*value);
  return response;
}

absl::StatusOr<shard::v1::StoreCompareSetResponse>
CoordinatorService::StoreCompareSet(
    const shard::v1::StoreCompareSetRequest& request) {
  absl::StatusOr<RendezvousStore::Scope> scope = CheckScope(request.scope());
  if (!scope.ok()) return scope.status();
  absl::StatusOr<std::string> value = rendezvous_.CompareSet(
      *scope, request.key(), request.expected(), request.desired());
  if (!value.ok()) return value.status();
  shard::v1::StoreCompareSetResponse response;
  response.set_value(*value);
  return response;
}

ParkedCalls::Handle CoordinatorService::StartStoreWait(
    const shard::v1::StoreWaitRequest& request, absl::Time call_deadline,
    Reply<shard::v1::StoreWaitResponse> reply) {
  absl::StatusOr<StoreWaitStart> start =
      StartStoreWaiting(request.scope(), request.wait_ms(),
                        WaitingCalls::Kind::kStoreWait, call_deadline);
  if (!start.ok()) {
    std::move(reply)(start.status());
    return {};
  }
  return rendezvous_.StartWait(
      start->scope, {request.keys().begin(), request.keys().end()},
      start->deadline,
      [slot = std::move(start->slot),
       reply = std::move(reply)](absl::StatusOr<bool> ready) mutable {
        slot.reset();  // Free before answering: the caller may wait again.
        if (!ready.ok()) return std::move(reply)(ready.status());
        shard::v1::StoreWaitResponse response;
        response.set_ready(*ready);
        std::move(reply)(std::move(response));
      });
}

absl::StatusOr<shard::v1::StoreDeleteResponse> CoordinatorService::StoreDelete(
    const shard::v1::StoreDeleteRequest& request) {
  absl::StatusOr<RendezvousStore::Scope> scope = CheckScope(request.scope());
  if (!scope.ok()) return scope.status();
  absl::StatusOr<bool> deleted = rendezvous_.Delete(*scope, request.key());
  if (!deleted.ok()) return deleted.status();
  shard::v1::StoreDeleteResponse response;
  response.set_deleted(*deleted);
  return response;
}

absl::StatusOr<shard::v1::StoreCountResponse> CoordinatorService::StoreCount(
    const shard::v1::StoreCountRequest& request) {
  absl::StatusOr<RendezvousStore::Scope> scope = CheckScope(request.scope());
  if (!scope.ok()) return scope.status();
  absl::StatusOr<int64_t> count = rendezvous_.Count(*scope);
  if (!count.ok()) return count.status();
  shard::v1::StoreCountResponse response;
  response.set_count(*count);
  return response;
}

}  // namespace shard::server
