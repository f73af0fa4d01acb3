// Package matrix runs a grid of ordinary ackcheck runs (systems x
// settings x scenarios, each repeated) and puts their results side by
// side in a scorecard.
//
// It owns four things: the matrix file (Read), the order of the runs
// (File.Runs: interleaved, so that drift in the machine hits every column
// alike), resuming an interrupted matrix (Execute: a run is done when its
// directory holds a result.json with a final verdict), and the scorecard
// (Build, which reads each run's result.json and run.json and never
// recomputes a figure the verifier wrote).
//
// It does not run a load itself: Execute calls an Executor that the
// command supplies, which runs each cell through the same code path as
// `ackcheck run` and the built-in scenarios. The keys under systems,
// settings and overrides are scenario-file keys, which that command
// parses; this package only carries them.
package matrix

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/ackcheck/ackcheck/internal/suggest"
)

// Plain is the scenario name of a load with no fault.
const Plain = "plain"

// MaxRepeat bounds repeat: every repeat is a whole run.
const MaxRepeat = 100

// KV is one scenario-file key of the matrix file with its YAML value and
// the line it is on, for the command to apply and to name in an error.
type KV struct {
	Key   string
	Line  int
	Value *yaml.Node
}

// Named is a system or a setting: a label and the scenario-file keys it
// sets.
type Named struct {
	Name string
	Line int
	Keys []KV
}

// Scenario is one entry of scenarios: Plain, a built-in name
// (kafka/leader-kill) or a scenario file.
type Scenario struct {
	// Name is as the file wrote it; Path is set for a scenario file (made
	// absolute against the matrix file's directory).
	Name string
	Path string
	Line int
	// Dir is the directory name of its runs: Name with "/" as "-", or
	// the file's base name without its extension.
	Dir string
}

// System is one system of the matrix with the settings it runs.
type System struct {
	Named
	Settings []Named
}

// File is a parsed matrix file.
//
// Invariants (Read checks them): at least one system and one scenario;
// every name is a safe directory name and unique among its kind; every
// system has at least one setting (a system with none gets one named
// "default" with no keys); 1 <= Repeat <= MaxRepeat; no KV sets a key the
// matrix sets itself (reservedKeys).
type File struct {
	Path      string
	Systems   []System
	Scenarios []Scenario
	Repeat    int
	Overrides []KV
}

// topKeys are the keys of a matrix file.
var topKeys = []string{"systems", "settings", "scenarios", "repeat", "overrides"}

// reservedKeys are scenario-file keys the matrix sets for every run (a
// run directory and a fresh topic of its own) or that name another file.
var reservedKeys = map[string]string{
	"out":      "the matrix puts each run in DIR/<system>/<setting>/<scenario>/<i>",
	"topic":    "every run writes a fresh topic of its own",
	"file":     "name a scenario file under scenarios",
	"scenario": "name the scenario under scenarios",
	"junit":    "the matrix writes scorecard.md, scorecard.html and scorecard.json",
}

