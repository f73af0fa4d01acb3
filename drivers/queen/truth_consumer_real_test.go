package queen_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/queen"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/scenarios/scenariotest"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/jackc/pgx/v5"
)

// Issue 39's truth on Queen, through run --group: the Queen server
// SIGKILLed while 2 members pop and ack beside a 200/s load, started
// again 2 s later, then ackcheck's members restarted without acking.
//
// What it found: with the queue's defaults, Queen's consumer group skips
// messages for good, fault or not. A push's rows get created_at = the
// start of its transaction; a pop gives the rows after the group's
// cursor in (created_at, id) order among those committed; a push whose
// transaction began first and committed after a later one was popped
// lies behind the cursor once it is visible, and no pop of the group
// returns it. Queen's own counter (partition_consumers.
// total_messages_consumed) is short by as many. Measured here: 29 and 63
// skipped of 2400 in two runs (one block of 50 rows: a whole push),
// the first before the kill, and 177 in a third. With the queue's delayedProcessing at 1 s
// (a pop gives only rows older than that), 0 skipped of 2400.
//
// Both subtests hold: nothing acked lost, no acknowledged ack lost,
// Queen's cursors equal to the ledger's last acknowledged commits at the
// partitions' ends; with the defaults, Queen's own count of the group's
// acks is short of the acked messages by exactly ackcheck's skipped (177
// in the last run: 2223 of 2400), and the verdict fails when any was;
// with delayedProcessing, the verdict passes, 0 skipped.
func TestRealQueenGroupRunServerKill(t *testing.T) {
	q := lazyQueen.Get(t)
	for _, c := range []struct {
		name    string
		delayed int // the queue's delayedProcessing, seconds; 0: the driver's queue as it makes it
	}{
		{"queue defaults", 0},
		{"delayedProcessing 1s", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := queen.New(queen.Config{URL: q.URL(), PostgresURL: q.PostgresURL()})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			topic := scenariotest.TopicName(t)
			group := "g-" + topic
			if c.delayed > 0 {
				// Made before the run: EnsureTopic uses a queue as it is.
				body := `{"queue":"` + topic + `","options":{"retentionEnabled":false,"leaseTime":10,"delayedProcessing":1}}`
				resp, err := http.Post(q.URL()+"/api/v1/configure", "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			steps, err := faults.ParseSchedule("at=3s kill node:1; at=5s restart; at=8s restart-consumers")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			out := filepath.Join(t.TempDir(), "run")
			res, err := runner.Run(ctx, runner.Config{
				Out: out, Driver: d,
				Topic:  drivers.TopicSpec{Name: topic, Partitions: 4, ReplicationFactor: 1},
				Load:   load.Config{Rate: 200, Duration: 12 * time.Second, Producers: 2, MessageSize: 256, DrainTimeout: 30 * time.Second},
				Verify: true, ReadIdleTimeout: 30 * time.Second,
				Group:    &load.GroupConfig{Name: group, Members: 2, CatchUp: 30 * time.Second},
				Faults:   &runner.FaultPlan{Nodes: faults.Local{Cluster: q}, Steps: steps, RecoveryTimeout: time.Minute},
				Progress: scenariotest.Progress(t), ProgressEvery: 5 * time.Second,
			})
			if err != nil {
				t.Fatal(err)
			}
			g := res.Group
			if g == nil {
				t.Fatal("no group in the result")
			}
			t.Logf("verdict %s; %d acked, %d delivered in %d deliveries, %d commits; skipped %d, acks lost %d, redelivered %d (%d after a commit); stalls %+v; %s; %s",
				res.Verdict, res.Acked, g.Delivered, g.Deliveries, g.Commits, g.Skipped, g.CommitsLost, g.Redelivered, g.RedeliveredAfterCommit, g.Stalls, g.Promise, g.Err)
			if !g.Durable {
				t.Errorf("PostgreSQL with fsync and synchronous_commit on not seen as durable acks: %q", g.Promise)
			}
			if res.Lost != 0 || g.CommitsLost != 0 || g.Commits == 0 || g.Restarts != 1 {
				t.Fatalf("lost %d, acks lost %d, commits %d, restarts %d: %v", res.Lost, g.CommitsLost, g.Commits, g.Restarts, res.Reasons)
			}
			for _, f := range res.Faults {
				if f.Result != faults.Applied {
					t.Fatalf("fault %s %s: %s %s", f.Action, f.Target, f.Result, f.Error)
				}
			}
			held, err := d.CommittedOffsets(ctx, group, topic)
			if err != nil {
				t.Fatal(err)
			}
			end, err := d.EndOffsets(ctx, topic)
			if err != nil {
				t.Fatal(err)
			}
			for p, e := range end.Map() {
				if held[p] != g.Committed[p] || held[p] != e {
					t.Errorf("partition %d: Queen's cursor is at %d, the ledger's last acknowledged commit is %d, the partition ends at %d", p, held[p], g.Committed[p], e)
				}
			}
			conn, err := pgx.Connect(ctx, q.PostgresURL())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			var consumed int64
			if err := conn.QueryRow(ctx, `SELECT coalesce(sum(pc.total_messages_consumed), 0) FROM queen.partition_consumers pc
				JOIN queen.partitions p ON p.id = pc.partition_id JOIN queen.queues q ON q.id = p.queue_id
				WHERE q.name = $1 AND pc.consumer_group = $2`, topic, group).Scan(&consumed); err != nil {
				t.Fatal(err)
			}
			t.Logf("Queen's own count of the group's acks: %d of %d messages", consumed, res.Acked)
			if c.delayed > 0 {
				if res.Verdict != verifier.Pass || g.Skipped != 0 {
					t.Fatalf("delayedProcessing %ds: verdict %s, skipped %d; want pass, 0: %v", c.delayed, res.Verdict, g.Skipped, res.Reasons)
				}
				return
			}
			// Queen's own count of what the group acked, which ackcheck did
			// not compute, is short of the acked messages by exactly the
			// records ackcheck found skipped (each record was acked once:
			// none was delivered twice).
			if g.Redelivered == 0 && res.Acked-consumed != g.Skipped {
				t.Errorf("Queen counts %d of %d messages consumed by the group (%d never), ackcheck found %d skipped", consumed, res.Acked, res.Acked-consumed, g.Skipped)
			}
			if g.Skipped > 0 && res.Verdict != verifier.Fail {
				t.Errorf("%d skipped and the verdict is %s", g.Skipped, res.Verdict)
			}
			t.Logf("queue defaults: %d skipped; Queen's own count says %d never consumed", g.Skipped, res.Acked-consumed)
		})
	}
}

// Issue 39's truth that the check can fail on Queen: PostgreSQL with
// synchronous_commit=off (its commits answered before their WAL is
// fsynced, flushed every wal_writer_delay) and a power loss of the
// database (lazyfs loses what was not fsynced) while 2 members pop and
// ack: the acks of the last moments are forgotten, the group resumes
// before them (acks lost > 0), and as the commit promise is not durable
// the verdict counts them rather than failing on them (it fails on the
// produce acks lost with them). PostgreSQL is switched back after.
// Measured at wal_writer_delay 200 ms: 4, 1, 5, 4 and 0 acks lost in
// five runs; at 10 s (as here): 22 acks lost, 230 delivered again after
// a commit covered them, 1003 of 2400 produce acks lost.
func TestRealQueenGroupRunSyncCommitOffPowerLoss(t *testing.T) {
	q := lazyQueen.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// ALTER SYSTEM and a reload, not the cluster's FsyncSwitch: no
	// restart (two restarts took 100 s), and the reload reaches the
	// server's pooled sessions too.
	setSyncCommit := func(ctx context.Context, sql string) error {
		conn, err := pgx.Connect(ctx, q.PostgresURL())
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, sql); err != nil {
			return err
		}
		_, err = conn.Exec(ctx, "SELECT pg_reload_conf()")
		return err
	}
	// The WAL writer flushes every wal_writer_delay (200 ms by default):
	// at 10 s, the acks of the last seconds before the power loss are
	// all unflushed, not only those of its last 200 ms (one run of four
	// lost none at the default).
	for _, sql := range []string{"ALTER SYSTEM SET synchronous_commit = off", "ALTER SYSTEM SET wal_writer_delay = '10s'", "ALTER SYSTEM SET wal_writer_flush_after = '1GB'"} {
		if err := setSyncCommit(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for {
			err := setSyncCommit(ctx, "ALTER SYSTEM RESET ALL")
			if err == nil {
				return
			}
			if ctx.Err() != nil {
				t.Errorf("set synchronous_commit back: %v", err)
				return
			}
			time.Sleep(time.Second)
		}
	})
	time.Sleep(500 * time.Millisecond) // the reload reaches every backend
	d, err := queen.New(queen.Config{URL: q.URL(), PostgresURL: q.PostgresURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	topic := scenariotest.TopicName(t)
	group := "g-" + topic
	body := `{"queue":"` + topic + `","options":{"retentionEnabled":false,"leaseTime":10,"delayedProcessing":1}}`
	resp, err := http.Post(q.URL()+"/api/v1/configure", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	steps, err := faults.ParseSchedule("at=6s power-loss db")
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Run(ctx, runner.Config{
		Out: filepath.Join(t.TempDir(), "run"), Driver: d,
		Topic:  drivers.TopicSpec{Name: topic, Partitions: 4, ReplicationFactor: 1},
		Load:   load.Config{Rate: 200, Duration: 12 * time.Second, Producers: 2, MessageSize: 256, DrainTimeout: 30 * time.Second},
		Verify: true, ReadIdleTimeout: 30 * time.Second,
		Group:    &load.GroupConfig{Name: group, Members: 2, CatchUp: 30 * time.Second},
		Faults:   &runner.FaultPlan{Nodes: faults.Local{Cluster: q}, Steps: steps, RecoveryTimeout: 20 * time.Second},
		Progress: scenariotest.Progress(t), ProgressEvery: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	g := res.Group
	if g == nil {
		t.Fatal("no group in the result")
	}
	t.Logf("verdict %s; %d acked, %d lost; %d delivered in %d deliveries, %d commits; skipped %d, acks lost %d, redelivered %d (%d after a commit); %s; %s",
		res.Verdict, res.Acked, res.Lost, g.Delivered, g.Deliveries, g.Commits, g.Skipped, g.CommitsLost, g.Redelivered, g.RedeliveredAfterCommit, g.Promise, g.Err)
	if g.Durable {
		t.Errorf("synchronous_commit=off seen as durable acks: %q", g.Promise)
	}
	if g.CommitsLost == 0 {
		t.Fatalf("no acknowledged ack lost to a power loss of the database with synchronous_commit=off: %v", res.Reasons)
	}
}
