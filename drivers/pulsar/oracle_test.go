package pulsar

import (
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

func TestFirstReady(t *testing.T) {
	log := `[2026-12-02 06:10:18,138] INFO Starting Pulsar Broker service; version: '4.2.4' (org.apache.pulsar.broker.PulsarService)
[2026-12-02 06:10:20,489] INFO messaging service is ready, bootstrap_seconds=2, bootstrap service port = 28080 (org.apache.pulsar.broker.PulsarService)
[2026-12-02 06:20:01,000] INFO Starting Pulsar Broker service; version: '4.2.4' (org.apache.pulsar.broker.PulsarService)
[2026-12-02 06:20:07,250] INFO messaging service is ready, bootstrap_seconds=6, bootstrap service port = 28080 (org.apache.pulsar.broker.PulsarService)
`
	at := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04:05.000", s, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name         string
		since, until time.Time
		want         time.Time
	}{
		{"the first start after the fault, not the one before it", at("2026-12-02 06:20:00.000"), time.Time{}, at("2026-12-02 06:20:07.250")},
		{"the start at the fault's own millisecond counts", at("2026-12-02 06:10:20.489"), time.Time{}, at("2026-12-02 06:10:20.489")},
		{"a start after until belongs to a later fault", at("2026-12-02 06:15:00.000"), at("2026-12-02 06:20:05.000"), time.Time{}},
		{"no start after the fault", at("2026-12-02 06:30:00.000"), time.Time{}, time.Time{}},
	}
	for _, tc := range tests {
		got, err := FirstReady(strings.NewReader(log), tc.since, tc.until, time.UTC)
		if err != nil || !got.Equal(tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
		}
	}
	acc, err := recoveryAccount("test", strings.NewReader(log), at("2026-12-02 06:20:00.000"), time.Time{}, time.UTC)
	if err != nil || acc.Ready == nil || !acc.Ready.At.Equal(at("2026-12-02 06:20:07.250")) || acc.Ready.Bound != drivers.NotBefore || acc.InSync != nil || acc.NoInSync == "" {
		t.Errorf("account %+v %v: want ready at 06:20:07.250, no in-sync event and why", acc, err)
	}
	acc, _ = recoveryAccount("test", strings.NewReader(log), at("2026-12-02 06:30:00.000"), time.Time{}, time.UTC)
	if acc.Ready != nil {
		t.Errorf("a log with no start after the fault gave ready %v", acc.Ready)
	}
}
