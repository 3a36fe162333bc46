#include "shard/client/torch/coordinator_store.h"

#include <stdexcept>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "shard/client/torch/status_error.h"

namespace shard::torch_adapter {
namespace {

std::string ToString(const std::vector<uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

std::vector<uint8_t> ToBytes(const std::string& text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}

// Unwraps a result or throws its status (the libtorch boundary).
template <typename T>
T OrThrow(absl::StatusOr<T> result) {
  if (!result.ok()) throw StatusError("CoordinatorStore", result.status());
  return *std::move(result);
}

absl::Duration ToDuration(std::chrono::milliseconds timeout) {
  // c10d's kNoTimeout (0) means wait without limit; a day stands in for it.
  return timeout.count() == 0 ? absl::Hours(24)
                              : absl::Milliseconds(timeout.count());
}

}  // namespace

CoordinatorStore::CoordinatorStore(
    std::shared_ptr<client::CoordinatorClient> client,
    client::Membership membership, std::chrono::milliseconds timeout)
    : c10d::Store(timeout),
      client_(std::move(client)),
      membership_(std::move(membership)) {}

#ifdef SHARD_TORCH_STORE_HAS_CLONE
c10::intrusive_ptr<c10d::Store> CoordinatorStore::clone() {
  return c10::make_intrusive<CoordinatorStore>(client_, membership_,
                                               getTimeout());
}
#endif

void CoordinatorStore::set(const std::string& key,
                           const std::vector<uint8_t>& value) {
  absl::Status status = client_->StoreSet(membership_, key, ToString(value));
  if (!status.ok()) throw StatusError("CoordinatorStore", status);
}

std::vector<uint8_t> CoordinatorStore::compareSet(
    const std::string& key, const std::vector<uint8_t>& expected,
    const std::vector<uint8_t>& desired) {
  return ToBytes(OrThrow(client_->StoreCompareSet(
      membership_, key, ToString(expected), ToString(desired))));
}

std::vector<uint8_t> CoordinatorStore::get(const std::string& key) {
  const absl::Time began = absl::Now();
  std::optional<std::string> value =
      OrThrow(client_->StoreGet(membership_, key, ToDuration(timeout_)));
  if (!value) {
    throw StatusError("CoordinatorStore",
                      absl::DeadlineExceededError(absl::StrCat(
                          "key \"", key, "\" not set after waiting ",
                          absl::FormatDuration(absl::Now() - began),
                          " (store timeout ", timeout_.count(), " ms)")));
  }
  return ToBytes(*value);
}

int64_t CoordinatorStore::add(const std::string& key, int64_t value) {
  return OrThrow(client_->StoreAdd(membership_, key, value));
}

bool CoordinatorStore::deleteKey(const std::string& key) {
  return OrThrow(client_->StoreDelete(membership_, key));
}

bool CoordinatorStore::check(const std::vector<std::string>& keys) {
  return OrThrow(client_->StoreWait(membership_, keys, absl::ZeroDuration()));
}

int64_t CoordinatorStore::getNumKeys() {
  return OrThrow(client_->StoreCount(membership_));
}

void CoordinatorStore::wait(const std::vector<std::string>& keys) {
  wait(keys, timeout_);
}

void CoordinatorStore::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  const absl::Time began = absl::Now();
  if (!OrThrow(client_->StoreWait(membership_, keys, ToDuration(timeout)))) {
    throw StatusError(
        "CoordinatorStore",
        absl::DeadlineExceededError(absl::StrCat(
            "keys ", absl::StrJoin(keys, ", "), " not all set after waiting ",
            absl::FormatDuration(absl::Now() - began), " (timeout ",
            timeout.count(), " ms)")));
  }
}

}  // namespace shard::torch_adapter
