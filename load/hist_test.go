package load

import (
	"testing"
	"time"
)

// rotate gives the p99 of every window's acks since the last rotate, in
// the unit it was recorded in, and empties the windows: the progress line
// after a quiet second shows no acks, not the old figure again.
func TestRotateGivesTheWindowP99AndEmptiesIt(t *testing.T) {
	ws := []*latencyWindow{newLatencyWindow(), newLatencyWindow()}
	for i := 0; i < 298; i++ {
		ws[i%2].record(10 * time.Millisecond)
	}
	ws[1].record(2 * time.Second)
	ws[0].record(2 * time.Second)
	p99, n := rotate(ws)
	if n != 300 {
		t.Fatalf("count %d, want 300", n)
	}
	// 2 significant figures: within 1% of the recorded value.
	if p99 < 9900*time.Microsecond || p99 > 10100*time.Microsecond {
		t.Fatalf("p99 %v, want 10ms (298 of 300 acks took 10ms)", p99)
	}
	if p99, n := rotate(ws); n != 0 || p99 != 0 {
		t.Fatalf("after a rotate: p99 %v of %d acks, want nothing", p99, n)
	}
}
