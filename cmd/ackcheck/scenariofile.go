package main

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
	"github.com/ackcheck/ackcheck/internal/suggest"
	"github.com/ackcheck/ackcheck/matrix"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// A scenario file is a YAML mapping whose keys are the flag names of the
// command that reads it (rate: 1000, fault: "at=20s kill ..."), plus one
// key of its own, scenario, naming the built-in it runs (run,
// leader-kill, fsync-audit). Flags given on the command line override
// the file; the file overrides the defaults.

// scenarioKey names, in a scenario file, the command the file is for.
const scenarioKey = "scenario"

// fileSetting is one key of a scenario file, with the line it is on.
type fileSetting struct {
	key   string
	line  int
	value *yaml.Node
}

// scenarioFile is a parsed scenario file.
type scenarioFile struct {
	path     string
	scenario string // "" when the file names none
	line     int    // the scenario key's line
	settings []fileSetting
}

// readScenarioFile parses path. It checks the file's shape (a mapping,
// no key twice); whether each key is a setting is the command's to say.
func readScenarioFile(path string) (*scenarioFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario file: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("scenario file %s: %w", path, err)
	}
	sf := &scenarioFile{path: path}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("scenario file %s is empty: write one setting per line, keyed by flag name (rate: 1000)", path)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: a scenario file is a mapping of flag names to values (rate: 1000), not a %s", path, root.Line, matrix.KindName(root))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("%s:%d: a key must be a flag name, not a %s", path, k.Line, matrix.KindName(k))
		}
		if first, ok := seen[k.Value]; ok {
			return nil, fmt.Errorf("%s:%d: %s is given twice (first on line %d)", path, k.Line, k.Value, first)
		}
		seen[k.Value] = k.Line
		if k.Value == scenarioKey {
			if v.Kind != yaml.ScalarNode || v.Value == "" {
				return nil, fmt.Errorf("%s:%d: scenario: name one of %s", path, k.Line, strings.Join(fileScenarios, ", "))
			}
			sf.scenario, sf.line = v.Value, k.Line
			continue
		}
		sf.settings = append(sf.settings, fileSetting{key: k.Value, line: k.Line, value: v})
	}
	return sf, nil
}

// fileScenarios are the commands a scenario file can name.
var fileScenarios = []string{"run", "leader-kill", "fsync-audit"}

// notInFiles are flags a file may not set: they name this invocation, not
// the check.
var notInFiles = map[string]bool{"file": true, "help": true}

// apply sets every flag of fs the file gives and the command line did
// not. An unknown key or a value of the wrong type is an error naming the
// key and its line.
func (sf *scenarioFile) apply(fs *pflag.FlagSet, command string) error {
	for _, s := range sf.settings {
		f := fs.Lookup(s.key)
		if f == nil || notInFiles[s.key] || f.Hidden {
			msg := fmt.Sprintf("%s:%d: unknown key %q: the keys are the flags of ackcheck %s (see its --help)", sf.path, s.line, s.key, command)
			if near := nearestFlag(fs, s.key); near != "" {
				msg += "; did you mean " + near + "?"
			}
			return fmt.Errorf("%s", msg)
		}
		if f.Changed { // the command line wins
			continue
		}
		v, err := flagText(f, s.value)
		if err == nil {
			err = fs.Set(s.key, v)
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %s: %v", sf.path, s.line, s.key, err)
		}
	}
	return nil
}

// flagText turns a YAML value into the text the flag parses: a scalar
// as it is, a list joined (by "; " for a fault schedule, by commas for a
// list flag), a mapping as k=v pairs.
func flagText(f *pflag.Flag, n *yaml.Node) (string, error) {
	typ := f.Value.Type()
	isMap := strings.HasPrefix(typ, "stringTo")
	isList := strings.HasSuffix(typ, "Slice") || strings.HasSuffix(typ, "Array")
	switch n.Kind {
	case yaml.ScalarNode:
		if isMap {
			return "", fmt.Errorf("expects a mapping (key: value lines), got %q", n.Value)
		}
		if n.Tag == "!!null" {
			return "", fmt.Errorf("has no value")
		}
		return n.Value, nil
	case yaml.SequenceNode:
		if !isList && f.Name != "fault" {
			return "", fmt.Errorf("expects one %s, got a list", typeName(typ))
		}
		var items []string
		for _, it := range n.Content {
			if it.Kind != yaml.ScalarNode {
				return "", fmt.Errorf("line %d: a list item must be a plain value", it.Line)
			}
			items = append(items, it.Value)
		}
		if f.Name == "fault" {
			return strings.Join(items, "; "), nil
		}
		return strings.Join(items, ","), nil
	case yaml.MappingNode:
		if !isMap {
			return "", fmt.Errorf("expects one %s, got a mapping", typeName(typ))
		}
		var pairs []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
				return "", fmt.Errorf("line %d: expects key: value", k.Line)
			}
			pairs = append(pairs, k.Value+"="+v.Value)
		}
		return strings.Join(pairs, ","), nil
	}
	return "", fmt.Errorf("unreadable value (%s)", matrix.KindName(n))
}

