package verifier

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// A read-back ledger judged beside a run's ledger must be that run's: the
// classifier matches reads to acks by producer and sequence, which every
// run numbers alike, so another run's reads would vouch for this run's
// acks (issue 24's hostile review: report on a run that lost every acked
// message, with a passing run's reads/ copied in, gave PASS, exit 0).
func TestReadsOfAnotherRunRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	run, err := ledger.Open(filepath.Join(dir, "run"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	const ids = 200
	if err := SyntheticRun(run, ids, 2, 2); err != nil { // run ID 1
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		runID  string // of the read-back
		reads  bool   // separate reads ledger (false: the run's own, as before reads ledgers)
		errHas string // "" : judged, PASS
	}{
		{"its own read-back", "0000000000000001", true, ""},
		{"reads kept in the run's ledger (older run directory)", "", false, ""},
		{"another run's read-back", "0000000000000002", true, "it read back run 0000000000000002, and the run's ledger is run 0000000000000001"},
		{"a read-back that names no run", "", true, "a run it does not name"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lg := Ledgers{Run: run, Reads: run}
			if tc.reads {
				r, err := ledger.Open(filepath.Join(dir, "reads", string(rune('a'+i))), ledger.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				// Every message of the run read intact: only the run ID
				// of the report tells the read-backs apart.
				for n := int64(0); n < ids; n++ {
					r.Record(ledger.Read, ledger.Event{Producer: uint32(n % 2), Seq: uint64(n / 2), Partition: int32(n % 2), Offset: n / 2,
						Time: time.Now().UnixNano(), Status: uint8(message.Valid)})
				}
				if err := r.Flush(); err != nil {
					t.Fatal(err)
				}
				if err := r.PutMeta(MetaReadBack, ReadBackReport{RunID: tc.runID, At: time.Now(), Complete: true, Records: ids}); err != nil {
					t.Fatal(err)
				}
				lg.Reads = r
			}
			res, err := CheckLedgers(ctx, lg, Options{})
			switch {
			case tc.errHas == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.errHas == "" && (res.Verdict != Pass || res.Read != ids):
				t.Fatalf("verdict %s, read %d: %v", res.Verdict, res.Read, res.Reasons)
			case tc.errHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errHas) || !strings.Contains(err.Error(), "ackcheck verify")):
				t.Fatalf("got %v, want an error saying %q and how to read back again", err, tc.errHas)
			}
		})
	}
}
