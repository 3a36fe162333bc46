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
      lease_(etcdserverpb::Lease::NewStub(channel)) {}

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

absl::StatusOr<std::vector<std::pair<std::string, std::string>>>
EtcdSession::List(const std::string& key_prefix) {
  constexpr int64_t kPage = 1000;
  const std::string first = options_.prefix + key_prefix;
  // The end of the range: the prefix with its last byte incremented.
  std::string end = first;
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) {
    end.pop_back();
  }
  if (!end.empty()) end.back() = static_cast<char>(end.back() + 1);
  std::vector<std::pair<std::string, std::string>> found;
  std::string from = first;
  while (true) {
    etcdserverpb::RangeRequest request;
    request.set_key(from);
    request.set_range_end(end.empty() ? std::string(1, '\0') : end);
    request.set_limit(kPage);
    etcdserverpb::RangeResponse response;
    grpc::Status status = kv_->Range(Context().get(), request, &response);
    if (!status.ok()) return EtcdError(status, "Range");
    for (const auto& kv : response.kvs()) {
      found.emplace_back(kv.key().substr(options_.prefix.size()), kv.value());
    }
    if (!response.more() || response.kvs_size() == 0) return found;
    from = response.kvs(response.kvs_size() - 1).key() + '\0';
  }
}

}  // namespace shard::server::replication
