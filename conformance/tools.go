//go:build tools

// Package tools keeps the suite's echo server in this module's graph, so it builds at the suite's version.
package tools

import _ "sigs.k8s.io/gateway-api-conformance-images/echo-basic"
