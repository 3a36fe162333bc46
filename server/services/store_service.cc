#include "server/services/store_service.h"

#include <optional>
#include <string>
#include <utility>

namespace shard::server {

StoreService::StoreService(RendezvousStore* store, WaitingCalls* waiting,
                           absl::Duration max_wait, ScopeCheck check_scope)
    : store_(store),
      waiting_(waiting),
      max_wait_(max_wait),
      check_scope_(std::move(check_scope)) {}

absl::StatusOr<RendezvousStore::Scope> StoreService::CheckScope(
    const shard::v1::StoreScope& scope) const {
  if (absl::Status s = check_scope_(scope); !s.ok()) return s;
  return RendezvousStore::Scope(scope.job_id(), scope.generation());
}

absl::StatusOr<shard::v1::StoreSetResponse> StoreService::StoreSet(
    const shard::v1::StoreSetRequest& request) {
  absl::StatusOr<RendezvousStore::Scope> scope = CheckScope(request.scope());
  if (!scope.ok()) return scope.status();
  absl::Status status = store_->Set(*scope, request.key(), request.value());
  if (!status.ok()) return status;
  return shard::v1::StoreSetResponse();
}

absl::StatusOr<StoreService::StoreWaitStart> StoreService::StartStoreWaiting(
    const shard::v1::StoreScope& scope, uint32_t wait_ms,
    WaitingCalls::Kind kind, absl::Time call_deadline) {
  absl::StatusOr<RendezvousStore::Scope> checked = CheckScope(scope);
  if (!checked.ok()) return checked.status();
  StoreWaitStart start{*std::move(checked), std::nullopt,
                       WaitDeadline(wait_ms, max_wait_, call_deadline)};
  if (wait_ms > 0) {
    absl::StatusOr<WaitingCalls::Slot> entered =
        waiting_->Enter(kind, scope.job_id());
    if (!entered.ok()) return entered.status();
    start.slot.emplace(*std::move(entered));
  }
  return start;
}

void StoreService::StartStoreGet(const shard::v1::StoreGetRequest& request,
                                 absl::Time call_deadline,
                                 Reply<shard::v1::StoreGetResponse> reply) {
  absl::StatusOr<StoreWaitStart> start =
      StartStoreWaiting(request.scope(), request.wait_ms(),
                        WaitingCalls::Kind::kStoreGet, call_deadline);
  if (!start.ok()) return std::move(reply)(start.status());
  std::shared_ptr<Cancellation> cancellation = reply.cancellation();
  store_->StartGet(
      start->scope, request.key(), start->deadline,
      {[slot = std::move(start->slot), reply = std::move(reply)](
           absl::StatusOr<std::optional<std::string>> value) mutable {
         slot.reset();  // Free before answering: the caller may wait again.
         if (!value.ok()) return std::move(reply)(value.status());
         shard::v1::StoreGetResponse response;
         response.set_found(value->has_value());
         if (value->has_value()) response.set_value(**value);
         std::move(reply)(std::move(response));
       },
       std::move(cancellation)});
}

absl::StatusOr<shard::v1::StoreAddResponse> StoreService::StoreAdd(
    const shard::v1::StoreAddRequest& request) {
  absl::StatusOr<RendezvousStore::Scope> scope = CheckScope(request.scope());
  if (!scope.ok()) return scope.status();
  absl::StatusOr<int64_t> value =
      store_->Add(*scope, request.key(), request.delta());
  if (!value.ok()) return value.status();
  shard::v1::StoreAddResponse response;
  response.set_value(*value);
  return response;
}

absl::StatusOr<shard::v1::StoreCompareSetResponse>
StoreService::StoreCompareSet(
    const shard::v1::StoreCompareSetRequest& request) {
  absl::StatusOr<RendezvousStore::Scope> scope = CheckScope(request.scope());
  if (!scope.ok()) return scope.status();
  absl::StatusOr<std::string> value = store_->CompareSet(
      *scope, request.key(), request.expected(), request.desired());
  if (!value.ok()) return value.status();
  shard::v1::StoreCompareSetResponse response;
  response.set_value(*value);
  return response;
}

void StoreService::StartStoreWait(const shard::v1::StoreWaitRequest& request,
                                  absl::Time call_deadline,
                                  Reply<shard::v1::StoreWaitResponse> reply) {
  absl::StatusOr<StoreWaitStart> start =
      StartStoreWaiting(request.scope(), request.wait_ms(),
                        WaitingCalls::Kind::kStoreWait, call_deadline);
  if (!start.ok()) return std::move(reply)(start.status());
  std::shared_ptr<Cancellation> cancellation = reply.cancellation();
  store_->StartWait(
      start->scope, {request.keys().begin(), request.keys().end()},
      start->deadline,
      {[slot = std::move(start->slot),
        reply = std::move(reply)](absl::StatusOr<bool> ready) mutable {
         slot.reset();  // Free before answering: the caller may wait again.
         if (!ready.ok()) return std::move(reply)(ready.status());
         shard::v1::StoreWaitResponse response;
         response.set_ready(*ready);
         std::move(reply)(std::move(response));
       },
       std::move(cancellation)});
}

absl::StatusOr<shard::v1::StoreDeleteResponse> StoreService::StoreDelete(
    const shard::v1::StoreDeleteRequest& request) {
  absl::StatusOr<RendezvousStore::Scope> scope = CheckScope(request.scope());
  if (!scope.ok()) return scope.status();
  absl::StatusOr<bool> deleted = store_->Delete(*scope, request.key());
  if (!deleted.ok()) return deleted.status();
  shard::v1::StoreDeleteResponse response;
  response.set_deleted(*deleted);
  return response;
}

absl::StatusOr<shard::v1::StoreCountResponse> StoreService::StoreCount(
    const shard::v1::StoreCountRequest& request) {
  absl::StatusOr<RendezvousStore::Scope> scope = CheckScope(request.scope());
  if (!scope.ok()) return scope.status();
  absl::StatusOr<int64_t> count = store_->Count(*scope);
  if (!count.ok()) return count.status();
  shard::v1::StoreCountResponse response;
  response.set_count(*count);
  return response;
}

}  // namespace shard::server
