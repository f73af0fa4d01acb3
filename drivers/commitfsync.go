package drivers

import "context"

// CommitFsyncSetter is implemented by drivers whose broker has a setting
// that decides whether a consumer group's commit is fsynced before the
// broker answers it (Kafka: flush.messages of the __consumer_offsets
// topic). It is the consumer side of fsync-audit: the audit reads the
// setting, switches it per run and puts back the value it found.
//
// Invariant: CommitFsync reports the setting in force on the broker (read
// from it, not remembered); after SetCommitFsync(ctx, v) returns nil,
// CommitFsync reports v.
type CommitFsyncSetter interface {
	// CommitFsyncSetting names the setting as users know it, for the
	// audit's rows and messages.
	CommitFsyncSetting() string
	// CommitFsync reports whether each commit is fsynced before the
	// broker answers it.
	CommitFsync(ctx context.Context) (bool, error)
	// SetCommitFsync switches the setting; off puts back the broker's
	// default.
	SetCommitFsync(ctx context.Context, on bool) error
}

// GroupCommitFsyncReader is implemented by drivers where whether a
// commit is fsynced before its answer depends on the group's own
// configuration as well as on the setting CommitFsyncSetter reads (NATS:
// an R1 durable consumer answers an ack before it writes its state file,
// and a mem_storage one never writes it). fsync-audit reads it after each
// setting's run, from the group's consumers, and holds the commits to
// what it says rather than to the setting alone.
type GroupCommitFsyncReader interface {
	// GroupCommitFsync reports whether group's acknowledged commits on
	// topic were fsynced before their answer, and why in one sentence,
	// read from the cluster now.
	GroupCommitFsync(ctx context.Context, group, topic string) (fsynced bool, why string, err error)
}
