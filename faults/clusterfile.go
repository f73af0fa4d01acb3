package faults

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/ackcheck/ackcheck/remote"
	"gopkg.in/yaml.v3"
)

// ClusterFile describes a cluster ackcheck controls by shell commands,
// locally or over SSH. It is YAML (JSON is YAML too):
//
//	broker: kafka
//	brokers: [10.0.0.1:9092, 10.0.0.2:9092, 10.0.0.3:9092]
//	known_hosts: ~/.ssh/known_hosts
//	defaults: {user: kafka, port: 22, key_file: ~/.ssh/id_ed25519}
//	nodes:
//	  - id: 1
//	    host: 10.0.0.1
//	    systemd_unit: kafka
//	    data_dir: /var/lib/kafka
//	    config_file: /etc/kafka/server.properties
//	    log: /var/log/kafka/server.log
//	    ports: [9092, 9093]  # the broker's ports: network faults match only these
//	    address: 10.0.0.1    # the IP its peers reach it at (default host)
//
// A node's log is read after the load for the brokers' own account of
// each fault (Scripted.RecoveryAccountContext).
type ClusterFile struct {
	// Broker is the broker's driver name (for fsync toggles and reports);
	// empty means the run's --driver.
	Broker string `yaml:"broker"`
	// Brokers are the client addresses, used when --brokers is not given.
	Brokers []string `yaml:"brokers"`
	// KnownHosts is checked for every host key (default ~/.ssh/known_hosts).
	KnownHosts string `yaml:"known_hosts"`
	// Defaults fill what a node leaves empty (user, port, key_file, agent).
	Defaults NodeSpec   `yaml:"defaults"`
	Nodes    []NodeSpec `yaml:"nodes"`
}

// LoadClusterFile reads and checks a cluster file. brokers are the broker
// names a cluster file may give (the drivers ackcheck has).
func LoadClusterFile(path string, brokers []string) (*ClusterFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read cluster file: %w", err)
	}
	var cf ClusterFile
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&cf); err != nil {
		return nil, fmt.Errorf("cluster file %s: %w", path, err)
	}
	if len(cf.Nodes) == 0 {
		return nil, fmt.Errorf("cluster file %s: no nodes", path)
	}
	seen := map[int32]bool{}
	for i := range cf.Nodes {
		n := &cf.Nodes[i]
		if n.User == "" {
			n.User = cf.Defaults.User
		}
		if n.Port == 0 {
			n.Port = cf.Defaults.Port
		}
		if n.KeyFile == "" {
			n.KeyFile = cf.Defaults.KeyFile
		}
		n.Agent = n.Agent || cf.Defaults.Agent
		if len(n.Ports) == 0 {
			n.Ports = cf.Defaults.Ports
		}
		if n.Firewall == "" {
			n.Firewall = cf.Defaults.Firewall
		}
		n.KeyFile = expandHome(n.KeyFile)
		if seen[n.ID] {
			return nil, fmt.Errorf("cluster file %s: node %d appears twice", path, n.ID)
		}
		seen[n.ID] = true
		if err := n.validate(); err != nil {
			return nil, fmt.Errorf("cluster file %s: %w", path, err)
		}
	}
	cf.KnownHosts = expandHome(cf.KnownHosts)
	if cf.Broker != "" && !slices.Contains(brokers, cf.Broker) {
		return nil, fmt.Errorf("cluster file %s: broker %q: use one of %s", path, cf.Broker, strings.Join(brokers, ", "))
	}
	return &cf, nil
}

func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if h, err := os.UserHomeDir(); err == nil {
			return h + "/" + rest
		}
	}
	return p
}

// Connect opens a runner per node (one SSH connection per host:port:user)
// and returns the cluster. acceptUnknown accepts host keys that
// known_hosts lacks (never changed ones); accepted lists each such key so
// that the report can state it. Nothing is applied by connecting.
func (cf *ClusterFile) Connect(ctx context.Context, acceptUnknown bool) (s *Scripted, accepted []string, err error) {
	runners := map[int32]remote.Runner{}
	byHost := map[string]remote.Runner{}
	defer func() {
		if err != nil {
			for _, r := range byHost {
				r.Close()
			}
		}
	}()
	var where []string
	for _, n := range cf.Nodes {
		if n.local() {
			runners[n.ID] = remote.Local{}
			continue
		}
		key := fmt.Sprintf("%s@%s:%d", n.User, n.Host, n.Port)
		r, ok := byHost[key]
		if !ok {
			ssh, err := remote.DialSSH(ctx, remote.SSHConfig{Host: n.Host, Port: n.Port, User: n.User, KeyFile: n.KeyFile,
				Agent: n.Agent, KnownHosts: cf.KnownHosts, AcceptUnknownHostKey: acceptUnknown})
			if err != nil {
				return nil, nil, err
			}
			if ssh.AcceptedUnknownKey != "" {
				accepted = append(accepted, key+" "+ssh.AcceptedUnknownKey)
			}
			r = ssh
			byHost[key] = r
			where = append(where, key)
		}
		runners[n.ID] = r
	}
	desc := "local commands"
	if len(where) > 0 {
		slices.Sort(where)
		desc = "ssh " + strings.Join(where, ", ")
	}
	return NewScripted(cf.Nodes, runners, desc), accepted, nil
}
