package verifier

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/ledger"
	"github.com/ackcheck/ackcheck/message"
)

// msgSpec is one message of a hand-made shard: its ID, whether the broker
// acked it and whether the read-back found it.
type msgSpec struct {
	producer     uint32
	seq          uint64
	acked, found bool
}

// mergeShard is one hand-made shard ledger for the merge's tests. A nil
// ledger (broken set) stands for a directory whose ledger was refused.
type mergeShard struct {
	index     int
	base      uint32
	producers int
	msgs      []msgSpec
	recs      []faults.Record         // fault records kept in its ledger
	info      func(i *ledger.RunInfo) // changes to its run description
	broken    error                   // set: no ledger, this error
}

// shardStart is the load start the hand-made shards' run descriptions
// state (before info changes it).
var shardStart = time.Unix(1_700_000_000, 0)

// writeShards writes the shards' ledgers (count shards in the run) and one
// reads ledger holding every found message, and opens them read-only as
// verify does.
func writeShards(t *testing.T, count int, shards []mergeShard) Ledgers {
	t.Helper()
	dir := t.TempDir()
	reads, err := ledger.Open(filepath.Join(dir, "reads"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var off int64
	var lg Ledgers
	for k, s := range shards {
		d := filepath.Join(dir, fmt.Sprint("shard-", k))
		if s.broken != nil {
			lg.Shards = append(lg.Shards, Shard{Index: s.index, Dir: d, Err: s.broken})
			continue
		}
		l, err := ledger.Open(d, ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range s.msgs {
			at := shardStart.Add(time.Duration(i) * time.Millisecond).UnixNano()
			must(t, l.Record(ledger.Send, ledger.Event{Producer: m.producer, Seq: m.seq, Time: at}))
			if m.acked {
				must(t, l.Record(ledger.Outcome, ledger.Event{Producer: m.producer, Seq: m.seq, Status: ledger.OutcomeAcked, Offset: off, Time: int64(time.Millisecond)}))
			}
			if m.found {
				must(t, reads.Record(ledger.Read, ledger.Event{Producer: m.producer, Seq: m.seq, Offset: off, Status: uint8(message.Valid)}))
			}
			off++
		}
		run := ledger.RunInfo{RunID: 7, Driver: "hand", Topic: "t", Producers: s.producers, StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 0}),
			LoadStart: shardStart, LoadEnd: shardStart.Add(time.Second), Clean: true,
			Shard: &ledger.ShardInfo{Index: s.index, Count: count, ProducerBase: s.base}}
		if s.info != nil {
			s.info(&run)
		}
		must(t, l.PutMeta(ledger.MetaRun, run))
		if s.recs != nil {
			must(t, l.PutMeta(faults.MetaKey, s.recs))
		}
		must(t, l.Close())
		ro, err := ledger.OpenReadOnly(d, ledger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ro.Close() })
		lg.Shards = append(lg.Shards, Shard{Index: s.index, Dir: d, Ledger: ro})
	}
	must(t, reads.PutMeta(MetaReadBack, ReadBackReport{RunID: RunIDText(7), Complete: true, Records: off}))
	must(t, reads.Close())
	ro, err := ledger.OpenReadOnly(filepath.Join(dir, "reads"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	lg.Reads = ro
	return lg
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// msgs returns n messages of producer p from seq 0, acked and found as
// given.
func msgs(p uint32, n int, acked, found bool) []msgSpec {
	out := make([]msgSpec, n)
	for i := range out {
		out[i] = msgSpec{producer: p, seq: uint64(i), acked: acked, found: found}
	}
	return out
}

// Each shard's own figures (Result.Shards): a message counts to the shard
// whose producer range holds it, from the range's first producer to its
// last, and to no other; a shard that is missing or damaged keeps its
// status and error and counts nothing, and the copies of its producers'
// messages the read-back finds are counted to no shard. The verdict over a
// shard it could not check is no PASS, and says which shard and why.
func TestShardFigures(t *testing.T) {
	damaged := fmt.Errorf("open the ledger: %w: a fragment does not read back", ledger.ErrDamaged)
	cat := func(ms ...[]msgSpec) []msgSpec {
		var out []msgSpec
		for _, m := range ms {
			out = append(out, m...)
		}
		return out
	}
	tests := []struct {
		name    string
		count   int
		shards  []mergeShard
		want    []ShardStatus // Dir and Proof not compared
		verdict string
		reason  string // the whole of Result.Ledger.Reason
	}{
		{
			name:  "three whole shards, losses in the first",
			count: 3,
			shards: []mergeShard{
				// Producer 1 is shard 0's last, 2 shard 1's first.
				{index: 0, base: 0, producers: 2, msgs: cat(msgs(0, 5, true, true), msgs(1, 3, true, false))},
				{index: 1, base: 2, producers: 2, msgs: cat(msgs(2, 4, true, true), msgs(3, 2, false, false))},
				{index: 2, base: 4, producers: 1, msgs: msgs(4, 6, true, true)},
			},
			want: []ShardStatus{
				{Index: 0, Status: ShardWhole, Clean: true, Producers: [2]uint32{0, 2}, Sent: 8, Acked: 8, Lost: 3},
				{Index: 1, Status: ShardWhole, Clean: true, Producers: [2]uint32{2, 4}, Sent: 6, Acked: 4, Lost: 0},
				{Index: 2, Status: ShardWhole, Clean: true, Producers: [2]uint32{4, 5}, Sent: 6, Acked: 6, Lost: 0},
			},
			verdict: Fail,
		},
		{
			name:  "the last shard damaged, its copies read back",
			count: 3,
			shards: []mergeShard{
				{index: 0, base: 0, producers: 2, msgs: cat(msgs(0, 5, true, true), msgs(1, 3, true, true))},
				{index: 1, base: 2, producers: 2, msgs: msgs(2, 4, true, true)},
				// Its ledger refused: only its copies in the topic remain.
				{index: 2, base: 4, producers: 1, msgs: msgs(4, 6, true, true)},
			},
			want: []ShardStatus{
				{Index: 0, Status: ShardWhole, Clean: true, Producers: [2]uint32{0, 2}, Sent: 8, Acked: 8},
				{Index: 1, Status: ShardWhole, Clean: true, Producers: [2]uint32{2, 4}, Sent: 4, Acked: 4},
				{Index: 2, Status: ShardDamaged, Error: damaged.Error()},
			},
			verdict: Unproven,
			reason:  "shard 2 of 3 is damaged (" + damaged.Error() + "): its acks cannot be checked",
		},
		{
			name:  "the first shard missing",
			count: 2,
			shards: []mergeShard{
				{index: 1, base: 2, producers: 2, msgs: msgs(3, 4, true, true)},
			},
			want: []ShardStatus{
				{Index: 0, Status: ShardMissing, Error: "no run directory of this shard was given"},
				{Index: 1, Status: ShardWhole, Clean: true, Producers: [2]uint32{2, 4}, Sent: 4, Acked: 4},
			},
			verdict: Unproven,
			reason:  "shard 0 of 2 is missing (no run directory of this shard was given): its acks cannot be checked",
		},
		{
			name:  "the first shard damaged",
			count: 2,
			shards: []mergeShard{
				{index: 0, broken: damaged},
				{index: 1, base: 2, producers: 2, msgs: msgs(2, 4, true, true)},
			},
			want: []ShardStatus{
				{Index: 0, Status: ShardDamaged, Error: damaged.Error()},
				{Index: 1, Status: ShardWhole, Clean: true, Producers: [2]uint32{2, 4}, Sent: 4, Acked: 4},
			},
			verdict: Unproven,
			// Said once: its number is known, so it is not also listed as a
			// directory of no known shard.
			reason: "shard 0 of 2 is damaged (" + damaged.Error() + "): its acks cannot be checked",
		},
		{
			name:  "a directory whose shard number is unknown",
			count: 2,
			shards: []mergeShard{
				{index: 0, base: 0, producers: 1, msgs: msgs(0, 3, true, true)},
				{index: 1, base: 1, producers: 1, msgs: msgs(1, 3, true, true)},
				{index: -1, broken: fmt.Errorf("read run.json: no such file")},
			},
			want: []ShardStatus{
				{Index: 0, Status: ShardWhole, Clean: true, Producers: [2]uint32{0, 1}, Sent: 3, Acked: 3},
				{Index: 1, Status: ShardWhole, Clean: true, Producers: [2]uint32{1, 2}, Sent: 3, Acked: 3},
			},
			verdict: Unproven,
			reason:  "DIR2: read run.json: no such file",
		},
		{
			name:  "a directory numbered past the shard count",
			count: 2,
			shards: []mergeShard{
				{index: 0, base: 0, producers: 1, msgs: msgs(0, 3, true, true)},
				{index: 1, base: 1, producers: 1, msgs: msgs(1, 3, true, true)},
				{index: 2, broken: fmt.Errorf("read run.json: no such file")},
			},
			want: []ShardStatus{
				{Index: 0, Status: ShardWhole, Clean: true, Producers: [2]uint32{0, 1}, Sent: 3, Acked: 3},
				{Index: 1, Status: ShardWhole, Clean: true, Producers: [2]uint32{1, 2}, Sent: 3, Acked: 3},
			},
			verdict: Unproven,
			reason:  "DIR2: read run.json: no such file",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			specs := tc.shards
			if tc.name == "the last shard damaged, its copies read back" {
				// Write shard 2's ledger (so its copies are in the reads
				// ledger), then hand the verdict its directory as refused.
				lg := writeShards(t, tc.count, specs)
				lg.Shards[2] = Shard{Index: 2, Dir: lg.Shards[2].Dir, Err: damaged}
				check(t, lg, tc.want, tc.verdict, tc.reason)
				return
			}
			lg := writeShards(t, tc.count, specs)
			check(t, lg, tc.want, tc.verdict, strings.ReplaceAll(tc.reason, "DIR2", lg.Shards[len(lg.Shards)-1].Dir))
		})
	}
}

func check(t *testing.T, lg Ledgers, want []ShardStatus, verdict, reason string) {
	t.Helper()
	res, err := CheckLedgers(context.Background(), lg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != verdict {
		t.Errorf("verdict %s %v, want %s", res.Verdict, res.Reasons, verdict)
	}
	got := make([]ShardStatus, len(res.Shards))
	for i, s := range res.Shards {
		s.Dir, s.Proof = "", nil
		got[i] = s
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shards\n%+v\nwant\n%+v", got, want)
	}
	if res.Ledger == nil {
		t.Fatal("no ledger proof in the result")
	}
	if res.Ledger.Whole != (reason == "") || res.Ledger.Reason != reason {
		t.Errorf("ledger whole %v, reason %q; want reason %q", res.Ledger.Whole, res.Ledger.Reason, reason)
	}
}

// The merged run description a sharded run is judged by (ShardRun): the
// earliest load start and the latest end, clean only if every shard is,
// producers up to the highest shard's last, each partition's lowest start
// offset, sums of the shed, error and ack-class counts, the worst shard's
// lags with every shard's count, the highest steal, each note once.
func TestShardRunMerged(t *testing.T) {
	steal := func(v float64) *float64 { return &v }
	infos := []func(i *ledger.RunInfo){
		func(i *ledger.RunInfo) {
			i.LoadStart, i.LoadEnd = shardStart.Add(2*time.Second), shardStart.Add(60*time.Second)
			i.StartOffsets = drivers.OffsetsOf(map[int32]int64{0: 100, 1: 7})
			i.Shed = 3
			i.Errors = map[string]int64{"timeout": 2}
			i.CallbackTime = &ledger.LagSummary{Count: 10, P50Us: 5, P99Us: 900, MaxUs: 1000}
			i.StealPct = steal(4.5)
			i.Notes = []string{"a", "b"}
		},
		func(i *ledger.RunInfo) {
			i.LoadStart, i.LoadEnd = shardStart, shardStart.Add(50*time.Second)
			i.StartOffsets = drivers.OffsetsOf(map[int32]int64{0: 90, 2: 11})
			i.Clean = false
			i.Shed = 4
			i.Errors = map[string]int64{"timeout": 5, "refused": 1}
			i.AckClasses = map[string]int64{"leader": 9}
			i.PacingLag = &ledger.LagSummary{Count: 4, P50Us: 1, P99Us: 40, MaxUs: 50}
			i.CallbackTime = &ledger.LagSummary{Count: 20, P50Us: 7, P99Us: 800, MaxUs: 2000}
			i.StealPct = steal(1.5)
			i.Notes = []string{"b", "c"}
		},
		func(i *ledger.RunInfo) {
			i.LoadStart, i.LoadEnd = shardStart.Add(time.Second), shardStart.Add(55*time.Second)
			i.StartOffsets = drivers.OffsetsOf(map[int32]int64{1: 6})
			i.StealPct = steal(9)
		},
	}
	lg := writeShards(t, 3, []mergeShard{
		// Given out of order: the merge sorts them by shard number.
		{index: 2, base: 7, producers: 3, msgs: msgs(7, 1, true, true), info: infos[2]},
		{index: 0, base: 0, producers: 2, msgs: msgs(0, 1, true, true), info: infos[0]},
		{index: 1, base: 2, producers: 5, msgs: msgs(2, 1, true, true), info: infos[1]},
	})
	got, err := ShardRun(lg.Shards)
	if err != nil {
		t.Fatal(err)
	}
	want := ledger.RunInfo{RunID: 7, Driver: "hand", Topic: "t", Producers: 10,
		StartOffsets: drivers.OffsetsOf(map[int32]int64{0: 90, 1: 6, 2: 11}),
		LoadStart:    shardStart, LoadEnd: shardStart.Add(60 * time.Second), Clean: false, Shed: 7,
		Errors:       map[string]int64{"timeout": 7, "refused": 1},
		AckClasses:   map[string]int64{"leader": 9},
		PacingLag:    &ledger.LagSummary{Count: 4, P50Us: 1, P99Us: 40, MaxUs: 50},
		CallbackTime: &ledger.LagSummary{Count: 30, P50Us: 5, P99Us: 900, MaxUs: 2000},
		StealPct:     steal(9),
		Notes:        []string{"a", "b", "c"},
		Shard:        &ledger.ShardInfo{Index: -1, Count: 3},
	}
	got.LoadStart, got.LoadEnd = got.LoadStart.Local(), got.LoadEnd.Local()
	want.LoadStart, want.LoadEnd = want.LoadStart.Local(), want.LoadEnd.Local()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged run\n%+v\nwant\n%+v", got, want)
		for _, p := range []struct {
			name string
			a, b *ledger.LagSummary
		}{{"pacing", got.PacingLag, want.PacingLag}, {"callback", got.CallbackTime, want.CallbackTime}} {
			t.Logf("%s lag %+v, want %+v", p.name, p.a, p.b)
		}
	}
}

// Where a sharded run's fault records come from: the one shard that
// applied faults, or the fault timeline kept beside the shards (which
// wins, and whose doubts make the verdict no PASS); two shards that both
// applied faults are refused.
func TestShardFaultRecords(t *testing.T) {
	rec := func(node int32, at float64) []faults.Record {
		return []faults.Record{{Action: faults.Pause, Node: node, Target: fmt.Sprint("node:", node), Result: faults.Applied,
			At: shardStart.Add(time.Duration(at * float64(time.Second)))}}
	}
	tests := []struct {
		name     string
		recs     [2][]faults.Record // kept in shard 0's and shard 1's ledgers
		timeline *FaultTimeline
		faults   []string // the verdict's faults, "action target"
		verdict  string
		errHas   string
		reason   string
	}{
		{name: "no faults", verdict: Pass},
		{name: "shard 0 applied them", recs: [2][]faults.Record{rec(1, 0.2), nil}, faults: []string{"pause node:1"}, verdict: Pass},
		{name: "shard 1 applied them", recs: [2][]faults.Record{nil, rec(2, 0.3)}, faults: []string{"pause node:2"}, verdict: Pass},
		{name: "both applied faults", recs: [2][]faults.Record{rec(1, 0.2), rec(2, 0.3)}, errHas: "shards 0 and 1 both applied faults"},
		{name: "the timeline wins over a shard's", recs: [2][]faults.Record{rec(1, 0.2), nil},
			timeline: &FaultTimeline{Records: rec(3, 0.4), Source: "faults.json"}, faults: []string{"pause node:3"}, verdict: Pass},
		{name: "a timeline that cannot be trusted", timeline: &FaultTimeline{Records: rec(3, 0.4), Source: "faults.json",
			Unproven: "the fault applier did not finish"}, faults: []string{"pause node:3"}, verdict: Unproven,
			reason: "the fault applier did not finish"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lg := writeShards(t, 2, []mergeShard{
				{index: 0, base: 0, producers: 1, msgs: msgs(0, 4, true, true), recs: tc.recs[0]},
				{index: 1, base: 1, producers: 1, msgs: msgs(1, 4, true, true), recs: tc.recs[1]},
			})
			lg.Timeline = tc.timeline
			res, err := CheckLedgers(context.Background(), lg, Options{})
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err %v, want %q", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range res.Faults {
				got = append(got, fmt.Sprint(f.Action, " ", f.Target))
			}
			if !reflect.DeepEqual(got, tc.faults) {
				t.Errorf("faults %q, want %q", got, tc.faults)
			}
			if res.Verdict != tc.verdict || res.Ledger.Reason != tc.reason {
				t.Errorf("verdict %s (%q), want %s (%q)", res.Verdict, res.Ledger.Reason, tc.verdict, tc.reason)
			}
			note := ""
			if tc.timeline != nil {
				note = fmt.Sprintf("fault timeline: %d records from %s", len(tc.timeline.Records), tc.timeline.Source)
			}
			if has := len(res.Notes) > 0 && res.Notes[len(res.Notes)-1] == note; has != (note != "") {
				t.Errorf("notes %q, want the last %q", res.Notes, note)
			}
		})
	}
}

