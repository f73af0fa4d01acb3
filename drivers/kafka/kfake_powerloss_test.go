package kafka_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/drivers/kafka"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/internal/need"
	"github.com/ackcheck/ackcheck/lazyfs"
	"github.com/ackcheck/ackcheck/load"
	"github.com/ackcheck/ackcheck/runner"
	"github.com/ackcheck/ackcheck/verifier"
	"github.com/twmb/franz-go/pkg/kfake"
)

// The power-loss pipeline without Java: kfake runs in a child process (a
// power loss must kill something) with its data dir on lazyfs, and the
// real runner, fault injector and verifier judge the run.

const (
	envKfakeDir  = "ACKCHECK_KFAKE_HELPER_DIR"
	envKfakePort = "ACKCHECK_KFAKE_HELPER_PORT"
	envKfakeSync = "ACKCHECK_KFAKE_HELPER_SYNC"
)

// kfakeHelper serves a one-broker kfake on a fixed port, keeping its data
// in dir, until it is killed.
func kfakeHelper(dir string) int {
	port, _ := strconv.Atoi(os.Getenv(envKfakePort))
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(dir)}
	if os.Getenv(envKfakeSync) != "" {
		opts = append(opts, kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Println("kfake:", err)
		return 1
	}
	defer c.Close()
	fmt.Println("ready")
	select {}
}

// kfakeNode is a kfake child process on a lazyfs data dir: faults.Nodes
// and faults.PowerLosser for one node, ID 0 as kfake numbers it.
type kfakeNode struct {
	t    *testing.T
	fs   *lazyfs.FS
	port int
	sync bool

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

var (
	_ faults.Nodes       = (*kfakeNode)(nil)
	_ faults.PowerLosser = (*kfakeNode)(nil)
)

func (k *kfakeNode) IDs() []int32 { return []int32{0} }

func (k *kfakeNode) PID(context.Context, int32) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cmd == nil {
		return 0, nil
	}
	select {
	case <-k.done:
		return 0, nil
	default:
		return k.cmd.Process.Pid, nil
	}
}

func (k *kfakeNode) Signal(ctx context.Context, id int32, sig syscall.Signal) (int, error) {
	pid, _ := k.PID(ctx, id)
	if pid == 0 {
		return 0, fmt.Errorf("kfake does not run")
	}
	return pid, syscall.Kill(pid, sig)
}

func (k *kfakeNode) Stop(ctx context.Context, id int32, _ time.Duration) error {
	_, err := k.Signal(ctx, id, syscall.SIGKILL)
	return err
}

// Start starts kfake and waits until it serves.
func (k *kfakeNode) Start(ctx context.Context, _ int32) error {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envKfakeDir+"="+k.fs.Mountpoint(), envKfakePort+"="+strconv.Itoa(k.port))
	if k.sync {
		cmd.Env = append(cmd.Env, envKfakeSync+"=1")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	k.mu.Lock()
	k.cmd, k.done = cmd, done
	k.mu.Unlock()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		return fmt.Errorf("kfake did not start: %q %v", line, err)
	}
	go func() { bufio.NewReader(out).WriteTo(os.Stdout) }()
	return nil
}

func (k *kfakeNode) DataDirInode(context.Context, int32) (uint64, error) {
	var st syscall.Stat_t
	err := syscall.Stat(k.fs.Backing(), &st)
	return st.Ino, err
}

func (k *kfakeNode) Where() string { return "kfake in a child process on lazyfs" }

func (k *kfakeNode) CanLoseUnsynced(int32) error { return nil }

