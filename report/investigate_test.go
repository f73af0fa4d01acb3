package report

import (
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/verifier"
)

// The reports name the partitions that lost messages, the lists, a late
// fault's due time and the warning; a clean run's reports say none of it.
func TestReportsShowLossesAndLateFaults(t *testing.T) {
	due := 28.0
	late := &verifier.Result{Verdict: verifier.Fail, Lost: 3, Sent: 10, Acked: 10, ReadBackComplete: true,
		LostByPartition: map[int32]*verifier.PartitionLoss{4: {Count: 3, FirstOffset: 860, LastOffset: 862, FirstSentS: 10.4, LastSentS: 10.5,
			AckedWhile: map[string]int64{"node 1 paused (since 10.0 s)": 3}}},
		Listings: []verifier.Listing{{File: verifier.LostFile, Class: verifier.CheckLost, Listed: 2, Total: 3, Capped: true}},
		Warnings: []string{"the kill node:3 due at 28.0 s fired at 30.0 s, 2.0 s late"},
		Faults:   []verifier.FaultReport{{Record: faults.Record{Action: faults.Kill, Target: "node:3", Node: 3, Result: faults.Applied}, AtS: 30, DueS: &due, FirstAckMs: map[int32]float64{0: 5}}},
	}
	onTime := 30.0
	clean := &verifier.Result{Verdict: verifier.Pass, Sent: 10, Acked: 10, Read: 10, ReadBackComplete: true,
		Listings: []verifier.Listing{{File: verifier.LostFile, Class: verifier.CheckLost}},
		Faults:   []verifier.FaultReport{{Record: faults.Record{Action: faults.Kill, Target: "node:3", Node: 3, Result: faults.Applied}, AtS: 30.02, DueS: &onTime, FirstAckMs: map[int32]float64{0: 5}}},
	}
	want := []string{"Lost by partition", "partition 4: 3 lost, acked offsets 860-862", "acked while node 1 paused",
		"lost.jsonl lists 2 of 3 lost messages (capped by --list-max)", "warning: the kill node:3", "30.0 s (due 28.0 s, 2.00 s late)"}
	for name, render := range map[string]func(Input) string{"markdown": Markdown, "html": HTML} {
		got := render(Input{Result: late})
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s of a late, lossy run lacks %q", name, w)
			}
		}
		got = render(Input{Result: clean})
		for _, w := range []string{"Lost by partition", ".jsonl", "warning", "due "} {
			if strings.Contains(got, w) {
				t.Errorf("%s of a clean run on time says %q", name, w)
			}
		}
	}
}
