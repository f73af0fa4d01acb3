package nats

import (
	"fmt"
	"regexp"
)

var (
	natsJetStream = regexp.MustCompile(`(?m)^(\s*)jetstream\s*[:=]?\s*\{`)
	natsSync      = regexp.MustCompile(`(?m)^(\s*)sync_interval\s*[:=]?\s*[^\n#]*`)
)

// SetSyncInterval sets sync_interval inside the jetstream block of a
// nats-server configuration, inserting it after "jetstream {" if absent.
func SetSyncInterval(content, value string) (string, error) {
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
