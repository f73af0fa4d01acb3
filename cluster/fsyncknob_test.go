package cluster

import "testing"

func TestFsyncKnob(t *testing.T) {
	k := FsyncKnob{Setting: "jetstream sync_interval", Flag: "sync", Off: "default", On: "always"}
	if k.Value(true) != "always" || k.Value(false) != "default" {
		t.Errorf("values: on %q, off %q", k.Value(true), k.Value(false))
	}
	if got := k.Flags(false); got != "--sync=default" {
		t.Errorf("flags: %q, want --sync=default", got)
	}
}
