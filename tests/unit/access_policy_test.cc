// The --auth-policy's parts without a server: the file format and its
// line-numbered errors, job patterns, the role each RPC needs, the audit
// line, and a reload that refuses a broken file.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/security/audit_line.h"
#include "server/security/call_rules.h"
#include "server/security/policy_file.h"
#include "server/security/policy_holder.h"
#include "shard/v1/shard.pb.h"

namespace shard::security {
namespace {

using ::testing::HasSubstr;

// SHA-256 of "tok-a" and "tok-b".
constexpr char kDigestA[] =
    "4f66a4283f8bc9768c3cb97fd06d267b79315aee941c9c1727b9354509242ffe";
constexpr char kDigestB[] =
    "efa1cd32d437a4dd30463a379503cadfb2b13481660f6345110f3bde01f2e773";

std::string TwoTeams() {
  return absl::StrCat(R"(tenants:
  - name: team-a
    jobs: "team-a-*"
    quota: {jobs: 2, ranks: 8}
  - name: team-b
    jobs: "team-b-*"
principals:
  - name: a-trainer
    token_sha256: )",
                      kDigestA, R"(
    grants:
      - {role: member, jobs: "team-a-*"}
  - name: b-ops
    token_sha256: )",
                      kDigestB, R"(
    grants:
      - {role: admin, jobs: "team-b-*"}
      - {role: viewer, jobs: "team-a-eval"}
  - name: root
    identity: spiffe://cluster/ns/ops/sa/root
    grants: [{role: admin, jobs: "*"}]
)");
}

AccessPolicy::Digest DigestOf(const char* hex) {
  AccessPolicy::Digest digest{};
  for (size_t i = 0; i < digest.size(); ++i) {
    digest[i] = static_cast<uint8_t>(
        std::stoi(std::string(hex + 2 * i, 2), nullptr, 16));
  }
  return digest;
}

// The error of ParsePolicy(text) as "FILE:LINE: reason".
std::string ErrorOf(const std::string& text) {
  absl::StatusOr<AccessPolicy> policy = ParsePolicy(text, "p.yaml");
  EXPECT_FALSE(policy.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(policy.status())) << policy.status();
  return std::string(policy.status().message());
}

TEST(AccessPolicyTest, ReadsTwoTeams) {
  absl::StatusOr<AccessPolicy> policy = ParsePolicy(TwoTeams(), "p.yaml");
  ASSERT_TRUE(policy.ok()) << policy.status();
  const Principal* a = policy->ByTokenDigest(DigestOf(kDigestA));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->name, "a-trainer");
  EXPECT_TRUE(a->Holds(Role::kMember, "team-a-bert"));
  EXPECT_TRUE(a->Holds(Role::kViewer, "team-a-bert"));
  EXPECT_FALSE(a->Holds(Role::kAdmin, "team-a-bert"));
  EXPECT_FALSE(a->Holds(Role::kViewer, "team-b-bert"));
  const Principal* b = policy->ByTokenDigest(DigestOf(kDigestB));
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->Holds(Role::kAdmin, "team-b-x"));
  EXPECT_FALSE(b->Holds(Role::kMember, "team-b-x"));
  EXPECT_TRUE(b->Holds(Role::kViewer, "team-a-eval"));
  EXPECT_FALSE(b->Holds(Role::kViewer, "team-a-eval2"));
  EXPECT_FALSE(b->IsClusterAdmin());
  const Principal* root = policy->ByIdentity("spiffe://cluster/ns/ops/sa/root");
  ASSERT_NE(root, nullptr);
  EXPECT_TRUE(root->IsClusterAdmin());
  EXPECT_EQ(policy->ByIdentity("spiffe://cluster/ns/ops/sa/other"), nullptr);
  EXPECT_TRUE(policy->NamesIdentities());
  ASSERT_NE(policy->TenantOf("team-a-x"), nullptr);
  EXPECT_EQ(policy->TenantOf("team-a-x")->tenant, "team-a");
  EXPECT_EQ(policy->TenantOf("team-a-x")->max_jobs, 2u);
  EXPECT_EQ(policy->TenantOf("team-a-x")->max_store_bytes, std::nullopt);
  EXPECT_EQ(policy->TenantOf("team-c-x"), nullptr);
}

