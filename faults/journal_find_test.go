package faults

import "testing"

// The journal's look-ups see only pending undos: Find the newest of a kind
// for a node (id 0 included), HasTopicConfig and HasNodeConfig only for the
// exact topic and key or node, and none of them an undo marked done.
func TestJournalLookups(t *testing.T) {
	j, err := OpenJournal("") // in memory: the look-ups are the same
	if err != nil {
		t.Fatal(err)
	}
	add := func(u Undo) int {
		id, err := j.Add(u)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	resume1 := add(Undo{Kind: UndoResume, Node: 1}) // id 0
	add(Undo{Kind: UndoStart, Node: 1})
	add(Undo{Kind: UndoResume, Node: 2})
	add(Undo{Kind: UndoTopicConfig, Topic: "orders", Key: "min.insync.replicas"})
	add(Undo{Kind: UndoNodeConfig, Node: 3})

	find := []struct {
		kind    UndoKind
		node    int32
		id      int
		pending bool
	}{
		{UndoResume, 1, resume1, true},
		{UndoStart, 1, 1, true},
		{UndoResume, 2, 2, true},
		{UndoResume, 3, 0, false},
		{UndoStart, 2, 0, false},
	}
	for _, tc := range find {
		if id, ok := j.Find(tc.kind, tc.node); ok != tc.pending || (ok && id != tc.id) {
			t.Errorf("Find(%s, %d) = %d, %v; want %d, %v", tc.kind, tc.node, id, ok, tc.id, tc.pending)
		}
	}
	// The newest of two pending undos of one kind and node.
	resume1b := add(Undo{Kind: UndoResume, Node: 1})
	if id, ok := j.Find(UndoResume, 1); !ok || id != resume1b {
		t.Errorf("Find(resume, 1) with two pending = %d, %v; want the newer, %d", id, ok, resume1b)
	}
	for _, tc := range []struct {
		topic, key string
		want       bool
	}{
		{"orders", "min.insync.replicas", true},
		{"orders", "retention.ms", false},
		{"payments", "min.insync.replicas", false},
	} {
		if got := j.HasTopicConfig(tc.topic, tc.key); got != tc.want {
			t.Errorf("HasTopicConfig(%s, %s) = %v, want %v", tc.topic, tc.key, got, tc.want)
		}
	}
	if !j.HasNodeConfig(3) || j.HasNodeConfig(1) {
		t.Errorf("HasNodeConfig(3) = %v, HasNodeConfig(1) = %v; want true, false", j.HasNodeConfig(3), j.HasNodeConfig(1))
	}

	for _, id := range []int{resume1, resume1b, 3, 4} {
		if err := j.Done(id); err != nil {
			t.Fatal(err)
		}
	}
	if id, ok := j.Find(UndoResume, 1); ok {
		t.Errorf("Find(resume, 1) after both were done = %d", id)
	}
	if j.HasTopicConfig("orders", "min.insync.replicas") || j.HasNodeConfig(3) {
		t.Error("an undo marked done is still found")
	}
}
