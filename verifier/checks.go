package verifier

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Checks are the settings of Options that decide a verdict, as run.json
// saves a run's and result.json states the ones a verdict was judged by.
// A re-read (verify, report) judges with the run's own Checks unless a
// check is given again explicitly: a verdict must not flip because a
// later command line left a flag out.
//
// Every Options field that can change the verdict is here; Window and
// MaxSamples only shape the report. A new verdict-deciding option must be
// added both here and to checkFlags, or a re-read silently drops it
// (TestChecksCoverOptions guards the pairing).
type Checks struct {
	NoDuplicates bool     `json:"no_duplicates"`
	Ordered      bool     `json:"ordered"`
	MaxNoAck     Duration `json:"max_no_ack"`
	MaxReady     Duration `json:"max_ready"`
	MaxInSync    Duration `json:"max_in_sync"`
}

// Duration is a time.Duration written in JSON as Go writes durations
// ("1ms", "0s"), so that run.json and result.json read as the flags do.
// It also reads a plain number of nanoseconds.
type Duration time.Duration

// String writes d as Go writes durations ("1ms").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as text.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "1ms" or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var ns int64
		if err := json.Unmarshal(b, &ns); err != nil {
			return fmt.Errorf("a duration must be text such as \"1s\": %s", b)
		}
		*d = Duration(ns)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// ChecksOf returns the checks of o.
func ChecksOf(o Options) Checks {
	return Checks{NoDuplicates: o.NoDuplicates, Ordered: o.Ordered,
		MaxNoAck: Duration(o.MaxNoAck), MaxReady: Duration(o.MaxReady), MaxInSync: Duration(o.MaxInSync)}
}

// apply sets o's checks to c's.
func (c Checks) apply(o *Options) {
	o.NoDuplicates, o.Ordered = c.NoDuplicates, c.Ordered
	o.MaxNoAck, o.MaxReady, o.MaxInSync = time.Duration(c.MaxNoAck), time.Duration(c.MaxReady), time.Duration(c.MaxInSync)
}

// checkFlag is one check as its command-line flag names it.
type checkFlag struct {
	flag string
	// text is the check's setting in o as a person reads it: on/off, a
	// deadline, or none.
	text func(o Options) string
	// take copies the check from src into dst.
	take func(dst *Options, src Options)
}

func onOff(b bool) string { return map[bool]string{true: "on", false: "off"}[b] }

func deadline(d time.Duration) string {
	if d <= 0 {
		return "none"
	}
	return d.String()
}

// checkFlags lists every check of Checks by its flag, in the order the
// flags are documented.
var checkFlags = []checkFlag{
	{"no-duplicates", func(o Options) string { return onOff(o.NoDuplicates) }, func(d *Options, s Options) { d.NoDuplicates = s.NoDuplicates }},
	{"ordered", func(o Options) string { return onOff(o.Ordered) }, func(d *Options, s Options) { d.Ordered = s.Ordered }},
	{"max-no-ack", func(o Options) string { return deadline(o.MaxNoAck) }, func(d *Options, s Options) { d.MaxNoAck = s.MaxNoAck }},
	{"max-ready", func(o Options) string { return deadline(o.MaxReady) }, func(d *Options, s Options) { d.MaxReady = s.MaxReady }},
	{"max-in-sync", func(o Options) string { return deadline(o.MaxInSync) }, func(d *Options, s Options) { d.MaxInSync = s.MaxInSync }},
}

// CheckFlagNames are the flags of the checks that decide a verdict.
func CheckFlagNames() []string {
	names := make([]string, len(checkFlags))
	for i, c := range checkFlags {
		names[i] = c.flag
	}
	return names
}

// Rejudge returns the options that judge a recorded run again (command
// is "verify" or "report", for the messages): the run's own checks
// (saved, from run.json), except each check whose flag the command line
// gave explicitly (changed reports whether it did), which takes given's
// value. Every such change that differs from the run's is listed in
// Options.Changes ("--max-no-ack: 1ms at the run, none at this verify"),
// and result.json records it.
//
// saved nil is a run recorded before ackcheck saved its checks: they are
// unknown, so the run is judged with the checks given here and
// Options.ChecksUnknown says so (never silently with none). The other
// fields of given (Window, MaxSamples) are taken as they are.
func Rejudge(saved *Checks, given Options, changed func(flag string) bool, command string) Options {
	if saved == nil {
		o := given
		o.ChecksUnknown = true
		var set []string
		for _, c := range checkFlags {
			set = append(set, fmt.Sprintf("--%s %s", c.flag, c.text(given)))
		}
		o.Changes = []string{fmt.Sprintf("the checks this run was judged by are unknown (its run.json predates ackcheck saving them): judged at this %s with %s",
			command, strings.Join(set, ", "))}
		return o
	}
	o := given
	saved.apply(&o)
	run := o
	for _, c := range checkFlags {
		if !changed(c.flag) {
			continue
		}
		c.take(&o, given)
		if was, now := c.text(run), c.text(o); was != now {
			o.Changes = append(o.Changes, fmt.Sprintf("--%s: %s at the run, %s at this %s", c.flag, was, now, command))
		}
	}
	return o
}
