package faults

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// fuzzBrokers are the broker names the fuzzed cluster files may give.
var fuzzBrokers = []string{"kafka", "nats", "pulsar"}

// FuzzParseSchedule: any input either parses into steps whose printed form
// parses back to the same steps, or is refused with an error; never a
// panic.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []string{
		"at=20s kill most-leaders:ackcheck; at=30s restart",
		"at=1s pause controller; at=2s resume",
		"at=5s power-loss all",
		"at=1s fsync-on topic:t; at=2s fsync-off brokers",
		"at=1s kill leader:orders/3",
		"at=-1s kill node:1", "at=1s", ";;", "at=1s kill node:x", "at=1h2m3s stop node:2147483647",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		steps, err := ParseSchedule(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		var again string
		for i, st := range steps {
			if st.At < 0 {
				t.Fatalf("step %d at %s: negative time accepted", i, st.At)
			}
			if i > 0 {
				again += "; "
			}
			again += st.String()
		}
		if len(steps) == 0 {
			return
		}
		back, err := ParseSchedule(again)
		if err != nil {
			t.Fatalf("%q parsed, but its printed form %q does not: %v", s, again, err)
		}
		if len(back) != len(steps) {
			t.Fatalf("%q: %d steps, printed and parsed again: %d", s, len(steps), len(back))
		}
		for i := range back {
			if back[i].String() != steps[i].String() {
				t.Fatalf("step %d: %q became %q", i, steps[i], back[i])
			}
		}
	})
}

// FuzzLoadClusterFile: any file either loads into a cluster file with at
// least one node, no ID twice and a known broker, or is refused with an
// error naming the file; never a panic.
func FuzzLoadClusterFile(f *testing.F) {
	f.Add("broker: kafka\nnodes:\n  - id: 1\n    host: local\n    pid_file: /tmp/p\n")
	f.Add("broker: nats\ndefaults: {user: u, port: 22}\nnodes:\n  - {id: 1, host: h, systemd_unit: k}\n  - {id: 2, host: h, pgrep: 'x'}\n")
	f.Add("nodes: []\n")
	f.Add("{\"broker\": \"pulsar\", \"nodes\": [{\"id\": 1, \"host\": \"local\", \"pid_file\": \"p\"}]}")
	f.Add("broker: kafka\nnodes:\n  - id: 1\n    host: local\n    pid_file: p\n  - id: 1\n    host: local\n    pid_file: p\n")
	f.Add("bogus: [")
	f.Fuzz(func(t *testing.T, content string) {
		if len(content) > 4096 {
			return // a cluster file is small; large inputs only slow the search
		}
		path := filepath.Join(t.TempDir(), "cluster.yaml")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		cf, err := LoadClusterFile(path, fuzzBrokers)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if len(cf.Nodes) == 0 {
			t.Fatal("a cluster file without nodes loaded")
		}
		seen := map[int32]bool{}
		for _, n := range cf.Nodes {
			if seen[n.ID] {
				t.Fatalf("node %d loaded twice", n.ID)
			}
			seen[n.ID] = true
		}
		if cf.Broker != "" && !slices.Contains(fuzzBrokers, cf.Broker) {
			t.Fatalf("broker %q loaded", cf.Broker)
		}
	})
}
