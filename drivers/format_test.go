package drivers

import (
	"testing"
	"time"
)

func TestHumanUnits(t *testing.T) {
	durations := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {5 * time.Millisecond, "5ms"}, {30 * time.Second, "30s"}, {time.Minute, "1m"},
		{90 * time.Second, "1m30s"}, {2 * time.Hour, "2h"}, {time.Hour + time.Minute, "1h1m"},
		{1500 * time.Millisecond, "1.5s"},
	}
	for _, c := range durations {
		if got := HumanDuration(c.d); got != c.want {
			t.Errorf("HumanDuration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
	sizes := []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1000, "1000 B"}, {1024, "1 KiB"}, {1536, "1536 B"}, {4 << 20, "4 MiB"}, {1 << 30, "1 GiB"},
	}
	for _, c := range sizes {
		if got := HumanBytes(c.n); got != c.want {
			t.Errorf("HumanBytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestApproxBytes(t *testing.T) {
	for n, want := range map[uint64]string{
		0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 300<<20 - 1: "300.0 MiB", 176 << 30: "176.0 GiB",
		1<<64 - 1: "16.0 EiB",
	} {
		if got := ApproxBytes(n); got != want {
			t.Errorf("ApproxBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
