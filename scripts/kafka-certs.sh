#!/usr/bin/env bash
# Certificates for a local Kafka SSL listener that requires client certificates (mTLS).
#
#   scripts/kafka-certs.sh <dir>
#
# Writes into <dir> (created; existing files are replaced), all from `openssl`:
#   ca.pem, ca.key            a throwaway CA (RSA 2048, 2 days)
#   broker.p12                the brokers' keystore (PKCS12, password in broker.password):
#                             key + certificate for CN=localhost, SAN IP:127.0.0.1, DNS:localhost,
#                             signed by the CA
#   broker.password           the keystore's password (random)
#   truststore.pem            what the brokers trust for client certificates: the CA (Kafka
#                             reads it with ssl.truststore.type=PEM)
#   client.pem, client.key    a client certificate (CN=sluice-archiver) and its key (PKCS8 PEM,
#                             unencrypted), signed by the CA: what an mTLS client presents
#
# Local tests only: keys are unencrypted on disk and live 2 days.
set -euo pipefail
dir=${1:?usage: scripts/kafka-certs.sh <dir>}
command -v openssl >/dev/null || { echo "kafka-certs: openssl not found" >&2; exit 1; }
mkdir -p "$dir"
cd "$dir"
umask 077
days=2
quiet() {
  local out
  if ! out=$("$@" 2>&1); then printf 'kafka-certs: failed: %s\n%s\n' "$*" "$out" >&2; exit 1; fi
}

quiet openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days "$days" -subj "/CN=sluice-test-ca"

sign() { # name subject [extfile]
  local name=$1 subject=$2 ext=$3
  quiet openssl req -newkey rsa:2048 -nodes -keyout "$name.key.tmp" -out "$name.csr" -subj "$subject"
  printf '%s\n' "$ext" >"$name.ext"
  quiet openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$name.pem" -days "$days" -extfile "$name.ext"
  quiet openssl pkcs8 -topk8 -nocrypt -in "$name.key.tmp" -out "$name.key"
  rm -f "$name.csr" "$name.ext" "$name.key.tmp"
}

sign broker "/CN=localhost" "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth"
sign client "/CN=sluice-archiver" "extendedKeyUsage=clientAuth"

head -c 18 /dev/urandom | base64 | tr -d '/+=\n' >broker.password
quiet openssl pkcs12 -export -in broker.pem -inkey broker.key -certfile ca.pem -name broker \
  -out broker.p12 -passout "file:broker.password"
cp ca.pem truststore.pem
rm -f broker.key ca.srl
chmod 644 ca.pem client.pem truststore.pem
echo "kafka-certs: CA, broker keystore, truststore and client certificate in $dir" >&2