TEST(AccessPolicyTest, EveryMistakeNamesItsLine) {
  EXPECT_EQ(ErrorOf("principals: [ {name: x"),
            "p.yaml:1: end of map flow not found");
  EXPECT_THAT(ErrorOf("principals:\n  - name: x\n    tokn: y\n"),
              HasSubstr("p.yaml:3: unknown key \"tokn\""));
  EXPECT_THAT(ErrorOf("principals:\n  - name: x\n    token_sha256: abc\n"
                      "    grants: []\n"),
              HasSubstr("p.yaml:3: token_sha256 is 64 lowercase hex"));
  EXPECT_THAT(ErrorOf(absl::StrCat(
                  "principals:\n  - name: x\n    token_sha256: ", kDigestA,
                  "\n    identity: cn\n    grants: []\n")),
              HasSubstr("p.yaml:2: principal \"x\" needs exactly one of"));
  EXPECT_THAT(ErrorOf("principals:\n  - name: x\n    identity: cn\n"
                      "    grants:\n      - {role: owner, jobs: a}\n"),
              HasSubstr("p.yaml:5: role \"owner\" is not viewer"));
  EXPECT_THAT(ErrorOf("principals:\n  - name: x\n    identity: cn\n"
                      "    grants:\n      - {role: admin, jobs: \"a*b\"}\n"),
              HasSubstr("p.yaml:5: job pattern \"a*b\""));
  EXPECT_THAT(ErrorOf("principals:\n  - name: x\n    identity: cn\n"
                      "    grants: []\n  - name: x\n    identity: cn2\n"
                      "    grants: []\n"),
              HasSubstr("p.yaml:5: principal \"x\" is repeated"));
  EXPECT_THAT(ErrorOf("principals:\n  - name: x\n    identity: cn\n"
                      "    grants: []\n  - name: y\n    identity: cn\n"
                      "    grants: []\n"),
              HasSubstr("p.yaml:6: identity \"cn\" is empty or another"));
  EXPECT_THAT(ErrorOf("tenants:\n  - name: a\n    jobs: \"team-*\"\n"
                      "  - name: b\n    jobs: \"team-b-*\"\nprincipals: []\n"),
              HasSubstr("p.yaml:5: tenant \"b\"'s jobs \"team-b-*\" overlap "
                        "tenant \"a\"'s \"team-*\""));
  EXPECT_THAT(ErrorOf("tenants:\n  - name: a\n    jobs: \"a*\"\n"
                      "    quota: {jobs: -1}\nprincipals: []\n"),
              HasSubstr("p.yaml:4: quota \"jobs\" is a whole number"));
  EXPECT_THAT(ErrorOf(""), HasSubstr("p.yaml:1: the policy is a map"));
  EXPECT_THAT(ErrorOf("tenants: []\n"),
              HasSubstr("p.yaml:1: the policy has no \"principals\" list"));
}

TEST(AccessPolicyTest, JobPatterns) {
  const JobPattern every = *JobPattern::Parse("*");
  const JobPattern team = *JobPattern::Parse("team-a-*");
  const JobPattern one = *JobPattern::Parse("team-a-eval");
  EXPECT_TRUE(every.MatchesEveryJob());
  EXPECT_TRUE(every.Matches("x"));
  EXPECT_TRUE(team.Matches("team-a-"));
  EXPECT_TRUE(team.Matches("team-a-bert"));
  EXPECT_FALSE(team.Matches("team-b-bert"));
  EXPECT_TRUE(one.Matches("team-a-eval"));
  EXPECT_FALSE(one.Matches("team-a-eval2"));
  EXPECT_TRUE(team.Overlaps(one));
  EXPECT_TRUE(every.Overlaps(one));
  EXPECT_FALSE(team.Overlaps(*JobPattern::Parse("team-b-*")));
  EXPECT_FALSE(one.Overlaps(*JobPattern::Parse("team-a-eval2")));
  EXPECT_EQ(team.text(), "team-a-*");
  EXPECT_FALSE(JobPattern::Parse("").ok());
  EXPECT_FALSE(JobPattern::Parse("team/a*").ok());
  EXPECT_FALSE(JobPattern::Parse("**").ok());
}

