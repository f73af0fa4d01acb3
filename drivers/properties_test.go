package drivers

import (
	"testing"
)

func TestSetProperty(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"append", "a=1\nb=2\n", "a=1\nb=2\nlog.flush.interval.messages=1\n"},
		{"replace", "a=1\nlog.flush.interval.messages = 9\nb=2\n", "a=1\nlog.flush.interval.messages=1\nb=2\n"},
		{"keep comment", "#log.flush.interval.messages=1\n", "#log.flush.interval.messages=1\nlog.flush.interval.messages=1\n"},
		{"drop duplicates", "log.flush.interval.messages=5\nx=y\nlog.flush.interval.messages=6\n", "log.flush.interval.messages=1\nx=y\n"},
		{"colon form", "log.flush.interval.messages: 3\n", "log.flush.interval.messages=1\n"},
		{"empty", "", "log.flush.interval.messages=1\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := SetProperty(tc.in, "log.flush.interval.messages", "1"); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
