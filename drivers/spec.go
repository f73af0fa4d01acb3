package drivers

// Spec is the part of a broker's Profile that is data, declared once per
// broker package: its name and address flag, what a leader kill does to
// it, the settings its fsync audit compares, its limits and its data
// files. A broker's Profile embeds Declared, which answers the Profile
// seam (and PartitionLimiter and DataFiler) from the Spec; what is code,
// such as an expectation that depends on the driver's settings or the
// broker's launcher, stays a method of the broker's own Profile, which
// wins over Declared's. The Profile stays a zero-size struct, so
// `kafka.Profile{}` is the whole profile.
type Spec struct {
	// Name is Profile.Name: the value of --driver.
	Name string
	// AddressFlag is Profile.AddressFlag.
	AddressFlag string
	// NewFlags makes Profile.NewFlags' fresh set of the broker's flags.
	NewFlags func() Flags
	// LeaderKill is what the broker's documentation says the leader-kill
	// scenario does to it, whatever the driver's settings (Profile.Expect
	// with no variant); "" where it says nothing.
	LeaderKill string
	// Durability is what the fsync audit compares; nil: the broker has
	// no audit.
	Durability *Durability
	// ConfigFsync is Profile.ConfigFsync; nil when the broker has none.
	ConfigFsync *ConfigEdit
	// MaxMessageSize is Profile.MaxMessageSize.
	MaxMessageSize int
	// MaxPartitions and MaxPartitionsWhy are PartitionLimiter's answer;
	// 0 keeps DefaultMaxPartitions.
	MaxPartitions    int
	MaxPartitionsWhy string
	// DataFiles is DataFiler's answer: globs of the broker's data files.
	DataFiles []string
}

// SpecOf is implemented by a broker's Profile, whose Spec is its package's
// one Spec: the Profile embeds Declared of itself,
//
//	type Profile struct{ drivers.Declared[Profile] }
//	func (Profile) Spec() drivers.Spec { return spec }
type SpecOf interface{ Spec() Spec }

// Declared implements Profile, PartitionLimiter and DataFiler from the
// Spec of S. It has no fields: a Profile that embeds it keeps its zero
// value.
type Declared[S SpecOf] struct{}

func (Declared[S]) spec() Spec {
	var s S
	return s.Spec()
}

// Name implements Profile.
func (d Declared[S]) Name() string { return d.spec().Name }

// AddressFlag implements Profile.
func (d Declared[S]) AddressFlag() string { return d.spec().AddressFlag }

// NewFlags implements Profile.
func (d Declared[S]) NewFlags() Flags { return d.spec().NewFlags() }

// Expect implements Profile: Spec.LeaderKill for a leader kill, with no
// variant.
func (d Declared[S]) Expect(s Scenario, _ Driver) (string, string) {
	if s == LeaderKill {
		return "", d.spec().LeaderKill
	}
	return "", ""
}

// Durability implements Profile.
func (d Declared[S]) Durability() (Durability, bool) {
	if du := d.spec().Durability; du != nil {
		return *du, true
	}
	return Durability{}, false
}

// ConfigFsync implements Profile.
func (d Declared[S]) ConfigFsync() *ConfigEdit { return d.spec().ConfigFsync }

// MaxMessageSize implements Profile.
func (d Declared[S]) MaxMessageSize() int { return d.spec().MaxMessageSize }

// MaxPartitions implements PartitionLimiter.
func (d Declared[S]) MaxPartitions() (int, string) {
	if s := d.spec(); s.MaxPartitions > 0 {
		return s.MaxPartitions, s.MaxPartitionsWhy
	}
	return defaultMaxPartitions()
}

// DataFiles implements DataFiler.
func (d Declared[S]) DataFiles() []string { return d.spec().DataFiles }

// ServerFsync is a DurabilitySetting's ServerFsync: the servers' own fsync
// switch set to on.
func ServerFsync(on bool) *bool { return &on }
