package faults

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/remote"
)

// NodeSpec describes one broker node reached by shell commands, locally or
// over SSH: how to find its process, start and stop it, and where its data
// and configuration live.
type NodeSpec struct {
	ID int32 `yaml:"id"`
	// Host is the machine; "" or "local" runs commands on this one.
	Host    string `yaml:"host"`
	Port    int    `yaml:"port"`
	User    string `yaml:"user"`
	KeyFile string `yaml:"key_file"`
	Agent   bool   `yaml:"agent"`
	// How to find the broker's PID: exactly one of these.
	PIDFile     string `yaml:"pid_file"`
	PGrep       string `yaml:"pgrep"` // a pgrep -f pattern; the oldest matching process is the broker
	SystemdUnit string `yaml:"systemd_unit"`
	// Start starts the broker on its data dir and returns (e.g.
	// "systemctl start kafka"). Stop, if set, stops it cleanly; otherwise
	// SIGTERM is sent and waited for.
	Start string `yaml:"start"`
	Stop  string `yaml:"stop"`
	// DataDir is the broker's data directory (kill proof: its inode).
	DataDir string `yaml:"data_dir"`
	// ConfigFile is the broker's configuration (for fsync toggles).
	ConfigFile string `yaml:"config_file"`
	// LoseCommand makes the node's data dir lose every write it has not
	// fsynced and returns when the loss is complete, for power-loss
	// faults; with the data dir on ackcheck lazyfs:
	// "ackcheck lazyfs lose --control /var/lib/kafka.lazyfs.sock".
	LoseCommand string `yaml:"lose_command"`
	// LazyfsControl is the control socket of the ackcheck lazyfs the
	// node's data dir is mounted on, for disk-error faults (they run
	// `ackcheck lazyfs disk-error --control <it>` on the node).
	LazyfsControl string `yaml:"lazyfs_control"`
	// Log is the broker's log file on the node
	// ("/var/log/kafka/server.log"), read after the load for the brokers'
	// own account of each fault (the log oracle; faults/oracle.go).
	Log string `yaml:"log"`
	// Ports are the broker's ports on the node (client and peer ports,
	// e.g. [9092, 9093]): network faults on SSH nodes (netssh.go) match
	// only these, never ackcheck's SSH session.
	Ports []int `yaml:"ports"`
	// Address is the IP the node's peers and clients reach it at
	// (default Host, which must then be an IP).
	Address string `yaml:"address"`
	// Firewall is the tool network faults install their rules with on
	// the node: "nft", "iptables" (iptables-restore, and ip6tables-restore
	// for IPv6 peers), or "" for nft where the node has it and iptables
	// otherwise.
	Firewall string `yaml:"firewall"`
}

func (n NodeSpec) validate() error {
	ways := 0
	for _, s := range []string{n.PIDFile, n.PGrep, n.SystemdUnit} {
		if s != "" {
			ways++
		}
	}
	switch {
	case ways != 1:
		return fmt.Errorf("node %d: give exactly one of pid_file, pgrep or systemd_unit to find its process", n.ID)
	case n.Start == "" && n.SystemdUnit == "":
		return fmt.Errorf("node %d: no start command (needed to restart it and to heal)", n.ID)
	case n.Host != "" && n.Host != "local" && n.User == "":
		return fmt.Errorf("node %d: host %s needs a user", n.ID, n.Host)
	case n.Firewall != "" && n.Firewall != "nft" && n.Firewall != "iptables":
		return fmt.Errorf("node %d: firewall %q: give nft or iptables (or leave it out: nft where the node has it, iptables otherwise)", n.ID, n.Firewall)
	}
	return nil
}

func (n NodeSpec) local() bool { return n.Host == "" || n.Host == "local" }

// Scripted is a cluster whose nodes are controlled by shell commands run
// through a remote.Runner per node. It implements Nodes.
type Scripted struct {
	specs   map[int32]NodeSpec
	ids     []int32
	runners map[int32]remote.Runner
	where   string
	// logs reads the nodes' fetched logs (ReadLogsWith); nil: the
	// broker's oracle cannot read logs fetched from elsewhere.
	logs drivers.LogReader
	// logCap is what is fetched of each log at most; 0: MaxLogBytes.
	logCap int
	// nw is the nodes as a Network for network faults, made once
	// (netssh.go); netDial is how ackcheck's own probes connect (nil: the
	// machine's network).
	nw      *sshNet
	netDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// prep holds what Prepare opened and read ahead of the faults.
	prep preparedSet
}

var _ Nodes = (*Scripted)(nil)

// NewScripted builds a cluster from node specs and one runner per node.
func NewScripted(specs []NodeSpec, runners map[int32]remote.Runner, where string) *Scripted {
	s := &Scripted{specs: map[int32]NodeSpec{}, runners: runners, where: where}
	for _, n := range specs {
		s.specs[n.ID] = n
		s.ids = append(s.ids, n.ID)
	}
	return s
}

