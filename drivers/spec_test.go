package drivers

import (
	"strings"
	"testing"
)

// bare declares nothing but its name: Declared must answer the rest with
// the same defaults a profile without the optional seams gets.
type bare struct{ Declared[bare] }

func (bare) Spec() Spec { return Spec{Name: "bare", NewFlags: func() Flags { return nil }} }

// full declares everything.
type full struct{ Declared[full] }

func (full) Spec() Spec {
	return Spec{Name: "full", AddressFlag: "servers", LeaderKill: "a leader is elected",
		Durability:     &Durability{Settings: []DurabilitySetting{{Name: "default", ServerFsync: ServerFsync(true)}}},
		ConfigFsync:    &ConfigEdit{Setting: "fsync"},
		MaxMessageSize: 1 << 10, MaxPartitions: 7, MaxPartitionsWhy: "seven", DataFiles: []string{"*.log"}}
}

func TestDeclaredAnswersFromTheSpec(t *testing.T) {
	var p Profile = full{}
	if p.Name() != "full" || p.AddressFlag() != "servers" || p.MaxMessageSize() != 1<<10 || p.ConfigFsync().Setting != "fsync" {
		t.Errorf("full: %q %q %d %v", p.Name(), p.AddressFlag(), p.MaxMessageSize(), p.ConfigFsync())
	}
	if v, e := p.Expect(LeaderKill, nil); v != "" || e != "a leader is elected" {
		t.Errorf("leader kill: %q %q", v, e)
	}
	if v, e := p.Expect("other", nil); v != "" || e != "" {
		t.Errorf("another scenario: %q %q", v, e)
	}
	if d, ok := p.Durability(); !ok || len(d.Settings) != 1 || !*d.Settings[0].ServerFsync {
		t.Errorf("durability: %+v %v", d, ok)
	}
	if n, why := MaxPartitions(p); n != 7 || why != "seven" {
		t.Errorf("max partitions: %d %q", n, why)
	}
	if f := DataFilesOf(p); len(f) != 1 || f[0] != "*.log" {
		t.Errorf("data files: %v", f)
	}

	var b Profile = bare{}
	if _, ok := b.Durability(); ok {
		t.Error("bare has an fsync audit")
	}
	if b.ConfigFsync() != nil || DataFilesOf(b) != nil {
		t.Error("bare has a config edit or data files")
	}
	if n, why := MaxPartitions(b); n != DefaultMaxPartitions || !strings.Contains(why, "no limit of its own") {
		t.Errorf("bare's max partitions: %d %q", n, why)
	}
}
