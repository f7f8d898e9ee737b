#!/bin/sh
# Writes DIR/tls.crt and DIR/tls.key: a self-signed certificate for secure.example.com (valid 30 days) for the
# TLS backend behind the passthrough listener. The proxy never sees the key: it passes the TLS through.
set -eu
dir=${1:?usage: make-cert.sh DIR}
mkdir -p "$dir"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
  -subj /CN=secure.example.com -addext subjectAltName=DNS:secure.example.com \
  -keyout "$dir/tls.key" -out "$dir/tls.crt" 2>/dev/null
echo "wrote $dir/tls.crt and $dir/tls.key"
