package queen_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
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

// envScale gates the partition-scale truths (issue 37): 100,000
// partitions, each made by its first push, take this Queen on lazyfs
// longer than CI gives a test on the 2-core machine, so they run only
// when it is set.
const envScale = "ACKCHECK_SCALE"

// scalePartitions is the name space of the scale truth: partitions p0 to
// p99999, none of which exists before the load pushes to it.
const scalePartitions = 100_000

// 100,000 partitions made by their first push under load, with the Queen
// server SIGKILLed and restarted during it, then PostgreSQL SIGKILLed and
// restarted: nothing acked is lost with Queen's default durability
// (synchronous_commit=on), and that is held against the table itself,
// not only against ackcheck's read-back: per partition, PostgreSQL's
// queen.messages holds at least the messages ackcheck counted acked
// there (partitions.jsonl), the partitions holding a message are at
// least the ones ackcheck says got an ack (partitions_touched), and the
// read-back read every row the table holds.
func TestRealQueenScaleKills(t *testing.T) {
	if os.Getenv(envScale) == "" {
		t.Skipf("set %s=1 to run the partition-scale truths (several minutes)", envScale)
	}
	q := lazyQueen.Get(t)
	d, err := queen.New(q.DriverConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	steps, err := faults.ParseSchedule("at=10s kill node:1; at=14s restart; at=24s kill db; at=28s restart db")
	if err != nil {
		t.Fatal(err)
	}
	topic := fmt.Sprintf("queen-scale-%d", time.Now().UnixNano())
	// The server's failover replay after the kills took 5 minutes and
	// more on the loaded machine (10,000 events, about 1,000 in 25 s),
	// and the read-back waits for it (drivers.Settler).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	out := filepath.Join(t.TempDir(), "run")
	// 1,500 msg/s for 120 s, round-robin: 180,000 messages, so the name
	// space is walked almost twice and a partition whose first push fell
	// in a kill's outage gets a second one in a quiet stretch. Each
	// partition's first message is its creation. Sized to what this Queen
	// on lazyfs sustained on the 2-core machine: at 3,000 msg/s for 45 s
	// it acked about 1,600 a second before the kills, the driver's 10,000
	// pending pushes were reached, and only 71,310 partitions were made
	// (0 lost, 84,852 rows read back).
	res, err := runner.Run(ctx, runner.Config{
		Out: out, Driver: d,
		Topic: drivers.TopicSpec{Name: topic, Partitions: scalePartitions, ReplicationFactor: 1},
		Load: load.Config{Rate: 1500, Duration: 120 * time.Second, Producers: 4, MessageSize: 128,
			DrainTimeout: time.Minute},
		Verify: true, ReadIdleTimeout: time.Minute,
		Faults:   &runner.FaultPlan{Nodes: faults.Local{Cluster: q}, RecoveryTimeout: 2 * time.Minute, Steps: steps},
		Progress: scenariotest.Progress(t), ProgressEvery: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	scenariotest.SaveSummary(t, "queen-scale-kills", res)
	if err := q.Up(ctx); err != nil {
		t.Fatalf("cluster not whole after the run: %v", err)
	}
	for _, f := range res.Faults {
		if f.Result != faults.Applied {
			t.Errorf("fault %s %s: %s %s", f.Action, f.Target, f.Result, f.Error)
		}
	}
	// Incomplete is the right verdict, and not a failure of this truth,
	// when the only thing unfinished is the server's own replay of its
	// file buffer while every acked message was read: a replay can add
	// rows, never take one away, so nothing acked can turn out lost
	// (seen here: the replay of a 10,000-event file failed at 90% with
	// "Unexpected extra result after SELECT." and began again, for more
	// than 10 minutes, with all 119,169 acked messages read).
	replaying := res.Verdict == verifier.Incomplete && res.Unread == 0 && strings.Contains(res.ReadBackError, "file buffer")
	if replaying {
		t.Logf("verdict incomplete: every acked message read, but the server had not replayed its file buffer: %s", res.ReadBackError)
	}
	if res.Lost != 0 || res.Corrupt != 0 || res.Phantom != 0 || res.Verdict != verifier.Pass && !replaying {
		t.Errorf("lost %d, corrupt %d, phantom %d, verdict %s %v", res.Lost, res.Corrupt, res.Phantom, res.Verdict, res.Reasons)
		if raw, err := os.ReadFile(filepath.Join(out, "lost.jsonl")); err == nil {
			t.Logf("lost.jsonl (first 2 KiB):\n%.2048s", raw)
		}
		for p, note := range res.ReadBackNotes {
			t.Logf("read-back note, partition %d: %s", p, note)
			break
		}
	}

	// The table's own count per partition.
	conn, err := pgx.Connect(ctx, q.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT p.name, count(m.id) FROM queen.partitions p JOIN queen.queues qu ON qu.id = p.queue_id
		LEFT JOIN queen.messages m ON m.partition_id = p.id WHERE qu.name = $1 GROUP BY p.name`, topic)
	if err != nil {
		t.Fatal(err)
	}
	table := map[string]int64{}
	var name string
	var n, inTable, holding int64
	if _, err := pgx.ForEachRow(rows, []any{&name, &n}, func() error {
		table[name] = n
		inTable += n
		if n > 0 {
			holding++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	acked := partitionsAcked(t, out)
	short := 0
	for p, a := range acked {
		if got := table[fmt.Sprintf("p%d", p)]; got < a {
			if short < 5 {
				t.Errorf("partition p%d: %d acked, %d rows in queen.messages", p, a, got)
			}
			short++
		}
	}
	if short > 0 {
		t.Errorf("%d partitions hold fewer rows than ackcheck counted acked", short)
	}
	if holding < res.PartitionsTouched || int64(len(table)) > scalePartitions {
		t.Errorf("queen.partitions: %d rows, %d holding a message; ackcheck: %d partitions touched of %d", len(table), holding, res.PartitionsTouched, scalePartitions)
	}
	// The scale it is for: most of the name space made by first pushes
	// (acked or not: a push that timed out may still have made its
	// partition).
	if len(table) < scalePartitions*8/10 {
		t.Errorf("queen.partitions holds %d partitions of %d: the load did not reach the scale it is for", len(table), scalePartitions)
	}
	if inTable != res.RecordsRead {
		t.Errorf("queen.messages holds %d rows of the queue; the read-back read %d", inTable, res.RecordsRead)
	}
	t.Logf("queen at %d partitions: acked %d (%v), lost %d; partitions touched %d, rows in queen.partitions %d (%d holding a message); rows in queen.messages %d, read back %d, read-back %.1f s",
		scalePartitions, res.Acked, res.AckedByClass, res.Lost, res.PartitionsTouched, len(table), holding, inTable, res.RecordsRead, res.ReadBackS)
}

// partitionsAcked reads ackcheck's acked count per partition from the
// run's partitions.jsonl.
func partitionsAcked(t *testing.T, out string) map[int32]int64 {
	t.Helper()
	f, err := os.Open(filepath.Join(out, verifier.PartitionsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	acked := map[int32]int64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l verifier.PartitionLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		acked[l.Partition] = l.Acked
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acked) != scalePartitions {
		t.Errorf("%s lists %d partitions, want %d", verifier.PartitionsFile, len(acked), scalePartitions)
	}
	return acked
}
