package drivers

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/spf13/pflag"
)

// TestOpenSavedOverlay: a flag the user gave wins over the saved run's
// value, one not given keeps it, an address the saved run lacks is filled
// from its flag (SetOr), and --netns is laid over only when given.
func TestOpenSavedOverlay(t *testing.T) {
	type conf struct {
		Addr, Mode, Left, NetNS string
	}
	var addr, mode, left string
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.StringVar(&addr, "addr", "a0", "")
	fs.StringVar(&mode, "mode", "m0", "")
	fs.StringVar(&left, "left", "l0", "")
	RegisterNetns(fs)
	bind := func(c *conf, o Overlay) {
		o.SetOr("addr", c.Addr == "", func() { c.Addr = addr })
		o.Set("mode", func() { c.Mode = mode })
		o.Set("left", func() { c.Left = left })
		o.Netns(&c.NetNS)
	}
	if err := fs.Parse([]string{"--mode", "m1"}); err != nil {
		t.Fatal(err)
	}
	saved := json.RawMessage(`{"Mode":"saved","Left":"saved","NetNS":"saved"}`)
	got, err := OpenSaved(fs, saved, bind)
	if want := (conf{Addr: "a0", Mode: "m1", Left: "saved", NetNS: "saved"}); err != nil || got != want {
		t.Errorf("saved run: %+v %v, want %+v", got, err, want)
	}
	if err := fs.Parse([]string{"--netns", "ackcheck-x"}); err != nil {
		t.Fatal(err)
	}
	got, err = OpenSaved(fs, nil, bind)
	if want := (conf{Addr: "a0", Mode: "m1", NetNS: "ackcheck-x"}); err != nil || got != want {
		t.Errorf("new run: %+v %v, want %+v", got, err, want)
	}
	if _, err := OpenSaved(fs, json.RawMessage(`{`), bind); err == nil {
		t.Error("a damaged run.json: no error")
	}
}

type openedDriver struct {
	Driver
	c string
}

func (d *openedDriver) Config() string { return d.c }

func TestOpened(t *testing.T) {
	d, public, err := Opened(&openedDriver{c: "settings"}, nil)
	if err != nil || d == nil || public != "settings" {
		t.Errorf("got %v %v %v, want the driver and its settings", d, public, err)
	}
	d, public, err = Opened((*openedDriver)(nil), errors.New("refused"))
	if err == nil || d != nil || public != nil {
		t.Errorf("a maker's error: got %v %v %v, want nil, nil and the error", d, public, err)
	}
}

func TestPropertyFsync(t *testing.T) {
	e := PropertyFsync("synchronous_commit", "on", "off")
	if e.Setting != "synchronous_commit" {
		t.Errorf("setting %q", e.Setting)
	}
	for on, want := range map[bool]string{true: "a=1\nsynchronous_commit=on\n", false: "a=1\nsynchronous_commit=off\n"} {
		if got, err := e.Edit("a=1\nsynchronous_commit=x\n", on); err != nil || got != want {
			t.Errorf("fsync %v: %q %v, want %q", on, got, err, want)
		}
	}
}
