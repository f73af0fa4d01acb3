package faults

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/remote"
)

// fileNodes are fake processes whose data dirs are real temp dirs,
// reached with local commands.
type fileNodes struct {
	*fakeNodes
	dirs map[int32]string
}

func (f fileNodes) DataDirOn(id int32) (string, remote.Runner, error) {
	d, ok := f.dirs[id]
	if !ok {
		return "", nil, fmt.Errorf("node %d has no data dir", id)
	}
	return d, remote.Local{}, nil
}

// dataDir writes a node's data dir: two .blk files, an index and an
// empty .blk, the same content for the same seed.
func dataDir(t *testing.T, seed uint64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	rng := rand.New(rand.NewPCG(seed, 1))
	files := map[string]int{"jetstream/s/msgs/1.blk": 20000, "jetstream/s/msgs/2.blk": 70000, "jetstream/s/msgs/1.idx": 300, "jetstream/s/msgs/3.blk": 0}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		n := files[name]
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// readTree is every file under dir, by path relative to it.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func shaHex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// fileInjector is an injector on a 3-node fake cluster whose node 2 has
// dir as its data dir, with its journal at journal ("" in memory).
func fileInjector(t *testing.T, dir, journal string, seed int64) (*Injector, *fakeNodes) {
	t.Helper()
	j, err := OpenJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	fn := newFakeNodes(1, 2, 3)
	return &Injector{Nodes: fileNodes{fn, map[int32]string{2: dir}}, Journal: j, Seed: seed, DataFiles: []string{"*.blk"}}, fn
}

// apply parses and applies one step, and fails the test unless its
// result is want.
func apply(t *testing.T, in *Injector, step string, want Result) Record {
	t.Helper()
	steps, err := ParseSchedule(step)
	if err != nil {
		t.Fatal(err)
	}
	rec := in.Apply(context.Background(), steps[0])
	if rec.Result != want {
		t.Fatalf("%s: %s (%s), want %s", step, rec.Result, rec.Error, want)
	}
	return rec
}

// relChanges are a record's file changes with paths relative to dir and
// no backup paths, to compare two runs.
func relChanges(rec Record, dir string) string {
	var b strings.Builder
	for _, fc := range rec.Files {
		rel, _ := filepath.Rel(dir, fc.File)
		fmt.Fprintf(&b, "%s %d->%d %v cut %d\n", rel, fc.Size, fc.SizeAfter, fc.Bits, fc.Cut)
	}
	return b.String()
}

// The same seed flips the same bits of the same files; another seed
// others. The record's proof holds: each file differs from its original
// in exactly the bits recorded, and its checksums are the bytes'.
func TestBitflipSameSeedSameBits(t *testing.T) {
	run := func(seed int64) (Record, string, map[string][]byte) {
		dir := dataDir(t, 9)
		orig := readTree(t, dir)
		in, _ := fileInjector(t, dir, "", seed)
		apply(t, in, "at=1s kill node:2", Applied)
		return apply(t, in, "at=2s bitflip node:2", Applied), dir, orig
	}
	a, dirA, orig := run(7)
	b, dirB, _ := run(7)
	c, dirC, _ := run(8)
	if relChanges(a, dirA) != relChanges(b, dirB) {
		t.Errorf("seed 7 twice:\n%s\n%s", relChanges(a, dirA), relChanges(b, dirB))
	}
	if relChanges(a, dirA) == relChanges(c, dirC) {
		t.Errorf("seeds 7 and 8 flipped the same bits:\n%s", relChanges(a, dirA))
	}
	if a.Seed != 7 || len(a.Files) != 2 {
		t.Fatalf("seed %d, %d files changed (want the two non-empty .blk files): %+v", a.Seed, len(a.Files), a.Files)
	}
	now := readTree(t, dirA)
	for _, fc := range a.Files {
		rel, _ := filepath.Rel(dirA, fc.File)
		before, after := orig[rel], now[rel]
		if fc.SHA256Before != shaHex(before) || fc.SHA256After != shaHex(after) || fc.SHA256Before == fc.SHA256After {
			t.Errorf("%s: checksums %s -> %s do not prove the change", rel, fc.SHA256Before, fc.SHA256After)
		}
		flipped := 0
		for i := range before {
			flipped += bits.OnesCount8(before[i] ^ after[i])
		}
		if flipped != bitsPerFile || len(fc.Bits) != bitsPerFile {
			t.Errorf("%s: %d bits differ, %d recorded; want %d", rel, flipped, len(fc.Bits), bitsPerFile)
		}
		for _, bt := range fc.Bits {
			if before[bt.Offset] != bt.Before || after[bt.Offset] != bt.After || bt.Before^bt.After != 1<<bt.Bit {
				t.Errorf("%s: bit %+v is not what the file shows", rel, bt)
			}
		}
	}
	if !bytes.Equal(now["jetstream/s/msgs/1.idx"], orig["jetstream/s/msgs/1.idx"]) {
		t.Error("the .idx file, which *.blk does not match, changed")
	}
}

// A truncate cuts each file by what it records, and keeps the rest.
func TestTruncateRecordsItsCut(t *testing.T) {
	dir := dataDir(t, 3)
	orig := readTree(t, dir)
	in, _ := fileInjector(t, dir, "", 11)
	apply(t, in, "at=1s stop node:2", Applied)
	rec := apply(t, in, "at=2s truncate node:2 *.blk", Applied)
	now := readTree(t, dir)
	for _, fc := range rec.Files {
		rel, _ := filepath.Rel(dir, fc.File)
		if fc.Cut < 1 || fc.SizeAfter != fc.Size-fc.Cut || int64(len(now[rel])) != fc.SizeAfter {
			t.Errorf("%s: cut %d, size %d -> %d, file has %d", rel, fc.Cut, fc.Size, fc.SizeAfter, len(now[rel]))
		}
		if !bytes.HasPrefix(orig[rel], now[rel]) || fc.SHA256After != shaHex(now[rel]) {
			t.Errorf("%s: what is left is not the original's start, or its checksum is wrong", rel)
		}
	}
	if len(rec.Files) != 2 {
		t.Errorf("%d files cut, want 2", len(rec.Files))
	}
}

// A file fault on a running node fails with the reason, and changes and
// journals nothing.
func TestFileFaultRefusedOnRunningNode(t *testing.T) {
	for _, action := range []string{"bitflip", "truncate", "stale"} {
		dir := dataDir(t, 5)
		orig := readTree(t, dir)
		in, _ := fileInjector(t, dir, "", 1)
		rec := apply(t, in, "at=2s "+action+" node:2", Failed)
		if !strings.Contains(rec.Error, "node 2 runs as PID") {
			t.Errorf("%s: error %q does not say the node runs", action, rec.Error)
		}
		if _, pending := in.Journal.Pending(); len(pending) != 0 {
			t.Errorf("%s: journaled %v", action, pending)
		}
		if !equalTrees(orig, readTree(t, dir)) {
			t.Errorf("%s changed the files of a running node", action)
		}
	}
}

func equalTrees(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// A heal after a killed ackcheck (its own heal never ran: the journal is
// read again by another injector, as `ackcheck heal` does) puts every
// file back byte-identical, removes the copies, and starts the node.
// Two faults on the same files (a bitflip, then a truncate) come back in
// the right order, newest first.
func TestHealAfterKilledAckcheckRestoresFiles(t *testing.T) {
	dir := dataDir(t, 21)
	orig := readTree(t, dir)
	journal := filepath.Join(t.TempDir(), "heal.jsonl")
	in, fn := fileInjector(t, dir, journal, 3)
	apply(t, in, "at=1s kill node:2", Applied)
	apply(t, in, "at=2s bitflip node:2", Applied)
	apply(t, in, "at=3s truncate node:2 *.blk", Applied)
	if equalTrees(orig, readTree(t, dir)) {
		t.Fatal("the faults changed nothing")
	}
	in.Journal.Close() // ackcheck is killed here: no heal

	j, err := OpenJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	healer := &Injector{Nodes: fileNodes{fn, map[int32]string{2: dir}}, Journal: j}
	done, err := healer.Heal(context.Background())
	if err != nil {
		t.Fatalf("heal: %v (%v)", err, done)
	}
	if got := readTree(t, dir); !equalTrees(orig, got) {
		t.Error("after the heal the files differ from before the faults")
	}
	if left, _ := os.ReadDir(backupDir(dir)); len(left) != 0 {
		t.Errorf("copies left beside the data dir: %d", len(left))
	}
	if pid, _ := fn.PID(context.Background(), 2); pid == 0 {
		t.Error("the heal did not start the node")
	}
	if _, pending := j.Pending(); len(pending) != 0 {
		t.Errorf("still pending after the heal: %v", pending)
	}
	// Healing again changes nothing and fails nothing.
	if _, err := healer.Heal(context.Background()); err != nil {
		t.Errorf("a second heal: %v", err)
	}
}

// stale puts the snapshot's chunk back over what the broker wrote since;
// without a snapshot it fails with why; the heal puts the newer bytes back.
func TestStalePutsSnapshotBack(t *testing.T) {
	dir := dataDir(t, 4)
	in, _ := fileInjector(t, dir, "", 5)
	apply(t, in, "at=1s kill node:2", Applied)
	if rec := apply(t, in, "at=2s stale node:2", Failed); !strings.Contains(rec.Error, "no snapshot") {
		t.Errorf("stale without a snapshot: %q", rec.Error)
	}
	apply(t, in, "at=3s restart node:2", Applied)
	snap := apply(t, in, "at=4s snapshot node:2 1.blk", Applied) // a snapshot reads a running node's files
	if len(snap.Files) != 1 || snap.Files[0].Chunk == nil || snap.Files[0].Chunk.Len != 20000 {
		t.Fatalf("snapshot saved %+v", snap.Files)
	}
	p := snap.Files[0].File
	old, _ := os.ReadFile(p)
	newer := bytes.Repeat([]byte{0xAB}, len(old)) // the broker rewrote the file since
	if err := os.WriteFile(p, newer, 0o644); err != nil {
		t.Fatal(err)
	}
	apply(t, in, "at=5s kill node:2", Applied)
	rec := apply(t, in, "at=6s stale node:2", Applied)
	if got, _ := os.ReadFile(p); !bytes.Equal(got, old) {
		t.Error("stale did not put the snapshot's bytes back")
	}
	if len(rec.Files) != 1 || rec.Files[0].SHA256Before != shaHex(newer) || rec.Files[0].SHA256After != shaHex(old) {
		t.Errorf("stale's proof: %+v", rec.Files)
	}
	if _, err := in.Heal(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, newer) {
		t.Error("the heal did not put back the bytes stale replaced")
	}
}

// A glob without a slash picks files by name at any depth; one with a
// slash, by their path relative to the data dir, each part alone.
func TestFileFaultGlobs(t *testing.T) {
	dir := dataDir(t, 1)
	for _, tc := range []struct {
		glob string
		want []string
	}{
		{"*.blk", []string{"jetstream/s/msgs/1.blk", "jetstream/s/msgs/2.blk", "jetstream/s/msgs/3.blk"}},
		{"1.*", []string{"jetstream/s/msgs/1.blk", "jetstream/s/msgs/1.idx"}},
		{"jetstream/s/msgs/2.blk", []string{"jetstream/s/msgs/2.blk"}},
		{"jetstream/*/msgs/*.idx", []string{"jetstream/s/msgs/1.idx"}},
		{"*/*.blk", nil}, // a star does not cross a slash
		{"msgs/*.blk", nil},
	} {
		files, err := fileOps{r: remote.Local{}}.list(context.Background(), dir, []string{tc.glob})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range files {
			rel, _ := filepath.Rel(dir, f.path)
			got = append(got, rel)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.glob, got, tc.want)
		}
	}
}

// Preflight refuses a file fault that cannot reach the files or has
// none to pick, before anything applies.
func TestFileFaultPreflight(t *testing.T) {
	dir := dataDir(t, 1)
	steps, _ := ParseSchedule("at=1s kill node:2; at=2s bitflip node:2; at=3s restart node:2")
	tests := []struct {
		name string
		env  Env
		want string
	}{
		{"no glob anywhere", Env{Nodes: fileNodes{newFakeNodes(1, 2, 3), map[int32]string{2: dir}}}, "names no data files"},
		{"no data dirs", Env{Nodes: newFakeNodes(1, 2, 3), DataFiles: []string{"*.blk"}}, "cannot reach these nodes' data files"},
		{"no data dir for the node", Env{Nodes: fileNodes{newFakeNodes(1, 2, 3), map[int32]string{1: dir}}, DataFiles: []string{"*.blk"}}, "node 2 has no data dir"},
	}
	for _, tc := range tests {
		if err := Preflight(context.Background(), tc.env, steps); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	ok := Env{Nodes: fileNodes{newFakeNodes(1, 2, 3), map[int32]string{2: dir}}, DataFiles: []string{"*.blk"}}
	if err := Preflight(context.Background(), ok, steps); err != nil {
		t.Errorf("a file fault that can run: %v", err)
	}
}

// Globs are one name pattern; the step writes them back as read.
func TestParseFileFaults(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"at=2s bitflip node:2 *.blk", "at=2s bitflip node:2 *.blk", ""},
		{"at=2s truncate node:1", "at=2s truncate node:1", ""},
		{"at=2s stale previous", "at=2s stale previous", ""},
		{"at=2s bitflip node:2 orders-0/*.log", "at=2s bitflip node:2 orders-0/*.log", ""},
		{"at=2s bitflip node:2 /data/*.blk", "", "relative to it"},
		{"at=2s bitflip node:2 ../*.blk", "", "relative to it"},
		{"at=2s bitflip node:2 s/", "", "relative to it"},
		{"at=2s bitflip node:2 [", "", "syntax error"},
		{"at=2s bitflip node:2 *.blk *.idx", "", "one glob"},
		{"at=2s bitflip leader:t/0", "", "cannot target"},
		{"at=2s disk-error node:2 fsync 50%", "at=2s disk-error node:2 fsync 50%", ""},
		{"at=2s disk-error node:2 write", "at=2s disk-error node:2 write", ""},
		{"at=2s disk-error node:2", "", "needs the call"},
		{"at=2s disk-error node:2 open", "", "use fsync, write or read"},
		{"at=2s disk-error node:2 read 150%", "", "%"},
		{"at=2s disk-ok node:2 fsync", "", "not in the form"},
	} {
		steps, err := ParseSchedule(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || steps[0].String() != tc.want {
			t.Errorf("%q: %v %v, want %q", tc.in, steps, err, tc.want)
		}
	}
}

// Preflight refuses a file fault on a node the schedule has not taken
// down at that moment, and takes one on a node killed before it.
func TestPreflightFileFaultNeedsNodeDown(t *testing.T) {
	env := Env{Nodes: fileNodes{newFakeNodes(1, 2, 3), map[int32]string{2: dataDir(t, 1)}}, DataFiles: []string{"*.blk"}}
	for _, tc := range []struct {
		sched string
		ok    bool
	}{
		{"at=1s kill node:2; at=2s bitflip node:2; at=3s restart node:2", true},
		{"at=1s stop node:2; at=2s truncate node:2 *.blk; at=3s stale node:2", false},
		{"at=1s snapshot node:2; at=2s stop node:2; at=3s truncate node:2 *.blk; at=4s stale node:2", true},
		{"at=2s bitflip node:2", false},
		{"at=1s kill node:1; at=2s bitflip node:2", false},
		{"at=1s kill node:2; at=2s restart node:2; at=3s truncate node:2", false},
		{"at=1s snapshot node:2", true},
	} {
		steps, err := ParseSchedule(tc.sched)
		if err != nil {
			t.Fatal(err)
		}
		err = Preflight(context.Background(), env, steps)
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v, want ok %v", tc.sched, err, tc.ok)
		} else if err != nil && !strings.Contains(err.Error(), "runs then") && !strings.Contains(err.Error(), "no snapshot of node 2") {
			t.Errorf("%q: %v does not say why", tc.sched, err)
		}
	}
}

// A heal while the node runs again (the schedule restarted it) stops it
// once, puts every file back, and starts it once, after the last file.
func TestHealStopsARunningNodeOnce(t *testing.T) {
	dir := dataDir(t, 8)
	orig := readTree(t, dir)
	in, fn := fileInjector(t, dir, "", 2)
	apply(t, in, "at=1s kill node:2", Applied)
	apply(t, in, "at=2s bitflip node:2", Applied)
	apply(t, in, "at=3s restart node:2", Applied)
	if got := in.InForce(); got != "bitflip of node 2's data files" {
		t.Errorf("in force: %q", got)
	}
	before, _ := fn.PID(context.Background(), 2)
	fn.signals = nil
	done, err := in.Heal(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !equalTrees(orig, readTree(t, dir)) {
		t.Error("files differ after the heal")
	}
	after, _ := fn.PID(context.Background(), 2)
	if len(fn.signals) != 1 || after == 0 || after == before {
		t.Errorf("signals %v, PID %d -> %d: want one stop and a new process (%v)", fn.signals, before, after, done)
	}
	if !strings.Contains(done[len(done)-1], "start node 2") {
		t.Errorf("the last undo is not the node's start: %v", done)
	}
}
