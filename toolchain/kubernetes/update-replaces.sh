#!/usr/bin/env bash
# Regenerates this module's replace block for a Kubernetes release: k8s.io/kubernetes lists every staging
# module at v0.0.0 and maps it to ./staging/src/..., which a dependent module cannot see; each one is
# pinned here to its published tag v0.<minor>.<patch>. Usage: ./update-replaces.sh v1.36.3
set -euo pipefail
cd "$(dirname "$0")"
version="${1:?usage: $0 vMAJOR.MINOR.PATCH}"
export GOTOOLCHAIN=local
gomod=$(go mod download -json "k8s.io/kubernetes@${version}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
go mod edit -require="k8s.io/kubernetes@${version}"
for m in $(go mod edit -json | sed -n 's/.*"Path": "\(k8s.io\/[a-z0-9-]*\)",$/\1/p' | sort -u); do
  case "$m" in k8s.io/kubernetes) ;; *) go mod edit -dropreplace="$m" ;; esac
done
staging=$(sed -n 's|^\s*\(k8s.io/[a-z0-9-]*\) => \./staging/.*|\1|p' "$gomod")
for m in $staging; do go mod edit -replace="$m=$m@v0.${version#v1.}"; done
go mod tidy
echo "replaced $(echo "$staging" | wc -w) staging modules at v0.${version#v1.}"
