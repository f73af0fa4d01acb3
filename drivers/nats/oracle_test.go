package nats

import (
	"strings"
	"testing"
)

// A node's log across two processes: the killed one (PID 100) and its
// restart (PID 200), in nats-server's format.
const natsLog = `[100] 2026/12/01 10:00:00.000000 [INF] Starting nats-server
[100] 2026/12/01 10:00:05.000000 [WRN] Healthcheck failed: "JetStream is not current with the meta leader"
[200] 2026/12/01 10:00:10.000000 [INF] Starting nats-server
[200] 2026/12/01 10:00:11.000000 [WRN] Healthcheck failed: "JetStream is not current with the meta leader"
[200] 2026/12/01 10:00:12.500000 [WRN] Healthcheck failed: "JetStream stream 'ACKCHECK' is not current"
[200] 2026/12/01 10:00:12.000000 [INF] Catchup for stream 'ACKCHECK' complete
not a log line
`

func TestReadAccount(t *testing.T) {
	tests := []struct {
		name             string
		pid              int
		started, healthy string
		reasons          int
		catchups         int
	}{
		{"fires for the restart", 200, "10:00:10.000", "10:00:12.500", 2, 1},
		{"the killed process", 100, "10:00:00.000", "10:00:05.000", 1, 0},
		{"quiet for a PID not in the log", 300, "", "", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ReadAccount(strings.NewReader(natsLog), tc.pid)
			if err != nil {
				t.Fatal(err)
			}
			clock := func(s string, zero bool) string {
				if zero {
					return ""
				}
				return s
			}
			started := clock(a.Started.Format("15:04:05.000"), a.Started.IsZero())
			healthy := clock(a.Healthy().Format("15:04:05.000"), a.Healthy().IsZero())
			n := 0
			for _, c := range a.Reasons {
				n += c
			}
			if started != tc.started || healthy != tc.healthy || n != tc.reasons || len(a.Catchups) != tc.catchups {
				t.Errorf("started %q healthy %q, %d failed checks, %d catch-ups; want %q %q %d %d",
					started, healthy, n, len(a.Catchups), tc.started, tc.healthy, tc.reasons, tc.catchups)
			}
		})
	}
}
