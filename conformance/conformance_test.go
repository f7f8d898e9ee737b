// Package conformance runs the upstream Gateway API conformance suite, unmodified, against the cluster in
// --kubeconfig; `npm run conformance` passes the flags (GatewayClass, profiles, report metadata).
package conformance_test

import (
	"testing"

	"sigs.k8s.io/gateway-api/conformance"
)

func TestConformance(t *testing.T) {
	conformance.RunConformance(t)
}
