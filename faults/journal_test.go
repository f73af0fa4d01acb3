package faults

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// switchLog is a driver whose broker-wide modes only record what they were
// set to, so a test sees every undo Heal really applied, in order.
type switchLog struct {
	namedDriver
	sets []string
}

func (s *switchLog) Switches() []string                           { return nil }
func (s *switchLog) Switch(context.Context, string) (bool, error) { return false, nil }
func (s *switchLog) SetSwitch(_ context.Context, name string, on bool) error {
	s.sets = append(s.sets, name+"="+onOff(on))
	return nil
}

func switchUndo(key string) Undo {
	off := "off"
	return Undo{Kind: UndoSwitch, Key: key, Value: &off, Why: key + "-on"}
}

// pendingKeys opens the journal at path as ackcheck does after a crash and
// returns the keys of its pending undos, newest first.
func pendingKeys(t *testing.T, path string) (*Journal, []string) {
	t.Helper()
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	_, undos := j.Pending()
	var keys []string
	for _, u := range undos {
		keys = append(keys, u.Key)
	}
	return j, keys
}

// heal.jsonl reopened with OpenJournal after a crash: the undos added
// before it are pending again, those marked done stay done, and a heal
// after the crash undoes each pending one exactly once. The first journal
// is never closed, as after a SIGKILL of ackcheck: only what Add and Done
// fsynced is there.
func TestJournalReopenedAfterCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heal.jsonl")
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	ids := map[string]int{}
	for _, k := range []string{"a", "b", "c"} {
		if ids[k], err = j.Add(switchUndo(k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Done(ids["b"]); err != nil {
		t.Fatal(err)
	}

	// The crash: a new process opens the same file.
	j2, keys := pendingKeys(t, path)
	if !slices.Equal(keys, []string{"c", "a"}) {
		t.Fatalf("pending after reopen %q, want [c a]: added undos must be pending again, done ones must not", keys)
	}
	// IDs go on after the highest in the file, so that a done line of a
	// new undo cannot mark an old one done.
	idD, err := j2.Add(switchUndo("d"))
	if err != nil {
		t.Fatal(err)
	}
	if idD <= ids["c"] {
		t.Fatalf("new undo got id %d after reopen, not above the file's highest %d", idD, ids["c"])
	}
	sw := &switchLog{}
	healed, err := (&Injector{Driver: sw, Journal: j2}).Heal(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(sw.sets, " ") != "d=off c=off a=off" || len(healed) != 3 {
		t.Fatalf("heal after the crash set %q (healed %q), want d=off c=off a=off", sw.sets, healed)
	}

	// A second crash after the heal: nothing is healed twice.
	j3, keys := pendingKeys(t, path)
	if len(keys) != 0 {
		t.Fatalf("pending after a heal and a reopen: %q; done lines were not kept", keys)
	}
	sw.sets = nil
	if again, err := (&Injector{Driver: sw, Journal: j3}).Heal(context.Background()); err != nil || len(sw.sets) != 0 || len(again) != 0 {
		t.Fatalf("second heal after reopen set %q (healed %q, %v): an undo was healed twice", sw.sets, again, err)
	}
}

// A torn last line (the crash came mid-write, before the fsync the fault
// waits for) is skipped; the lines before it still count, in both
// directions: an add stays pending and a done stays done.
func TestJournalTornLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heal.jsonl")
	j, err := OpenJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := j.Add(switchUndo("a"))
	b, _ := j.Add(switchUndo("b"))
	if err := j.Done(a); err != nil {
		t.Fatal(err)
	}
	j.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"op":"done","id":` + string(rune('0'+b)))
	f.Close()
	if _, keys := pendingKeys(t, path); !slices.Equal(keys, []string{"b"}) {
		t.Fatalf("pending %q, want [b]: a torn done line must not count", keys)
	}
}

// A journal kept in memory (no path) writes nothing and still tracks what
// is pending within the process.
func TestJournalInMemory(t *testing.T) {
	j, err := OpenJournal("")
	if err != nil {
		t.Fatal(err)
	}
	id, err := j.Add(switchUndo("a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, u, ok := j.FindSwitch("a"); !ok || u.Key != "a" {
		t.Fatalf("FindSwitch(a) = %+v, %v", u, ok)
	}
	if err := j.Done(id); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := j.FindSwitch("a"); ok {
		t.Fatal("a done undo is still found")
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}
