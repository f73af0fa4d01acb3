package faults

import (
	"fmt"
	"regexp"
	"strings"
)

// Fsync toggles. "on" means a broker fsyncs a write before it counts it
// toward an ack; "off" means it acks from memory (page cache) and syncs
// later. Each broker kind has its own setting:
//
//	kafka     topic flush.messages (admin API, no restart), or broker
//	          log.flush.interval.messages (config file, rolling restart)
//	pulsar    bookie journalSyncData (bookkeeper.conf, restart)
//	nats      jetstream sync_interval: always (config file, restart: a
//	          reload does not change it)
//	redpanda  write_caching_default (cluster property through rpk, no
//	          restart)

// LongMax is Kafka's "never flush by count" value, the default of
// flush.messages and log.flush.interval.messages.
const LongMax = "9223372036854775807"

// brokerFsync edits a node's configuration file for a broker kind.
type brokerFsync struct {
	edit func(content string, on bool) (string, error)
	// setting names what is changed, for reports.
	setting string
}

var brokerFsyncs = map[string]brokerFsync{
	"kafka": {setting: "log.flush.interval.messages", edit: func(c string, on bool) (string, error) {
		return SetProperty(c, "log.flush.interval.messages", map[bool]string{true: "1", false: LongMax}[on]), nil
	}},
	"pulsar": {setting: "journalSyncData", edit: func(c string, on bool) (string, error) {
		return SetProperty(c, "journalSyncData", fmt.Sprint(on)), nil
	}},
	"nats": {setting: "jetstream sync_interval", edit: func(c string, on bool) (string, error) {
		return SetNATSSyncInterval(c, map[bool]string{true: "always", false: "2m"}[on])
	}},
}

// SetProperty sets key=value in a Java properties file: it replaces the
// first uncommented line for key, removes later ones, or appends the
// setting. Other lines, comments included, are kept as they are.
func SetProperty(content, key, value string) string {
	lines := strings.Split(content, "\n")
	done := false
	var out []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if !strings.HasPrefix(t, "#") && !strings.HasPrefix(t, "!") {
			k, _, ok := strings.Cut(t, "=")
			if !ok {
				k, _, ok = strings.Cut(t, ":")
			}
			if ok && strings.TrimSpace(k) == key {
				if !done {
					out = append(out, key+"="+value)
					done = true
				}
				continue
			}
		}
		out = append(out, l)
	}
	if !done {
		if len(out) > 0 && out[len(out)-1] == "" {
			out = out[:len(out)-1]
		}
		out = append(out, key+"="+value, "")
	}
	return strings.Join(out, "\n")
}

var (
	natsJetStream = regexp.MustCompile(`(?m)^(\s*)jetstream\s*[:=]?\s*\{`)
	natsSync      = regexp.MustCompile(`(?m)^(\s*)sync_interval\s*[:=]?\s*[^\n#]*`)
)

// SetNATSSyncInterval sets sync_interval inside the jetstream block of a
// nats-server configuration, inserting it after "jetstream {" if absent.
func SetNATSSyncInterval(content, value string) (string, error) {
	loc := natsJetStream.FindStringSubmatchIndex(content)
	if loc == nil {
		return "", fmt.Errorf("no jetstream { ... } block in the NATS configuration: add one to enable JetStream")
	}
	// The block runs to its matching brace.
	depth, end := 0, -1
	for i := loc[1] - 1; i < len(content); i++ {
		switch content[i] {
		case '{':
			depth++
		case '}':
			depth--
		}
		if depth == 0 {
			end = i
			break
		}
	}
	if end < 0 {
		return "", fmt.Errorf("the jetstream block of the NATS configuration is not closed")
	}
	block := content[loc[1]:end]
	if m := natsSync.FindStringSubmatchIndex(block); m != nil {
		block = block[:m[0]] + block[m[2]:m[3]] + "sync_interval: " + value + block[m[1]:]
	} else {
		indent := content[loc[2]:loc[3]] + "  "
		block = "\n" + indent + "sync_interval: " + value + block
	}
	return content[:loc[1]] + block + content[end:], nil
}
