#include "server/replication/etcd_session.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"

namespace shard::server::replication {
namespace {

using etcdserverpb::Compare;

}  // namespace

absl::StatusOr<std::unique_ptr<EtcdSession>> EtcdSession::Start(
    Options options) {
  if (options.endpoint.empty()) {
    return absl::InvalidArgumentError(
        "etcd endpoint is empty; expected "
        "HOST:PORT");
  }
  if (options.lease_ttl < absl::Seconds(1)) {
    return absl::InvalidArgumentError("the etcd lease must be at least 1s");
  }
  auto channel =
      grpc::CreateChannel(options.endpoint, grpc::InsecureChannelCredentials());
  std::unique_ptr<EtcdSession> session(
      new EtcdSession(std::move(options), std::move(channel)));
  etcdserverpb::LeaseGrantRequest grant;
  grant.set_ttl(absl::ToInt64Seconds(session->options_.lease_ttl));
  etcdserverpb::LeaseGrantResponse granted;
  auto context = session->Context();
  context->set_wait_for_ready(true);  // etcd may still be starting.
  grpc::Status status =
      session->lease_->LeaseGrant(context.get(), grant, &granted);
  if (!status.ok()) return session->EtcdError(status, "LeaseGrant");
  if (!granted.error().empty()) {
    return absl::UnavailableError(
        absl::StrCat("etcd at ", session->options_.endpoint,
                     " refused a lease: ", granted.error()));
  }
  session->lease_id_ = granted.id();
  return session;
}

EtcdSession::EtcdSession(Options options,
                         std::shared_ptr<grpc::Channel> channel)
    : options_(std::move(options)),
      kv_(etcdserverpb::KV::NewStub(channel)),
      lease_(etcdserverpb::Lease::NewStub(channel)),
      watch_(etcdserverpb::Watch::NewStub(channel)) {}

std::unique_ptr<grpc::ClientContext> EtcdSession::Context() const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(absl::ToChronoTime(absl::Now() + options_.timeout));
  return context;
}

absl::Status EtcdSession::EtcdError(const grpc::Status& status,
                                    absl::string_view call) const {
  return absl::UnavailableError(absl::StrCat(
      "etcd at ", options_.endpoint, " did not answer ", call, ": ",
      status.error_message(), " (grpc code ", status.error_code(), ")"));
}

absl::Status EtcdSession::KeepAlive() {
  auto context = Context();
  auto stream = lease_->LeaseKeepAlive(context.get());
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(lease_id_);
  etcdserverpb::LeaseKeepAliveResponse response;
  if (!stream->Write(request) || !stream->Read(&response)) {
    stream->WritesDone();
    return EtcdError(stream->Finish(), "LeaseKeepAlive");
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
  grpc::Status status =
      lease_->LeaseRevoke(Context().get(), request, &response);
  if (!status.ok()) return EtcdError(status, "LeaseRevoke");
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
  grpc::Status status = kv_->Txn(Context().get(), txn, &response);
  if (!status.ok()) return EtcdError(status, "Txn (campaign)");
  if (!response.succeeded()) {
    const auto& found = response.responses(0).response_range();
    return absl::FailedPreconditionError(absl::StrCat(
        "the coordinator cluster under ", options_.prefix, " is led by ",
        found.kvs_size() > 0 ? found.kvs(0).value() : "(gone since)"));
  }
  // The put's revision is the leader key's create revision.
  return Leadership{response.header().revision(), identity};
}

absl::StatusOr<std::string> EtcdSession::Leader() {
  absl::StatusOr<std::string> leader = Get("leader");
  if (absl::IsNotFound(leader.status())) {
    return absl::NotFoundError(absl::StrCat(
        "no coordinator leads the cluster under ", options_.prefix));
  }
  return leader;
}

absl::Status EtcdSession::FencedPut(
    const Leadership& leadership,
    const std::vector<std::pair<std::string, std::string>>& entries) {
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
  etcdserverpb::TxnResponse response;
  grpc::Status status = kv_->Txn(Context().get(), txn, &response);
  if (!status.ok()) return EtcdError(status, "Txn (fenced write)");
  if (!response.succeeded()) {
    return absl::FailedPreconditionError(
        absl::StrCat(leadership.identity,
                     " is no longer the leader of the coordinator "
                     "cluster under ",
                     options_.prefix, " (its leadership of revision ",
                     leadership.revision, " ended): nothing was written"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> EtcdSession::Get(const std::string& key) {
  etcdserverpb::RangeRequest request;
  request.set_key(options_.prefix + key);
  etcdserverpb::RangeResponse response;
  grpc::Status status = kv_->Range(Context().get(), request, &response);
  if (!status.ok()) return EtcdError(status, "Range");
  if (response.kvs_size() == 0) {
    return absl::NotFoundError(
        absl::StrCat("etcd has no key ", options_.prefix, key));
  }
  return response.kvs(0).value();
}

std::pair<std::string, std::string> EtcdSession::PrefixRange(
    const std::string& key_prefix) const {
  const std::string first = options_.prefix + key_prefix;
  // The end of the range: the prefix with its last byte incremented ("\0":
  // to the end of the key space).
  std::string end = first;
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) {
    end.pop_back();
  }
  if (end.empty()) return {first, std::string(1, '\0')};
  end.back() = static_cast<char>(end.back() + 1);
  return {first, end};
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>>
EtcdSession::List(const std::string& key_prefix, int64_t* revision) {
  constexpr int64_t kPage = 1000;
  const auto [first, end] = PrefixRange(key_prefix);
  std::vector<std::pair<std::string, std::string>> found;
  std::string from = first;
  int64_t at = 0;  // The revision of the first page; later pages read it.
  while (true) {
    etcdserverpb::RangeRequest request;
    request.set_key(from);
    request.set_range_end(end);
    request.set_limit(kPage);
    request.set_revision(at);
    etcdserverpb::RangeResponse response;
    grpc::Status status = kv_->Range(Context().get(), request, &response);
    if (!status.ok()) return EtcdError(status, "Range");
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
  std::unique_ptr<PrefixWatch> watch(new PrefixWatch());
  watch->prefix_size_ = options_.prefix.size();
  watch->endpoint_ = options_.endpoint;
  watch->stream_ = watch_->Watch(&watch->context_);
  const auto [first, end] = PrefixRange(key_prefix);
  etcdserverpb::WatchRequest request;
  auto* create = request.mutable_create_request();
  create->set_key(first);
  create->set_range_end(end);
  create->set_start_revision(start_revision);
  create->add_filters(etcdserverpb::WatchCreateRequest::NODELETE);
  etcdserverpb::WatchResponse created;
  if (!watch->stream_->Write(request) || !watch->stream_->Read(&created) ||
      !created.created()) {
    watch->Cancel();
    return EtcdError(watch->Finish(), "Watch");
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

absl::StatusOr<std::vector<std::pair<std::string, std::string>>>
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
    std::vector<std::pair<std::string, std::string>> puts;
    for (const auto& event : response.events()) {
      puts.emplace_back(event.kv().key().substr(prefix_size_),
                        event.kv().value());
    }
    return puts;
  }
  const grpc::Status ended = Finish();
  if (ended.error_code() == grpc::StatusCode::CANCELLED) {
    return absl::CancelledError("the watch was cancelled");
  }
  return absl::UnavailableError(absl::StrCat(
      "etcd at ", endpoint_, " ended the watch: ", ended.error_message()));
}

}  // namespace shard::server::replication
