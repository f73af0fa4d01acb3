package queen

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// bufferServer answers GET /api/v1/system/maintenance with the file
// buffer's counts in turn; the last one repeats.
type bufferServer struct {
	mu          sync.Mutex
	maintenance bool
	counts      []int64
	asked       int
}

func (b *bufferServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.counts[min(b.asked, len(b.counts)-1)]
	b.asked++
	fmt.Fprintf(w, `{"maintenanceMode":%v,"bufferedMessages":%d,"bufferHealthy":true}`, b.maintenance, n)
}

func settleDriver(t *testing.T, h http.Handler) *Driver {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	d, err := New(Config{URL: srv.URL, PostgresURL: "postgres://nobody@127.0.0.1:1/none"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// Settle waits for the file buffer to be replayed, and says so; it gives
// up when nothing is replayed for idle, or at once while maintenance mode
// keeps everything in the buffer. Each case makes its outcome fire.
func TestSettleWaitsForTheFileBuffer(t *testing.T) {
	for _, tc := range []struct {
		name        string
		maintenance bool
		counts      []int64
		note, err   string
	}{
		{"empty", false, []int64{0}, "", ""},
		{"replayed", false, []int64{900, 600, 300, 0}, "replay 900 buffered messages", ""},
		{"stuck", false, []int64{900, 500, 500}, "", "still holds 500 messages after 1s without one replayed into PostgreSQL (of 900"},
		{"maintenance on", true, []int64{40}, "", "maintenance mode with 40 messages in its file buffer"},
		{"maintenance on, empty buffer", true, []int64{0}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := settleDriver(t, &bufferServer{maintenance: tc.maintenance, counts: tc.counts})
			start := time.Now()
			note, err := d.Settle(context.Background(), "q", time.Second)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if !strings.Contains(note, tc.note) || tc.note == "" && note != "" {
				t.Fatalf("note %q, want %q", note, tc.note)
			}
			if took := time.Since(start); tc.name == "maintenance on" && took > 500*time.Millisecond {
				t.Fatalf("gave up after %s: maintenance mode replays nothing, so it should not wait", took)
			}
		})
	}
}

// A server that does not answer (restarting, or gone) is waited for up
// to idle, then named in the error.
func TestSettleServerGone(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	d, err := New(Config{URL: srv.URL, PostgresURL: "postgres://nobody@127.0.0.1:1/none"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	srv.Close()
	if _, err := d.Settle(context.Background(), "q", 500*time.Millisecond); err == nil || !strings.Contains(err.Error(), "did not answer for 500ms") {
		t.Fatalf("Settle with the server gone: %v", err)
	}
}
