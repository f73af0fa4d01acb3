package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/ackcheck/ackcheck/internal/suggest"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// OpenMessaging Benchmark workload files (--workload), read unchanged:
// each field ackcheck can honour becomes the setting of the flag that
// means the same. A field ackcheck cannot honour at its value (several
// topics, a backlog phase, a rate search) is refused, each named with
// why, unless --workload-partial runs without them; a field whose value
// only changes the bytes sent (payloadFile) is noted in the one line
// printed. A field that is not OMB's is refused, with the field it
// probably meant.

// ombKeys is the number of keys OMB's key distributors draw from
// (KeyDistributor.UNIQUE_COUNT).
const ombKeys = 10_000

// ombField says what ackcheck does with one workload field. flag maps
// the value to a flag's (ok false: the value cannot be honoured, and why
// says so); a field without flag is never honoured unless it holds its
// default (idle).
type ombField struct {
	flag string
	conv func(v string) (val string, why string, err error)
	// idle is the value that asks nothing of ackcheck ("" for any).
	idle string
	why  string
	// note: the field, unhonoured, changes what is sent, not what the
	// check measures: named, never refused (as conv's why, for a flag).
	note bool
}

func intAtLeast(min int) func(string) (string, string, error) {
	return func(v string) (string, string, error) {
		n, err := strconv.Atoi(v)
		if err != nil || n < min {
			return "", "", fmt.Errorf("must be a whole number of at least %d, got %q", min, v)
		}
		return strconv.Itoa(n), "", nil
	}
}

var ombFields = map[string]ombField{
	"name":               {},
	"partitionsPerTopic": {flag: "partitions", conv: intAtLeast(1)},
	"messageSize":        {flag: "message-size", conv: intAtLeast(1)},
	"producersPerTopic":  {flag: "producers", conv: intAtLeast(1)},
	"producerRate": {flag: "rate", conv: func(v string) (string, string, error) {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n < 0 {
			return "", "", fmt.Errorf("must be a rate in messages per second, got %q", v)
		}
		if n == 0 {
			// Not run unpaced: a closed loop lets a slow broker slow the
			// load and hide its stalls (load.Config.Unpaced).
			return "", "producerRate 0: OMB searches for the highest rate the broker sustains; ackcheck's load is paced at --rate (an unpaced load would hide the broker's stalls): give --rate", nil
		}
		return v, "", nil
	}},
	"testDurationMinutes": {flag: "duration", conv: func(v string) (string, string, error) {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n <= 0 {
			return "", "", fmt.Errorf("must be a number of minutes above 0, got %q", v)
		}
		return strconv.FormatFloat(n, 'f', -1, 64) + "m", "", nil
	}},
	"keyDistributor": {flag: "keys", conv: func(v string) (string, string, error) {
		switch v {
		case "NO_KEY":
			return "0", "", nil
		case "KEY_ROUND_ROBIN":
			return strconv.Itoa(ombKeys), "", nil
		case "RANDOM_NANO":
			return strconv.Itoa(ombKeys), "keyDistributor RANDOM_NANO (ackcheck spreads messages over the same 10,000 keys in turn, not at random)", nil
		}
		return "", "", fmt.Errorf("must be NO_KEY, KEY_ROUND_ROBIN or RANDOM_NANO, got %q", v)
	}, note: true},
	"topics":                             {idle: "1", why: "several topics (ackcheck writes one)"},
	"subscriptionsPerTopic":              {idle: "1", why: "several subscriptions (ackcheck reads once live and once back)"},
	"consumerPerSubscription":            {idle: "1", why: "several consumers per subscription (ackcheck reads with one live consumer)"},
	"payloadFile":                        {why: "a payload file (each value carries its ID, send time and checksum; its size is messageSize)", note: true},
	"useRandomizedPayloads":              {idle: "false", why: "randomized payloads (each value carries its ID, send time and checksum)", note: true},
	"randomBytesRatio":                   {idle: "", why: ""},
	"randomizedPayloadPoolSize":          {idle: "", why: ""},
	"consumerBacklogSizeGB":              {idle: "0", why: "a backlog phase (ackcheck's consumers read during the whole load)"},
	"producerPauseBeforeDrain":           {idle: "0", why: "a producer pause before the drain"},
	"producerPauseDuringDrain":           {idle: "0", why: "a producer pause during the drain"},
	"producerStartRate":                  {idle: "", why: ""},
	"acceptableBacklog":                  {idle: "", why: ""},
	"producerIncrementRate":              {idle: "0", why: "a rising rate (ackcheck's rate is constant)"},
	"producerIncrementSeconds":           {idle: "", why: ""},
	"messageRateReceivedForSubscription": {idle: "100", why: "filtered subscriptions"},
	"warmupDurationMinutes":              {idle: "0", why: "a warm-up phase (every message of the run counts)"},
}

