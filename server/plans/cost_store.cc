#include "server/plans/cost_store.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/plan/batches/cost_digest.h"
#include "common/plan/spec/job_spec.h"

namespace shard::server {
namespace {

constexpr uint64_t kMaxPieceBytes = uint64_t{1} << 20;

absl::Status CheckPiece(const shard::v1::PutCostsRequest& request) {
  if (!plan::IsSha256Hex(request.sha256())) {
    return absl::InvalidArgumentError(
        "sha256 must be 64 lowercase hex digits (the SHA-256 of the costs as "
        "little-endian u32 values)");
  }
  if (request.count() == 0 || request.count() > plan::kMaxCostedSamples) {
    return absl::InvalidArgumentError(absl::StrCat("count must be in 1..",
                                                   plan::kMaxCostedSamples,
                                                   ", got ", request.count()));
  }
  const uint64_t bytes = request.costs_le32().size();
  if (bytes % 4 != 0 || bytes > kMaxPieceBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("costs_le32 must hold whole u32 values, at most ",
                     kMaxPieceBytes, " bytes, got ", bytes));
  }
  if (request.offset() > request.count() ||
      bytes / 4 > request.count() - request.offset()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a piece of ", bytes / 4, " costs at offset ",
                     request.offset(), " runs past count ", request.count()));
  }
  return absl::OkStatus();
}

shard::v1::PutCostsResponse Received(uint64_t received, bool complete) {
  shard::v1::PutCostsResponse response;
  response.set_received(received);
  response.set_complete(complete);
  return response;
}

}  // namespace

CostStore::CostStore(std::shared_ptr<storage::CostBlobs> blobs, Options options)
    : blobs_(std::move(blobs)), options_(std::move(options)) {}

absl::Status CostStore::Reserve(uint64_t more) {
  if (bytes_ + more > options_.max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("costs need ", bytes_ + more,
                     " bytes with the costs held now, above "
                     "this coordinator's limit of ",
                     options_.max_bytes, " (--max-cost-bytes)"));
  }
  bytes_ += more;
  return absl::OkStatus();
}

absl::Status CostStore::Reserve(uint64_t more, const TenantLimits* tenant) {
  if (tenant != nullptr) {
    const auto charged = tenant_bytes_.find(tenant->tenant);
    const uint64_t used = charged == tenant_bytes_.end() ? 0 : charged->second;
    if (absl::Status s = CheckTenantQuota(tenant, &TenantLimits::max_cost_bytes,
                                          "cost_bytes", used, more);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = Reserve(more); !s.ok()) return s;
  if (tenant != nullptr) Charge(tenant->tenant, static_cast<int64_t>(more));
  return absl::OkStatus();
}

void CostStore::Charge(const std::string& tenant, int64_t delta) {
  if (tenant.empty() || delta == 0) return;
  uint64_t& bytes = tenant_bytes_[tenant];
  bytes += delta;
  if (bytes == 0) tenant_bytes_.erase(tenant);
}

uint64_t CostStore::TenantBytes(absl::string_view tenant) const {
  absl::MutexLock lock(&mu_);
  const auto charged = tenant_bytes_.find(tenant);
  return charged == tenant_bytes_.end() ? 0 : charged->second;
}

namespace {

// The name an upload's bytes are charged to ("": none).
std::string TenantName(const std::shared_ptr<const TenantLimits>& tenant) {
  return tenant == nullptr ? "" : tenant->tenant;
}

}  // namespace

absl::StatusOr<shard::v1::PutCostsResponse> CostStore::Put(
    const shard::v1::PutCostsRequest& request,
    std::shared_ptr<const TenantLimits> uploader) {
  if (absl::Status s = CheckPiece(request); !s.ok()) return s;
  const uint64_t piece = request.costs_le32().size() / 4;
  Upload finished;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = options_.now();
    if (auto table = tables_.find(request.sha256()); table != tables_.end()) {
      last_put_[request.sha256()] = now;
      // Read back from the blobs while this upload was under way: what it
      // staged is not needed any more.
      if (auto staged = uploads_.find(request.sha256());
          staged != uploads_.end()) {
        bytes_ -= staged->second.le32.size();
        Charge(TenantName(staged->second.tenant),
               -static_cast<int64_t>(staged->second.le32.size()));
        uploads_.erase(staged);
      }
      return Received(table->second->size(), true);
    }
    Upload& upload = uploads_[request.sha256()];
    if (upload.count == 0) {
      upload.count = request.count();
      upload.tenant = std::move(uploader);
    }
    upload.last_piece = now;
    const uint64_t received = upload.le32.size() / 4;
    if (upload.count != request.count()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the upload of ", request.sha256(), " has count ",
                       upload.count, ", this piece says ", request.count()));
    }
    if (request.offset() + piece <= received &&
        upload.le32.compare(request.offset() * 4, piece * 4,
                            request.costs_le32()) == 0) {
      return Received(received, false);  // a piece received before
    }
    if (request.offset() > received) {
      // This coordinator holds less than the client sent before (it
      // restarted, took over, or dropped a stalled upload): the client
      // goes on from what is held.
      return Received(received, false);
    }
    if (request.offset() != received) {
      return absl::FailedPreconditionError(absl::StrCat(
          "costs ", request.sha256(), ": a piece at ", request.offset(),
          " differs from the costs received there; expected the piece at ",
          received));
    }
    if (absl::Status s = Reserve(piece * 4, upload.tenant.get()); !s.ok()) {
      // A refused first piece leaves no upload behind: the next uploader
      // of these costs starts it, charged to its own tenant.
      if (upload.le32.empty()) uploads_.erase(request.sha256());
      return s;
    }
    upload.le32.append(request.costs_le32());
    if (upload.le32.size() / 4 < upload.count) {
      return Received(upload.le32.size() / 4, false);
    }
    finished = std::move(upload);
    uploads_.erase(request.sha256());
  }
  return Complete(request.sha256(), std::move(finished));
}

