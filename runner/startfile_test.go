package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/runner"
)

// Shards that meet at one --start-dir get one run ID and one start: the
// first writes it, the others read it, even when all arrive at once.
func TestJoinStartOneWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "start")
	const n = 8
	ids := make([]uint64, n)
	starts := make([]time.Time, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], starts[i], errs[i] = runner.JoinStart(dir, n, "t", 5*time.Second, time.Second)
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("shard %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] || !starts[i].Equal(starts[0]) {
			t.Fatalf("shard %d joined run %x at %s, shard 0 run %x at %s", i, ids[i], starts[i], ids[0], starts[0])
		}
	}
	if d := time.Until(starts[0]); d < 3*time.Second || d > 5*time.Second {
		t.Fatalf("start in %s, want about the 5s lead", d)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 1 {
		t.Fatalf("start dir holds %v, want start.json alone", left)
	}
}

// A start file that is not this load's is refused with what to do.
func TestJoinStartRefuses(t *testing.T) {
	cases := []struct {
		name, file, want string
	}{
		{"past", `{"run_id":"00000000000000aa","start":"2020-01-01T00:00:00Z","shards":2,"topic":"t"}`, "earlier run's"},
		{"other topic", `{"run_id":"00000000000000aa","start":"2999-01-01T00:00:00Z","shards":2,"topic":"u"}`, "another run's"},
		{"other count", `{"run_id":"00000000000000aa","start":"2999-01-01T00:00:00Z","shards":3,"topic":"t"}`, "another run's"},
		{"damaged", `{"run_id":`, "damaged"},
		{"bad run ID", `{"run_id":"zz","start":"2999-01-01T00:00:00Z","shards":2,"topic":"t"}`, "not one ackcheck wrote"},
		{"fits", `{"run_id":"00000000000000aa","start":"2999-01-01T00:00:00Z","shards":2,"topic":"t"}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, runner.StartFileName), []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			id, _, err := runner.JoinStart(dir, 2, "t", time.Second, time.Second)
			switch {
			case tc.want == "" && (err != nil || id != 0xaa):
				t.Fatalf("run %x, err %v: want to join run aa", id, err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
