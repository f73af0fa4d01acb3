package nats

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// varzServer serves a /varz whose jetstream config is cfg (nil: a server
// without JetStream; "down": no answer), and a /jsz with the same config
// (disabled without one).
func varzServer(t *testing.T, cfg map[string]any, down bool) string {
	return monitorServer(t, cfg, cfg, down)
}

// monitorServer serves a /varz whose jetstream config is varzCfg and a
// /jsz whose config is jszCfg (nil: none, JetStream disabled), or no
// answer at all when down.
func monitorServer(t *testing.T, varzCfg, jszCfg map[string]any, down bool) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case down:
			http.Error(w, "no", http.StatusServiceUnavailable)
		case r.URL.Path == "/varz":
			v := map[string]any{"server_name": "n"}
			if varzCfg != nil {
				v["jetstream"] = map[string]any{"config": varzCfg}
			}
			json.NewEncoder(w).Encode(v)
		case r.URL.Path == "/jsz":
			v := map[string]any{"server_id": "n", "config": map[string]any{}}
			if jszCfg == nil {
				v["disabled"] = true
			} else {
				v["config"] = jszCfg
			}
			json.NewEncoder(w).Encode(v)
		default:
			http.Error(w, "no", http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A commit of NATS follows the servers' sync_interval: CommitFsync reads
// it from every /varz (on only when all run always; an error when one is
// not known), and SetCommitFsync switches nothing: it accepts the value
// the servers already run and otherwise names the setting and its fix.
func TestCommitFsync(t *testing.T) {
	always := map[string]any{"sync_always": true}
	def := map[string]any{"sync_interval": int64(2 * time.Minute)}
	for _, tc := range []struct {
		name     string
		nodes    []map[string]any
		down     int // a node (1-based) whose /varz does not answer
		want     bool
		err      string
		setOn    string // SetCommitFsync(true): "" or the error it gives
		setOff   string // SetCommitFsync(false)
		noMonURL bool
	}{
		{name: "all always", nodes: []map[string]any{always, always, always}, want: true, setOff: "no commit fsync switch of its own"},
		{name: "default", nodes: []map[string]any{def, def, def}, want: false, setOn: "--sync always"},
		{name: "mixed", nodes: []map[string]any{always, def, always}, want: false, setOn: "node 2: sync_interval=2m0s"},
		// A server whose /varz and /jsz show no JetStream (off, or still
		// starting) is not known: "off" would make every consumer's acks
		// not fsynced, a broken promise counted as documented.
		{name: "JetStream off", nodes: []map[string]any{always, nil, always}, err: "node 2: JetStream off on its /varz and /jsz (a server still starting"},
		{name: "a node down", nodes: []map[string]any{always, always, always}, down: 3, err: "node 3: not known"},
		{name: "no monitoring URL", noMonURL: true, err: "give --monitor-urls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var urls []string
			for i, c := range tc.nodes {
				urls = append(urls, varzServer(t, c, i+1 == tc.down))
			}
			d := &Driver{cfg: Config{MonitorURLs: urls}}
			ctx := context.Background()
			got, err := d.CommitFsync(ctx)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("CommitFsync: %v %v, want error %q", got, err, tc.err)
				}
				if err := d.SetCommitFsync(ctx, true); err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("SetCommitFsync with the setting not known: %v", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("CommitFsync: %v %v, want %v", got, err, tc.want)
			}
			for on, want := range map[bool]string{true: tc.setOn, false: tc.setOff} {
				err := d.SetCommitFsync(ctx, on)
				if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
					t.Errorf("SetCommitFsync(%v): %v, want %q", on, err, want)
				}
			}
		})
	}
}

// nats-server fills /varz's jetstream config at the first /varz it serves
// and keeps it: one served before JetStream started has none for the
// process's life. The setting is then read from /jsz, which reads it
// afresh; a /jsz that does not answer leaves the server's setting not
// known.
func TestCommitFsyncVarzWithoutConfig(t *testing.T) {
	always := map[string]any{"sync_always": true}
	def := map[string]any{"sync_interval": int64(2 * time.Minute)}
	jszDown := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/varz" {
			json.NewEncoder(w).Encode(map[string]any{"server_name": "n"})
			return
		}
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	t.Cleanup(jszDown.Close)
	for _, tc := range []struct {
		name string
		urls []string
		want bool
		err  string
	}{
		{"always, /varz stale", []string{varzServer(t, always, false), monitorServer(t, nil, always, false), varzServer(t, always, false)}, true, ""},
		{"default, /varz stale", []string{varzServer(t, def, false), monitorServer(t, nil, def, false), varzServer(t, def, false)}, false, ""},
		{"/jsz down", []string{varzServer(t, always, false), jszDown.URL, varzServer(t, always, false)}, false, "node 2: not known (/varz has no jetstream config, and GET"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Driver{cfg: Config{MonitorURLs: tc.urls}}
			got, err := d.CommitFsync(context.Background())
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%v %v, want error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("%v %v, want %v", got, err, tc.want)
			}
		})
	}
}

// What an acknowledged ack of a consumer meant on disk: fsynced only for
// a replicated, file-stored consumer on servers that all run
// sync_interval: always.
func TestGroupCommitFsync(t *testing.T) {
	always := []nodeSync{{Node: 1, Always: true}, {Node: 2, Always: true}, {Node: 3, Always: true}}
	def := []nodeSync{{Node: 1, Interval: 2 * time.Minute}, {Node: 2, Interval: 2 * time.Minute}, {Node: 3, Interval: 2 * time.Minute}}
	mixed := []nodeSync{{Node: 1, Always: true}, {Node: 2, Interval: time.Second}, {Node: 3, Always: true}}
	for _, tc := range []struct {
		name string
		r    int
		mem  bool
		ns   []nodeSync
		want bool
		says string
	}{
		{"R3 always", 3, false, always, true, "R3 consumer answers an ack once its Raft group committed it, each log append fsynced first (node 1: sync_interval=always"},
		{"R3 default", 3, false, def, false, "in logs fsynced only every sync_interval (node 1: sync_interval=2m0s"},
		{"R3 mixed", 3, false, mixed, false, "node 2: sync_interval=1s"},
		{"R1 always", 1, false, always, false, "R1 consumer answers an ack before it writes its state file"},
		{"R3 mem_storage always", 3, true, always, false, "in memory (mem_storage)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := groupCommitFsync(tc.r, tc.mem, tc.ns)
			if got != tc.want || !strings.Contains(why, tc.says) {
				t.Fatalf("%v %q, want %v saying %q", got, why, tc.want, tc.says)
			}
		})
	}
}
