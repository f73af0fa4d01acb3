package drivers

import (
	"encoding/json"

	"github.com/spf13/pflag"
)

// What every broker's Flags.Open shares: a saved run's settings decoded,
// the flags the user gave laid over them, the driver made, and its
// settings returned as run.json keeps them.

// Overlay lays the flags a user gave on one command over a saved run's
// driver settings. A flag the user did not give keeps the saved value (a
// new run's zero value, which the broker's Config.WithDefaults fills),
// so reopening a run with no flags reopens it as it was.
type Overlay struct{ fs *pflag.FlagSet }

// OpenSaved decodes saved, the driver part of an earlier run.json (nil
// for a new run), into a fresh C and lays the flags the user gave on fs
// over it with bind, which calls Set (or SetOr) once per flag.
func OpenSaved[C any](fs *pflag.FlagSet, saved json.RawMessage, bind func(c *C, o Overlay)) (C, error) {
	var c C
	if err := DecodeSaved(saved, &c); err != nil {
		return c, err
	}
	bind(&c, Overlay{fs: fs})
	return c, nil
}

// Set calls apply, which copies flag name's value into the settings,
// when the user gave the flag.
func (o Overlay) Set(name string, apply func()) { o.SetOr(name, false, apply) }

// SetOr calls apply when the user gave flag name, or when missing: the
// saved settings lack what the flag holds (an address of a run saved
// without one), so the flag's own value, given or not, fills it.
func (o Overlay) SetOr(name string, missing bool, apply func()) {
	if missing || o.fs.Changed(name) {
		apply()
	}
}

// Netns sets *prefix to --netns (RegisterNetns) when the user gave it.
func (o Overlay) Netns(prefix *string) {
	o.Set("netns", func() { *prefix, _ = o.fs.GetString("netns") })
}

// Opened is Flags.Open's answer for a driver whose settings hold no
// secret: d, made from the settings (an error making it wins), and its
// settings as run.json keeps them, d.Config(). Call it on the maker's
// two results: drivers.Opened(New(c)).
func Opened[D interface {
	Driver
	Config() C
}, C any](d D, err error) (Driver, any, error) {
	if err != nil {
		return nil, nil, err
	}
	return d, d.Config(), nil
}

// FsyncEdit is a ConfigEdit that sets a server setting to on or off with
// set (content, value) -> content: Setting names the setting in reports.
func FsyncEdit(setting, on, off string, set func(content, value string) (string, error)) *ConfigEdit {
	return &ConfigEdit{Setting: setting, Edit: func(content string, fsync bool) (string, error) {
		if fsync {
			return set(content, on)
		}
		return set(content, off)
	}}
}

// PropertyFsync is FsyncEdit of key in a properties-style file
// (SetProperty: key=value, other lines kept as they are).
func PropertyFsync(key, on, off string) *ConfigEdit {
	return FsyncEdit(key, on, off, func(content, value string) (string, error) {
		return SetProperty(content, key, value), nil
	})
}
