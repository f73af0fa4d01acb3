package faults

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Found by cmd/ackcheck's TestHealAfterKilledBinaryRestoresFlippedFiles:
// an ackcheck SIGKILLed while it copied a file (the copy half written,
// the file not yet changed) left a copy the heal did not know of, for
// the copy was journaled only once checked. Now the undo is journaled
// first, and the heal of a file that still holds the original leaves the
// file alone and removes the partial copy; a changed file beside it (its
// copy whole) is put back.
func TestHealAfterKillMidCopy(t *testing.T) {
	dir := dataDir(t, 33)
	orig := readTree(t, dir)
	journal := filepath.Join(t.TempDir(), "heal.jsonl")
	in, fn := fileInjector(t, dir, journal, 4)
	apply(t, in, "at=1s kill node:2", Applied)
	flip := apply(t, in, "at=2s bitflip node:2 *.idx", Applied)
	if len(flip.Files) != 1 || equalTrees(orig, readTree(t, dir)) {
		t.Fatalf("the bitflip changed %d files", len(flip.Files))
	}
	// The kill mid-copy: the next file's undo journaled, half its copy
	// written, the file itself untouched.
	untouched := filepath.Join(dir, "jetstream/s/msgs/2.blk")
	partial := filepath.Join(backupDir(dir), "99-2.blk")
	if err := os.WriteFile(partial, orig["jetstream/s/msgs/2.blk"][:1000], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Journal.Add(Undo{Kind: UndoFile, Node: 2, File: untouched, Backup: partial,
		Sum: shaHex(orig["jetstream/s/msgs/2.blk"]), Why: "bitflip of node 2's data files"}); err != nil {
		t.Fatal(err)
	}
	in.Journal.Close()

	j, err := OpenJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	healer := &Injector{Nodes: fileNodes{fn, map[int32]string{2: dir}}, Journal: j}
	if done, err := healer.Heal(context.Background()); err != nil {
		t.Fatalf("heal: %v (%v)", err, done)
	}
	if !equalTrees(orig, readTree(t, dir)) {
		t.Error("after the heal the files differ from before (the partial copy was put back?)")
	}
	if left, _ := os.ReadDir(backupDir(dir)); len(left) != 0 {
		t.Errorf("copies left beside the data dir: %d", len(left))
	}
}
