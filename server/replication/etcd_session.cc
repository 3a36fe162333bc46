#include "server/replication/etcd_session.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/security/client_credentials.h"
#include "grpcpp/grpcpp.h"

namespace shard::server::replication {
namespace {

using etcdserverpb::Compare;

// Between two attempts of a fenced write: a member that refuses at once
// (connection refused) is not asked again in a tight loop.
constexpr absl::Duration kRetryPause = absl::Milliseconds(20);

// Whether another member may answer what this one did not: it could not
// be reached, did not answer in time, or had no raft leader.
bool Retryable(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

}  // namespace

absl::Status CheckLeaseTtl(absl::Duration ttl) {
  if (ttl < absl::Seconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the etcd lease must be at least 1s, not ", absl::FormatDuration(ttl)));
  }
  if (ttl != absl::Trunc(ttl, absl::Seconds(1))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "etcd grants leases in whole seconds: give ",
        absl::FormatDuration(absl::Floor(ttl, absl::Seconds(1))), " or ",
        absl::FormatDuration(absl::Ceil(ttl, absl::Seconds(1))), ", not ",
        absl::FormatDuration(ttl)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<EtcdSession>> EtcdSession::Start(
    Options options) {
  if (options.endpoints.empty()) {
    return absl::InvalidArgumentError(
        "no etcd endpoint given; expected HOST:PORT[,HOST:PORT...]");
  }
  if (absl::Status s = CheckLeaseTtl(options.lease_ttl); !s.ok()) return s;
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      shard::security::ClientCredentials(
          {options.tls_ca_file, options.tls_cert_file, options.tls_key_file,
           "--etcd-ca", "--etcd-cert", "--etcd-key", "etcd's certificates"});
  if (!credentials.ok()) return credentials.status();
  std::unique_ptr<EtcdSession> session(new EtcdSession(std::move(options)));
  for (const std::string& endpoint : session->options_.endpoints) {
    std::shared_ptr<grpc::Channel> channel =
        grpc::CreateChannel(endpoint, *credentials);
    session->members_.push_back(Member{endpoint,
                                       etcdserverpb::KV::NewStub(channel),
                                       etcdserverpb::Lease::NewStub(channel),
                                       etcdserverpb::Watch::NewStub(channel)});
  }
  etcdserverpb::LeaseGrantRequest grant;
  grant.set_ttl(absl::ToInt64Seconds(session->options_.lease_ttl));
  absl::Status last_error;
  for (size_t tried = 0; tried < session->members_.size(); ++tried) {
    Member& member = session->member();
    etcdserverpb::LeaseGrantResponse granted;
    grpc::Status status = member.lease->LeaseGrant(
        session->Context(Bound::kFull).get(), grant, &granted);
    if (!status.ok()) {
      last_error = session->EtcdError(status, member, "LeaseGrant");
      continue;
    }
    if (!granted.error().empty()) {
      return absl::UnavailableError(absl::StrCat(
          "etcd at ", member.endpoint, " refused a lease: ", granted.error()));
    }
    if (granted.ttl() < absl::ToInt64Seconds(session->options_.lease_ttl)) {
      return absl::InternalError(absl::StrCat(
          "etcd at ", member.endpoint, " granted a lease of ", granted.ttl(),
          "s, less than the ",
          absl::FormatDuration(session->options_.lease_ttl), " asked"));
    }
    session->lease_id_ = granted.id();
    session->granted_ttl_ = absl::Seconds(granted.ttl());
    return session;
  }
  return last_error;
}

EtcdSession::EtcdSession(Options options) : options_(std::move(options)) {}

std::unique_ptr<grpc::ClientContext> EtcdSession::Context(Bound bound) const {
  auto context = std::make_unique<grpc::ClientContext>();
  const absl::Duration timeout =
      bound == Bound::kQuick ? quick_timeout() : options_.timeout;
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  return context;
}

absl::Duration EtcdSession::quick_timeout() const {
  // Before the lease is granted (Start) only the full bound applies.
  if (granted_ttl_ <= absl::ZeroDuration()) return options_.timeout;
  return std::min(options_.timeout, granted_ttl_ / 4);
}

absl::Status EtcdSession::EtcdError(const grpc::Status& status,
                                    const Member& used,
                                    absl::string_view call) {
  size_t current = current_.load();
  if (&members_[current % members_.size()] == &used) {
    current_.compare_exchange_strong(current, current + 1);
  }
  return absl::UnavailableError(absl::StrCat(
      "etcd at ", used.endpoint, " did not answer ", call, ": ",
      status.error_message(), " (grpc code ", status.error_code(), ")"));
}

absl::Status EtcdSession::KeepAlive() {
  Member& used = member();
  auto context = Context(Bound::kQuick);
  auto stream = used.lease->LeaseKeepAlive(context.get());
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(lease_id_);
  etcdserverpb::LeaseKeepAliveResponse response;
  if (!stream->Write(request) || !stream->Read(&response)) {
    stream->WritesDone();
    return EtcdError(stream->Finish(), used, "LeaseKeepAlive");
  }
  stream->WritesDone();
  stream->Finish().IgnoreError();
  if (response.ttl() <= 0) {
    return absl::NotFoundError(
        absl::StrCat("etcd lease ", lease_id_, " lapsed: this replica is out"));
  }
  return absl::OkStatus();
}

absl::Status EtcdSession::Revoke() {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease_id_);
  etcdserverpb::LeaseRevokeResponse response;
  Member& used = member();
  grpc::Status status =
      used.lease->LeaseRevoke(Context(Bound::kQuick).get(), request, &response);
  if (!status.ok()) return EtcdError(status, used, "LeaseRevoke");
  return absl::OkStatus();
}

absl::StatusOr<EtcdSession::Leadership> EtcdSession::Campaign(
    const std::string& identity) {
  etcdserverpb::TxnRequest txn;
  Compare* absent = txn.add_compare();
  absent->set_key(leader_key());
  absent->set_target(Compare::CREATE);
  absent->set_result(Compare::EQUAL);
  absent->set_create_revision(0);  // No leader key.
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(leader_key());
  put->set_value(identity);
  put->set_lease(lease_id_);
  txn.add_failure()->mutable_request_range()->set_key(leader_key());
  etcdserverpb::TxnResponse response;
  Member& used = member();
  grpc::Status status =
      used.kv->Txn(Context(Bound::kQuick).get(), txn, &response);
  if (!status.ok()) return EtcdError(status, used, "Txn (campaign)");
  if (!response.succeeded()) {
    const auto& found = response.responses(0).response_range();
    return absl::FailedPreconditionError(absl::StrCat(
        "the coordinator cluster under ", options_.prefix, " is led by ",
        found.kvs_size() > 0 ? found.kvs(0).value() : "(gone since)"));
  }
  // The put's revision is the leader key's create revision.
  return Leadership{response.header().revision(), identity};
}

absl::StatusOr<EtcdSession::LeaderKey> EtcdSession::ReadLeader() {
  etcdserverpb::RangeRequest request;
  request.set_key(leader_key());
  etcdserverpb::RangeResponse response;
  Member& used = member();
  grpc::Status status =
      used.kv->Range(Context(Bound::kQuick).get(), request, &response);
  if (!status.ok()) return EtcdError(status, used, "Range (leader key)");
  return LeaderKey{response.kvs_size() > 0 ? response.kvs(0).value() : "",
                   response.header().revision()};
}

absl::StatusOr<std::string> EtcdSession::Leader() {
  absl::StatusOr<LeaderKey> leader = ReadLeader();
  if (!leader.ok()) return leader.status();
  if (leader->identity.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "no coordinator leads the cluster under ", options_.prefix));
  }
  return leader->identity;
}

absl::StatusOr<int64_t> EtcdSession::FencedPut(
    const Leadership& leadership,
    const std::vector<std::pair<std::string, std::string>>& entries,
    const std::vector<std::pair<std::string, std::string>>& delete_ranges) {
  etcdserverpb::TxnRequest txn;
  Compare* still_leader = txn.add_compare();
  still_leader->set_key(leader_key());
  still_leader->set_target(Compare::CREATE);
  still_leader->set_result(Compare::EQUAL);
  still_leader->set_create_revision(leadership.revision);
  for (const auto& [key, value] : entries) {
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(options_.prefix + key);
    put->set_value(value);
  }
  for (const auto& [first, end] : delete_ranges) {
    etcdserverpb::DeleteRangeRequest* erase =
        txn.add_success()->mutable_request_delete_range();
    erase->set_key(options_.prefix + first);
    erase->set_range_end(options_.prefix + end);
  }
  // A member that does not answer within the quick bound (stopped, its
  // disk stalled, without a raft leader) is left for the next one, until
  // the full bound has passed. Should a failed attempt have been applied
  // after all, the next one finds the same leadership and puts the same
  // values again, which changes no state.
  const absl::Time give_up = absl::Now() + options_.timeout;
  etcdserverpb::TxnResponse response;
  while (true) {
    Member& used = member();
    grpc::Status status =
        used.kv->Txn(Context(Bound::kQuick).get(), txn, &response);
    if (status.ok()) break;
    absl::Status failed = EtcdError(status, used, "Txn (fenced write)");
    if (!Retryable(status) || absl::Now() + kRetryPause >= give_up) {
      return failed;
    }
    absl::SleepFor(kRetryPause);
  }
  if (!response.succeeded()) {
    return absl::FailedPreconditionError(
        absl::StrCat(leadership.identity,
                     " is no longer the leader of the coordinator "
                     "cluster under ",
                     options_.prefix, " (its leadership of revision ",
                     leadership.revision, " ended): nothing was written"));
  }
  return response.header().revision();
}

absl::Status EtcdSession::Compact(int64_t revision) {
  etcdserverpb::CompactionRequest request;
  request.set_revision(revision);
  etcdserverpb::CompactionResponse response;
  Member& used = member();
  grpc::Status status =
      used.kv->Compact(Context(Bound::kQuick).get(), request, &response);
  // etcd answers OUT_OF_RANGE for a revision compacted already.
  if (status.error_code() == grpc::StatusCode::OUT_OF_RANGE) {
    return absl::OkStatus();
  }
  if (!status.ok()) return EtcdError(status, used, "Compact");
  return absl::OkStatus();
}

absl::StatusOr<std::string> EtcdSession::Get(const std::string& key) {
  absl::StatusOr<Entry> entry = GetEntry(key);
  if (!entry.ok()) return entry.status();
  return std::move(entry->value);
}

absl::StatusOr<EtcdSession::Entry> EtcdSession::GetEntry(
    const std::string& key) {
  etcdserverpb::RangeRequest request;
  request.set_key(options_.prefix + key);
  etcdserverpb::RangeResponse response;
  Member& used = member();
  grpc::Status status =
      used.kv->Range(Context(Bound::kQuick).get(), request, &response);
  if (!status.ok()) return EtcdError(status, used, "Range");
  if (response.kvs_size() == 0) {
    return absl::NotFoundError(
        absl::StrCat("etcd has no key ", options_.prefix, key));
  }
  return Entry{response.kvs(0).value(), response.kvs(0).mod_revision()};
}

absl::StatusOr<std::optional<std::pair<std::string, std::string>>>
EtcdSession::LastEntry(const std::string& key_prefix) {
  const auto [first, end] = PrefixRange(key_prefix);
  etcdserverpb::RangeRequest request;
  request.set_key(first);
  request.set_range_end(end);
  request.set_limit(1);
  request.set_sort_target(etcdserverpb::RangeRequest::KEY);
  request.set_sort_order(etcdserverpb::RangeRequest::DESCEND);
  etcdserverpb::RangeResponse response;
  Member& used = member();
  grpc::Status status =
      used.kv->Range(Context(Bound::kQuick).get(), request, &response);
  if (!status.ok()) return EtcdError(status, used, "Range (last key)");
  if (response.kvs_size() == 0) return std::nullopt;
  return std::make_pair(response.kvs(0).key().substr(options_.prefix.size()),
                        response.kvs(0).value());
}

std::string EtcdSession::KeyAfterPrefix(std::string key_prefix) {
  while (!key_prefix.empty() &&
         static_cast<unsigned char>(key_prefix.back()) == 0xff) {
    key_prefix.pop_back();
  }
  if (key_prefix.empty()) return std::string(1, '\0');
  key_prefix.back() = static_cast<char>(key_prefix.back() + 1);
  return key_prefix;
}

std::pair<std::string, std::string> EtcdSession::PrefixRange(
    const std::string& key_prefix) const {
  const std::string first = options_.prefix + key_prefix;
  return {first, KeyAfterPrefix(first)};
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>>
EtcdSession::List(const std::string& key_prefix, int64_t* revision) {
  constexpr int64_t kPage = 1000;
  const auto [first, end] = PrefixRange(key_prefix);
  std::vector<std::pair<std::string, std::string>> found;
  std::string from = first;
  // The revision of the first page; later pages read it.
  int64_t at = revision != nullptr ? *revision : 0;
  while (true) {
    etcdserverpb::RangeRequest request;
    request.set_key(from);
    request.set_range_end(end);
    request.set_limit(kPage);
    request.set_revision(at);
    etcdserverpb::RangeResponse response;
    Member& used = member();
    grpc::Status status =
        used.kv->Range(Context(Bound::kFull).get(), request, &response);
    if (!status.ok()) return EtcdError(status, used, "Range");
    if (at == 0) at = response.header().revision();
    for (const auto& kv : response.kvs()) {
      found.emplace_back(kv.key().substr(options_.prefix.size()), kv.value());
    }
    if (!response.more() || response.kvs_size() == 0) break;
    from = response.kvs(response.kvs_size() - 1).key() + '\0';
  }
  if (revision != nullptr) *revision = at;
  return found;
}

absl::StatusOr<std::unique_ptr<EtcdSession::PrefixWatch>> EtcdSession::Watch(
    const std::string& key_prefix, int64_t start_revision) {
  const auto [first, end] = PrefixRange(key_prefix);
  etcdserverpb::WatchCreateRequest create;
  create.set_key(first);
  create.set_range_end(end);
  create.set_start_revision(start_revision);
  create.add_filters(etcdserverpb::WatchCreateRequest::NODELETE);
  return OpenWatch(std::move(create));
}

absl::StatusOr<std::unique_ptr<EtcdSession::PrefixWatch>> EtcdSession::WatchKey(
    const std::string& key, int64_t start_revision) {
  etcdserverpb::WatchCreateRequest create;
  create.set_key(options_.prefix + key);
  create.set_start_revision(start_revision);
  return OpenWatch(std::move(create));
}

absl::StatusOr<std::unique_ptr<EtcdSession::PrefixWatch>>
EtcdSession::OpenWatch(etcdserverpb::WatchCreateRequest create) {
  std::unique_ptr<PrefixWatch> watch(new PrefixWatch());
  watch->prefix_size_ = options_.prefix.size();
  Member& used = member();
  watch->endpoint_ = used.endpoint;
  watch->stream_ = used.watch->Watch(&watch->context_);
  etcdserverpb::WatchRequest request;
  *request.mutable_create_request() = std::move(create);
  // The stream lives on, so its context has no deadline: a member that
  // does not accept the watch in time (stopped, say) is given up by
  // cancelling it.
  absl::Notification answered;
  std::thread bound([&] {
    if (!answered.WaitForNotificationWithTimeout(options_.timeout)) {
      watch->Cancel();
    }
  });
  etcdserverpb::WatchResponse created;
  const bool accepted = watch->stream_->Write(request) &&
                        watch->stream_->Read(&created) && created.created();
  answered.Notify();
  bound.join();
  if (!accepted) {
    watch->Cancel();
    return EtcdError(watch->Finish(), used, "Watch");
  }
  return watch;
}

EtcdSession::PrefixWatch::~PrefixWatch() {
  Cancel();
  Finish().IgnoreError();
}

grpc::Status EtcdSession::PrefixWatch::Finish() {
  if (finished_) return grpc::Status::CANCELLED;
  finished_ = true;
  return stream_->Finish();
}

absl::StatusOr<std::vector<EtcdSession::Change>>
EtcdSession::PrefixWatch::Next() {
  etcdserverpb::WatchResponse response;
  while (stream_->Read(&response)) {
    if (response.compact_revision() > 0) {
      return absl::DataLossError(absl::StrCat(
          "etcd at ", endpoint_, " compacted its history to revision ",
          response.compact_revision(), " past this watch's start"));
    }
    if (response.canceled()) {
      return absl::UnavailableError(
          absl::StrCat("etcd at ", endpoint_,
                       " cancelled the watch: ", response.cancel_reason()));
    }
    if (response.events_size() == 0) continue;  // Progress only.
    std::vector<Change> changes;
    for (const auto& event : response.events()) {
      const bool deleted = event.type() == mvccpb::Event::DELETE;
      changes.push_back(Change{event.kv().key().substr(prefix_size_),
                               event.kv().value(), deleted,
                               event.kv().mod_revision()});
    }
    return changes;
  }
  const grpc::Status ended = Finish();
  if (ended.error_code() == grpc::StatusCode::CANCELLED) {
    return absl::CancelledError("the watch was cancelled");
  }
  return absl::UnavailableError(absl::StrCat(
      "etcd at ", endpoint_, " ended the watch: ", ended.error_message()));
}

}  // namespace shard::server::replication
