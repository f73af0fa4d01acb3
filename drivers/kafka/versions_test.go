package kafka

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// A release in franz-go's table is named; anything else (Kafka 4 without
// the request versions KIP-896 removed, a custom broker) is "unknown", never
// "not even v0.8.0" for a broker that is in fact newer.
func TestVersionText(t *testing.T) {
	if got := versionText(kversion.V4_0_0()); got != "v4.0" {
		t.Errorf("Kafka 4.0's versions read %q", got)
	}
	// What a broker answers to an ApiVersions request without a client
	// software name: INVALID_REQUEST and no keys. BrokerVersions now names
	// the client; an answer without keys must still never read as a
	// release.
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.ErrorCode = 42
	got := versionText(kversion.FromApiVersionsResponse(resp))
	if !strings.HasPrefix(got, "unknown: ") || strings.Contains(got, "not even") {
		t.Errorf("a broker no release matches reads %q", got)
	}
}