// A shard's ledger that holds a producer outside its own range stops the
// merge with an error naming the shard and the producer, whether it lies
// below the range, just past it, or past it in a run that starts inside.
func TestShardProducerOutsideItsRange(t *testing.T) {
	tests := []struct {
		name string
		msgs []msgSpec
		want string
	}{
		{"below", msgs(1, 3, true, true), "shard 1's ledger holds producer 1, outside its own producers 2-3"},
		{"just past", msgs(4, 3, true, true), "shard 1's ledger holds producer 4, outside its own producers 2-3"},
		// A ledger's run holds one producer (its fragments do), so the chain
		// sees producer 5 in a run of its own after producer 2's.
		{"past, after events inside", append(msgs(2, 3, true, true), msgs(5, 2, true, true)...), "shard 1's ledger holds producer 5, outside its own producers 2-3"},
		{"inside, first and last", append(msgs(2, 3, true, true), msgs(3, 2, true, true)...), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lg := writeShards(t, 2, []mergeShard{
				{index: 0, base: 0, producers: 2, msgs: msgs(0, 4, true, true)},
				{index: 1, base: 2, producers: 2, msgs: tc.msgs},
			})
			res, err := CheckLedgers(context.Background(), lg, Options{})
			if tc.want == "" {
				if err != nil || res.Verdict != Pass {
					t.Fatalf("err %v, result %+v", err, res)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ledger.ErrDamaged) {
				t.Fatalf("err %v, want %q (damaged)", err, tc.want)
			}
		})
	}
}
