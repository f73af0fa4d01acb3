package faults

import "testing"

// An undo says what healing it will do, in the heal report and the
// journal's pending list: the value it restores when it has one, and what
// no value means for its kind (a topic setting back to its default, a
// switch off).
func TestUndoString(t *testing.T) {
	v := func(s string) *string { return &s }
	for _, tc := range []struct {
		u    Undo
		want string
	}{
		{Undo{Kind: UndoResume, Node: 2}, "resume node 2"},
		{Undo{Kind: UndoStart, Node: 3}, "start node 3"},
		{Undo{Kind: UndoTopicConfig, Topic: "orders", Key: "min.insync.replicas", Value: v("2")}, "set min.insync.replicas of topic orders back to 2"},
		{Undo{Kind: UndoTopicConfig, Topic: "orders", Key: "min.insync.replicas"}, "set min.insync.replicas of topic orders back to its default"},
		{Undo{Kind: UndoNodeConfig, Node: 1}, "restore node 1's config file"},
		{Undo{Kind: UndoNodeConfig, Node: 1, Restart: true}, "restore node 1's config file and restart it"},
		{Undo{Kind: UndoSwitch, Key: "fsync", Value: v("on")}, "turn fsync on"},
		{Undo{Kind: UndoSwitch, Key: "fsync"}, "turn fsync off"},
		{Undo{Kind: "something-new"}, "something-new"},
	} {
		if got := tc.u.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.u, got, tc.want)
		}
	}
}
