package queen

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// AckMeaning implements drivers.AckDescriber from the running system: the
// database's fsync, synchronous_commit and full_page_writes, and whether
// the server is in maintenance mode (pushes go to its file buffer).
func (d *Driver) AckMeaning(ctx context.Context, topic string) (string, error) {
	settings := map[string]string{}
	for _, name := range []string{"fsync", "synchronous_commit", "full_page_writes"} {
		var v string
		if err := d.db.QueryRow(ctx, "SHOW "+name).Scan(&v); err != nil {
			return "", d.dbErr("SHOW "+name, err)
		}
		settings[name] = v
	}
	var b strings.Builder
	fmt.Fprintf(&b, "fsync=%s, synchronous_commit=%s, full_page_writes=%s: a queued ack came after PostgreSQL committed the push; ",
		settings["fsync"], settings["synchronous_commit"], settings["full_page_writes"])
	switch {
	case settings["fsync"] != "on":
		b.WriteString("with fsync off nothing is flushed to disk, so a power loss of the database can lose it")
	case settings["synchronous_commit"] == "off":
		b.WriteString("with synchronous_commit off the commit returned before its WAL was flushed, so a power loss of the database can lose it")
	default:
		b.WriteString("the commit's WAL was fsynced first, so it survives a power loss of the database")
		if settings["full_page_writes"] != "on" {
			b.WriteString(" unless a torn page hits it (full_page_writes off)")
		}
	}
	if on, err := d.Switch(ctx, maintenance); err == nil && on {
		b.WriteString(". Maintenance mode is on: pushes are answered buffered, from the server's file buffer, before any commit")
	}
	return b.String(), nil
}

// BrokerVersions implements drivers.VersionReporter: the server's /health
// version (node 1) and PostgreSQL's server_version (node 2).
func (d *Driver) BrokerVersions(ctx context.Context) (map[int32]string, error) {
	out := map[int32]string{}
	if h, err := d.health(ctx); err == nil && h.Version != "" {
		out[ServerNode] = "Queen " + h.Version
	}
	var v string
	if err := d.db.QueryRow(ctx, "SHOW server_version").Scan(&v); err == nil {
		out[DBNode] = "PostgreSQL " + v
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("neither the Queen server nor its database said its version")
	}
	return out, nil
}

// SettingsRows implements drivers.SettingsDescriber.
func (d *Driver) SettingsRows() [][2]string {
	c := d.cfg
	return [][2]string{
		{"Queen server", c.URL},
		{"push timeout", drivers.HumanDuration(c.PushTimeout)},
		{"attempt timeout", drivers.HumanDuration(c.AttemptTimeout)},
		{"items per push", fmt.Sprint(c.MaxBatch)},
		{"linger", drivers.HumanDuration(c.Linger)},
		{"pushes in flight per producer", fmt.Sprint(c.MaxConcurrent)},
		{"max pending per producer", fmt.Sprint(c.MaxPending)},
	}
}

// OutcomeDeadline implements drivers.OutcomeDeadliner: --push-timeout.
func (d *Driver) OutcomeDeadline() time.Duration { return d.cfg.PushTimeout }

// AckClasses implements drivers.AckClasser: acks by the status Queen gave
// them. A buffered ack was written to the server's file buffer, not
// committed to PostgreSQL.
func (d *Driver) AckClasses() map[string]int64 {
	return map[string]int64{"queued": d.queued.Load(), "duplicate": d.duplicate.Load(), "buffered": d.buffered.Load()}
}

// maintenance is Queen's maintenance mode: pushes are answered from the
// server's file buffer and replayed into PostgreSQL when it ends.
const maintenance = "maintenance"

// Switches implements drivers.Switcher.
func (d *Driver) Switches() []string { return []string{maintenance} }

// Switch implements drivers.Switcher.
func (d *Driver) Switch(ctx context.Context, name string) (bool, error) {
	if name != maintenance {
		return false, fmt.Errorf("Queen has no %q mode (it has %s)", name, maintenance)
	}
	var m struct {
		MaintenanceMode *bool `json:"maintenanceMode"`
		Enabled         *bool `json:"enabled"`
	}
	if err := d.call(ctx, http.MethodGet, "/api/v1/system/maintenance", nil, &m); err != nil {
		return false, err
	}
	switch {
	case m.MaintenanceMode != nil:
		return *m.MaintenanceMode, nil
	case m.Enabled != nil:
		return *m.Enabled, nil
	}
	return false, fmt.Errorf("GET /api/v1/system/maintenance: no maintenanceMode in the answer")
}

// SetSwitch implements drivers.Switcher.
func (d *Driver) SetSwitch(ctx context.Context, name string, on bool) error {
	if name != maintenance {
		return fmt.Errorf("Queen has no %q mode (it has %s)", name, maintenance)
	}
	return d.call(ctx, http.MethodPost, "/api/v1/system/maintenance", map[string]bool{"enabled": on}, nil)
}