func (k *kfakeNode) LoseUnsynced(ctx context.Context, id int32) (string, error) {
	if pid, _ := k.PID(ctx, id); pid != 0 {
		return "", fmt.Errorf("kfake still runs")
	}
	r := k.fs.Lose(5 * time.Second)
	return fmt.Sprintf("%d files cut back (%d bytes dropped), %d directory changes undone", r.FilesRestored, r.BytesDropped, r.EntriesUndone), nil
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestKfakePowerLoss: kfake acks from the page cache without SyncWrites
// and loses acked messages in a power loss; with SyncWrites it loses none.
// lazyfs runs in journal mode: kfake never fsyncs a directory, and under
// the strict mode its new segment files would vanish with or without
// SyncWrites (TestKfakeStrictEntries shows that).
func TestKfakePowerLoss(t *testing.T) {
	for _, tc := range []struct {
		sync     bool
		wantLoss bool
	}{{false, true}, {true, false}} {
		t.Run(fmt.Sprintf("SyncWrites=%v", tc.sync), func(t *testing.T) {
			res := kfakePowerLoss(t, tc.sync, lazyfs.EntriesJournal)
			if tc.wantLoss && res.Lost == 0 {
				t.Fatalf("no acked message lost without SyncWrites: the power loss did not take what kfake had not fsynced")
			}
			if !tc.wantLoss && res.Lost != 0 {
				t.Fatalf("%d acked messages lost with SyncWrites", res.Lost)
			}
			if !tc.wantLoss && res.Verdict != "pass" {
				t.Fatalf("verdict %s: %v", res.Verdict, res.Reasons)
			}
			if !tc.wantLoss && res.Acked < 7000 {
				t.Fatalf("only %d of 8000 acked: kfake did not come back after the loss", res.Acked)
			}
		})
	}
}

// TestKfakeStrictEntries records what the strict mode finds: kfake's
// SyncWrites fsyncs segment files but never a directory, so under POSIX's
// bare promise its topic directories (and every acked message in them)
// vanish in a power loss.
func TestKfakeStrictEntries(t *testing.T) {
	res := kfakePowerLoss(t, true, lazyfs.EntriesStrict)
	t.Logf("kfake with SyncWrites under strict entries: %d of %d acked lost", res.Lost, res.Acked)
	if res.Lost == 0 {
		t.Fatalf("expected loss: kfake's new segment files are never made durable by a directory fsync")
	}
}

func kfakePowerLoss(t *testing.T, syncWrites bool, entries string) *verifier.Result {
	t.Helper()
	dir := t.TempDir()
	backing := filepath.Join(dir, "data.backing")
	os.Mkdir(backing, 0o755)
	fs, err := lazyfs.Mount(backing, filepath.Join(dir, "data"), lazyfs.Options{Entries: entries})
	if err != nil {
		need.Skip(t, need.FUSE, "cannot mount FUSE here: "+err.Error())
	}
	node := &kfakeNode{t: t, fs: fs, port: freePort(t), sync: syncWrites}
	t.Cleanup(func() {
		node.Signal(context.Background(), 0, syscall.SIGKILL)
		node.mu.Lock()
		done := node.done
		node.mu.Unlock()
		if done != nil {
			<-done
		}
		if err := fs.Unmount(); err != nil {
			t.Errorf("unmount: %v", err)
		}
	})
	ctx := context.Background()
	if err := node.Start(ctx, 0); err != nil {
		t.Fatal(err)
	}
	d, err := kafka.New(kafka.Config{Brokers: []string{"127.0.0.1:" + strconv.Itoa(node.port)}, Acks: "all",
		DeliveryTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	res, err := runner.Run(ctx, runner.Config{
		Out: filepath.Join(dir, "run"), Driver: d,
		Topic:  drivers.TopicSpec{Name: "pl", Partitions: 4, ReplicationFactor: 1},
		Load:   load.Config{Rate: 2000, Duration: 4 * time.Second, MessageSize: 256, Producers: 2, LiveRead: false},
		Verify: true, ReadIdleTimeout: 10 * time.Second,
		Faults: &runner.FaultPlan{Nodes: node, RecoveryTimeout: 20 * time.Second,
			Steps: []faults.Step{{At: 2 * time.Second, Action: faults.PowerLoss, Target: faults.Target{Kind: faults.All}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var pl string
	for _, f := range res.Faults {
		if f.Action == "power-loss" {
			pl = string(f.Result) + " " + f.Error + " " + f.Lost[0]
		}
	}
	t.Logf("SyncWrites=%v entries=%s: acked %d, lost %d, longest without acks %.0f ms; power loss: %s",
		syncWrites, entries, res.Acked, res.Lost, res.LongestNoAckMs, pl)
	if len(res.Faults) == 0 || res.Faults[0].Result != "applied" {
		t.Fatalf("the power loss did not apply: %s", pl)
	}
	return res
}
