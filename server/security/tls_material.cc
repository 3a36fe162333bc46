#include "server/security/tls_material.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <ctime>
#include <memory>

#include "absl/strings/str_cat.h"

namespace shard::security {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Certificate = std::unique_ptr<X509, X509Free>;
using PrivateKey = std::unique_ptr<EVP_PKEY, KeyFree>;

Bio MemoryBio(const std::string& pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

Certificate FirstCertificate(const std::string& pem) {
  Bio bio = MemoryBio(pem);
  return Certificate(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

// ASN1_TIME as absl::Time (UTC).
absl::Time ToTime(const ASN1_TIME* asn1) {
  struct tm parts = {};
  if (ASN1_TIME_to_tm(asn1, &parts) != 1) return absl::InfinitePast();
  return absl::FromTimeT(timegm(&parts));
}

std::string Day(absl::Time time) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", time, absl::UTCTimeZone());
}

}  // namespace

absl::StatusOr<std::vector<std::string>> CheckServerTls(const TlsFiles& files,
                                                        absl::Time now) {
  Certificate cert = FirstCertificate(files.cert_pem);
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-cert ", files.cert_file,
                     ": no certificate could be parsed from it"));
  }
  Bio key_bio = MemoryBio(files.key_pem);
  PrivateKey key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-key ", files.key_file,
                     ": no private key could be parsed from it"));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-key ", files.key_file, " is not the key of the certificate in ",
        "--tls-cert ", files.cert_file, " (they do not belong together)"));
  }
  const absl::Time not_before = ToTime(X509_get0_notBefore(cert.get()));
  const absl::Time not_after = ToTime(X509_get0_notAfter(cert.get()));
  if (now < not_before) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-cert ", files.cert_file, " is not valid before ",
                     Day(not_before)));
  }
  if (now > not_after) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls-cert ", files.cert_file, " expired on ", Day(not_after)));
  }
  std::vector<std::string> warnings;
  if (not_after - now < kExpiryWarning) {
    warnings.push_back(absl::StrCat("--tls-cert ", files.cert_file,
                                    " expires on ", Day(not_after),
                                    "; renew it and restart shardd"));
  }
  if (!files.client_ca_file.empty() &&
      FirstCertificate(files.client_ca_pem) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-client-ca ", files.client_ca_file,
                     ": no certificate could be parsed from it"));
  }
  return warnings;
}

}  // namespace shard::security
