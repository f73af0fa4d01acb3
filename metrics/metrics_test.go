package metrics

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/verifier"
)

// A fault shows 1 while it is in force and 0 after it ended; the ack
// hooks feed the publish histogram.
func TestFaultActiveAndHistograms(t *testing.T) {
	s, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mu sync.Mutex
	var active []faults.Record
	stats := &load.Stats{}
	s.Attach(stats, time.Now().Add(-2*time.Second), func() []faults.Record { mu.Lock(); defer mu.Unlock(); return active })
	stats.OnAck(3 * time.Millisecond)
	stats.OnAck(5 * time.Second)

	body := get(t, s.Addr())
	if strings.Contains(body, "ackcheck_fault_active") {
		t.Errorf("a fault is served before any was in force:\n%s", body)
	}
	for _, want := range []string{"ackcheck_publish_latency_seconds_count 2", `ackcheck_publish_latency_seconds_bucket{le="0.004"} 1`, "ackcheck_acked_total 0"} {
		if !strings.Contains(body, want) {
			t.Errorf("lacks %q:\n%s", want, body)
		}
	}
	if !strings.Contains(body, "ackcheck_seconds_since_last_ack 2") {
		t.Errorf("before the first ack, the time since the load started is served:\n%s", body)
	}

	mu.Lock()
	active = []faults.Record{{Action: faults.Kill, Target: "most-leaders:t"}}
	mu.Unlock()
	if body := get(t, s.Addr()); !strings.Contains(body, `ackcheck_fault_active{action="kill",target="most-leaders:t"} 1`) {
		t.Errorf("the kill in force is not 1:\n%s", body)
	}
	mu.Lock()
	active = nil
	mu.Unlock()
	if body := get(t, s.Addr()); !strings.Contains(body, `ackcheck_fault_active{action="kill",target="most-leaders:t"} 0`) {
		t.Errorf("the kill that ended is not 0:\n%s", body)
	}
}

func get(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// Every metric the Grafana dashboard queries is one the server serves.
func TestDashboardQueriesServedMetrics(t *testing.T) {
	data, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	s, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stats := &load.Stats{}
	s.Attach(stats, time.Now(), func() []faults.Record { return []faults.Record{{Action: faults.Pause, Target: "node:1"}} })
	stats.TrackPartitions([]int32{0, 1})
	stats.OnAck(time.Millisecond)
	stats.OnLiveRead(time.Millisecond)
	body := get(t, s.Addr())
	names := regexp.MustCompile(`ackcheck_[a-z0-9_]+`)
	n := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, m := range names.FindAllString(tg.Expr, -1) {
				n++
				if !strings.Contains(body, "\n"+m+"{") && !strings.Contains(body, "\n"+m+" ") {
					t.Errorf("panel %q queries %s, which is not served", p.Title, m)
				}
			}
		}
	}
	if n < 8 {
		t.Fatalf("the dashboard queries %d metrics", n)
	}
}

// After LoadEnded the time since the last ack stops rising (a no-ack
// alert must not fire at every run's end); before it, it rises. The
// verdict and lost count are served only once Verdict gave them.
func TestLoadEndAndVerdict(t *testing.T) {
	for _, tt := range []struct {
		name    string
		end     bool
		verdict *verifier.Result
		want    []string // lines the second scrape holds
		wantNot []string
	}{
		{"load running", false, nil, nil, []string{"ackcheck_verdict", "ackcheck_lost"}},
		{"load ended", true, nil, nil, []string{"ackcheck_verdict", "ackcheck_lost"}},
		{"judged pass", true, &verifier.Result{Verdict: verifier.Pass},
			[]string{`ackcheck_verdict{verdict="pass"} 1`, `ackcheck_verdict{verdict="fail"} 0`, "ackcheck_lost 0"}, nil},
		{"judged fail", true, &verifier.Result{Verdict: verifier.Fail, Lost: 7},
			[]string{`ackcheck_verdict{verdict="fail"} 1`, `ackcheck_verdict{verdict="pass"} 0`, `ackcheck_verdict{verdict="incomplete"} 0`, "ackcheck_lost 7"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Listen("127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.Attach(&load.Stats{}, time.Now().Add(-time.Second), nil)
			if tt.end {
				s.LoadEnded(time.Now())
			}
			if tt.verdict != nil {
				s.Verdict(tt.verdict)
			}
			first := sinceLastAck(t, get(t, s.Addr()))
			time.Sleep(200 * time.Millisecond)
			body := get(t, s.Addr())
			second := sinceLastAck(t, body)
			if frozen := second == first; frozen != tt.end {
				t.Errorf("seconds since the last ack %v then %v 200 ms later; want frozen %v", first, second, tt.end)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w+"\n") {
					t.Errorf("lacks %q:\n%s", w, body)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(body, w) {
					t.Errorf("serves %s before the read-back judged the run:\n%s", w, body)
				}
			}
		})
	}
}

func sinceLastAck(t *testing.T, body string) string {
	t.Helper()
	m := regexp.MustCompile(`\nackcheck_seconds_since_last_ack (\S+)`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no ackcheck_seconds_since_last_ack:\n%s", body)
	}
	return m[1]
}
