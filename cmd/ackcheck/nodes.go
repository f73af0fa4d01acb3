package main

import (
	"context"
	"fmt"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/runner"
)

// openedNodes is a cluster faults can act on, and what a run must know
// about it.
type openedNodes struct {
	nodes   faults.Nodes
	brokers []string // client addresses, if the source knows them
	// serviceURL and adminURL reach a local Pulsar standalone.
	serviceURL, adminURL, bookieURL string
	// natsServers and natsMonitors reach a local NATS cluster.
	natsServers, natsMonitors []string
	broker                    string // broker kind
	notes                     []string
	close                     func()
}

// openNodes reaches the cluster a FaultSource names: a local cluster
// directory, or a cluster file (commands run locally or over SSH).
// Connecting applies nothing.
func openNodes(ctx context.Context, src runner.FaultSource, acceptUnknown bool) (*openedNodes, error) {
	switch {
	case src.ClusterDir != "" && src.ClusterFile != "":
		return nil, fmt.Errorf("give --cluster-dir or --cluster-file, not both")
	case src.ClusterDir != "":
		switch cluster.Kind(src.ClusterDir) {
		case "":
			return nil, fmt.Errorf("--cluster-dir %s holds no cluster: start one with `ackcheck cluster kafka up --dir %s` (or cluster pulsar|nats up)", src.ClusterDir, src.ClusterDir)
		case "pulsar":
			p, err := cluster.OpenPulsar(cluster.PulsarOptions{Dir: src.ClusterDir})
			if err != nil {
				return nil, err
			}
			return &openedNodes{nodes: faults.Local{Cluster: p}, serviceURL: p.ServiceURL(), adminURL: p.AdminURL(), bookieURL: p.BookieHTTPURL(),
				broker: "pulsar", close: func() {}}, nil
		case "nats":
			n, err := cluster.OpenNATS(cluster.NATSOptions{Dir: src.ClusterDir})
			if err != nil {
				return nil, err
			}
			return &openedNodes{nodes: faults.Local{Cluster: n}, natsServers: n.Servers(), natsMonitors: n.MonitorURLs(),
				broker: "nats", close: func() {}}, nil
		}
		k, err := cluster.OpenKafka(cluster.KafkaOptions{Dir: src.ClusterDir})
		if err != nil {
			return nil, err
		}
		return &openedNodes{nodes: faults.Local{Cluster: k}, brokers: k.Brokers(), broker: "kafka", close: func() {}}, nil
	case src.ClusterFile != "":
		cf, err := faults.LoadClusterFile(src.ClusterFile)
		if err != nil {
			return nil, err
		}
		s, accepted, err := cf.Connect(ctx, acceptUnknown)
		if err != nil {
			return nil, err
		}
		o := &openedNodes{nodes: s, brokers: cf.Brokers, broker: cf.Broker, close: func() { s.Close() }}
		if o.broker == "" {
			o.broker = "kafka"
		}
		if o.broker == "nats" {
			// A NATS cluster file's brokers are its servers' client URLs.
			o.brokers, o.natsServers = nil, cf.Brokers
		}
		for _, a := range accepted {
			o.notes = append(o.notes, "SSH host key of "+a+" was accepted without being in known_hosts (--accept-unknown-host-keys)")
		}
		return o, nil
	}
	return nil, nil
}