func (s *Scripted) node(id int32) (NodeSpec, remote.Runner, error) {
	n, ok := s.specs[id]
	if !ok {
		return n, nil, fmt.Errorf("node %d is not in the cluster file", id)
	}
	return n, s.runners[id], nil
}

// needs returns nil when the cluster file gives node id the field named
// field (whose value is read by value); otherwise an error that names
// the field and says how to give it (fix).
func (s *Scripted) needs(id int32, field string, value func(NodeSpec) string, fix string) error {
	n, _, err := s.node(id)
	if err != nil {
		return err
	}
	if value(n) == "" {
		return fmt.Errorf("node %d has no %s in the cluster file: %s", id, field, fix)
	}
	return nil
}

// IDs implements Nodes.
func (s *Scripted) IDs() []int32 { return s.ids }

// Where implements Nodes.
func (s *Scripted) Where() string { return s.where }

// pidCmd is the shell command that prints node n's broker PID, or
// nothing (systemd: 0) when it does not run.
func (s *Scripted) pidCmd(n NodeSpec) string {
	switch {
	case n.PIDFile != "":
		// A pid file may be stale: the process must exist and not be a
		// zombie.
		return fmt.Sprintf(`p=$(cat %s 2>/dev/null) && [ -n "$p" ] && kill -0 "$p" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' /proc/"$p"/status 2>/dev/null && echo "$p"; true`, remote.Quote(n.PIDFile))
	case n.PGrep != "":
		// The pattern travels base64-encoded and is decoded only into
		// pgrep's own arguments (pgrep never matches itself): written out,
		// it would stand in the command line of the shell running this, and
		// pgrep would report that shell as the broker whenever the broker
		// is down.
		return fmt.Sprintf(`pgrep -o -f -- "$(printf %%s %s | base64 -d)"; true`,
			remote.Quote(base64.StdEncoding.EncodeToString([]byte(n.PGrep))))
	}
	return fmt.Sprintf(`systemctl show -p MainPID --value %s`, remote.Quote(n.SystemdUnit))
}

// PID implements Nodes.
func (s *Scripted) PID(ctx context.Context, id int32) (int, error) {
	n, r, err := s.node(id)
	if err != nil {
		return 0, err
	}
	out, err := r.Run(ctx, s.pidCmd(n))
	if err != nil {
		return 0, fmt.Errorf("find node %d's process: %w", id, err)
	}
	out = strings.TrimSpace(out)
	if out == "" {
		return 0, nil
	}
	pid, err := strconv.Atoi(strings.Fields(out)[0])
	if err != nil {
		return 0, fmt.Errorf("find node %d's process: unexpected output %q", id, out)
	}
	return pid, nil
}

// Signal implements Nodes.
func (s *Scripted) Signal(ctx context.Context, id int32, sig syscall.Signal) (int, error) {
	pid, _, _, err := s.SignalTimed(ctx, id, sig)
	return pid, err
}

// SignalTimed implements TimedSignaler: the signal went out between the
// moment its kill command left and sent, when the command came back. On
// a prepared node (Prepare) that is one command through its shell, with
// the PID read ahead; otherwise the PID is looked up by a command of its
// own before that, so its round trip is not counted in within.
func (s *Scripted) SignalTimed(ctx context.Context, id int32, sig syscall.Signal) (pid int, sent time.Time, within time.Duration, err error) {
	if pid, sent, within, ok, err := s.signalPrepared(ctx, id, sig); ok {
		return pid, sent, within, err
	}
	_, r, err := s.node(id)
	if err != nil {
		return 0, time.Time{}, 0, err
	}
	if pid, err = s.PID(ctx, id); err != nil {
		return 0, time.Time{}, 0, err
	}
	if pid == 0 {
		return 0, time.Time{}, 0, fmt.Errorf("node %d does not run", id)
	}
	left := time.Now()
	if _, err := r.Run(ctx, fmt.Sprintf("kill -%d %d", int(sig), pid)); err != nil {
		return pid, time.Time{}, 0, fmt.Errorf("signal %v to node %d (PID %d): %w", sig, id, pid, err)
	}
	sent = time.Now()
	return pid, sent, sent.Sub(left), nil
}

