package queen_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/queen"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/jackc/pgx/v5"
)

// testWriter sends the run's progress to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// A client-side cut of the Queen server in its network namespace (issue
// 26: a single server on a single database, so the cut that applies is
// the client's): a paced load, partition-client node:1 at 6 s, heal-network
// 20 s later. Every figure is held against an account ackcheck did not
// compute: the rows of queen.messages (PostgreSQL's own created_at), the
// servers' logs and PIDs, and a connect of the test's own from the
// machine's namespace.
//
//   - nothing acked is lost, and the verdict is PASS;
//   - the proof shows client -> node 1 cut after the rule, answering after
//     the heal;
//   - acks stop during the cut (no second inside it has one), and so do
//     PostgreSQL's commits (no row created inside it); both resume after
//     the heal, the first commit after the heal before the first ack;
//   - the pushes sent in the cut outlive --push-timeout (8 s, shorter than
//     the cut) without an answer: Unknown, never acked, never lost. Every
//     row in the database is an acked message or an Unknown (or failed)
//     one read back, and no other;
//   - what ackcheck says of the node's recovery (ready) is after the heal,
//     and neither the server nor PostgreSQL restarted (same PIDs, no start
//     line in their logs after the cut): the recovery is the network's.
func TestRealNetnsQueenClientCut(t *testing.T) {
	q := netnsQueen(t)
	n := q.Net()
	addr := net.JoinHostPort(n.NodeAddr(queen.ServerNode).String(), strconv.Itoa(q.ProbePort()))
	// The machine's own namespace has no way to the server: only the hub
	// does. (A bare connect proves nothing: on a machine whose default
	// route leads to a proxy, as this one's does, something off the
	// machine accepts any address; Queen's /health is what must not
	// answer.)
	hc := &http.Client{Timeout: 2 * time.Second}
	if resp, err := hc.Get("http://" + addr + "/health"); err == nil {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		if strings.Contains(string(body), `"healthy"`) {
			t.Fatalf("Queen's /health at %s answers from the machine's own namespace: the server is not in a namespace of its own (%s)", addr, body)
		}
	}
	pids := map[int32]int{}
	for _, id := range q.Nodes() {
		pid, err := q.PID(id)
		if err != nil || pid == 0 {
			t.Fatalf("node %d does not run (%v)", id, err)
		}
		pids[id] = pid
	}

	d, err := queen.New(queen.Config{URL: q.URL(), PostgresURL: q.PostgresURL(), NetNS: n.Prefix,
		PushTimeout: 8 * time.Second, AttemptTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	steps, err := faults.ParseSchedule("at=6s partition-client node:1; at=26s heal-network")
	if err != nil {
		t.Fatal(err)
	}
	topic := drivers.TopicSpec{Name: "netns-cut-" + time.Now().Format("150405"), Partitions: 2, ReplicationFactor: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "run")
	res, err := runner.Run(ctx, runner.Config{
		Out: out, Driver: d, Topic: topic,
		Load:   load.Config{Rate: 200, Duration: 36 * time.Second, Producers: 2, MessageSize: 256, DrainTimeout: 30 * time.Second},
		Verify: true, ReadIdleTimeout: 15 * time.Second,
		Faults:   &runner.FaultPlan{Nodes: faults.Local{Cluster: q}, Steps: steps, RecoveryTimeout: 20 * time.Second},
		Progress: testWriter{t}, ProgressEvery: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("verdict %s: sent %d, acked %d, unknown %d, failed %d, rejected %d, lost %d, indeterminate (not acked, read back) %d, not written %d",
		res.Verdict, res.Sent, res.Acked, res.Unknown, res.Failed, res.Rejected, res.Lost, res.Indeterminate, res.NotWritten)
	if res.Verdict != "pass" || res.Lost != 0 || res.Acked < 2000 {
		t.Errorf("verdict %s, lost %d of %d acked: want PASS, nothing lost", res.Verdict, res.Lost, res.Acked)
	}
	if len(res.Faults) != 2 {
		t.Fatalf("%d faults recorded, want the cut and the heal: %+v", len(res.Faults), res.Faults)
	}
	cut, heal := res.Faults[0], res.Faults[1]
	for _, f := range res.Faults {
		t.Logf("fault %s %s at %.3fs: %s; ready %.0f ms, first acks %v ms; proof %s", f.Action, f.Target, f.AtS, f.Result, f.ReadyMs, f.FirstAckMs, proofText(f.NetworkProof))
	}
	if cut.Result != faults.Applied || heal.Result != faults.Applied {
		t.Fatalf("cut %s (%s), heal %s (%s): want both applied", cut.Result, cut.Error, heal.Result, heal.Error)
	}

	// The proof: client -> node 1 answered before, was cut after the rule,
	// answers after the heal.
	p := cut.NetworkProof
	want := []string{"client -> node 1"}
	switch {
	case p == nil || p.Before == nil || p.After == nil || p.Healed == nil:
		t.Errorf("the cut's network proof lacks a probe: %+v", p)
	case p.Before.Paths != 1 || len(p.Before.Cut) != 0 || p.Before.Error != "":
		t.Errorf("before the rule: %s, want the 1 path answering", p.Before)
	case !slices.Equal(p.After.Cut, want) || p.After.Error != "":
		t.Errorf("after the rule: %s, want %v cut", p.After, want)
	case p.Healed.Paths != 1 || len(p.Healed.Cut) != 0 || p.Healed.Error != "":
		t.Errorf("after the heal: %s, want the 1 path answering", p.Healed)
	}
	if hp := heal.NetworkProof; hp == nil || hp.After == nil || hp.After.Paths != 1 || len(hp.After.Cut) != 0 {
		t.Errorf("heal-network's proof: %+v", hp)
	}

	cutAt, healAt := cut.At, heal.At
	// Acks stop in the cut: no whole second inside it has one (a push
	// answered just before the rule counts in the second the cut began),
	// and resume in the 10 s after the heal.
	var inCut, afterHeal int64
	for _, s := range res.Timeline {
		from := res.LoadStart.Add(time.Duration(s.T) * time.Second)
		switch {
		case from.After(cutAt) && !from.Add(time.Second).After(healAt):
			inCut += s.Acked
			if s.Acked > 0 {
				t.Errorf("second %d, inside the cut (%.3fs to %.3fs): %d acks", s.T, cut.AtS, heal.AtS, s.Acked)
			}
		case !from.Before(healAt) && from.Before(healAt.Add(10*time.Second)):
			afterHeal += s.Acked
		}
	}
	if afterHeal == 0 {
		t.Errorf("no ack in the 10 s after the heal")
	}

	// PostgreSQL's account, read by the test itself through the hub.
	cfg, err := pgx.ParseConfig(q.PostgresURL() + "&connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DialFunc = n.Dial
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("the test's own connection to PostgreSQL through the hub: %v", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var rows, inCutRows int64
	var firstAfter *time.Time
	err = conn.QueryRow(ctx, `SELECT count(*),
		count(*) FILTER (WHERE m.created_at > $2 AND m.created_at < $3),
		min(m.created_at) FILTER (WHERE m.created_at >= $3)
		FROM queen.messages m JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues qu ON qu.id = p.queue_id
		WHERE qu.name = $1`, topic.Name, cutAt.Add(time.Second), healAt).Scan(&rows, &inCutRows, &firstAfter)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL: %d rows; %d created from 1 s after the cut to the heal; first after the heal at +%s; ackcheck: %d acks in the cut's whole seconds, %d in the 10 s after the heal",
		rows, inCutRows, sinceOr(firstAfter, healAt), inCut, afterHeal)
	if inCutRows != 0 {
		t.Errorf("PostgreSQL committed %d rows from 1 s into the cut until the heal: the client was not cut off", inCutRows)
	}
	// Every row is a message ackcheck counted acked or read back without
	// an ack (an Unknown or failed push that was written): no row is
	// missing from its account, and none was counted twice.
	if res.Duplicates != 0 || res.Phantom != 0 || rows != res.Acked+res.Indeterminate {
		t.Errorf("PostgreSQL holds %d rows; ackcheck: %d acked + %d read back without an ack (duplicates %d, phantom %d)",
			rows, res.Acked, res.Indeterminate, res.Duplicates, res.Phantom)
	}
	// The pushes of the cut went unanswered past --push-timeout: Unknown,
	// and those written before their answer was lost are read back
	// (Indeterminate), not lost.
	if res.Unknown == 0 {
		t.Errorf("no push outcome Unknown: the pushes sent in a 20 s cut must outlive the 8 s push timeout")
	}
	if res.Unknown+res.Rejected < res.Indeterminate {
		t.Errorf("%d read back without an ack, more than the %d unknown or rejected", res.Indeterminate, res.Unknown+res.Rejected)
	}

	// Recovery: the commits after the heal come first, then the acks.
	if firstAfter == nil {
		t.Fatalf("PostgreSQL has no row created after the heal")
	}
	firstAck := time.Time{}
	for _, ms := range cut.FirstAckMs {
		if ms < 0 {
			t.Errorf("a partition never acked a message sent after the cut: %v", cut.FirstAckMs)
			continue
		}
		at := cutAt.Add(time.Duration(ms * float64(time.Millisecond)))
		if firstAck.IsZero() || at.Before(firstAck) {
			firstAck = at
		}
	}
	if !firstAck.IsZero() && (firstAck.Before(*firstAfter) || firstAfter.Before(healAt)) {
		t.Errorf("heal at %s, PostgreSQL's first row after it at %s, ackcheck's first ack of a message sent after the cut at %s: want heal <= commit <= ack",
			healAt.Format("15:04:05.000"), firstAfter.Format("15:04:05.000"), firstAck.Format("15:04:05.000"))
	}
	if ready := cutAt.Add(time.Duration(cut.ReadyMs * float64(time.Millisecond))); cut.ReadyMs < 0 || ready.Before(healAt) {
		t.Errorf("ackcheck says node 1 was ready %.0f ms after the cut, before the heal %.0f ms after it (or never)", cut.ReadyMs, float64(healAt.Sub(cutAt).Milliseconds()))
	}
	// Neither node restarted: same PIDs, and no line of their logs says
	// one started after the cut began.
	for id, pid := range pids {
		if now, _ := q.PID(id); now != pid {
			t.Errorf("node %d: PID %d before the run, %d after: it restarted, a client cut must not do that", id, pid, now)
		}
	}
	for _, c := range []struct {
		node int32
		line string
	}{{queen.ServerNode, queen.ServerBack}, {queen.ServerNode, queen.Listening}, {queen.DBNode, queen.DBBack}} {
		at, err := q.LastLine(c.node, c.line, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if at.After(cutAt) {
			t.Errorf("node %d logged %q at %s, after the cut at %s", c.node, c.line, at.Format("15:04:05.000"), cutAt.Format("15:04:05.000"))
		}
	}
	if os.Getenv("ACKCHECK_KEEP_RUN") != "" {
		t.Logf("run kept in %s", out)
	}
}

func proofText(p *faults.NetworkProof) string {
	if p == nil {
		return "none"
	}
	return p.String()
}

func sinceOr(at *time.Time, from time.Time) string {
	if at == nil {
		return "never"
	}
	return at.Sub(from).Round(time.Millisecond).String()
}
