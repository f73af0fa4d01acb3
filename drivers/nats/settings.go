package nats

import (
	"fmt"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

var _ drivers.SettingsDescriber = (*Driver)(nil)

// SettingsRows implements drivers.SettingsDescriber.
func (d *Driver) SettingsRows() [][2]string { return d.cfg.rows() }

func (c Config) rows() [][2]string {
	c = c.WithDefaults()
	rows := [][2]string{{"servers", strings.Join(c.Servers, ", ")}}
	if len(c.MonitorURLs) > 0 {
		rows = append(rows, [2]string{"monitoring URLs", strings.Join(c.MonitorURLs, ", ")})
	}
	return append(rows,
		[2]string{"publish timeout", drivers.HumanDuration(c.PublishTimeout)},
		[2]string{"ack timeout", drivers.HumanDuration(c.AckTimeout)},
		[2]string{"max pending", fmt.Sprintf("%d publishes per producer", c.MaxPending)})
}

var _ drivers.OutcomeDeadliner = (*Driver)(nil)

// OutcomeDeadline implements drivers.OutcomeDeadliner: --publish-timeout.
func (d *Driver) OutcomeDeadline() time.Duration { return d.cfg.WithDefaults().PublishTimeout }
