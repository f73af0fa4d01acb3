package nats

// What a durable consumer's ack means on disk (fsync-audit --group), as
// nats-server v2.15.2 keeps it (read in its source: server/consumer.go
// updateAcks, jetstream_cluster.go processReplicatedAck and
// createRaftGroup, raft.go storeToWAL, filestore.go's consumer flusher
// and writeFileWithOptionalSync):
//
//   - A replicated consumer (R>1) proposes each ack to its own Raft group
//     and answers an ack that asked for an answer (AckSync, DoubleAck)
//     once the entry is committed and applied: stored in the Raft logs of
//     a majority. Those logs are file stores made with the servers'
//     jetstream sync_interval: with sync_interval: always each append is
//     fsynced before the server counts it, so the answer means fsynced on
//     a majority; otherwise the log is fsynced every sync_interval (2
//     minutes by default) and the answer means in memory on a majority,
//     up to the group's next snapshot of its state (monitorConsumer: every
//     1,024 log entries or 64 KiB, at most every 10 s, and every 2
//     minutes), which raft.go writes with an fsync whatever
//     sync_interval says.
//   - An R1 consumer has no Raft group: the ack updates its state in
//     memory, the answer goes out at once, and a flusher writes the state
//     file (o.dat) up to 100 ms later, with O_SYNC only under
//     sync_interval: always. Its answer never means fsynced.
//   - A consumer with mem_storage keeps its state (and its Raft log) in
//     memory: never fsynced.
//
// So NATS has no switch of its own for commits: they follow the same
// sync_interval as the streams' messages, a server setting. The driver's
// drivers.CommitFsyncSetter reads that setting from every server's /varz
// and refuses to "switch" it apart from the streams; fsync-audit switches
// it per setting (a clean restart of the local cluster) and the commits
// follow. GroupCommitFsync then reads a group's consumers (replicas,
// mem_storage) after the run and says what their commits meant.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/nats-io/nats.go/jetstream"
)

var (
	_ drivers.CommitFsyncSetter      = (*Driver)(nil)
	_ drivers.GroupCommitFsyncReader = (*Driver)(nil)
)

// nodeSync is one server's jetstream sync setting as its /varz reports
// it.
type nodeSync struct {
	Node int32
	// Err: /varz did not answer; JSOff: it answered without JetStream.
	Err      error
	JSOff    bool
	Always   bool
	Interval time.Duration
}

func (n nodeSync) String() string {
	switch {
	case n.Err != nil:
		return fmt.Sprintf("node %d: not known (%v)", n.Node, n.Err)
	case n.JSOff:
		return fmt.Sprintf("node %d: JetStream off", n.Node)
	case n.Always:
		return fmt.Sprintf("node %d: sync_interval=always", n.Node)
	}
	return fmt.Sprintf("node %d: sync_interval=%s", n.Node, n.Interval)
}

// readSync reads every server's sync setting (none without monitoring
// URLs).
func (d *Driver) readSync(ctx context.Context) []nodeSync {
	var out []nodeSync
	for i := range d.cfg.MonitorURLs {
		n := nodeSync{Node: int32(i + 1)}
		var v varz
		switch err := d.monitor(ctx, n.Node, "/varz", &v); {
		case err != nil:
			n.Err = err
		case v.JetStream.Config == nil:
			// nats-server fills /varz's jetstream config once, at the
			// first /varz it serves: one served while the server was
			// starting, before JetStream, has none for the process's
			// life. /jsz reads the config afresh.
			var j jsz
			if err := d.monitor(ctx, n.Node, "/jsz", &j); err != nil {
				n.Err = fmt.Errorf("/varz has no jetstream config, and %w", err)
			} else if j.Disabled || j.Config == nil {
				n.JSOff = true
			} else {
				n.Always, n.Interval = j.Config.SyncAlways, j.Config.SyncInterval
			}
		default:
			n.Always, n.Interval = v.JetStream.Config.SyncAlways, v.JetStream.Config.SyncInterval
		}
		if n.Interval == 0 {
			n.Interval = duplicateWindow // the server's default, also 2 minutes
		}
		out = append(out, n)
	}
	return out
}

