package report

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"
)

// A latency chart with nothing to plot but a fault band (a run without
// the e2e consumer) once looped forever on an infinite log axis.
func TestEmptyChartWithBandsTerminates(t *testing.T) {
	for _, logY := range []bool{true, false} {
		done := make(chan string, 1)
		go func() {
			done <- lineChart{ID: "e2e", Title: "t", LogY: logY, XMax: 4,
				Series: []series{{Name: "p99"}},
				Bands:  []band{{From: 2, To: 3, Label: "power-loss all"}}}.SVG()
		}()
		select {
		case svg := <-done:
			if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
				t.Fatalf("logY=%v: not XML: %v", logY, err)
			}
			if !strings.Contains(svg, "power-loss all") {
				t.Fatalf("logY=%v: the band is not drawn", logY)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("logY=%v: SVG did not return", logY)
		}
	}
}
