package faults

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/ledger"
)

// A ledger that refuses the fault records is warned about, once a record
// changes, and the run goes on; with no log function it goes on silently.
func TestRecordsTheLedgerRefusesAreWarnedAbout(t *testing.T) {
	dir := t.TempDir()
	w, err := ledger.Open(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.OpenReadOnly(dir, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var log strings.Builder
	rl := &recordLog{ledger: l, logf: func(f string, a ...any) { fmt.Fprintf(&log, f+"\n", a...) }}
	rl.add(Record{Action: Kill, Node: 2, Result: Applied})
	if !strings.Contains(log.String(), "could not record faults in the ledger") {
		t.Fatalf("no warning for a ledger that refused the records; log: %q", log.String())
	}
	quiet := &recordLog{ledger: l}
	quiet.add(Record{Action: Kill, Node: 2, Result: Applied})
	if n := len(quiet.list()); n != 1 {
		t.Fatalf("%d records kept, want 1", n)
	}
}