func typeName(t string) string {
	switch t {
	case "float64", "int", "int64", "uint", "int32":
		return "number"
	case "bool":
		return "true or false"
	}
	return t
}

// nearestFlag is the flag whose name is closest to a mistyped key, if
// any is close.
func nearestFlag(fs *pflag.FlagSet, key string) string {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && !notInFiles[f.Name] {
			names = append(names, f.Name)
		}
	})
	return suggest.Nearest(key, names, 2)
}

// applyScenarioFile reads --file, if given, into cmd's flags. A file
// naming another scenario than command is refused: run dispatches such a
// file (runFile) before it gets here.
func applyScenarioFile(cmd *cobra.Command, path string) error {
	if path == "" {
		return nil
	}
	sf, err := readScenarioFile(path)
	if err != nil {
		return err
	}
	if sf.scenario != "" && sf.scenario != cmd.Name() {
		return fmt.Errorf("%s:%d: the file is for ackcheck %s: run it with ackcheck run -f %s", sf.path, sf.line, sf.scenario, sf.path)
	}
	return sf.apply(cmd.Flags(), cmd.Name())
}

// builtinCommands makes the commands a scenario file can name.
func builtinCommand(name string) (*cobra.Command, bool) {
	switch name {
	case "leader-kill":
		return newLeaderKillCmd(), true
	case "fsync-audit":
		return newFsyncAuditCmd(), true
	}
	return nil, false
}

// dispatchFile runs a scenario file that names a built-in other than run
// (scenario: leader-kill) as that built-in: run's flags given on the
// command line are carried over (each must be a setting of the built-in),
// then the file fills the rest. ok is false when the file is run's own.
func dispatchFile(cmd *cobra.Command, path string) (ok bool, err error) {
	sf, err := readScenarioFile(path)
	if err != nil {
		return true, err
	}
	switch sf.scenario {
	case "", "run":
		return false, nil
	}
	target, known := builtinCommand(sf.scenario)
	if !known {
		return true, fmt.Errorf("%s:%d: scenario %q: use one of %s", sf.path, sf.line, sf.scenario, strings.Join(fileScenarios, ", "))
	}
	tfs := target.Flags()
	var carry error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if carry != nil || f.Name == "file" {
			return
		}
		if tfs.Lookup(f.Name) == nil {
			carry = fmt.Errorf("--%s is not a setting of the %s scenario (%s names it on line %d): drop it", f.Name, sf.scenario, sf.path, sf.line)
			return
		}
		carry = copyFlag(tfs, f)
	})
	if carry != nil {
		return true, carry
	}
	if err := sf.apply(tfs, sf.scenario); err != nil {
		return true, err
	}
	target.SetContext(cmd.Context())
	target.SetOut(cmd.OutOrStdout())
	target.SetErr(cmd.ErrOrStderr())
	return true, target.RunE(target, nil)
}

// copyFlag sets f's value, as given on one command line, on another
// command's flag of the same name.
func copyFlag(to *pflag.FlagSet, f *pflag.Flag) error {
	t := to.Lookup(f.Name)
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		if tv, ok := t.Value.(pflag.SliceValue); ok {
			t.Changed = true
			return tv.Replace(sv.GetSlice())
		}
	}
	v := f.Value.String()
	if strings.HasPrefix(f.Value.Type(), "stringTo") {
		v = strings.Join(listItems(v), ",")
	}
	return to.Set(f.Name, v)
}

