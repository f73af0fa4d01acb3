package pulsar

import (
	"fmt"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

var _ drivers.SettingsDescriber = (*Driver)(nil)

// SettingsRows implements drivers.SettingsDescriber.
func (d *Driver) SettingsRows() [][2]string { return d.cfg.rows() }

func (c Config) rows() [][2]string {
	c = c.WithDefaults()
	rows := [][2]string{
		{"service URL", c.ServiceURL},
		{"admin URL", c.AdminURL},
	}
	if c.BookieHTTPURL != "" {
		rows = append(rows, [2]string{"bookie admin URL", c.BookieHTTPURL})
	}
	if c.NetNS != "" {
		rows = append(rows, [2]string{"network namespaces", c.NetNS + "-* (dialled from " + c.NetNS + "-hub; the binary protocol through a forwarder on 127.0.0.1)"})
	}
	batching := "off"
	if !c.DisableBatching {
		batching = "on, max publish delay " + drivers.HumanDuration(c.BatchingMaxPublishDelay)
	}
	return append(rows,
		[2]string{"namespace", c.Tenant + "/" + c.Namespace},
		[2]string{"batching", batching},
		[2]string{"send timeout", drivers.HumanDuration(c.SendTimeout)},
		[2]string{"max pending messages", fmt.Sprintf("%d per partition producer", c.MaxPendingMessages)})
}

var _ drivers.OutcomeDeadliner = (*Driver)(nil)

// OutcomeDeadline implements drivers.OutcomeDeadliner: --send-timeout.
func (d *Driver) OutcomeDeadline() time.Duration { return d.cfg.WithDefaults().SendTimeout }
