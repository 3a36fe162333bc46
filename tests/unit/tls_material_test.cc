// shardd's TLS files are checked before it listens: a key that is not the
// certificate's, an expired or not yet valid certificate, and files that
// hold no certificate or key are refused with INVALID_ARGUMENT naming the
// flag and the file; a certificate close to expiry is a warning.
#include "server/security/tls_material.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <string>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace shard::security {
namespace {

constexpr long kDay = 24 * 3600;

std::string ReadBio(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string out(data, size);
  BIO_free(bio);
  return out;
}

struct Pair {
  std::string cert_pem;
  std::string key_pem;
};

// A self-signed EC certificate valid from now + `from` to now + `to`
// (seconds), and its key.
Pair SelfSigned(long from, long to) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), from);
  X509_gmtime_adj(X509_getm_notAfter(cert), to);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(
      name, "CN", MBSTRING_ASC,
      reinterpret_cast<const unsigned char*>("localhost"), -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509_sign(cert, key, EVP_sha256());
  BIO* cert_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(cert_bio, cert);
  BIO* key_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(key_bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  X509_free(cert);
  EVP_PKEY_free(key);
  return {ReadBio(cert_bio), ReadBio(key_bio)};
}

TlsFiles Files(const Pair& pair) {
  TlsFiles files;
  files.cert_file = "server.pem";
  files.cert_pem = pair.cert_pem;
  files.key_file = "server.key";
  files.key_pem = pair.key_pem;
  return files;
}

void ExpectRefused(const TlsFiles& files, const std::string& needle) {
  absl::StatusOr<std::vector<std::string>> checked =
      CheckServerTls(files, absl::Now());
  ASSERT_FALSE(checked.ok()) << needle;
  EXPECT_TRUE(absl::IsInvalidArgument(checked.status()));
  EXPECT_NE(checked.status().message().find(needle), std::string::npos)
      << checked.status();
}

TEST(TlsMaterialTest, AValidPairPassesWithoutWarnings) {
  absl::StatusOr<std::vector<std::string>> checked =
      CheckServerTls(Files(SelfSigned(-kDay, 365 * kDay)), absl::Now());
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_TRUE(checked->empty());
}

TEST(TlsMaterialTest, ACertificateCloseToExpiryIsAWarning) {
  absl::StatusOr<std::vector<std::string>> checked =
      CheckServerTls(Files(SelfSigned(-kDay, 10 * kDay)), absl::Now());
  ASSERT_TRUE(checked.ok()) << checked.status();
  ASSERT_EQ(checked->size(), 1u);
  EXPECT_NE((*checked)[0].find("server.pem expires on"), std::string::npos)
      << (*checked)[0];
}

TEST(TlsMaterialTest, AKeyOfAnotherCertificateIsRefused) {
  TlsFiles files = Files(SelfSigned(-kDay, 365 * kDay));
  files.key_pem = SelfSigned(-kDay, 365 * kDay).key_pem;
  ExpectRefused(files,
                "--tls-key server.key is not the key of the "
                "certificate in --tls-cert server.pem");
}

TEST(TlsMaterialTest, CertificatesOutsideTheirValidityAreRefused) {
  ExpectRefused(Files(SelfSigned(-2 * kDay, -kDay)), "server.pem expired on");
  ExpectRefused(Files(SelfSigned(kDay, 2 * kDay)),
                "server.pem is not valid before");
}

TEST(TlsMaterialTest, FilesWithoutACertificateOrKeyAreRefused) {
  const Pair pair = SelfSigned(-kDay, 365 * kDay);
  TlsFiles no_cert = Files(pair);
  no_cert.cert_pem = pair.key_pem;
  ExpectRefused(no_cert, "--tls-cert server.pem: no certificate");
  TlsFiles no_key = Files(pair);
  no_key.key_pem = pair.cert_pem;
  ExpectRefused(no_key, "--tls-key server.key: no private key");
  TlsFiles bad_ca = Files(pair);
  bad_ca.client_ca_file = "ca.pem";
  bad_ca.client_ca_pem = "-----BEGIN CERTIFICATE-----\nnot base64\n";
  ExpectRefused(bad_ca, "--tls-client-ca ca.pem: no certificate");
}

}  // namespace
}  // namespace shard::security
