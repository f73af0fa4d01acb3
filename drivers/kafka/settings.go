package kafka

import (
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

var _ drivers.SettingsDescriber = (*Driver)(nil)

// SettingsRows implements drivers.SettingsDescriber. The SASL password and
// the TLS key are never listed.
func (d *Driver) SettingsRows() [][2]string { return d.cfg.rows() }

func (c Config) rows() [][2]string {
	c = c.WithDefaults()
	rows := [][2]string{
		{"brokers", strings.Join(c.Brokers, ", ")},
		{"acks", c.Acks},
		{"idempotent", onOff(c.Idempotent != nil && *c.Idempotent)},
		{"compression", c.Compression},
		{"linger", drivers.HumanDuration(c.Linger)},
		{"delivery timeout", drivers.HumanDuration(c.DeliveryTimeout)},
	}
	if c.SASLMechanism != "" {
		rows = append(rows, [2]string{"SASL", c.SASLMechanism + " as " + c.SASLUsername})
	}
	if c.TLS {
		tls := "on"
		if c.TLSInsecureSkipVerify {
			tls = "on, server certificate not verified"
		}
		rows = append(rows, [2]string{"TLS", tls})
	}
	if c.NetNS != "" {
		rows = append(rows, [2]string{"network namespaces", c.NetNS + "-* (dialled from " + c.NetNS + "-hub)"})
	}
	return rows
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

var _ drivers.OutcomeDeadliner = (*Driver)(nil)

// OutcomeDeadline implements drivers.OutcomeDeadliner: --delivery-timeout.
func (d *Driver) OutcomeDeadline() time.Duration { return d.cfg.WithDefaults().DeliveryTimeout }
