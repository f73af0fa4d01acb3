package load

import (
	"math"
	"strings"
	"testing"
	"time"
)

// Every load setting is refused here, naming its flag, when it cannot
// work, and accepted at its bounds; a 0 given for a setting whose 0 means
// its default is refused only when the caller says the user gave it.
func TestCheckSettings(t *testing.T) {
	ok := Defaults()
	all := func(string) bool { return true }
	only := func(flag string) func(string) bool { return func(f string) bool { return f == flag } }
	for _, tc := range []struct {
		name   string
		mut    func(*Config)
		given  func(string) bool
		refuse string // "": accepted
	}{
		{"defaults", func(*Config) {}, nil, ""},
		{"defaults, every flag given", func(*Config) {}, all, ""},
		{"zero producers, not given: the default", func(c *Config) { c.Producers = 0 }, nil, ""},
		{"zero producers given", func(c *Config) { c.Producers = 0 }, only("producers"), "--producers 0: use 1 to 1024, or leave the flag out for its default, 4"},
		{"zero producers, another flag given", func(c *Config) { c.Producers = 0 }, only("rate"), ""},
		{"zero max-in-flight given", func(c *Config) { c.MaxInFlight = 0 }, all, "--max-in-flight 0: use at least 1, or leave the flag out for its default, 100000"},
		{"zero max-in-flight, not given", func(c *Config) { c.MaxInFlight = 0 }, nil, ""},
		{"rate 0", func(c *Config) { c.Rate = 0 }, nil, "--rate 0: must be a number above 0"},
		{"rate NaN", func(c *Config) { c.Rate = math.NaN() }, nil, "--rate NaN"},
		{"rate +Inf", func(c *Config) { c.Rate = math.Inf(1) }, all, "--rate +Inf"},
		{"rate below one message", func(c *Config) { c.Rate = 0.01; c.Duration = time.Second }, nil, "less than one: raise --rate or --duration"},
		{"rate exactly one message", func(c *Config) { c.Rate = 1; c.Duration = time.Second }, nil, ""},
		{"too many messages", func(c *Config) { c.Rate = 1e9; c.Duration = time.Hour }, nil, "keep it under 10^12"},
		{"duration 0", func(c *Config) { c.Duration = 0 }, nil, "--duration must be above 0"},
		{"duration negative", func(c *Config) { c.Duration = -time.Second }, all, "--duration must be above 0"},
		{"message size below the header", func(c *Config) { c.MessageSize = 10 }, nil, "--message-size must be at least"},
		{"message size 0 is not defaulted", func(c *Config) { c.MessageSize = 0 }, nil, "--message-size must be at least"},
		{"producers 1024", func(c *Config) { c.Producers = 1024 }, nil, ""},
		{"producers 1025", func(c *Config) { c.Producers = 1025 }, nil, "--producers 1025: use 1 to 1024"},
		{"producers negative", func(c *Config) { c.Producers = -1 }, nil, "--producers -1: use 1 to 1024"},
		{"max-in-flight negative", func(c *Config) { c.MaxInFlight = -5 }, nil, "--max-in-flight -5: use at least 1"},
		{"keys negative", func(c *Config) { c.Keys = -1 }, nil, "--keys must not be negative"},
		{"no partitions: not a setting", func(c *Config) { c.Partitions = nil }, nil, ""},
	} {
		c := ok
		tc.mut(&c)
		err := c.CheckSettings(tc.given)
		switch {
		case tc.refuse == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refuse != "" && (err == nil || !strings.Contains(err.Error(), tc.refuse)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.refuse)
		}
	}
}

// Validate is CheckSettings plus the topic's partitions.
func TestValidateNeedsPartitions(t *testing.T) {
	c := Defaults()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "no partitions") {
		t.Fatalf("no partitions: %v", err)
	}
	c.Partitions = []int32{0}
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults with a partition: %v", err)
	}
	c.Rate = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--rate") {
		t.Fatalf("rate 0 with a partition: %v", err)
	}
}

// WithDefaults fills exactly the fields whose zero means the default,
// from Defaults, and leaves every field a caller set.
func TestWithDefaults(t *testing.T) {
	d := Defaults()
	got := Config{}.WithDefaults()
	if got.Producers != d.Producers || got.MaxInFlight != d.MaxInFlight || got.DrainTimeout != d.DrainTimeout {
		t.Errorf("zero config defaulted to producers %d, in flight %d, drain %s; want %d, %d, %s",
			got.Producers, got.MaxInFlight, got.DrainTimeout, d.Producers, d.MaxInFlight, d.DrainTimeout)
	}
	if got.Rate != 0 || got.Duration != 0 || got.MessageSize != 0 {
		t.Errorf("rate, duration or size defaulted (%v, %s, %d): a zero there must be refused, not guessed", got.Rate, got.Duration, got.MessageSize)
	}
	set := Config{Producers: 7, MaxInFlight: 9, DrainTimeout: time.Second}.WithDefaults()
	if set.Producers != 7 || set.MaxInFlight != 9 || set.DrainTimeout != time.Second {
		t.Errorf("set fields replaced: %+v", set)
	}
}