TEST(AccessPolicyTest, EveryCallHasOneRuleAndTheRuleDecides) {
  absl::StatusOr<AccessPolicy> policy = ParsePolicy(TwoTeams(), "p.yaml");
  ASSERT_TRUE(policy.ok());
  const Principal& a = *policy->ByTokenDigest(DigestOf(kDigestA));
  const Principal& root =
      *policy->ByIdentity("spiffe://cluster/ns/ops/sa/root");
  EXPECT_EQ(FindCallRule("NoSuchCall"), nullptr);
  const absl::Status denied =
      Authorize(a, *FindCallRule("DeleteJob"), "team-a-x");
  EXPECT_TRUE(absl::IsPermissionDenied(denied));
  EXPECT_EQ(denied.message(),
            "principal 'a-trainer' may not call DeleteJob on job 'team-a-x': "
            "it needs the admin role on that job (shardd --auth-policy)");
  EXPECT_TRUE(Authorize(a, *FindCallRule("JoinJob"), "team-a-x").ok());
  EXPECT_TRUE(Authorize(a, *FindCallRule("PutCosts"), "").ok());
  EXPECT_TRUE(Authorize(a, *FindCallRule("ListJobs"), "").ok());
  EXPECT_TRUE(
      absl::IsPermissionDenied(Authorize(a, *FindCallRule("Drain"), "")));
  EXPECT_TRUE(Authorize(root, *FindCallRule("Drain"), "").ok());
  EXPECT_TRUE(
      absl::IsPermissionDenied(Authorize(root, *FindCallRule("PutCosts"), "")));
}

TEST(AccessPolicyTest, AuditLinesStayOneLine) {
  AuditRecord record;
  record.call = "StoreSet";
  record.principal = "b-ops";
  record.job = "x\"y\n\\z";
  record.outcome = "denied";
  record.reason = "because";
  EXPECT_EQ(FormatAudit(record),
            "audit call=StoreSet principal=b-ops job=\"x\\\"y\\x0a\\\\z\" "
            "outcome=denied reason=\"because\"");
}

TEST(AccessPolicyTest, AReloadRefusesABrokenFileAndKeepsThePolicy) {
  const std::string path = ::testing::TempDir() + "/reload-policy.yaml";
  std::ofstream(path) << TwoTeams();
  absl::StatusOr<std::shared_ptr<PolicyHolder>> holder =
      PolicyHolder::Load(path);
  ASSERT_TRUE(holder.ok()) << holder.status();
  const std::shared_ptr<const AccessPolicy> first = (*holder)->Current();
  EXPECT_TRUE((*holder)->ReloadIfChanged().ok());
  EXPECT_EQ((*holder)->Current(), first);  // Unchanged: not re-read.

  std::ofstream(path) << "principals:\n  - name: x\n    tokn: y\n";
  const absl::Status refused = (*holder)->Reload();
  EXPECT_EQ(refused.message(),
            absl::StrCat(path,
                         ":3: unknown key \"tokn\" (known: name, "
                         "token_sha256, identity, grants)"));
  EXPECT_EQ((*holder)->Current(), first);
  // The refused file is reported once, not at every check.
  EXPECT_TRUE((*holder)->ReloadIfChanged().ok());

  std::ofstream(path) << "principals: []\n";
  EXPECT_TRUE((*holder)->ReloadIfChanged().ok());
  EXPECT_TRUE((*holder)->Current()->principals().empty());
  // A file gone is reported once, then the policy in force stays quietly.
  std::filesystem::remove(path);
  EXPECT_FALSE((*holder)->ReloadIfChanged().ok());
  EXPECT_TRUE((*holder)->ReloadIfChanged().ok());
  EXPECT_TRUE((*holder)->Current()->principals().empty());
  EXPECT_FALSE(PolicyHolder::Load(path).ok());
}

TEST(AccessPolicyTest, EveryRpcOfTheServiceHasOneRule) {
  const google::protobuf::ServiceDescriptor* service =
      shard::v1::JobSpec::descriptor()->file()->FindServiceByName(
          "Coordinator");
  ASSERT_NE(service, nullptr);
  ASSERT_EQ(static_cast<size_t>(service->method_count()), CallRules().size());
  for (int i = 0; i < service->method_count(); ++i) {
    EXPECT_NE(FindCallRule(service->method(i)->name()), nullptr)
        << service->method(i)->name() << " has no rule in call_rules.cc";
  }
}

}  // namespace
}  // namespace shard::security
