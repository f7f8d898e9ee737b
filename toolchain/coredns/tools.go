//go:build tools

// Package tools keeps the CoreDNS server in this module's graph.
package tools

import _ "github.com/coredns/coredns"
