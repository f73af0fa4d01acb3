package faults

import (
	"testing"
	"time"
)

// An Injector's zero (or negative) Poll and ResolveWait get their
// documented defaults, 200ms and 50ms, and values set are kept: a 0
// ResolveWait would make every role target use the topology read in
// advance, however old, instead of waiting briefly for a fresh one.
func TestInjectorDefaults(t *testing.T) {
	for _, tc := range []struct {
		name               string
		poll, wait         time.Duration
		wantPoll, wantWait time.Duration
	}{
		{"zero", 0, 0, 200 * time.Millisecond, 50 * time.Millisecond},
		{"negative", -1, -1, 200 * time.Millisecond, 50 * time.Millisecond},
		{"set", 7 * time.Millisecond, 3 * time.Millisecond, 7 * time.Millisecond, 3 * time.Millisecond},
	} {
		in := &Injector{Poll: tc.poll, ResolveWait: tc.wait}
		in.init()
		if in.Poll != tc.wantPoll || in.ResolveWait != tc.wantWait {
			t.Errorf("%s: Poll %v, ResolveWait %v; want %v, %v", tc.name, in.Poll, in.ResolveWait, tc.wantPoll, tc.wantWait)
		}
		if in.Journal == nil {
			t.Errorf("%s: no journal", tc.name)
		}
	}
}
