package pulsar

import (
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// The log oracle: when the standalone's own log says it served again,
// never anything ackcheck computed. The JVM logs "[2026-12-02
// 06:10:20,489] INFO ..." (log4j2's %d, in the machine's own time zone,
// which a local cluster shares with ackcheck).

// ServiceReady is the broker's line once its messaging service accepts
// clients: PulsarService logs it at the end of its start, after the
// metadata store, the bookie and the listeners are up.
const ServiceReady = "messaging service is ready"

// noInSync is what the oracle says instead of an in-sync account.
const noInSync = "a Pulsar standalone writes every ledger to its one bookie (ensemble, write and ack quorum 1): no replicas, so its log has no in-sync event"

var logTime = regexp.MustCompile(`^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]`)

// FirstReady finds the first ServiceReady line of log at or after since
// and not after until (zero: no bound), read in loc; zero when there is
// none.
func FirstReady(log io.Reader, since, until time.Time, loc *time.Location) (time.Time, error) {
	return drivers.FirstLogLine(log, ServiceReady, drivers.TimeAt(logTime, "2006-01-02 15:04:05,000", loc), since, until)
}

// RecoveryAccount implements drivers.LogOracle for the local standalone:
// its first "messaging service is ready" after the fault, a lower bound
// on its return to service. It has no in-sync event, and the account says
// why.
func (p *Cluster) RecoveryAccount(topic string, nodes []int32, since, until time.Time) (drivers.LogAccount, error) {
	return standaloneAccount("Pulsar's log (pulsar.log)", drivers.LocalLogs(p.LogFile), since, until)
}

// RecoveryAccountFrom implements drivers.LogReader: RecoveryAccount on
// the log fetched from node 1 of a cluster file, whose times are read in
// this machine's time zone (the log does not say its own).
func (Profile) RecoveryAccountFrom(logs map[int32][]byte, source, topic string, nodes []int32, since, until time.Time) (drivers.LogAccount, error) {
	return standaloneAccount(fmt.Sprintf("Pulsar's log (%s)", source), drivers.FetchedLogs(logs), since, until)
}

// standaloneAccount is recoveryAccount on the standalone's log (node 1)
// as open opens it, its times read in this machine's time zone.
func standaloneAccount(source string, open drivers.LogOpener, since, until time.Time) (drivers.LogAccount, error) {
	return drivers.ReadLog(open, 1, func(log io.Reader) (drivers.LogAccount, error) {
		return recoveryAccount(source, log, since, until, time.Local)
	})
}

func recoveryAccount(source string, log io.Reader, since, until time.Time, loc *time.Location) (drivers.LogAccount, error) {
	acc := drivers.LogAccount{Source: source, NoInSync: noInSync}
	at, err := FirstReady(log, since, until, loc)
	if err != nil {
		return acc, err
	}
	if !at.IsZero() {
		// A lower bound, not the event: the line ends the broker's start,
		// and it loads each topic (its bundle's ownership, its managed
		// ledger's recovery) after it. On this machine under load
		// the first acks came 13 s after the line, and ackcheck's ready
		// 19 s after it (TestRealPulsarKill).
		acc.Ready = &drivers.LogEvent{At: at, What: "its messaging service ready again (topics load after it)", Bound: drivers.NotBefore}
	}
	return acc, nil
}

var (
	_ drivers.LogOracle = (*Cluster)(nil)
	_ drivers.LogReader = Profile{}
)
