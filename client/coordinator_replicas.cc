#include "shard/client/coordinator_replicas.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/leader_hint.h"
#include "common/net/address.h"

namespace shard::client {
absl::StatusOr<std::vector<std::string>> ParseCoordinatorAddresses(
    absl::string_view addresses) {
  absl::StatusOr<std::vector<std::string>> parsed =
      net::ParseAddressList(addresses);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("coordinator address ", parsed.status().message()));
  }
  return parsed;
}

absl::StatusOr<std::shared_ptr<CoordinatorReplicas>> CoordinatorReplicas::Open(
    const std::string& addresses, const ChannelSecurity& security,
    int max_receive_bytes) {
  absl::StatusOr<std::vector<std::string>> parsed =
      ParseCoordinatorAddresses(addresses);
  if (!parsed.ok()) return parsed.status();
  std::shared_ptr<CoordinatorReplicas> replicas(
      new CoordinatorReplicas(security, max_receive_bytes));
  absl::MutexLock lock(&replicas->mu_);
  for (const std::string& address : *parsed) {
    if (absl::Status s = replicas->Add(address); !s.ok()) return s;
  }
  return replicas;
}

absl::Status CoordinatorReplicas::Add(const std::string& address) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      NewCoordinatorChannel(address, security_, max_receive_bytes_, keepalive_);
  if (!channel.ok()) return channel.status();
  addresses_.push_back(address);
  stubs_.push_back(shard::v1::Coordinator::NewStub(*channel));
  channels_.push_back(*channel);
  silent_since_.push_back(absl::InfinitePast());
  return absl::OkStatus();
}

CoordinatorReplicas::Pick CoordinatorReplicas::Current() const {
  absl::MutexLock lock(&mu_);
  return Pick{stubs_[current_], current_, channels_[current_]};
}

void CoordinatorReplicas::PauseBeforeRetry(absl::Duration pause) const {
  const std::shared_ptr<grpc::Channel> channel = Current().channel;
  const absl::Time until = absl::Now() + pause;
  if (channel->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY) {
    // A live coordinator answered UNAVAILABLE: the whole pause.
    absl::SleepFor(pause);
    return;
  }
  // Returns once the channel is READY, or at the end of the pause.
  if (channel->WaitForConnected(absl::ToChronoTime(until))) return;
  absl::SleepFor(until - absl::Now());
}

bool CoordinatorReplicas::RecentlySilent(size_t index, absl::Time now) const {
  return now - silent_since_[index] < kSilentLeaderHoldoff;
}

void CoordinatorReplicas::LearnLease(const grpc::ClientContext& context,
                                     bool ended) {
  auto lease_in = [](const auto& metadata) -> std::optional<absl::Duration> {
    const auto found = metadata.find(kLeaderLeaseMetadataKey);
    int64_t ms = 0;
    if (found == metadata.end() ||
        !absl::SimpleAtoi(
            absl::string_view(found->second.data(), found->second.size()),
            &ms)) {
      return std::nullopt;
    }
    return absl::Milliseconds(ms);
  };
  std::optional<absl::Duration> lease =
      lease_in(context.GetServerInitialMetadata());
  // A refusal without a body carries it among the trailers, which only an
  // ended call may read.
  if (!lease && ended) lease = lease_in(context.GetServerTrailingMetadata());
  if (!lease || KeepaliveForLease(*lease) == keepalive_) return;
  keepalive_ = KeepaliveForLease(*lease);
  for (size_t i = 0; i < addresses_.size(); ++i) {
    // The security files were read once already; a failure now (a file
    // changed meanwhile) keeps the channel there is.
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
        NewCoordinatorChannel(addresses_[i], security_, max_receive_bytes_,
                              keepalive_);
    if (!channel.ok()) continue;
    channels_[i] = *channel;
    stubs_[i] = shard::v1::Coordinator::NewStub(*channel);
  }
}

bool CoordinatorReplicas::Failed(const Pick& used,
                                 const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  const bool standby = trailers.find(kStandbyMetadataKey) != trailers.end();
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  LearnLease(context, /*ended=*/true);
  if (!standby && silent_since_[used.index] == absl::InfinitePast()) {
    silent_since_[used.index] = now;
  }
  if (used.index != current_) return true;  // Another call moved on.
  unanswered_ = standby ? 0 : unanswered_ + 1;
  const bool soon = standby || unanswered_ < addresses_.size();
  if (const auto hint = trailers.find(kLeaderMetadataKey);
      hint != trailers.end()) {
    const std::string leader(hint->second.data(), hint->second.size());
    const auto known = std::find(addresses_.begin(), addresses_.end(), leader);
    if (known != addresses_.end()) {
      const auto index = static_cast<size_t>(known - addresses_.begin());
      // Stay with the standby until it takes over from a silent leader.
      if (!RecentlySilent(index, now)) current_ = index;
      return soon;
    }
    if (Add(leader).ok()) {
      current_ = addresses_.size() - 1;
      return soon;
    }
  }
  current_ = (current_ + 1) % addresses_.size();
  return soon;
}

void CoordinatorReplicas::Answered(const Pick& used,
                                   const grpc::ClientContext& context) {
  absl::MutexLock lock(&mu_);
  unanswered_ = 0;
  silent_since_[used.index] = absl::InfinitePast();
  LearnLease(context, /*ended=*/false);
}

std::vector<std::string> CoordinatorReplicas::addresses() const {
  absl::MutexLock lock(&mu_);
  return addresses_;
}

Keepalive CoordinatorReplicas::keepalive() const {
  absl::MutexLock lock(&mu_);
  return keepalive_;
}

}  // namespace shard::client
