package kafka

import (
	"context"
	"fmt"
	"strings"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

var _ drivers.VersionReporter = (*Driver)(nil)

// BrokerVersions implements drivers.VersionReporter. Kafka brokers do not
// name their release; each one's ApiVersions answer is matched against the
// known releases (franz-go's kversion), e.g. "v4.3" or "at least v4.1".
func (d *Driver) BrokerVersions(ctx context.Context) (map[int32]string, error) {
	md, err := d.adm.Metadata(ctx)
	if err != nil {
		return nil, d.unreachable("read cluster metadata", err)
	}
	out := map[int32]string{}
	for _, b := range md.Brokers {
		// ApiVersions v3+ needs the client's software name and version: a
		// request without them is answered INVALID_REQUEST with no keys,
		// which the version table reads as "not even v0.8.0".
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "ackcheck", "1"
		resp, err := req.RequestWith(ctx, d.admin.Broker(int(b.NodeID)))
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			out[b.NodeID] = "unknown (ApiVersions: " + err.Error() + ")"
			continue
		}
		out[b.NodeID] = versionText(kversion.FromApiVersionsResponse(resp))
	}
	return out, nil
}

// versionText is kversion's guess when it names a release ("v4.3", "at
// least v4.1"). Its other answers are wrong for brokers newer than its
// table: Kafka 4 dropped old request versions (KIP-896), and the guess then
// reads "not even v0.8.0". Say it is unknown instead, with the request
// versions that were seen.
func versionText(vs *kversion.Versions) string {
	g := vs.VersionGuess()
	if strings.HasPrefix(g, "v") || strings.HasPrefix(g, "at least v") {
		return g
	}
	produce, _ := vs.LookupMaxKeyVersion(0)
	fetch, _ := vs.LookupMaxKeyVersion(1)
	return fmt.Sprintf("unknown: not a release in this client's version table (franz-go kversion; Produce v%d, Fetch v%d)", produce, fetch)
}
