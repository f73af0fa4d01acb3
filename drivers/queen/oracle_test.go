package queen

import (
	"strings"
	"testing"
	"time"
)

func TestLastLine(t *testing.T) {
	const pgLog = `2026-12-01 05:30:40.100 UTC [10] LOG:  database system is ready to accept connections
2026-12-01 05:30:48.633 UTC [21] LOG:  database system is ready to accept connections
2026-12-01 05:30:49.000 UTC [21] LOG:  checkpoint starting: time
2026-12-01 05:31:30.000 UTC [35] LOG:  database system is ready to accept connections
`
	const serverLog = `[2026-12-01 05:30:48.580] [info] Queen C++ Message Queue Server v0.15
`
	at := func(s string) time.Time {
		v, err := time.Parse("15:04:05.000", s)
		if err != nil {
			t.Fatal(err)
		}
		return time.Date(2026, 12, 1, v.Hour(), v.Minute(), v.Second(), v.Nanosecond(), time.UTC)
	}
	tests := []struct {
		name, log, what string
		before          time.Time
		want            string // "" for none
	}{
		{"the last before the bound", pgLog, DBBack, at("05:31:00.000"), "05:30:48.633"},
		{"every line", pgLog, DBBack, at("06:00:00.000"), "05:31:30.000"},
		{"the server's banner", serverLog, ServerBack, at("06:00:00.000"), "05:30:48.580"},
		{"quiet before the first", pgLog, DBBack, at("05:30:00.000"), ""},
		{"quiet for another line", serverLog, DBBack, at("06:00:00.000"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LastLine(strings.NewReader(tc.log), tc.what, tc.before)
			if err != nil {
				t.Fatal(err)
			}
			s := ""
			if !got.IsZero() {
				s = got.Format("15:04:05.000")
			}
			if s != tc.want {
				t.Errorf("got %q, want %q", s, tc.want)
			}
		})
	}
}
