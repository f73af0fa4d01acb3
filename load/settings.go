package load

import (
	"fmt"
	"math"
	"time"

	"github.com/ackcheck/ackcheck/message"
)

// The load's settings are defaulted and validated here and nowhere else:
// the command line registers its flags with Defaults, library callers
// leave a field zero for WithDefaults to fill, and every bound is checked
// by CheckSettings (the settings alone, before a topic exists) and
// Validate (with the topic's partitions). Each message names the flag, so
// that a caller returns it as it is.

// Defaults are the documented defaults of the load's settings, as the
// command line offers them:
//
//	rate           1000 msg/s (all producers together)
//	duration       60s
//	message-size   1024 bytes (ID, send time and checksum included)
//	producers      4
//	max-in-flight  100,000 sends awaiting an outcome
//	drain timeout  60s
//
// Of these, WithDefaults fills only the fields whose zero cannot be meant:
// Producers, MaxInFlight and DrainTimeout. A zero Rate, Duration or
// MessageSize stays zero and is refused, since no default can guess the
// load a caller meant.
func Defaults() Config {
	return Config{
		Rate:         1000,
		Duration:     60 * time.Second,
		MessageSize:  1024,
		Producers:    4,
		MaxInFlight:  100_000,
		DrainTimeout: 60 * time.Second,
	}
}

// zeroMeansDefault are the flags of the integer settings WithDefaults
// fills when zero, with the values each takes.
var zeroMeansDefault = []struct{ flag, use string }{
	{"producers", "use 1 to 1024"},
	{"max-in-flight", "use at least 1"},
}

// WithDefaults returns c with zero fields set to their defaults (see
// Defaults for which).
func (c Config) WithDefaults() Config {
	d := Defaults()
	if c.Producers == 0 {
		c.Producers = d.Producers
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = d.MaxInFlight
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = d.DrainTimeout
	}
	return c
}

// CheckSettings reports the first setting that cannot work, as a sentence
// that names its flag, without the topic (Partitions is not checked: see
// Validate). given, when not nil, says which flags the user gave: a 0
// given for a setting whose 0 means its default (--producers 0) is
// refused, since the user asked for something the default would silently
// replace. nil: the zero fields are the caller's request for defaults.
func (c Config) CheckSettings(given func(flag string) bool) error {
	if given != nil {
		for _, z := range zeroMeansDefault {
			if given(z.flag) && c.fieldInt(z.flag) == 0 {
				return fmt.Errorf("--%s 0: %s, or leave the flag out for its default, %d", z.flag, z.use, Defaults().fieldInt(z.flag))
			}
		}
	}
	c = c.WithDefaults()
	switch {
	case math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate <= 0:
		return fmt.Errorf("--rate %v: must be a number above 0 (messages per second)", c.Rate)
	case c.Duration <= 0:
		return fmt.Errorf("--duration must be above 0")
	case c.Producers < 1 || c.Producers > 1024:
		return fmt.Errorf("--producers %d: use 1 to 1024", c.Producers)
	case uint64(c.ProducerBase)+uint64(c.Producers) > math.MaxUint32:
		return fmt.Errorf("producer numbers %d+%d overflow: use fewer shards or --producers", c.ProducerBase, c.Producers)
	case c.MessageSize < message.MinSize:
		return fmt.Errorf("--message-size must be at least %d bytes (ID, send time and checksum)", message.MinSize)
	case c.Keys < 0:
		return fmt.Errorf("--keys must not be negative")
	case c.MaxInFlight < 1:
		return fmt.Errorf("--max-in-flight %d: use at least 1", c.MaxInFlight)
	}
	switch n := c.Rate * c.Duration.Seconds(); {
	case n > 1e12:
		return fmt.Errorf("--rate x --duration schedules %.0f messages; keep it under 10^12", n)
	case n < 1:
		// The schedule sends message i at i/Rate for i < Rate x Duration:
		// below one, nothing would be sent and the run would only end in
		// "nothing was sent" after creating its topic and directory.
		return fmt.Errorf("--rate %v x --duration %s schedules %.3g messages, less than one: raise --rate or --duration", c.Rate, c.Duration, n)
	}
	return nil
}

// Validate is CheckSettings with the zero fields as defaults, and the
// topic's partitions known: what Run needs.
func (c Config) Validate() error {
	if err := c.CheckSettings(nil); err != nil {
		return err
	}
	if len(c.Partitions) == 0 {
		return fmt.Errorf("the topic has no partitions")
	}
	return nil
}

// fieldInt is the integer setting of flag f.
func (c Config) fieldInt(f string) int {
	switch f {
	case "producers":
		return c.Producers
	case "max-in-flight":
		return c.MaxInFlight
	}
	panic("load: no integer setting --" + f)
}