absl::StatusOr<shard::v1::PutCostsResponse> CostStore::Complete(
    const std::string& sha256, Upload upload) {
  const bool matches = plan::Sha256Hex(upload.le32) == sha256;
  absl::MutexLock blob_lock(&blob_mu_);
  absl::Status kept = absl::OkStatus();
  if (!matches) {
    kept = absl::DataLossError(absl::StrCat(
        "the ", upload.count, " costs received do not match their SHA-256 ",
        sha256, "; upload them again"));
  } else if (blobs_ != nullptr) {
    kept = blobs_->Write(sha256, upload.le32);
    if (!kept.ok()) {
      kept = absl::UnavailableError(
          absl::StrCat("cannot store costs ", sha256, ": ", kept.message()));
    }
  }
  std::shared_ptr<const plan::CostTable> table;
  if (kept.ok()) {
    table = std::make_shared<const plan::CostTable>(
        plan::CostTable::FromLittleEndian32(upload.le32));
  }
  absl::MutexLock lock(&mu_);
  const std::string tenant = TenantName(upload.tenant);
  bytes_ -= upload.le32.size();
  Charge(tenant, -static_cast<int64_t>(upload.le32.size()));
  if (!kept.ok()) return kept;
  // Costs read back from the blobs meanwhile (a create, join or stream
  // asked for them) are the same costs: keep that table, counted once.
  // The table (2 or 4 bytes a sample) is no larger than its upload was,
  // so charging it needs no check.
  if (auto [resident, added] = tables_.try_emplace(sha256, std::move(table));
      added) {
    bytes_ += resident->second->MemoryBytes();
    if (!tenant.empty()) {
      Charge(tenant, static_cast<int64_t>(resident->second->MemoryBytes()));
      charged_to_[sha256] = tenant;
    }
  }
  last_put_[sha256] = options_.now();
  return Received(upload.count, true);
}

void CostStore::WhenLoaded(const std::string& sha256, CostsCallback done) {
  std::shared_ptr<const plan::CostTable> resident;
  {
    absl::MutexLock lock(&mu_);
    if (auto table = tables_.find(sha256); table != tables_.end()) {
      resident = table->second;
    } else if (blobs_ != nullptr) {
      std::vector<CostsCallback>& waiters = waiting_[sha256];
      waiters.push_back(std::move(done));
      if (waiters.size() == 1) {
        loader_.Schedule([this, sha256] { Load(sha256); });
      }
      return;
    }
  }
  if (resident != nullptr) return std::move(done)(std::move(resident));
  std::move(done)(absl::NotFoundError(
      absl::StrCat("costs ", sha256, " were not uploaded (PutCosts)")));
}

void CostStore::Load(const std::string& sha256) {
  absl::StatusOr<std::shared_ptr<const plan::CostTable>> table =
      ReadStoredCosts(*blobs_, sha256);
  std::vector<CostsCallback> waiters;
  {
    absl::MutexLock lock(&mu_);
    if (table.ok()) {
      auto [it, inserted] = tables_.try_emplace(sha256, *table);
      if (inserted) {
        if (absl::Status s = Reserve((*table)->MemoryBytes()); !s.ok()) {
          tables_.erase(it);
          table = s;
        }
      } else {
        table = it->second;  // uploaded meanwhile
      }
    }
    waiters = std::move(waiting_[sha256]);
    waiting_.erase(sha256);
  }
  for (CostsCallback& waiter : waiters) std::move(waiter)(table);
}