// Stop implements Nodes.
func (s *Scripted) Stop(ctx context.Context, id int32, grace time.Duration) error {
	n, r, err := s.node(id)
	if err != nil {
		return err
	}
	pid, err := s.PID(ctx, id)
	if err != nil || pid == 0 {
		return err
	}
	r.Run(ctx, fmt.Sprintf("kill -CONT %d", pid)) // a paused broker cannot shut down
	if n.Stop != "" {
		if _, err := r.Run(ctx, n.Stop); err != nil {
			return fmt.Errorf("stop node %d: %w", id, err)
		}
	} else if _, err := r.Run(ctx, fmt.Sprintf("kill -TERM %d", pid)); err != nil {
		return fmt.Errorf("stop node %d: %w", id, err)
	}
	deadline := time.Now().Add(grace)
	for {
		p, err := s.PID(ctx, id)
		if err != nil {
			return err
		}
		if p == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			r.Run(ctx, fmt.Sprintf("kill -KILL %d", p))
			deadline = time.Now().Add(time.Hour)
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// Start implements Nodes.
func (s *Scripted) Start(ctx context.Context, id int32) error {
	n, r, err := s.node(id)
	if err != nil {
		return err
	}
	cmd := n.Start
	if cmd == "" {
		cmd = "systemctl start " + remote.Quote(n.SystemdUnit)
	}
	if _, err := r.Run(ctx, cmd); err != nil {
		return fmt.Errorf("start node %d: %w", id, err)
	}
	return nil
}

// DataDirInode implements Nodes.
func (s *Scripted) DataDirInode(ctx context.Context, id int32) (uint64, error) {
	n, r, err := s.node(id)
	if err != nil {
		return 0, err
	}
	if n.DataDir == "" {
		return 0, fmt.Errorf("node %d: no data_dir in the cluster file", id)
	}
	out, err := r.Run(ctx, "stat -c %i "+remote.Quote(n.DataDir))
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(out), 10, 64)
}

// ReadConfig returns node id's configuration file.
func (s *Scripted) ReadConfig(ctx context.Context, id int32) (string, error) {
	n, r, err := s.node(id)
	if err != nil {
		return "", err
	}
	if n.ConfigFile == "" {
		return "", fmt.Errorf("node %d: no config_file in the cluster file", id)
	}
	return r.Run(ctx, "cat "+remote.Quote(n.ConfigFile))
}

// WriteConfig replaces node id's configuration file atomically and
// durably: a temporary file, with the old one's mode, fsynced and renamed
// over it, then its directory fsynced (coreutils sync with file operands
// fsyncs each). A power loss of the node at any moment leaves the old
// configuration or the new one, whole: the fsync-toggle edits, and their
// restore, are never what a power-loss fault takes.
func (s *Scripted) WriteConfig(ctx context.Context, id int32, content string) error {
	n, r, err := s.node(id)
	if err != nil {
		return err
	}
	if n.ConfigFile == "" {
		return fmt.Errorf("node %d: no config_file in the cluster file", id)
	}
	f := remote.Quote(n.ConfigFile)
	tmp := remote.Quote(n.ConfigFile + ".ackcheck.tmp")
	dir := remote.Quote(path.Dir(n.ConfigFile))
	cmd := fmt.Sprintf("printf %%s %s | base64 -d > %s && chmod --reference=%s %s && sync -- %s && mv %s %s && sync -- %s",
		remote.Quote(base64.StdEncoding.EncodeToString([]byte(content))), tmp, f, tmp, tmp, tmp, f, dir)
	if _, err := r.Run(ctx, cmd); err != nil {
		return fmt.Errorf("write node %d's config %s durably: %w (the node needs coreutils' sync, 8.24 or newer)", id, n.ConfigFile, err)
	}
	return nil
}

var _ PowerLosser = (*Scripted)(nil)

// CanLoseUnsynced implements PowerLosser: the node needs a lose_command.
func (s *Scripted) CanLoseUnsynced(id int32) error {
	return s.needs(id, "lose_command", func(n NodeSpec) string { return n.LoseCommand }, `put its data dir on ackcheck lazyfs and give "ackcheck lazyfs lose --control <socket>"`)
}

// LoseUnsynced implements PowerLosser with the node's lose_command. It
// refuses while the broker still runs.
func (s *Scripted) LoseUnsynced(ctx context.Context, id int32) (string, error) {
	if err := s.CanLoseUnsynced(id); err != nil {
		return "", err
	}
	n, r, _ := s.node(id)
	if pid, err := s.PID(ctx, id); err != nil || pid != 0 {
		return "", fmt.Errorf("node %d still runs (PID %d, %v): a loss under a live broker is not a power loss", id, pid, err)
	}
	out, err := r.Run(ctx, n.LoseCommand)
	if err != nil {
		return "", fmt.Errorf("lose_command of node %d: %w", id, err)
	}
	return strings.Join(strings.Fields(out), " "), nil
}

// Close closes every prepared shell and every runner.
func (s *Scripted) Close() error {
	s.prep.close()
	for _, r := range s.runners {
		r.Close()
	}
	return nil
}

var _ FileNodes = (*Scripted)(nil)

// DataDirOn implements FileNodes: the node's data_dir, reached through its
// runner.
func (s *Scripted) DataDirOn(id int32) (string, remote.Runner, error) {
	n, r, err := s.node(id)
	if err != nil {
		return "", nil, err
	}
	if n.DataDir == "" {
		return "", nil, fmt.Errorf("node %d has no data_dir in the cluster file: file faults need it", id)
	}
	return n.DataDir, r, nil
}