// showScenario writes a built-in as a scenario file: every setting that
// defines the check, at the built-in's values, with each flag's help as a
// comment. Settings of the user's own machine (addresses, --out) are left
// as comments.
//
// Keys of given are written as settings even where they would be
// comments: a variant asked for by name (acks=1) must be what the file
// runs.
func showScenario(cmd *cobra.Command, driver string, effective map[string]string, header string, given map[string]string) []byte {
	fs := cmd.Flags()
	owners := flagOwners()
	var b bytes.Buffer
	b.WriteString(header)
	fmt.Fprintf(&b, "%s: %s\n", scenarioKey, cmd.Name())
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	sort.SliceStable(names, func(i, j int) bool {
		si, sj := sectionOf(names[i], owners), sectionOf(names[j], owners)
		if si != sj {
			return si < sj
		}
		return names[i] == "driver" && names[j] != "driver"
	})
	section := -1
	for _, name := range names {
		f := fs.Lookup(name)
		if f.Hidden || notInFiles[name] {
			continue
		}
		if o, ok := owners[name]; ok && o != driver {
			continue
		}
		s := sectionOf(name, owners)
		if s != section {
			section = s
			fmt.Fprintf(&b, "\n# %s\n", sectionTitles[s])
		}
		val, set := effective[name]
		if !set {
			val = f.DefValue
			if name == "driver" {
				val = driver
			}
		}
		val = yamlValue(f, val)
		fmt.Fprintf(&b, "# %s\n", firstSentence(f.Usage))
		// The client's own flags stay comments at their defaults: some
		// defaults depend on whether the flag is given at all (Kafka's
		// --idempotent follows --acks), so writing them would change the
		// check.
		_, clientFlag := owners[name]
		// A duration left at 0 (a deadline off, a time that defaults to a
		// share of --duration) stays a comment: given, it is refused
		// (refuseDurations).
		unsetDuration := f.Value.Type() == "duration" && val == "0s"
		_, asked := given[name]
		if !asked && (local[name] || clientFlag || val == "" || unsetDuration) {
			fmt.Fprintf(&b, "# %s: %s\n", name, placeholder(name, val))
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", name, val)
	}
	return b.Bytes()
}

// local are settings of the user's own machine or run, left as comments.
var local = map[string]bool{"out": true, "cluster-dir": true, "cluster-file": true, "junit": true,
	"progress-interval": true, "accept-unknown-host-keys": true, "metrics-addr": true}

func placeholder(name, val string) string {
	switch name {
	case "out":
		return "runs/NAME"
	case "cluster-dir":
		return "/path/of/ackcheck/cluster/dir"
	}
	if val == "" {
		return `""`
	}
	return val
}

var sectionTitles = []string{"the broker and its client", "the topic and the load", "the faults", "the checks", "this machine and this run"}

func sectionOf(name string, owners map[string]string) int {
	switch {
	case name == "driver" || owners[name] != "":
		return 0
	case local[name]:
		return 4
	}
	switch name {
	case "topic", "partitions", "replication-factor", "topic-config", "rate", "duration", "message-size", "keys", "placement", "producers", "max-in-flight", "no-e2e", "no-verify", "workload":
		return 1
	case "fault", "fsync", "kill-at", "restart-after", "loss-at", "recovery-timeout":
		return 2
	}
	return 3
}

// yamlValue writes a flag's value as YAML: lists as flow lists, maps as
// flow mappings, strings quoted where YAML would read them otherwise.
func yamlValue(f *pflag.Flag, v string) string {
	typ := f.Value.Type()
	switch {
	case strings.HasPrefix(typ, "stringTo"):
		var kv []string
		for _, p := range listItems(v) {
			k, val, _ := strings.Cut(p, "=")
			kv = append(kv, quoteIfNeeded(k)+": "+quoteIfNeeded(val))
		}
		if kv == nil {
			return ""
		}
		return "{" + strings.Join(kv, ", ") + "}"
	case strings.HasSuffix(typ, "Slice"):
		var items []string
		for _, p := range listItems(v) {
			items = append(items, quoteIfNeeded(p))
		}
		if items == nil {
			return ""
		}
		return "[" + strings.Join(items, ", ") + "]"
	case typ == "duration":
		if d, err := time.ParseDuration(v); err == nil {
			return drivers.HumanDuration(d)
		}
		return v
	case typ == "string":
		if v == "" {
			return ""
		}
		return quoteIfNeeded(v)
	}
	return v
}

// listItems splits pflag's text of a list or map flag, "[a,b]", into
// its items (none for "[]").
func listItems(v string) []string {
	v = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// quoteIfNeeded quotes a string YAML would read as something else (a
// number, a boolean, a mapping).
func quoteIfNeeded(s string) string {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte("k: "+s), &n); err == nil && len(n.Content) == 1 {
		m := n.Content[0]
		if len(m.Content) == 2 && m.Content[1].Kind == yaml.ScalarNode && m.Content[1].Tag == "!!str" && m.Content[1].Value == s && !strings.ContainsAny(s, "#;") {
			return s
		}
	}
	return fmt.Sprintf("%q", s)
}

func firstSentence(usage string) string {
	if i := strings.Index(usage, "; "); i > 0 && i < 100 {
		return usage[:i]
	}
	return usage
}
