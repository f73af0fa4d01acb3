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
