//go:build tools

// Package tools keeps runc in this module's graph.
package tools

import _ "github.com/opencontainers/runc"
