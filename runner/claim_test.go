package runner

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/load"
)

// claimOut claims a run directory only where the disk holds the run, and
// its release leaves exactly what was there before.
func TestClaimOut(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before makes what is there before the claim; out is relative to
		// the test's directory.
		before func(dir string)
		out    string
		need   uint64
		refuse string
		// left is what the test's directory holds after a refusal or a
		// release.
		left []string
	}{
		{name: "new", out: "r", need: 1},
		{name: "new parents", out: "a/b/r", need: 1},
		{name: "existing empty directory", before: func(d string) { os.Mkdir(filepath.Join(d, "r"), 0o755) }, out: "r", need: 1, left: []string{"r"}},
		{name: "disk too small", out: "a/r", need: math.MaxUint64, refuse: "needs about 16.0 EiB"},
		{name: "disk too small, directory given", before: func(d string) { os.Mkdir(filepath.Join(d, "r"), 0o755) }, out: "r", need: math.MaxUint64,
			refuse: "free space or give --out on a larger disk", left: []string{"r"}},
		{name: "holds a run", before: func(d string) { os.MkdirAll(filepath.Join(d, "r", "ledger"), 0o755) }, out: "r", need: 1,
			refuse: "already holds a run", left: []string{"r", "r/ledger"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.before != nil {
				tc.before(dir)
			}
			out := filepath.Join(dir, tc.out)
			release, err := claimOut(out, tc.need)
			if tc.refuse != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refuse) {
					t.Fatalf("claim: %v, want %q", err, tc.refuse)
				}
			} else {
				if err != nil {
					t.Fatalf("claim: %v", err)
				}
				if st, err := os.Stat(LedgerDir(out)); err != nil || !st.IsDir() {
					t.Fatalf("claimed, but no ledger directory: %v", err)
				}
				// What the run writes before its load: undone as well.
				os.WriteFile(filepath.Join(out, "run.json"), []byte("{}"), 0o644)
				os.WriteFile(filepath.Join(out, "run.json.tmp"), nil, 0o644)
				os.WriteFile(filepath.Join(LedgerDir(out), "000001.log"), []byte("x"), 0o644)
				release()
			}
			var left []string
			filepath.WalkDir(dir, func(p string, _ os.DirEntry, _ error) error {
				if p != dir {
					rel, _ := filepath.Rel(dir, p)
					left = append(left, rel)
				}
				return nil
			})
			if strings.Join(left, " ") != strings.Join(tc.left, " ") {
				t.Fatalf("left %q, want %q", left, tc.left)
			}
		})
	}
}

// diskNeed counts the ledger per scheduled message, the room the ledger
// keeps free for its next log (its 40,000 x 64-byte memtable and 1 MiB),
// and room for the reports.
func TestDiskNeed(t *testing.T) {
	lc := load.Config{Rate: 2000, Duration: 20 * time.Second}
	if got, want := diskNeed(lc), uint64(outputBytes+40_000*ledgerBytesPerMessage+40_000*64+1<<20); got != want {
		t.Fatalf("diskNeed %d, want %d", got, want)
	}
}
