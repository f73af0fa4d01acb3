package queen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// fakeQueen answers pushes with what answer returns for each request
// (nil: drop the connection, as a crashed server would).
type fakeQueen struct {
	mu     sync.Mutex
	seen   map[string]int // transactionId -> pushes that carried it
	answer func(n int, items []pushItem) (status int, body any)
	pushes int
}

func (f *fakeQueen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/api/v1/push":
		var req struct{ Items []pushItem }
		json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		f.pushes++
		n := f.pushes
		for _, it := range req.Items {
			f.seen[it.TransactionID]++
		}
		f.mu.Unlock()
		status, body := f.answer(n, req.Items)
		if body == nil {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(body)
	case "/health":
		// Queen 2.x adds its Raft role; 0.15 does not.
		fmt.Fprint(w, `{"status":"healthy","database":"connected","version":"2.6.0","raft":{"role":"leader","leader":"n1"}}`)
	case "/api/v1/system/maintenance":
		if r.Method == http.MethodPost {
			io.Copy(io.Discard, r.Body)
			fmt.Fprint(w, `{"maintenanceMode":true}`)
			return
		}
		fmt.Fprint(w, `{"maintenanceMode":false,"popMaintenanceMode":false,"bufferedMessages":0,"bufferHealthy":true}`)
	default:
		http.NotFound(w, r)
	}
}

func newFake(t *testing.T, answer func(n int, items []pushItem) (int, any)) (*fakeQueen, *Driver) {
	t.Helper()
	f := &fakeQueen{seen: map[string]int{}, answer: answer}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	d, err := New(Config{URL: srv.URL, PostgresURL: "postgres://nobody@127.0.0.1:1/none", PushTimeout: 2 * time.Second,
		AttemptTimeout: 500 * time.Millisecond, Linger: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	d.parts["q"] = 2
	return f, d
}

// publish sends n messages and returns their outcomes in send order.
func publish(t *testing.T, d *Driver, n int) []drivers.Outcome {
	t.Helper()
	p, err := d.NewProducer(context.Background(), "q", 1)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]drivers.Outcome, n)
	var wg sync.WaitGroup
	wg.Add(n)
	for i := 0; i < n; i++ {
		p.Publish(context.Background(), drivers.Message{Value: []byte{byte(i)}, Partition: int32(i % 2)}, func(o drivers.Outcome) {
			out[i] = o
			wg.Done()
		})
	}
	wg.Wait()
	p.Close(context.Background())
	return out
}

// answerEach answers every item with status(i), in Queen 0.15's form: an
// array in input order.
func answerEach(status func(i int, it pushItem) string) func(int, []pushItem) (int, any) {
	return func(_ int, items []pushItem) (int, any) {
		var out []map[string]any
		for i, it := range items {
			a := map[string]any{"index": i, "transaction_id": it.TransactionID, "status": status(i, it)}
			if a["status"] == "error" {
				a["error"] = "duplicate key or whatever the SQL said"
			}
			out = append(out, a)
		}
		return http.StatusOK, out
	}
}

// Each item's status in the body decides its outcome; the HTTP status
// does not (Queen answers 200 where it means 201, and 200 to errors).
func TestOutcomeFromEachItemsStatus(t *testing.T) {
	statuses := []string{"queued", "duplicate", "buffered", "error"}
	_, d := newFake(t, answerEach(func(_ int, it pushItem) string {
		var n int
		fmt.Sscanf(it.TransactionID[strings.LastIndex(it.TransactionID, "-")+1:], "%d", &n)
		return statuses[(n-1)%len(statuses)]
	}))
	out := publish(t, d, 8)
	for i, o := range out {
		want := drivers.Acked
		if statuses[i%4] == "error" {
			want = drivers.Rejected
		}
		if o.Status != want || (want == drivers.Acked && o.Pos.Offset != -1) {
			t.Errorf("message %d (%s): %+v, want %s at no offset", i, statuses[i%4], o, want)
		}
	}
	if c := d.AckClasses(); c["queued"] != 2 || c["duplicate"] != 2 || c["buffered"] != 2 {
		t.Errorf("acks by class %v", c)
	}
}