// jsz is the part of a server's /jsz readSync reads: its JetStream
// config as in force now (Disabled: JetStream not running, or not yet).
type jsz struct {
	Disabled bool `json:"disabled"`
	Config   *struct {
		SyncInterval time.Duration `json:"sync_interval"`
		SyncAlways   bool          `json:"sync_always"`
	} `json:"config"`
}

// allAlways: every server read, each with sync_interval: always.
func allAlways(ns []nodeSync) bool {
	for _, n := range ns {
		if n.Err != nil || n.JSOff || !n.Always {
			return false
		}
	}
	return len(ns) > 0
}

func joinSync(ns []nodeSync) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = n.String()
	}
	return strings.Join(s, ", ")
}

// commitFsyncOf is the servers' commit fsync setting: on when every
// server runs sync_interval: always, off when every server answered and
// one does not; an error when a server's setting is not known, JetStream
// off included (a server still starting says so, and "off" would then
// make every consumer's acks not fsynced: a broken promise counted as
// documented).
func commitFsyncOf(ns []nodeSync) (bool, error) {
	if len(ns) == 0 {
		return false, fmt.Errorf("read the servers' jetstream sync_interval: no monitoring URL (give --monitor-urls, or --cluster-dir)")
	}
	for _, n := range ns {
		if n.Err != nil {
			return false, fmt.Errorf("read the servers' jetstream sync_interval: %s (check that its monitoring port answers: --monitor-urls)", n)
		}
		if n.JSOff {
			return false, fmt.Errorf("read the servers' jetstream sync_interval: %s on its /varz and /jsz (a server still starting, or one without JetStream: wait until it is up; ackcheck reads what a commit means only where every server of --monitor-urls runs JetStream)", n)
		}
	}
	return allAlways(ns), nil
}

// CommitFsyncSetting implements drivers.CommitFsyncSetter: the servers'
// own sync_interval, the streams' setting too.
func (d *Driver) CommitFsyncSetting() string {
	return "jetstream sync_interval (the streams' setting too)"
}

// CommitFsync implements drivers.CommitFsyncSetter: true when every
// server reports sync_interval: always on its /varz now. It is what a
// replicated consumer's ack means; GroupCommitFsync says it for a group's
// own consumers (an R1 or mem_storage consumer never fsyncs before its
// answer).
func (d *Driver) CommitFsync(ctx context.Context) (bool, error) {
	return commitFsyncOf(d.readSync(ctx))
}

// SetCommitFsync implements drivers.CommitFsyncSetter without a switch of
// its own: commits follow the servers' sync_interval, which a running
// server does not change (a clean restart does: fsync-audit's setting,
// or `ackcheck cluster nats up --sync`). It returns nil when the servers
// already run the value asked for, and says so otherwise.
func (d *Driver) SetCommitFsync(ctx context.Context, on bool) error {
	ns := d.readSync(ctx)
	got, err := commitFsyncOf(ns)
	if err != nil {
		return err
	}
	if got == on {
		return nil
	}
	want := "default"
	if on {
		want = "always"
	}
	return fmt.Errorf("NATS has no commit fsync switch of its own: a durable consumer's acks go through the same JetStream stores as its stream's messages, fsynced under the servers' jetstream sync_interval (%s); switch that with a clean restart (`ackcheck cluster nats up --dir D --sync %s`, or sync_interval in each nats.conf and a restart)", joinSync(ns), want)
}

