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

// EnvKafka names the directory of a running local Kafka cluster.
const EnvKafka = "ACKCHECK_KAFKA_CLUSTER_DIR"

// Kafka returns the cluster in $ACKCHECK_KAFKA_CLUSTER_DIR once every node
// answers, or skips the test when the variable is not set.
func Kafka(t *testing.T) *cluster.Kafka {
	t.Helper()
	dir := os.Getenv(EnvKafka)
	if dir == "" {
		t.Skip(EnvKafka + " not set: start a cluster with `ackcheck cluster kafka up --dir D` and set it to D")
	}
	k, err := cluster.OpenKafka(cluster.KafkaOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := k.WaitReady(context.Background(), 90*time.Second); err != nil {
		t.Fatal(err)
	}
	return k
}

// EnvKafkaLazyFS names the directory of a running local Kafka cluster
// started with --lazyfs (on other ports than EnvKafka's).
const EnvKafkaLazyFS = "ACKCHECK_KAFKA_LAZYFS_DIR"

// KafkaLazyFS returns the lazyfs cluster in $ACKCHECK_KAFKA_LAZYFS_DIR
// once every node answers, or skips the test when the variable is not set.
func KafkaLazyFS(t *testing.T) *cluster.Kafka {
	t.Helper()
	dir := os.Getenv(EnvKafkaLazyFS)
	if dir == "" {
		t.Skip(EnvKafkaLazyFS + " not set: start a cluster with `ackcheck cluster kafka up --lazyfs --base-port 29291 --dir D` and set it to D")
	}
	k, err := cluster.OpenKafka(cluster.KafkaOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !k.LazyFS() {
		t.Fatalf("%s=%s is a cluster without lazyfs", EnvKafkaLazyFS, dir)
	}
	if err := k.WaitReady(context.Background(), 90*time.Second); err != nil {
		t.Fatal(err)
	}
	return k
}

// EnvPulsar names the directory of a running local Pulsar standalone
// (`ackcheck cluster pulsar up --dir D`).
const EnvPulsar = "ACKCHECK_PULSAR_DIR"

// Pulsar returns the standalone in $ACKCHECK_PULSAR_DIR once it passes its
// health check, or skips the test when the variable is not set.
func Pulsar(t *testing.T) *cluster.Pulsar {
	t.Helper()
	dir := os.Getenv(EnvPulsar)
	if dir == "" {
		t.Skip(EnvPulsar + " not set: start one with `ackcheck cluster pulsar up --dir D` and set it to D")
	}
	p, err := cluster.OpenPulsar(cluster.PulsarOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReady(context.Background(), 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	return p
}

// EnvNATS names the directory of a running local NATS JetStream cluster
// (`ackcheck cluster nats up --dir D`).
const EnvNATS = "ACKCHECK_NATS_DIR"

// NATS returns the cluster in $ACKCHECK_NATS_DIR once every node is
// healthy, or skips the test when the variable is not set.
func NATS(t *testing.T) *cluster.NATS {
	t.Helper()
	dir := os.Getenv(EnvNATS)
	if dir == "" {
		t.Skip(EnvNATS + " not set: start one with `ackcheck cluster nats up --dir D` and set it to D")
	}
	n, err := cluster.OpenNATS(cluster.NATSOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.WaitReady(context.Background(), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	return n
}

// EnvNATSLazyFS names the directory of a local NATS cluster whose store
// dirs are on lazyfs (`ackcheck cluster nats up --lazyfs --lazyfs-entries
// journal --base-port 24522 --dir D`).
const EnvNATSLazyFS = "ACKCHECK_NATS_LAZYFS_DIR"

// NATSLazyFS returns the lazyfs cluster in $ACKCHECK_NATS_LAZYFS_DIR once
// every node is healthy; it skips the test when the variable is not set.
func NATSLazyFS(t *testing.T) *cluster.NATS {
	t.Helper()
	dir := os.Getenv(EnvNATSLazyFS)
	if dir == "" {
		t.Skip(EnvNATSLazyFS + " not set: start a cluster with `ackcheck cluster nats up --lazyfs --lazyfs-entries journal --base-port 24522 --dir D` and set it to D")
	}
	n, err := cluster.OpenNATS(cluster.NATSOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !n.LazyFS() {
		t.Fatalf("%s=%s is a cluster without lazyfs", EnvNATSLazyFS, dir)
	}
	if err := n.WaitReady(context.Background(), 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	return n
}

// EnvPulsarLazyFS names the directory of a local Pulsar standalone whose
// data dir is on lazyfs (`ackcheck cluster pulsar up --lazyfs
// --lazyfs-entries journal --broker-port 26750 --web-port 28180
// --bookie-port 23281 --dir D`).
const EnvPulsarLazyFS = "ACKCHECK_PULSAR_LAZYFS_DIR"

// PulsarLazyFS returns the standalone in $ACKCHECK_PULSAR_LAZYFS_DIR once it
// passes its health check, or skips the test when the variable is not set.
func PulsarLazyFS(t *testing.T) *cluster.Pulsar {
	t.Helper()
	dir := os.Getenv(EnvPulsarLazyFS)
	if dir == "" {
		t.Skip(EnvPulsarLazyFS + " not set: start one with `ackcheck cluster pulsar up --lazyfs --lazyfs-entries journal --broker-port 26750 --web-port 28180 --bookie-port 23281 --dir D` and set it to D")
	}
	p, err := cluster.OpenPulsar(cluster.PulsarOptions{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if !p.LazyFS() {
		t.Fatalf("%s=%s is a standalone without lazyfs", EnvPulsarLazyFS, dir)
	}
	if err := p.WaitReady(context.Background(), 3*time.Minute); err != nil {
		t.Fatal(err)
	}
	return p
}