// placeholder is OMB's ${NAME:-default} in a workload value.
var ombPlaceholder = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_.]*)(?::-([^}]*))?\}`)

// applyWorkload reads an OMB workload and sets the flags it maps to that
// the command line (or a scenario file) did not set. It returns the line
// to print: what was taken, and what was not honoured. A field that
// cannot be honoured is an error naming every such field, unless partial
// (--workload-partial); a field that is not OMB's is an error.
func applyWorkload(fs *pflag.FlagSet, path string, partial bool) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--workload: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", fmt.Errorf("--workload %s: %w", path, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return "", fmt.Errorf("--workload %s: not an OpenMessaging Benchmark workload (a mapping of fields such as partitionsPerTopic: 16)", path)
	}
	root := doc.Content[0]
	var name string
	var taken, kept, notes, refused, unknown []string
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			return "", fmt.Errorf("%s:%d: %s: expects a plain value", path, k.Line, k.Value)
		}
		val := ombPlaceholder.ReplaceAllStringFunc(v.Value, func(m string) string {
			g := ombPlaceholder.FindStringSubmatch(m)
			if e, ok := os.LookupEnv(g[1]); ok {
				return e
			}
			return g[2]
		})
		f, known := ombFields[k.Value]
		// not is where a field ackcheck does not honour goes.
		not := &refused
		if f.note {
			not = &notes
		}
		switch {
		case !known:
			if near := ombNearest(k.Value); near != "" {
				return "", fmt.Errorf("%s:%d: %s is not an OpenMessaging Benchmark field: did you mean %s?", path, k.Line, k.Value, near)
			}
			unknown = append(unknown, fmt.Sprintf("%s (line %d)", k.Value, k.Line))
		case k.Value == "name":
			name = val
		case f.flag == "":
			if f.why != "" && val != f.idle && !(f.idle == "" && val == "") {
				*not = append(*not, k.Value+" "+val+": "+f.why)
			}
		default:
			to, why, err := f.conv(val)
			if err != nil {
				return "", fmt.Errorf("%s:%d: %s: %v", path, k.Line, k.Value, err)
			}
			if why != "" {
				*not = append(*not, why)
			}
			if to == "" {
				continue
			}
			if fs.Changed(f.flag) {
				kept = append(kept, fmt.Sprintf("--%s over %s", f.flag, k.Value))
				continue
			}
			if err := fs.Set(f.flag, to); err != nil {
				return "", fmt.Errorf("%s:%d: %s %s as --%s: %v", path, k.Line, k.Value, val, f.flag, err)
			}
			taken = append(taken, fmt.Sprintf("--%s %s", f.flag, to))
		}
	}
	if len(unknown) > 0 {
		refused = append(refused, "not OpenMessaging Benchmark fields: "+strings.Join(unknown, ", "))
	}
	if len(refused) > 0 && !partial {
		return "", fmt.Errorf("--workload %s asks for what ackcheck cannot do, so it would run something else:\n  %s\nremove those fields, or give --workload-partial to run the rest without them",
			path, strings.Join(refused, "\n  "))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "workload %q: %s", name, strings.Join(taken, " "))
	if len(kept) > 0 {
		fmt.Fprintf(&b, "; kept from the command line: %s", strings.Join(kept, ", "))
	}
	if len(refused) > 0 {
		fmt.Fprintf(&b, "; not honoured (--workload-partial): %s", strings.Join(refused, "; "))
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, "; sent otherwise: %s", strings.Join(notes, "; "))
	}
	return b.String(), nil
}

// ombNearest is the OMB field a misspelled name most likely meant: the
// same letters in another case, or at most a quarter of its letters (and
// at least 1) away; "" when none is that close.
func ombNearest(name string) string {
	best, bestD := "", max(1, len(name)/4)+1
	for f := range ombFields {
		if strings.EqualFold(f, name) {
			return f
		}
		if d := suggest.Distance(strings.ToLower(f), strings.ToLower(name)); d < bestD || (d == bestD && f < best) {
			best, bestD = f, d
		}
	}
	if bestD > max(1, len(name)/4) {
		return ""
	}
	return best
}
