package kafka

import (
	"context"

	"github.com/ackcheck/ackcheck/drivers"
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
		resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, d.admin.Broker(int(b.NodeID)))
		if err != nil {
			out[b.NodeID] = "unknown (" + err.Error() + ")"
			continue
		}
		out[b.NodeID] = kversion.FromApiVersionsResponse(resp).VersionGuess()
	}
	return out, nil
}