// GroupCommitFsync implements drivers.GroupCommitFsyncReader: whether the
// acks of group's consumers on topic were fsynced before their answer,
// from the consumer on each of the topic's partitions (its replicas and
// storage) and the servers' sync_interval. The driver makes the group's
// consumers alike, but it keeps one it finds: consumers that differ, or a
// partition without one, are an error, not the first partition's answer
// for all (an R1 consumer there would have every other's lost commits
// counted as documented).
func (d *Driver) GroupCommitFsync(ctx context.Context, group, topic string) (bool, string, error) {
	ns := d.readSync(ctx)
	if _, err := commitFsyncOf(ns); err != nil {
		return false, "", err
	}
	first, err := d.groupShape(ctx, group, topic)
	if err != nil {
		return false, "", err
	}
	on, why := groupCommitFsync(first.r, first.mem, ns)
	return on, why, nil
}

// consumerShape is what decides an ack's meaning on one consumer.
type consumerShape struct {
	r   int // replicas, the stream's when the consumer inherits them
	mem bool
}

// groupShape reads group's consumer on every partition of topic and
// returns their one shape; consumers that differ, a missing one or one
// that cannot be read are an error, since ackcheck holds a group's
// commits to one meaning.
func (d *Driver) groupShape(ctx context.Context, group, topic string) (consumerShape, error) {
	parts, err := d.partitions(ctx, topic)
	if err != nil {
		return consumerShape{}, err
	}
	if len(parts) == 0 {
		return consumerShape{}, fmt.Errorf("group %s: topic %s has no stream now", group, topic)
	}
	var first consumerShape
	for i, p := range parts {
		ci, err := retrying(ctx, 15*time.Second, func(ctx context.Context) (*jetstream.ConsumerInfo, error) {
			return d.consumerInfo(ctx, topic, p, group)
		})
		if err != nil {
			if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
				return consumerShape{}, fmt.Errorf("group %s has no consumer on stream %s now: %w", group, StreamName(topic, p), err)
			}
			return consumerShape{}, d.unreachable(fmt.Sprintf("read consumer %s of stream %s", group, StreamName(topic, p)), err)
		}
		sh := consumerShape{r: ci.Config.Replicas, mem: ci.Config.MemoryStorage}
		if sh.r == 0 { // the consumer inherits its stream's replicas
			si, err := d.streamInfo(ctx, topic, p)
			if err != nil {
				return consumerShape{}, err
			}
			sh.r = si.Config.Replicas
		}
		if i == 0 {
			first = sh
		} else if sh != first {
			return consumerShape{}, fmt.Errorf("group %s's consumers differ: on stream %s R%d (mem_storage %v), on %s R%d (mem_storage %v); ackcheck holds a group's commits to one meaning: run the group on consumers made alike (a new --group name makes them)",
				group, StreamName(topic, parts[0]), first.r, first.mem, StreamName(topic, p), sh.r, sh.mem)
		}
	}
	return first, nil
}

// groupCommitFsync says whether an acknowledged ack of a consumer of r
// replicas (mem: mem_storage) was fsynced before its answer, with the
// servers' sync settings ns, and why.
func groupCommitFsync(r int, mem bool, ns []nodeSync) (bool, string) {
	sync := joinSync(ns)
	switch {
	case mem:
		return false, fmt.Sprintf("the consumer keeps its state in memory (mem_storage), whatever sync_interval says (%s)", sync)
	case r <= 1:
		return false, fmt.Sprintf("an R1 consumer answers an ack before it writes its state file (a flusher writes it up to 100 ms later, fsynced only under sync_interval: always; %s)", sync)
	case allAlways(ns):
		return true, fmt.Sprintf("an R%d consumer answers an ack once its Raft group committed it, each log append fsynced first (%s)", r, sync)
	}
	return false, fmt.Sprintf("an R%d consumer answers an ack once its Raft group committed it, in logs fsynced only every sync_interval (%s); only the group's snapshots of its state, every 1,024 log entries or 64 KiB and at most every 10 s, are fsynced whatever the setting", r, sync)
}