absl::StatusOr<std::shared_ptr<const plan::CostTable>> ReadStoredCosts(
    storage::CostBlobs& blobs, const std::string& sha256) {
  absl::StatusOr<std::string> le32 = blobs.Read(sha256);
  if (!le32.ok()) {
    // Missing, or not reachable now (etcd): as it is; else damaged.
    const absl::StatusCode code = le32.status().code();
    return absl::Status(code == absl::StatusCode::kNotFound ||
                                code == absl::StatusCode::kUnavailable
                            ? code
                            : absl::StatusCode::kDataLoss,
                        absl::StrCat("cannot read costs ", sha256, ": ",
                                     le32.status().message()));
  }
  if (plan::Sha256Hex(*le32) != sha256) {
    return absl::DataLossError(
        absl::StrCat(blobs.Where(sha256),
                     " does not match its SHA-256: the costs are damaged; "
                     "restore them or delete and re-create the job"));
  }
  return std::make_shared<const plan::CostTable>(
      plan::CostTable::FromLittleEndian32(*le32));
}

void CostStore::WhenCostsOfChecked(const shard::v1::JobSpec& spec,
                                   CheckCallback done) {
  if (!spec.has_batches()) return std::move(done)(absl::OkStatus());
  const std::string sha256 = spec.batches().costs_sha256();
  const uint64_t count = spec.dataset_size();
  const uint64_t total = spec.batches().costs_total();
  WhenLoaded(sha256, [sha256, count, total, done = std::move(done)](
                         absl::StatusOr<std::shared_ptr<const plan::CostTable>>
                             table) mutable {
    if (absl::IsNotFound(table.status())) {
      return std::move(done)(absl::FailedPreconditionError(absl::StrCat(
          "the job's costs ", sha256,
          " are not on this coordinator: upload them (PutCosts) first")));
    }
    if (!table.ok()) return std::move(done)(table.status());
    if ((*table)->size() != count) {
      return std::move(done)(absl::InvalidArgumentError(
          absl::StrCat("costs ", sha256, " hold ", (*table)->size(),
                       " samples, the job has ", count)));
    }
    if (total != 0 && (*table)->total() != total) {
      return std::move(done)(absl::InvalidArgumentError(
          absl::StrCat("costs_total ", total, " is not the sum of the costs ",
                       sha256, " (", (*table)->total(), ")")));
    }
    std::move(done)(absl::OkStatus());
  });
}

void CostStore::Claim(const std::string& sha256) {
  absl::MutexLock lock(&mu_);
  ++claims_[sha256];
  last_put_.erase(sha256);  // uploaded for this job: not a pending upload
}

void CostStore::Unclaim(const std::string& sha256) {
  absl::MutexLock lock(&mu_);
  auto claim = claims_.find(sha256);
  if (claim == claims_.end()) return;
  if (--claim->second > 0) return;
  claims_.erase(claim);
  if (Unclaimed(sha256)) Remove(sha256);
}

void CostStore::AdoptStored() {
  if (blobs_ == nullptr) return;
  absl::StatusOr<std::vector<std::string>> stored = blobs_->Names();
  if (!stored.ok()) return;  // none adopted: they stay until a later start
  absl::MutexLock lock(&mu_);
  const absl::Time now = options_.now();
  for (const std::string& name : *stored) {
    if (!claims_.contains(name)) last_put_.try_emplace(name, now);
  }
}

void CostStore::ExpireUnclaimed() {
  absl::MutexLock lock(&mu_);
  const absl::Time stale = options_.now() - options_.unclaimed_ttl;
  for (auto it = uploads_.begin(); it != uploads_.end();) {
    if (it->second.last_piece > stale) {
      ++it;
      continue;
    }
    bytes_ -= it->second.le32.size();
    Charge(TenantName(it->second.tenant),
           -static_cast<int64_t>(it->second.le32.size()));
    uploads_.erase(it++);
  }
  std::vector<std::string> unclaimed;
  for (const auto& [sha256, put] : last_put_) {
    if (Unclaimed(sha256)) unclaimed.push_back(sha256);
  }
  for (const std::string& sha256 : unclaimed) Remove(sha256);
}

bool CostStore::Unclaimed(const std::string& sha256) const {
  if (claims_.contains(sha256)) return false;
  auto put = last_put_.find(sha256);
  return put == last_put_.end() ||
         options_.now() - put->second >= options_.unclaimed_ttl;
}

void CostStore::Remove(const std::string& sha256) {
  last_put_.erase(sha256);
  if (auto table = tables_.find(sha256); table != tables_.end()) {
    bytes_ -= table->second->MemoryBytes();
    if (auto charged = charged_to_.find(sha256); charged != charged_to_.end()) {
      Charge(charged->second,
             -static_cast<int64_t>(table->second->MemoryBytes()));
      charged_to_.erase(charged);
    }
    tables_.erase(table);
  }
  if (blobs_ != nullptr) {
    loader_.Schedule([this, sha256] { RemoveBlobIfUnclaimed(sha256); });
  }
}

void CostStore::RemoveBlobIfUnclaimed(const std::string& sha256) {
  absl::MutexLock blob_lock(&blob_mu_);
  {
    absl::MutexLock lock(&mu_);
    if (!Unclaimed(sha256)) return;  // claimed or uploaded again meanwhile
  }
  blobs_->Remove(sha256).IgnoreError();
}

uint64_t CostStore::MemoryBytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

}  // namespace shard::server
