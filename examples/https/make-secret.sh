#!/bin/sh
# Writes DIR/tls.crt and DIR/tls.key (a self-signed certificate for www.example.com, valid 30 days) and
# DIR/secret.yaml, the kubernetes.io/tls Secret default/www-example-com that examples/https/resources.yaml names.
# On a cluster the same Secret comes from: kubectl create secret tls www-example-com --cert DIR/tls.crt --key DIR/tls.key
set -eu
dir=${1:?usage: make-secret.sh DIR}
mkdir -p "$dir"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
  -subj /CN=www.example.com -addext subjectAltName=DNS:www.example.com \
  -keyout "$dir/tls.key" -out "$dir/tls.crt" 2>/dev/null
{
  echo 'apiVersion: v1'
  echo 'kind: Secret'
  echo 'metadata:'
  echo '  name: www-example-com'
  echo '  namespace: default'
  echo 'type: kubernetes.io/tls'
  echo 'data:'
  echo "  tls.crt: $(base64 < "$dir/tls.crt" | tr -d '\n')"
  echo "  tls.key: $(base64 < "$dir/tls.key" | tr -d '\n')"
} > "$dir/secret.yaml"
echo "wrote $dir/tls.crt, $dir/tls.key and $dir/secret.yaml"
