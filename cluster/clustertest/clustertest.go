// Package clustertest gives tests the real local cluster that .ci/run (or
// a developer) started, or skips them with what to do.
package clustertest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/cluster"
)

// The variables that name the directory of a running local cluster, each
// with the command that starts one (the lazyfs ones on other ports than
// their plain twins, so that both can run at once).
const (
	EnvKafka        = "ACKCHECK_KAFKA_CLUSTER_DIR"
	EnvKafkaLazyFS  = "ACKCHECK_KAFKA_LAZYFS_DIR"
	EnvPulsar       = "ACKCHECK_PULSAR_DIR"
	EnvPulsarLazyFS = "ACKCHECK_PULSAR_LAZYFS_DIR"
	EnvNATS         = "ACKCHECK_NATS_DIR"
	EnvNATSLazyFS   = "ACKCHECK_NATS_LAZYFS_DIR"
	// EnvQueen names a Queen cluster on lazyfs: its tests need power
	// losses, and one cluster serves them all. EnvRequireQueen makes them
	// fail, not skip, without it (CI sets it).
	EnvQueen        = "ACKCHECK_QUEEN_DIR"
	EnvRequireQueen = "ACKCHECK_REQUIRE_QUEEN"
)

// Kafka returns the cluster in $ACKCHECK_KAFKA_CLUSTER_DIR once every node
// answers, or skips the test when the variable is not set.
func Kafka(t *testing.T) *cluster.Kafka {
	t.Helper()
	return fromEnv(t, EnvKafka, "ackcheck cluster kafka up --dir D", openKafka, false, 90*time.Second)
}

// KafkaLazyFS returns the cluster in $ACKCHECK_KAFKA_LAZYFS_DIR, whose
// brokers keep their data on lazyfs, once every node answers.
func KafkaLazyFS(t *testing.T) *cluster.Kafka {
	t.Helper()
	return fromEnv(t, EnvKafkaLazyFS, "ackcheck cluster kafka up --lazyfs --base-port 29291 --dir D", openKafka, true, 90*time.Second)
}

// Pulsar returns the standalone in $ACKCHECK_PULSAR_DIR once it passes its
// health check, or skips the test when the variable is not set.
func Pulsar(t *testing.T) *cluster.Pulsar {
	t.Helper()
	return fromEnv(t, EnvPulsar, "ackcheck cluster pulsar up --dir D", openPulsar, false, 3*time.Minute)
}

// PulsarLazyFS returns the standalone in $ACKCHECK_PULSAR_LAZYFS_DIR, whose
// data dir is on lazyfs, once it passes its health check.
func PulsarLazyFS(t *testing.T) *cluster.Pulsar {
	t.Helper()
	return fromEnv(t, EnvPulsarLazyFS, "ackcheck cluster pulsar up --lazyfs --lazyfs-entries journal --broker-port 26750 --web-port 28180 --bookie-port 23281 --dir D",
		openPulsar, true, 3*time.Minute)
}

// NATS returns the cluster in $ACKCHECK_NATS_DIR once every node is
// healthy, or skips the test when the variable is not set.
func NATS(t *testing.T) *cluster.NATS {
	t.Helper()
	return fromEnv(t, EnvNATS, "ackcheck cluster nats up --dir D", openNATS, false, 2*time.Minute)
}

// NATSLazyFS returns the cluster in $ACKCHECK_NATS_LAZYFS_DIR, whose store
// dirs are on lazyfs, once every node is healthy.
func NATSLazyFS(t *testing.T) *cluster.NATS {
	t.Helper()
	return fromEnv(t, EnvNATSLazyFS, "ackcheck cluster nats up --lazyfs --lazyfs-entries journal --base-port 24522 --dir D", openNATS, true, 2*time.Minute)
}

// Queen returns the Queen cluster (server and PostgreSQL, on lazyfs) in
// $ACKCHECK_QUEEN_DIR once both answer, starting a node that does not
// run. Without the variable it skips the test, or fails it when
// $ACKCHECK_REQUIRE_QUEEN is set.
func Queen(t *testing.T) *cluster.Queen {
	t.Helper()
	if os.Getenv(EnvQueen) == "" && os.Getenv(EnvRequireQueen) != "" {
		t.Fatalf("%s is set and %s is not: .ci/run starts a Queen cluster and sets it", EnvRequireQueen, EnvQueen)
	}
	q := fromEnv(t, EnvQueen, "ackcheck cluster queen up --lazyfs --lazyfs-entries journal --queen-home H --dir D", openQueen, true, 0)
	if err := q.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
	return q
}

func openQueen(dir string) (*cluster.Queen, error) {
	return cluster.OpenQueen(cluster.QueenOptions{Dir: dir})
}

func openKafka(dir string) (*cluster.Kafka, error) {
	return cluster.OpenKafka(cluster.KafkaOptions{Dir: dir})
}
func openPulsar(dir string) (*cluster.Pulsar, error) {
	return cluster.OpenPulsar(cluster.PulsarOptions{Dir: dir})
}
func openNATS(dir string) (*cluster.NATS, error) {
	return cluster.OpenNATS(cluster.NATSOptions{Dir: dir})
}

// running is what a test needs of every local cluster before it uses it.
type running interface {
	LazyFS() bool
	WaitReady(ctx context.Context, timeout time.Duration) error
}

// fromEnv opens the cluster in the directory $env names and returns it
// once it is ready within ready. It skips the test, saying to run start,
// when env is not set, and fails it when lazy asks for a cluster on
// lazyfs and the one found is not (a power loss there would lose nothing).
func fromEnv[C running](t *testing.T, env, start string, open func(dir string) (C, error), lazy bool, ready time.Duration) C {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		t.Skipf("%s not set: start a cluster with `%s` and set it to D", env, start)
	}
	c, err := open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if lazy && !c.LazyFS() {
		t.Fatalf("%s=%s is a cluster without lazyfs", env, dir)
	}
	if ready > 0 {
		if err := c.WaitReady(context.Background(), ready); err != nil {
			t.Fatal(err)
		}
	}
	return c
}
