//go:build tools

// Package tools keeps the helm command in this module's graph.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
