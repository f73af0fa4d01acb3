package drivers

import (
	"context"
	"testing"
	"time"
)

// The bare pacers: the window pacer lets a message go up to PeerWindow
// before its time and sleeps only when the next is further ahead; the
// per-message one never sends early. Both record every send's lateness.
func TestPeerPacer(t *testing.T) {
	for _, c := range []struct {
		name      string
		pacing    PeerPacing
		wantEarly bool
	}{{"window", PaceWindow, true}, {"per-message", PacePerMessage, false}} {
		t.Run(c.name, func(t *testing.T) {
			const rate, n = 10_000, 2000 // one every 100 µs
			p := &PeerPacer{Start: time.Now(), Rate: rate, Pacing: c.pacing}
			early := 0
			for i := range n {
				p.Wait(context.Background(), i)
				due := p.Start.Add(time.Duration(i) * time.Second / rate)
				ahead := time.Until(due)
				if ahead > PeerWindow {
					t.Fatalf("message %d went %s before its time: more than the window", i, ahead)
				}
				if ahead > 0 {
					early++
				}
			}
			if (early > 0) != c.wantEarly {
				t.Fatalf("%d of %d went early; want some: %v", early, n, c.wantEarly)
			}
			if got := p.Lag().TotalCount(); got != n {
				t.Fatalf("lag of %d sends recorded, want %d", got, n)
			}
		})
	}
	// Unpaced: no wait, no lag.
	p := &PeerPacer{Start: time.Now()}
	p.Wait(context.Background(), 1_000_000)
	if p.Lag() != nil {
		t.Fatalf("an unpaced pacer recorded lag")
	}
}
