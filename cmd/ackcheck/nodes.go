package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/ackcheck/ackcheck/cluster"
	"github.com/ackcheck/ackcheck/faults"
	"github.com/ackcheck/ackcheck/runner"
)

// openedNodes is a cluster faults can act on, and what a run must know
// about it.
type openedNodes struct {
	nodes faults.Nodes
	// local is the local cluster of --cluster-dir, nil for a cluster file.
	local cluster.Local
	// broker is the driver the cluster runs; "" when a cluster file does
	// not say.
	broker string
	// addresses are a cluster file's client addresses (its brokers list).
	addresses []string
	notes     []string
	close     func()
}

// clientFlags are the driver flags that reach the cluster, for the driver
// of profile p.
func (o *openedNodes) clientFlags(addressFlag string) []cluster.Flag {
	if o.local != nil {
		return o.local.ClientFlags()
	}
	if len(o.addresses) > 0 {
		return []cluster.Flag{{Name: addressFlag, Value: strings.Join(o.addresses, ",")}}
	}
	return nil
}

// openNodes reaches the cluster a FaultSource names: a local cluster
// directory, or a cluster file (commands run locally or over SSH).
// Connecting applies nothing. Neither given: nil.
func openNodes(ctx context.Context, src runner.FaultSource, acceptUnknown bool) (*openedNodes, error) {
	switch {
	case src.ClusterDir != "" && src.ClusterFile != "":
		return nil, fmt.Errorf("give --cluster-dir or --cluster-file, not both")
	case src.ClusterDir != "":
		c, kind, err := openLocal(src.ClusterDir)
		if err != nil {
			return nil, err
		}
		return &openedNodes{nodes: faults.Local{Cluster: c}, local: c, broker: kind, close: func() {}}, nil
	case src.ClusterFile != "":
		cf, err := faults.LoadClusterFile(src.ClusterFile, profileNames())
		if err != nil {
			return nil, err
		}
		s, accepted, err := cf.Connect(ctx, acceptUnknown)
		if err != nil {
			return nil, err
		}
		o := &openedNodes{nodes: s, broker: cf.Broker, addresses: cf.Brokers, close: func() { s.Close() }}
		for _, a := range accepted {
			o.notes = append(o.notes, "SSH host key of "+a+" was accepted without being in known_hosts (--accept-unknown-host-keys)")
		}
		return o, nil
	}
	return nil, nil
}

// openLocal opens the local cluster in dir, of whichever broker it holds.
func openLocal(dir string) (cluster.Local, string, error) { return profiles().openLocal(dir) }

func (l brokerList) openLocal(dir string) (cluster.Local, string, error) {
	kind := cluster.Kind(dir)
	var ups []string
	for _, p := range l {
		if lc, ok := launcherOf(p); ok {
			if cluster.Opens(lc, kind) {
				c, err := lc.NewFlags().Open(dir)
				return c, p.Name(), err
			}
			ups = append(ups, p.Name())
		}
	}
	if kind == "" {
		return nil, "", fmt.Errorf("--cluster-dir %s holds no cluster: start one with `ackcheck cluster %s up --dir %s`", dir, strings.Join(ups, "|"), dir)
	}
	return nil, "", fmt.Errorf("--cluster-dir %s holds a %q cluster, which this ackcheck does not know (it knows %s)", dir, kind, strings.Join(ups, ", "))
}
