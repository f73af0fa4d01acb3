package queen

// What a group's ack means on disk (fsync-audit --group). A Queen ack is
// an update of the group's cursor (queen.partition_consumers) that the
// server commits in PostgreSQL before it answers; Queen's source
// (ab23212) sets no synchronous_commit of its own, in a session or a
// transaction, so the database's settings decide, the same ones that
// decide what a produce's answer means: with fsync=on and
// synchronous_commit other than off, the commit's WAL is fsynced before
// the answer; with synchronous_commit=off it is flushed up to 3 x
// wal_writer_delay later. Queen has no switch for acks apart from
// produces: the driver's drivers.CommitFsyncSetter reads the settings
// and refuses to switch them apart; fsync-audit switches
// synchronous_commit per setting (a clean restart of the local
// PostgreSQL) and the acks follow.

import (
	"context"
	"fmt"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

var _ drivers.CommitFsyncSetter = (*Driver)(nil)

// CommitFsyncSetting implements drivers.CommitFsyncSetter.
func (d *Driver) CommitFsyncSetting() string {
	return "PostgreSQL synchronous_commit (the produces' setting too)"
}

// CommitFsync implements drivers.CommitFsyncSetter: PostgreSQL's fsync
// and synchronous_commit as the database reports them now.
func (d *Driver) CommitFsync(ctx context.Context) (bool, error) {
	fsync, sync, err := d.pgSync(ctx)
	if err != nil {
		return false, err
	}
	return commitFsynced(fsync, sync), nil
}

// SetCommitFsync implements drivers.CommitFsyncSetter without a switch of
// its own: nil when the database already runs the value asked for, and
// otherwise the setting and how to change it.
func (d *Driver) SetCommitFsync(ctx context.Context, on bool) error {
	fsync, sync, err := d.pgSync(ctx)
	if err != nil {
		return err
	}
	return switchErr(fsync, sync, on)
}

// switchErr is SetCommitFsync's answer under PostgreSQL's fsync and
// synchronous_commit: nil when they give on already, else what to change.
func switchErr(fsync, sync string, on bool) error {
	if commitFsynced(fsync, sync) == on {
		return nil
	}
	want := "off"
	if on {
		want = "on"
	}
	if on && fsync != "on" {
		// synchronous_commit cannot help: nothing is fsynced.
		return fmt.Errorf("Queen has no ack fsync switch of its own: an ack is a cursor update committed in PostgreSQL, which runs fsync=%s (synchronous_commit=%s), so no commit is fsynced whatever synchronous_commit says; set fsync = on in its postgresql.conf and restart it", fsync, sync)
	}
	return fmt.Errorf("Queen has no ack fsync switch of its own: an ack is a cursor update committed in PostgreSQL under the database's fsync=%s and synchronous_commit=%s, the produces' settings too; switch synchronous_commit with a clean restart (`ackcheck cluster queen up --dir D --synchronous-commit %s`)", fsync, sync, want)
}

// pgSync reads PostgreSQL's fsync and synchronous_commit, asking again
// for up to 15 s while the database does not answer (the pool's
// connections die with a restart that switched the setting).
func (d *Driver) pgSync(ctx context.Context) (fsync, sync string, err error) {
	v, err := retry(ctx, 15*time.Second, func() ([2]string, error) {
		var v [2]string
		for i, name := range []string{"fsync", "synchronous_commit"} {
			if err := d.db.QueryRow(ctx, "SHOW "+name).Scan(&v[i]); err != nil {
				return v, d.dbErr("SHOW "+name, err)
			}
		}
		return v, nil
	})
	return v[0], v[1], err
}

// commitFsynced: a commit's WAL is fsynced before the answer with fsync
// on and synchronous_commit anything but off (local, on, remote_write and
// remote_apply all wait for the local flush).
func commitFsynced(fsync, sync string) bool { return fsync == "on" && sync != "off" }
