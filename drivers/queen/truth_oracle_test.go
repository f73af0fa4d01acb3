package queen_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/queen"
	"github.com/ackcheck/ackcheck/verifier"
)

// checkQueenProductOracle asserts that the run itself read node's own log
// (result.json's oracle): its first line after the fault saying it serves
// again, as an exact event, the same line LastLine reads here; that the
// summary prints it beside the ready figure and says that Queen's logs
// have no in-sync event rather than inventing one; and that the figure
// agrees with it (no oracle warning).
func checkQueenProductOracle(t *testing.T, q *queen.Cluster, res *verifier.Result, node int32, what string) {
	t.Helper()
	f := res.Faults[0]
	if f.Oracle == nil || f.Oracle.Ready == nil || f.OracleReadyMs == nil {
		t.Fatalf("%s %s: the result has no oracle from %s: %+v", f.Action, f.Target, q.LogFile(node), f.Oracle)
	}
	if f.Oracle.Ready.Bound != drivers.Exact || f.Oracle.InSync != nil || f.OracleInSyncMs != nil || f.Oracle.NoInSync == "" {
		t.Errorf("Queen's oracle: ready %+v, in sync %+v, no in sync %q: want an exact ready, no in sync, and why", f.Oracle.Ready, f.Oracle.InSync, f.Oracle.NoInSync)
	}
	ready := f.At.Add(time.Duration(f.ReadyMs * float64(time.Millisecond)))
	back, err := q.LastLine(node, what, ready.Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !f.Oracle.Ready.At.Equal(back) {
		t.Errorf("result.json's oracle: ready at %s; %s read here: %q at %s", f.Oracle.Ready.At, q.LogFile(node), what, back)
	}
	var b strings.Builder
	res.WriteSummary(&b)
	if !strings.Contains(b.String(), f.Oracle.Ready.What+" at ") || !strings.Contains(b.String(), f.Oracle.NoInSync) {
		t.Errorf("the summary does not print Queen's logs' account:\n%s", b.String())
	}
	for _, w := range res.Warnings {
		if strings.Contains(w, "Queen's logs") {
			t.Errorf("ackcheck's figure disagrees with the log: %s", w)
		}
	}
	t.Logf("oracle in the product: %s %s ready %.0f ms, %s: %s at %.0f ms; in sync: %s",
		f.Action, f.Target, f.ReadyMs, f.Oracle.Source, f.Oracle.Ready.What, *f.OracleReadyMs, f.Oracle.NoInSync)
}
