package verifier

import (
	"context"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/ledger"
)

// A lost message is put against the faults in force when the broker acked
// it (its send time plus its ack latency), not when it was sent: sent
// before a pause and acked in it, it counts to the pause.
func TestLostCountedAtItsAckTime(t *testing.T) {
	l, err := ledger.Open(t.TempDir(), ledger.Options{FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s := time.Second
	for _, e := range []ev{
		send(0, 0, 1*s), ack(0, 0, 0, 0, 2*s), // acked at 3 s, in the pause
		send(0, 1, 5*s), ack(0, 1, 0, 1, s/2), // acked at 5.5 s, after it
	} {
		must(t, l.Record(e.kind, e.e))
	}
	recs := []faults.Record{
		{Action: faults.Pause, Node: 1, Target: "node:1", At: t0.Add(2 * s), Result: faults.Applied},
		{Action: faults.Resume, Node: 1, Target: "node:1", At: t0.Add(4 * s), Result: faults.Applied},
	}
	must(t, l.PutMeta(faults.MetaKey, recs))
	must(t, l.PutMeta(ledger.MetaRun, ledger.RunInfo{RunID: 7, Topic: "t", Producers: 1, LoadStart: t0, LoadEnd: t0.Add(10 * s), Clean: true,
		StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 0})}))
	must(t, l.PutMeta(MetaReadBack, ReadBackReport{Complete: true}))
	res, err := Check(context.Background(), l, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := res.LostByPartition[0]
	if res.Lost != 2 || p == nil || p.AckedWhile["node 1 paused (since 2.0 s)"] != 1 || p.AckedWhile[NoFaultInForce] != 1 {
		t.Fatalf("lost %d, partition 0 %+v; want one acked in the pause, one with no fault", res.Lost, p)
	}
}
