#include "server/security/policy_file.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "yaml-cpp/yaml.h"

namespace shard::security {
namespace {

// A policy error at a node: its message is "FILE:LINE: reason".
struct PolicyError {
  int line;  // 1-based.
  std::string reason;
};

// An empty document's node has no position: line 1.
int LineOf(const YAML::Node& node) { return std::max(node.Mark().line, 0) + 1; }

[[noreturn]] void Fail(const YAML::Node& node, std::string reason) {
  throw PolicyError{LineOf(node), std::move(reason)};
}

// Fails at the first key of `map` not in `known`: a misspelt key is never
// silently ignored.
void CheckKeys(const YAML::Node& map,
               std::initializer_list<absl::string_view> known) {
  for (const auto& entry : map) {
    const std::string key = entry.first.as<std::string>();
    bool found = false;
    for (absl::string_view k : known) found = found || k == key;
    if (!found) {
      Fail(entry.first, absl::StrCat("unknown key \"", key, "\" (known: ",
                                     absl::StrJoin(known, ", "), ")"));
    }
  }
}

const YAML::Node& CheckList(const YAML::Node& node, absl::string_view what) {
  if (!node.IsSequence()) Fail(node, absl::StrCat(what, " is a list"));
  return node;
}

// The string at `key` of `map`.
std::string Text(const YAML::Node& map, absl::string_view key) {
  const YAML::Node value = map[std::string(key)];
  if (!value) Fail(map, absl::StrCat("\"", key, "\" is missing"));
  if (!value.IsScalar()) {
    Fail(value, absl::StrCat("\"", key, "\" is a string"));
  }
  return value.Scalar();
}

std::string Name(const YAML::Node& map) {
  std::string name = Text(map, "name");
  bool ok = !name.empty() && name.size() <= 64;
  for (char c : name) {
    ok = ok && (absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-');
  }
  if (!ok) {
    Fail(map["name"],
         absl::StrCat("name \"", name, "\" is not 1..64 of [A-Za-z0-9._-]"));
  }
  return name;
}

JobPattern Pattern(const YAML::Node& map) {
  absl::StatusOr<JobPattern> pattern = JobPattern::Parse(Text(map, "jobs"));
  if (!pattern.ok()) Fail(map["jobs"], std::string(pattern.status().message()));
  return *std::move(pattern);
}

std::optional<uint64_t> Limit(const YAML::Node& quota, const char* key) {
  const YAML::Node value = quota[key];
  if (!value) return std::nullopt;
  uint64_t limit = 0;
  if (!value.IsScalar() || !absl::SimpleAtoi(value.Scalar(), &limit)) {
    Fail(value,
         absl::StrCat("quota \"", key, "\" is a whole number of at least 0"));
  }
  return limit;
}

// `tenant`'s name, pattern and quota, its refusals counted in `refusals`.
server::TenantLimits Limits(const YAML::Node& tenant,
                            std::shared_ptr<server::QuotaRefusals> refusals) {
  server::TenantLimits limits{Name(tenant), Pattern(tenant),    {}, {}, {}, {},
                              {},           std::move(refusals)};
  const YAML::Node quota = tenant["quota"];
  if (!quota) return limits;
  if (!quota.IsMap()) Fail(quota, "\"quota\" is a map of limits");
  CheckKeys(quota,
            {"jobs", "ranks", "store_bytes", "cost_bytes", "waiting_calls"});
  limits.max_jobs = Limit(quota, "jobs");
  limits.max_ranks = Limit(quota, "ranks");
  limits.max_store_bytes = Limit(quota, "store_bytes");
  limits.max_cost_bytes = Limit(quota, "cost_bytes");
  limits.max_waiting_calls = Limit(quota, "waiting_calls");
  return limits;
}

AccessPolicy::Digest Digest(const YAML::Node& principal) {
  const std::string hex = Text(principal, "token_sha256");
  AccessPolicy::Digest digest{};
  bool ok = hex.size() == 2 * digest.size();
  for (size_t i = 0; ok && i < hex.size(); ++i) {
    const char c = hex[i];
    const int nibble = absl::ascii_isdigit(c)   ? c - '0'
                       : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                                : -1;
    ok = nibble >= 0;
    digest[i / 2] =
        static_cast<uint8_t>(digest[i / 2] << 4 | (ok ? nibble : 0));
  }
  if (!ok) {
    Fail(principal["token_sha256"],
         "token_sha256 is 64 lowercase hex digits: the SHA-256 of the "
         "token without surrounding whitespace (docs/operations.md, "
         "\"Tenants\")");
  }
  return digest;
}

std::vector<Grant> Grants(const YAML::Node& principal) {
  const YAML::Node grants = principal["grants"];
  if (!grants) Fail(principal, "\"grants\" is missing");
  std::vector<Grant> read;
  for (const YAML::Node& node : CheckList(grants, "\"grants\"")) {
    if (!node.IsMap()) Fail(node, "a grant is a map: {role: R, jobs: P}");
    CheckKeys(node, {"role", "jobs"});
    const std::string role_name = Text(node, "role");
    const std::optional<Role> role = RoleNamed(role_name);
    if (!role) {
      Fail(node["role"], absl::StrCat("role \"", role_name,
                                      "\" is not viewer, member or admin"));
    }
    read.push_back(Grant{*role, Pattern(node)});
  }
  return read;
}

// Reads one YAML document into an AccessPolicy, throwing PolicyError at
// the first mistake. One use.
class PolicyReader {
 public:
  explicit PolicyReader(std::shared_ptr<server::QuotaRefusals> refusals)
      : refusals_(std::move(refusals)) {}

  AccessPolicy Read(const YAML::Node& root) &&;

 private:
  void ReadTenants(const YAML::Node& tenants);
  void ReadPrincipals(const YAML::Node& principals);
  // Files the principal `node` names as the credential it holds (a
  // digest or an identity) under `index`; fails on one already filed.
  void FileCredential(const YAML::Node& node, size_t index);

  const std::shared_ptr<server::QuotaRefusals> refusals_;
  std::vector<Principal> principals_;
  std::map<AccessPolicy::Digest, size_t> by_digest_;
  std::map<std::string, size_t, std::less<>> by_identity_;
  std::vector<server::TenantLimits> tenants_;
};

AccessPolicy PolicyReader::Read(const YAML::Node& root) && {
  if (!root.IsMap()) Fail(root, "the policy is a map with \"principals\"");
  CheckKeys(root, {"tenants", "principals"});
  if (const YAML::Node tenants = root["tenants"]) ReadTenants(tenants);
  const YAML::Node principals = root["principals"];
  if (!principals) Fail(root, "the policy has no \"principals\" list");
  ReadPrincipals(principals);
  return AccessPolicy(std::move(principals_), std::move(by_digest_),
                      std::move(by_identity_), std::move(tenants_));
}

void PolicyReader::ReadTenants(const YAML::Node& tenants) {
  std::set<std::string> names;
  for (const YAML::Node& node : CheckList(tenants, "\"tenants\"")) {
    if (!node.IsMap()) Fail(node, "a tenant is a map");
    CheckKeys(node, {"name", "jobs", "quota"});
    server::TenantLimits tenant = Limits(node, refusals_);
    if (!names.insert(tenant.tenant).second) {
      Fail(node, absl::StrCat("tenant \"", tenant.tenant, "\" is repeated"));
    }
    for (const server::TenantLimits& other : tenants_) {
      if (other.jobs.Overlaps(tenant.jobs)) {
        Fail(node["jobs"],
             absl::StrCat("tenant \"", tenant.tenant, "\"'s jobs \"",
                          tenant.jobs.text(), "\" overlap tenant \"",
                          other.tenant, "\"'s \"", other.jobs.text(),
                          "\" (a job belongs to at most one tenant)"));
      }
    }
    tenants_.push_back(std::move(tenant));
  }
}

void PolicyReader::ReadPrincipals(const YAML::Node& principals) {
  std::set<std::string> names;
  for (const YAML::Node& node : CheckList(principals, "\"principals\"")) {
    if (!node.IsMap()) Fail(node, "a principal is a map");
    CheckKeys(node, {"name", "token_sha256", "identity", "grants"});
    Principal principal{Name(node), Grants(node)};
    if (!names.insert(principal.name).second) {
      Fail(node,
           absl::StrCat("principal \"", principal.name, "\" is repeated"));
    }
    if (static_cast<bool>(node["token_sha256"]) ==
        static_cast<bool>(node["identity"])) {
      Fail(node, absl::StrCat("principal \"", principal.name,
                              "\" needs exactly one of token_sha256 and "
                              "identity"));
    }
    FileCredential(node, principals_.size());
    principals_.push_back(std::move(principal));
  }
}

void PolicyReader::FileCredential(const YAML::Node& node, size_t index) {
  if (node["token_sha256"]) {
    if (!by_digest_.emplace(Digest(node), index).second) {
      Fail(node["token_sha256"],
           "this token_sha256 is another principal's too");
    }
    return;
  }
  const std::string identity = Text(node, "identity");
  if (identity.empty() || !by_identity_.emplace(identity, index).second) {
    Fail(node["identity"], absl::StrCat("identity \"", identity,
                                        "\" is empty or another "
                                        "principal's too"));
  }
}

}  // namespace

absl::StatusOr<AccessPolicy> ParsePolicy(
    absl::string_view text, absl::string_view file,
    std::shared_ptr<server::QuotaRefusals> refusals) {
  try {
    return PolicyReader(std::move(refusals))
        .Read(YAML::Load(std::string(text)));
  } catch (const PolicyError& error) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ":", error.line, ": ", error.reason));
  } catch (const YAML::Exception& error) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ":", error.mark.line + 1, ": ", error.msg));
  }
}

std::optional<std::string> ReadPolicyText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return std::nullopt;
  return text.str();
}

absl::StatusOr<AccessPolicy> ReadPolicyFile(const std::string& path) {
  const std::optional<std::string> text = ReadPolicyText(path);
  if (!text) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read --auth-policy ", path));
  }
  return ParsePolicy(*text, path);
}

}  // namespace shard::security
