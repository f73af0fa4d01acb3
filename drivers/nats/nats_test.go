package nats

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestConfigValidate(t *testing.T) {
	ok := Config{Servers: []string{"nats://127.0.0.1:4222"}}
	tests := []struct {
		name string
		cfg  Config
		want string // "" means valid
	}{
		{"minimal", ok, ""},
		{"with monitors", Config{Servers: []string{"nats://a:1", "nats://b:2"}, MonitorURLs: []string{"http://a:8222", "http://b:8222"}}, ""},
		{"no servers", Config{}, "no NATS server"},
		{"bad scheme", Config{Servers: []string{"http://127.0.0.1:4222"}}, "give nats://host:port"},
		{"no host", Config{Servers: []string{"nats://"}}, "give nats://host:port"},
		{"monitor count", Config{Servers: []string{"nats://a:1", "nats://b:2"}, MonitorURLs: []string{"http://a:8222"}}, "one per server"},
		{"bad monitor", Config{Servers: []string{"nats://a:1"}, MonitorURLs: []string{"a:8222"}}, "give http://host:port"},
		{"negative", Config{Servers: ok.Servers, AckTimeout: -time.Second}, "cannot be negative"},
		{"past the duplicate window", Config{Servers: ok.Servers, PublishTimeout: 3 * time.Minute}, "duplicate window"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want an error containing %q, got %v", tt.want, err)
			}
		})
	}
}

func TestCheckTopic(t *testing.T) {
	for _, good := range []string{"ackcheck", "fsync-audit-20261130t020000", "a_b"} {
		if err := checkTopic(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
	for _, bad := range []string{"", "a.b", "a*", "a>", "a b", "a/b"} {
		if err := checkTopic(bad); err == nil {
			t.Errorf("%q: accepted, but it cannot name a stream and a subject token", bad)
		}
	}
	if got := StreamName("t", 3); got != "t-3" {
		t.Errorf("StreamName = %q", got)
	}
	if got := Subject("t", 3); got != "ackcheck.t.3" {
		t.Errorf("Subject = %q", got)
	}
}

// The classification decides nothing about the verdict (the verifier
// treats rejected and unknown alike) but a wrong "retryable" could retry
// a refused message forever, and a wrong Rejected after a retry would
// claim a message was never stored when an earlier attempt may have been.
func TestRetryAndClassify(t *testing.T) {
	noLeader := &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}
	refused := &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence, Description: "wrong last sequence"}
	tests := []struct {
		name      string
		err       error
		retry     bool
		first     drivers.Status // outcome when the first attempt ends with err
		afterMore drivers.Status // outcome when a later attempt ends with err
	}{
		{"ack timeout", jetstream.ErrAsyncPublishTimeout, true, drivers.Unknown, drivers.Unknown},
		{"no stream response", jetstream.ErrNoStreamResponse, true, drivers.Unknown, drivers.Unknown},
		{"disconnected", nats.ErrDisconnected, true, drivers.Unknown, drivers.Unknown},
		{"no leader", noLeader, true, drivers.Unknown, drivers.Unknown},
		{"wrapped no leader", fmt.Errorf("publish: %w", noLeader), true, drivers.Unknown, drivers.Unknown},
		{"stream refused", refused, false, drivers.Rejected, drivers.Unknown},
		{"stalled", jetstream.ErrTooManyStalledMsgs, false, drivers.Rejected, drivers.Unknown},
		{"connection closed", nats.ErrConnectionClosed, false, drivers.Rejected, drivers.Unknown},
		{"anything else", errors.New("boom"), false, drivers.Unknown, drivers.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retryable(tt.err); got != tt.retry {
				t.Errorf("retryable = %v, want %v", got, tt.retry)
			}
			if got := classify(tt.err, 1).Status; got != tt.first {
				t.Errorf("first attempt: %s, want %s", got, tt.first)
			}
			if got := classify(tt.err, 2).Status; got != tt.afterMore {
				t.Errorf("after a retry: %s, want %s", got, tt.afterMore)
			}
		})
	}
}

// A stream create is sent again only while an election explains its
// failure; a refusal (a bad config, too few servers for the replicas) must
// come back at once, with what to fix.
func TestCreateStreamRetriesOnlyElections(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"call deadline", fmt.Errorf("create: %w", context.DeadlineExceeded), true},
		{"request timeout", nats.ErrTimeout, true},
		{"no responders", nats.ErrNoResponders, true},
		{"temporarily unavailable", &jetstream.APIError{Code: 503, ErrorCode: 10008}, true},
		{"no peers for placement (more replicas than servers)", &jetstream.APIError{Code: 400, ErrorCode: errNoSuitablePeers}, false},
		{"insufficient resources (a 503 too)", &jetstream.APIError{Code: 503, ErrorCode: errInsufficientResources}, false},
		{"name in use, other config", jetstream.ErrStreamNameAlreadyInUse, false},
		{"anything else", errors.New("boom"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := electing(tt.err); got != tt.want {
				t.Errorf("electing(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestPartitionState(t *testing.T) {
	d := &Driver{names: map[string]int32{"n1": 1, "n2": 2, "n3": 3}}
	tests := []struct {
		name             string
		info             jetstream.ClusterInfo
		leader           int32
		replicas, inSync []int32
		err              string
		offline          []int32
	}{
		{"all current", jetstream.ClusterInfo{Leader: "n2", Replicas: []*jetstream.PeerInfo{{Name: "n1", Current: true}, {Name: "n3", Current: true}}},
			2, []int32{2, 1, 3}, []int32{2, 1, 3}, "", nil},
		// Offline is the meta layer's liveness flag and lags a restart by
		// seconds: a current peer is in sync, and listed offline.
		{"one behind, one offline", jetstream.ClusterInfo{Leader: "n1", Replicas: []*jetstream.PeerInfo{{Name: "n2", Current: false}, {Name: "n3", Current: true, Offline: true}}},
			1, []int32{1, 2, 3}, []int32{1, 3}, "", []int32{3}},
		{"no leader", jetstream.ClusterInfo{Replicas: []*jetstream.PeerInfo{{Name: "n1", Current: true}}},
			-1, []int32{1}, []int32{1}, "no leader", nil},
		{"unknown server", jetstream.ClusterInfo{Leader: "n1", Replicas: []*jetstream.PeerInfo{{Name: "elsewhere", Current: true}}},
			1, []int32{1}, []int32{1}, "servers not among --servers: elsewhere", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ps := d.partitionState(7, &tt.info)
			if ps.Partition != 7 || ps.Leader != tt.leader || !slices.Equal(ps.Replicas, tt.replicas) || !slices.Equal(ps.ISR, tt.inSync) || ps.Err != tt.err || !slices.Equal(ps.Offline, tt.offline) {
				t.Fatalf("got %+v; want leader %d replicas %v in sync %v err %q", ps, tt.leader, tt.replicas, tt.inSync, tt.err)
			}
		})
	}
}

func TestNewUnreachable(t *testing.T) {
	_, err := New(Config{Servers: []string{"nats://127.0.0.1:1"}})
	if !errors.Is(err, drivers.ErrUnreachable) || !strings.Contains(err.Error(), "check --servers") {
		t.Fatalf("want an unreachable error that says what to check, got %v", err)
	}
}
