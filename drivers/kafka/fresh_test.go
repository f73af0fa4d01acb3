package kafka

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// After a power loss of every broker, a broker that just restarted can
// answer metadata from what it had replayed so far: the old full ISR at
// the old leader epoch, while the controller elected a new leader with an
// ISR of one. Topology takes each partition from the freshest view (the
// highest leader epoch), and among views of that epoch counts as in sync
// only the replicas every one lists.
func TestTopologyTakesTheFreshestBrokerView(t *testing.T) {
	tests := []struct {
		name    string
		views   map[int32]part // per answering broker
		wantISR []int32
		wantLdr int32
		wantEp  int32
	}{
		{"one stale broker", map[int32]part{
			1: {leader: 1, epoch: 4, isr: []int32{1, 2, 3}}, // stale
			2: {leader: 3, epoch: 5, isr: []int32{3}},
			3: {leader: 3, epoch: 5, isr: []int32{3}},
		}, []int32{3}, 3, 5},
		{"same epoch, one broker behind on an ISR expansion", map[int32]part{
			1: {leader: 3, epoch: 5, isr: []int32{3, 1, 2}},
			2: {leader: 3, epoch: 5, isr: []int32{3, 1}},
			3: {leader: 3, epoch: 5, isr: []int32{3, 1, 2}},
		}, []int32{3, 1}, 3, 5},
		{"all agree", map[int32]part{
			1: {leader: 2, epoch: 7, isr: []int32{2, 3, 1}},
			2: {leader: 2, epoch: 7, isr: []int32{2, 3, 1}},
			3: {leader: 2, epoch: 7, isr: []int32{2, 3, 1}},
		}, []int32{2, 3, 1}, 2, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(1, "t"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				req := kreq.(*kmsg.MetadataRequest)
				v, ok := tc.views[c.CurrentNode()]
				if !ok || len(req.Topics) != 1 {
					return nil, nil, false
				}
				resp := req.ResponseKind().(*kmsg.MetadataResponse)
				for i := int32(1); i <= 3; i++ {
					b := kmsg.NewMetadataResponseBroker()
					b.NodeID, b.Host, b.Port = i, "127.0.0.1", 1
					resp.Brokers = append(resp.Brokers, b)
				}
				rt := kmsg.NewMetadataResponseTopic()
				rt.Topic = kmsg.StringPtr("t")
				p := kmsg.NewMetadataResponseTopicPartition()
				p.Partition, p.Leader, p.LeaderEpoch, p.Replicas, p.ISR = 0, v.leader, v.epoch, []int32{1, 2, 3}, v.isr
				rt.Partitions = append(rt.Partitions, p)
				resp.Topics = append(resp.Topics, rt)
				return resp, nil, true
			})
			d, err := New(Config{Brokers: c.ListenAddrs()})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			topo, err := d.Topology(context.Background(), "t")
			if err != nil {
				t.Fatal(err)
			}
			if len(topo.Partitions) != 1 {
				t.Fatalf("partitions %+v", topo.Partitions)
			}
			ps := topo.Partitions[0]
			if ps.Leader != tc.wantLdr || ps.Epoch != tc.wantEp || !slices.Equal(ps.ISR, tc.wantISR) {
				t.Fatalf("leader %d epoch %d ISR %v, want leader %d epoch %d ISR %v", ps.Leader, ps.Epoch, ps.ISR, tc.wantLdr, tc.wantEp, tc.wantISR)
			}
		})
	}
}

type part struct {
	leader, epoch int32
	isr           []int32
}
