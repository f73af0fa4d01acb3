package queen

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	failedFiles int64
}

func (b *bufferServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.counts[min(b.asked, len(b.counts)-1)]
	b.asked++
	fmt.Fprintf(w, `{"maintenanceMode":%v,"bufferedMessages":%d,"bufferHealthy":true,"bufferStats":{"failedFiles":{"count":%d}}}`, b.maintenance, n, b.failedFiles)
}

func settleDriver(t *testing.T, h http.Handler, bufferDir ...string) *Driver {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	d, err := New(Config{URL: srv.URL, PostgresURL: "postgres://nobody@127.0.0.1:1/none", BufferDir: strings.Join(bufferDir, "")})
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
		{"replayed", false, []int64{900, 600, 300, 0}, "replay its file buffer into PostgreSQL (900 messages counted by the server when the read-back began)", ""},
		{"stuck", false, []int64{900, 500, 500}, "", "still holds 500 messages counted by the server after 1s without one replayed into PostgreSQL (900 messages counted by the server when"},
		{"maintenance on", true, []int64{40}, "", "maintenance mode with 40 messages counted by the server"},
		{"maintenance on, empty buffer", true, []int64{0}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := settleDriver(t, &bufferServer{maintenance: tc.maintenance, counts: tc.counts})
			start := time.Now()
			note, err := d.Settle(context.Background(), "q", time.Second, nil)
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
	if _, err := d.Settle(context.Background(), "q", 500*time.Millisecond, nil); err == nil || !strings.Contains(err.Error(), "did not answer for 500ms") {
		t.Fatalf("Settle with the server gone: %v", err)
	}
}

// The server counts only what its own process buffered: files an earlier
// process left are replayed while it reports 0. Settle waits for the
// buffer dir and for the failed files too, and each account alone keeps
// it waiting; an empty file being written holds nothing.
func TestSettleWaitsForFilesTheServerDoesNotCount(t *testing.T) {
	for _, tc := range []struct {
		name        string
		files       map[string]int // name in the buffer dir: size
		failedFiles int64
		removeAfter time.Duration // 0: never
		note, err   string
	}{
		{"left-over file replayed", map[string]int{"failover_0197.buf": 4096}, 0, 600 * time.Millisecond, "4096 bytes in 1 files", ""},
		{"left-over file stuck", map[string]int{"failover_0197.buf": 4096}, 0, 0, "", "still holds 0 messages counted by the server, 4096 bytes in 1 files"},
		{"unfinalized file of a killed process", map[string]int{"qos0_0198.buf.tmp": 2048}, 0, 0, "", "2048 bytes"},
		{"file in failed/", map[string]int{"failed/failover_0199.buf": 100}, 0, 0, "", "100 bytes"},
		{"failed files counted by the server", nil, 2, 0, "", "2 files in its failed/ dir"},
		{"empty file being written", map[string]int{"failover_0200.buf.tmp": 0, "other.log": 99}, 0, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var paths []string
			for name, size := range tc.files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			if tc.removeAfter > 0 {
				timer := time.AfterFunc(tc.removeAfter, func() {
					for _, p := range paths {
						os.Remove(p)
					}
				})
				defer timer.Stop()
			}
			d := settleDriver(t, &bufferServer{counts: []int64{0}, failedFiles: tc.failedFiles}, dir)
			note, err := d.Settle(context.Background(), "q", time.Second, nil)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if !strings.Contains(note, tc.note) || tc.note == "" && note != "" {
				t.Fatalf("note %q, want %q", note, tc.note)
			}
		})
	}
}

// Maintenance mode with only an earlier process's files left: nothing is
// replayed until it ends, so Settle says so at once rather than reading
// back with the files still there.
func TestSettleMaintenanceWithUncountedFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "failover_1.buf"), make([]byte, 10), 0o644); err != nil {
		t.Fatal(err)
	}
	d := settleDriver(t, &bufferServer{maintenance: true, counts: []int64{0}}, dir)
	if _, err := d.Settle(context.Background(), "q", time.Second, nil); err == nil || !strings.Contains(err.Error(), "maintenance mode with 0 messages counted by the server, 10 bytes") {
		t.Fatalf("Settle in maintenance mode with a file left: %v", err)
	}
}

// An unreadable buffer dir is an error that names the flag, never an
// empty buffer.
func TestSettleBufferDirMissing(t *testing.T) {
	d := settleDriver(t, &bufferServer{counts: []int64{0}}, filepath.Join(t.TempDir(), "nope"))
	if _, err := d.Settle(context.Background(), "q", 500*time.Millisecond, nil); err == nil || !strings.Contains(err.Error(), "--queen-buffer-dir") {
		t.Fatalf("Settle with the buffer dir missing: %v", err)
	}
}

// A wait for the replay says what it waits for while it waits, with the
// counts then and at the start; a buffer empty at the first look says
// nothing.
func TestSettleReportsWhileItWaits(t *testing.T) {
	for _, tc := range []struct {
		name   string
		counts []int64
		want   []string // each must be in some report; none: no report
	}{
		{"replay of 3 in steps", []int64{3, 3, 3, 2, 2, 2, 1, 1, 1, 0}, []string{"messages counted by the server now", "3 messages counted by the server when it began"}},
		{"nothing buffered", []int64{0}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := settleDriver(t, &bufferServer{counts: tc.counts})
			var reports []string
			note, err := d.settle(context.Background(), 5*time.Second, func(s string) { reports = append(reports, s) }, time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.want) == 0 {
				if len(reports) != 0 || note != "" {
					t.Fatalf("reports %q, note %q for an empty buffer", reports, note)
				}
				return
			}
			all := strings.Join(reports, "\n")
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("reports %q lack %q", reports, w)
				}
			}
			if len(reports) < len(tc.counts)-2 || !strings.HasPrefix(reports[0], "waiting ") {
				t.Errorf("%d reports over %d looks: %q", len(reports), len(tc.counts), reports)
			}
		})
	}
}
