package report_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/netns"
	"github.com/ackcheck/ackcheck/report"
	"github.com/ackcheck/ackcheck/verifier"
)

// A network fault's proof is a row of its own in report.md and
// report.html, with its rules, the paths meant to be cut and the three
// probes; a partition that did not cut is shown Failed with why; a run
// without network faults has no such section.
func TestNetworkProofInReports(t *testing.T) {
	at := time.Unix(1000, 0)
	shot := func(cut ...string) *faults.ProbeShot { return &faults.ProbeShot{At: at, Paths: 9, Cut: cut} }
	partition := verifier.FaultReport{AtS: 20, Record: faults.Record{Action: faults.Partition, Target: "most-leaders:t", Node: 2, Result: faults.Applied,
		NetworkProof: &faults.NetworkProof{Net: "akc", Port: 9092, Rules: []netns.Rule{{Name: "a1_1", Kind: netns.Cut, Node: 2}},
			MeantCut: []string{"node 1 -> node 2", "node 2 -> node 1"}, Before: shot(), After: shot("node 1 -> node 2", "node 2 -> node 1"), Healed: shot()}}}
	missed := verifier.FaultReport{AtS: 30, Record: faults.Record{Action: faults.Partition, Target: "node:3", Node: 3, Result: faults.Failed,
		Error: "the rules are installed but the probe after them does not show the cut: node 3 -> node 1 still answer",
		NetworkProof: &faults.NetworkProof{Net: "akc", Port: 9092, Rules: []netns.Rule{{Name: "a1_2", Kind: netns.Cut, Node: 3}},
			MeantCut: []string{"node 3 -> node 1"}, Before: shot(), After: shot()}}}
	kill := verifier.FaultReport{AtS: 10, Record: faults.Record{Action: faults.Kill, Target: "node:1", Node: 1, Result: faults.Applied}}
	tests := []struct {
		name    string
		faults  []verifier.FaultReport
		want    []string
		wantNot []string
	}{
		{"a partition and a failed one", []verifier.FaultReport{partition, missed}, []string{
			"### Network proof",
			"| 20.0 s | partition most-leaders:t | applied | node 2 cut off from every peer | node 1 -> node 2, node 2 -> node 1 | all 9 paths answer | 2 of 9 paths cut (node 1 -> node 2, node 2 -> node 1) | all 9 paths answer |",
			"| 30.0 s | partition node:3 | failed: the rules are installed but the probe after them does not show the cut: node 3 -> node 1 still answer |",
			"| all 9 paths answer | not probed |",
		}, nil},
		{"no network fault", []verifier.FaultReport{kill}, nil, []string{"Network proof"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := &verifier.Result{Verdict: verifier.Pass, Faults: tc.faults}
			md := report.Markdown(report.Input{Result: res})
			page := report.HTML(report.Input{Result: res})
			for _, w := range tc.want {
				if !strings.Contains(md, w) {
					t.Errorf("report.md lacks %q\n%s", w, md)
				}
			}
			if len(tc.want) > 0 && !strings.Contains(page, `<table id="network-proof">`) {
				t.Error("report.html has no network proof table")
			}
			for _, w := range tc.wantNot {
				if strings.Contains(md, w) || strings.Contains(page, w) {
					t.Errorf("a report has %q", w)
				}
			}
		})
	}
}