var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._=-]*$`)

// Read parses the matrix file at path.
func Read(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("matrix file: %w", err)
	}
	return Parse(path, data)
}

// Parse parses a matrix file's text; path names it in errors and anchors
// relative scenario files.
func Parse(path string, data []byte) (*File, error) {
	p := parser{path: path}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("matrix file %s: %w", path, err)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("matrix file %s is empty: it names systems, settings, scenarios and repeat (see docs/matrix.md)", path)
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, p.errf(root, "a matrix file is a mapping with the keys %s", strings.Join(topKeys, ", "))
	}
	f := &File{Path: path, Repeat: 1}
	var settings []Named
	err := p.mapping(root, func(k, v *yaml.Node) error {
		var err error
		switch k.Value {
		case "systems":
			f.Systems, err = p.systems(v)
		case "settings":
			settings, err = p.settings(v)
		case "scenarios":
			f.Scenarios, err = p.scenarios(v)
		case "repeat":
			f.Repeat, err = p.repeat(v)
		case "overrides":
			f.Overrides, err = p.keys(v, nil)
		default:
			return p.unknown(k, topKeys, "a matrix file's keys are "+strings.Join(topKeys, ", "))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(f.Systems) == 0 {
		return nil, p.errf(root, "systems: name at least one system to run ({name: kafka-local, cluster-dir: ./k})")
	}
	if len(f.Scenarios) == 0 {
		return nil, p.errf(root, "scenarios: name at least one (plain, kafka/leader-kill, or a scenario file)")
	}
	if len(settings) == 0 {
		settings = []Named{{Name: "default", Line: root.Line}}
	}
	for i := range f.Systems {
		if f.Systems[i].Settings == nil {
			f.Systems[i].Settings = settings
		}
	}
	return f, nil
}

type parser struct{ path string }

func (p parser) errf(n *yaml.Node, format string, a ...any) error {
	return fmt.Errorf("%s:%d: %s", p.path, n.Line, fmt.Sprintf(format, a...))
}

// mapping calls fn for each key of n in order, refusing a key given
// twice.
func (p parser) mapping(n *yaml.Node, fn func(k, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		return p.errf(n, "expects a mapping (key: value), not a %s", KindName(n))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return p.errf(k, "a key must be a plain name, not a %s", KindName(k))
		}
		if first, ok := seen[k.Value]; ok {
			return p.errf(k, "%s is given twice (first on line %d)", k.Value, first)
		}
		seen[k.Value] = k.Line
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

func (p parser) unknown(k *yaml.Node, known []string, what string) error {
	msg := fmt.Sprintf("unknown key %q: %s", k.Value, what)
	if near := suggest.Nearest(k.Value, known, 2); near != "" {
		msg += "; did you mean " + near + "?"
	}
	return p.errf(k, "%s", msg)
}

// keys reads a mapping of scenario-file keys; own, if not nil, takes the
// keys that belong to the entry itself (name, settings).
func (p parser) keys(n *yaml.Node, own func(k, v *yaml.Node) (bool, error)) ([]KV, error) {
	var out []KV
	err := p.mapping(n, func(k, v *yaml.Node) error {
		if own != nil {
			if done, err := own(k, v); done || err != nil {
				return err
			}
		}
		if why, ok := reservedKeys[k.Value]; ok {
			return p.errf(k, "%s cannot be set in a matrix: %s", k.Value, why)
		}
		out = append(out, KV{Key: k.Value, Line: k.Line, Value: v})
		return nil
	})
	return out, err
}

func (p parser) name(v *yaml.Node, what string) (string, error) {
	if v.Kind != yaml.ScalarNode || !safeName.MatchString(v.Value) {
		return "", p.errf(v, "%s name %q: use letters, digits, '.', '_', '-' and '=' (it names a directory)", what, v.Value)
	}
	return v.Value, nil
}

func (p parser) systems(n *yaml.Node) ([]System, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "systems is a list: - {name: kafka-local, cluster-dir: ./k}")
	}
	var out []System
	seen := map[string]int{}
	for _, it := range n.Content {
		s := System{Named: Named{Line: it.Line}}
		keys, err := p.keys(it, func(k, v *yaml.Node) (bool, error) {
			switch k.Value {
			case "name":
				name, err := p.name(v, "system")
				s.Name = name
				return true, err
			case "settings":
				st, err := p.settings(v)
				if err == nil && len(st) == 0 {
					err = p.errf(v, "settings of system is empty: leave the key out for the matrix's settings")
				}
				s.Settings = st
				return true, err
			}
			return false, nil
		})
		if err != nil {
			return nil, err
		}
		if s.Name == "" {
			return nil, p.errf(it, "a system needs a name: {name: kafka-local, cluster-dir: ./k}")
		}
		if first, ok := seen[s.Name]; ok {
			return nil, p.errf(it, "system %s is named twice (first on line %d)", s.Name, first)
		}
		seen[s.Name] = it.Line
		s.Keys = keys
		out = append(out, s)
	}
	return out, nil
}

// settings reads either a list of named settings ({name: acks-all, acks:
// all}) or a mapping of keys to lists of values ({acks: [all, "1"]}),
// which becomes one setting per combination, named key=value.
func (p parser) settings(n *yaml.Node) ([]Named, error) {
	var out []Named
	switch n.Kind {
	case yaml.SequenceNode:
		for _, it := range n.Content {
			s := Named{Line: it.Line}
			keys, err := p.keys(it, func(k, v *yaml.Node) (bool, error) {
				if k.Value != "name" {
					return false, nil
				}
				name, err := p.name(v, "setting")
				s.Name = name
				return true, err
			})
			if err != nil {
				return nil, err
			}
			if s.Name == "" {
				return nil, p.errf(it, "a setting needs a name: {name: acks-all, acks: all}")
			}
			s.Keys = keys
			out = append(out, s)
		}
	case yaml.MappingNode:
		out = []Named{{Line: n.Line}}
		err := p.mapping(n, func(k, v *yaml.Node) error {
			if why, ok := reservedKeys[k.Value]; ok {
				return p.errf(k, "%s cannot be set in a matrix: %s", k.Value, why)
			}
			vals := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				vals = v.Content
			}
			if len(vals) == 0 {
				return p.errf(v, "%s: give at least one value", k.Value)
			}
			var next []Named
			for _, s := range out {
				for _, val := range vals {
					if val.Kind != yaml.ScalarNode {
						return p.errf(val, "%s: in this form each value is a plain value; use the list form ({name: ..., %s: ...}) for more", k.Value, k.Value)
					}
					name := k.Value + "=" + val.Value
					if s.Name != "" {
						name = s.Name + "," + name
					}
					keys := append(append([]KV(nil), s.Keys...), KV{Key: k.Value, Line: val.Line, Value: val})
					next = append(next, Named{Name: name, Line: val.Line, Keys: keys})
				}
			}
			out = next
			return nil
		})
		if err != nil {
			return nil, err
		}
		for i := range out {
			out[i].Name = dirSafe(out[i].Name)
		}
	default:
		return nil, p.errf(n, "settings is a list (- {name: acks-all, acks: all}) or a mapping of keys to values ({acks: [all, \"1\"]})")
	}
	seen := map[string]int{}
	for _, s := range out {
		if first, ok := seen[s.Name]; ok {
			return nil, fmt.Errorf("%s:%d: setting %s is named twice (first on line %d)", p.path, s.Line, s.Name, first)
		}
		seen[s.Name] = s.Line
	}
	return out, nil
}

// dirSafe turns key=value names into directory names: acks=all ->
// acks-all, and keeps only safe characters.
func dirSafe(s string) string {
	s = strings.NewReplacer("=", "-", ",", "_", "/", "-").Replace(s)
	return regexp.MustCompile(`[^A-Za-z0-9._-]`).ReplaceAllString(s, "_")
}

func (p parser) scenarios(n *yaml.Node) ([]Scenario, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errf(n, "scenarios is a list: [plain, kafka/leader-kill, my-check.yaml]")
	}
	var out []Scenario
	seen := map[string]int{}
	for _, it := range n.Content {
		if it.Kind != yaml.ScalarNode || it.Value == "" {
			return nil, p.errf(it, "a scenario is a name (plain, kafka/leader-kill) or a scenario file")
		}
		s := Scenario{Name: it.Value, Line: it.Line, Dir: dirSafe(it.Value)}
		if ext := filepath.Ext(it.Value); ext == ".yaml" || ext == ".yml" {
			s.Path = it.Value
			if !filepath.IsAbs(s.Path) {
				s.Path = filepath.Join(filepath.Dir(p.path), s.Path)
			}
			if _, err := os.Stat(s.Path); err != nil {
				return nil, p.errf(it, "scenario file %s: %v", it.Value, err)
			}
			s.Dir = dirSafe(strings.TrimSuffix(filepath.Base(it.Value), ext))
		}
		if first, ok := seen[s.Dir]; ok {
			return nil, p.errf(it, "scenario %s would share the directory %s with the one on line %d: rename one", it.Value, s.Dir, first)
		}
		seen[s.Dir] = it.Line
		out = append(out, s)
	}
	return out, nil
}

func (p parser) repeat(n *yaml.Node) (int, error) {
	var r int
	if n.Kind != yaml.ScalarNode || n.Decode(&r) != nil || r < 1 || r > MaxRepeat {
		return 0, p.errf(n, "repeat %q: give a whole number from 1 to %d (3 or more to mark differences)", n.Value, MaxRepeat)
	}
	return r, nil
}

// KindName is a YAML node's kind as an error message says it to a
// person ("list", "mapping", "plain value"); scenario files say it alike.
func KindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "mapping"
	case yaml.ScalarNode:
		return "plain value"
	}
	return "document"
}