// Queen 2.x answers 201 with the items wrapped in an object, "pushed" for
// a committed one, and offsets the driver does not need.
func TestTwoXPushAnswer(t *testing.T) {
	_, d := newFake(t, func(_ int, items []pushItem) (int, any) {
		var msgs []map[string]any
		for i, it := range items {
			msgs = append(msgs, map[string]any{"transaction_id": it.TransactionID, "status": "pushed", "message_id": fmt.Sprint(i), "offset": 100 + i})
		}
		return http.StatusCreated, map[string]any{"pushed": true, "qos0": false, "dbHealthy": true, "messages": msgs}
	})
	for i, o := range publish(t, d, 6) {
		if o.Status != drivers.Acked {
			t.Errorf("message %d: %+v", i, o)
		}
	}
	if err := d.ProbeNode(context.Background(), ServerNode); err != nil {
		t.Errorf("a 2.x /health with raft fields: %v", err)
	}
	if h, err := d.health(context.Background()); err != nil || h.Raft == nil || h.Raft.Role != "leader" {
		t.Errorf("2.x /health: %+v %v", h, err)
	}
}

// A push whose answer is lost is sent again with the same transactionIds:
// Queen answers "duplicate" for what it had committed, and the message is
// acked once, never stored twice.
func TestLostAnswerRetriedWithSameTransactionIDs(t *testing.T) {
	f, d := newFake(t, func(n int, items []pushItem) (int, any) {
		if n == 1 {
			return 0, nil // committed, answer lost
		}
		return answerEach(func(int, pushItem) string { return "duplicate" })(n, items)
	})
	out := publish(t, d, 1)
	if out[0].Status != drivers.Acked {
		t.Fatalf("%+v", out[0])
	}
	for tx, n := range f.seen {
		if n != 2 {
			t.Errorf("transaction %s pushed %d times, want 2 (once, then again after the lost answer)", tx, n)
		}
	}
}

// No usable answer within PushTimeout: an error body (HTTP 200), an
// answer for fewer items than sent, a status Queen does not document:
// every message is unknown, never acked.
func TestNoUsableAnswerIsUnknown(t *testing.T) {
	for name, answer := range map[string]func(int, []pushItem) (int, any){
		"error body with 200": func(int, []pushItem) (int, any) { return http.StatusOK, map[string]any{"error": "pool exhausted"} },
		"short answer":        func(int, []pushItem) (int, any) { return http.StatusOK, []map[string]any{} },
		"undocumented status": answerEach(func(int, pushItem) string { return "maybe" }),
		"connection dropped":  func(int, []pushItem) (int, any) { return 0, nil },
	} {
		t.Run(name, func(t *testing.T) {
			_, d := newFake(t, answer)
			for i, o := range publish(t, d, 3) {
				if o.Status != drivers.Unknown {
					t.Errorf("message %d: %+v, want unknown", i, o)
				}
			}
		})
	}
}

// Maintenance mode reads and switches through the server's own API.
func TestMaintenanceSwitch(t *testing.T) {
	_, d := newFake(t, answerEach(func(int, pushItem) string { return "queued" }))
	on, err := d.Switch(context.Background(), "maintenance")
	if err != nil || on {
		t.Fatalf("maintenance: %v %v", on, err)
	}
	if err := d.SetSwitch(context.Background(), "maintenance", true); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Switch(context.Background(), "standby"); err == nil {
		t.Fatal("a mode Queen does not have was read")
	}
}

func TestPartitionNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    int32
		ok   bool
	}{{"p0", 0, true}, {"p15", 15, true}, {"p01", 0, false}, {"Default", 0, false}, {"p-1", 0, false}, {"p", 0, false}} {
		p, ok := partitionIndex(tc.name)
		if ok != tc.ok || (ok && p != tc.p) {
			t.Errorf("%s: %d %v", tc.name, p, ok)
		}
	}
}
