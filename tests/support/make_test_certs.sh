#!/usr/bin/env bash
# Writes a throwaway PKI for the TLS tests into DIR:
#   ca.pem / ca.key           the CA that signs both sides
#   server.pem / server.key   CN=localhost, SAN localhost + 127.0.0.1
#   client.pem / client.key   a client certificate signed by the CA (CN=trainer)
#   spiffe.pem / spiffe.key   a client certificate with a URI SAN
#                             (spiffe://shard.test/team-b/trainer) and a DNS SAN
#   other-ca.pem              an unrelated CA (verification must fail)
# Keys are EC P-256, valid for one day.
set -euo pipefail
dir=$1
mkdir -p "$dir"
cd "$dir"
quiet() { "$@" >/dev/null 2>&1 || { echo "make_test_certs: $* failed" >&2; "$@"; exit 1; }; }
key() { quiet openssl ecparam -name prime256v1 -genkey -noout -out "$1"; }

key ca.key
quiet openssl req -x509 -new -key ca.key -days 1 -subj "/CN=shard test CA" -out ca.pem
key other-ca.key
quiet openssl req -x509 -new -key other-ca.key -days 1 -subj "/CN=other CA" -out other-ca.pem

sign() {  # name subject extensions
  key "$1.key"
  quiet openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
  printf '%s\n' "$3" > "$1.ext"
  quiet openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 1 -extfile "$1.ext" -out "$1.pem"
}
sign server "/CN=localhost" "subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth"
sign client "/CN=trainer" "extendedKeyUsage=clientAuth"
sign spiffe "/CN=unlisted" "subjectAltName=URI:spiffe://shard.test/team-b/trainer,DNS:trainer-b.shard.test
extendedKeyUsage=clientAuth"
chmod 600 ./*.key
