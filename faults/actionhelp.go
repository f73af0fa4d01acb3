package faults

import (
	"fmt"
	"slices"
	"strings"
)

// What help and the docs say of the actions and their targets, all made
// from actionTable and targetForms: nothing here is written twice.

// allTargetKinds are the target kinds in the order help lists them.
var allTargetKinds = []TargetKind{Leader, Follower, MostLeaders, Controller, Node, Named, Previous,
	All, Topic, Brokers, Cluster, Split, Minority, Majority, OneWayPath, Pair, Coordinator}

// targetForms are the target kinds as a schedule writes them.
var targetForms = map[TargetKind]string{
	Leader: "leader:<topic>/<partition>", Follower: "follower:<topic>/<partition>", MostLeaders: "most-leaders:<topic>",
	Controller: "controller", Node: "node:<id>", Named: "<name>", Previous: "previous",
	All: "all", Topic: "topic:<topic>", Brokers: "brokers", Cluster: "cluster",
	Split: "split:<ids>|<ids>", Minority: "minority:<topic>", Majority: "majority:<topic>",
	OneWayPath: "one-way:<id>-><id>", Pair: "pair:<id>-<id>", Coordinator: "coordinator:<group>",
}

// takesAnyNode reports whether kinds hold every kind that picks one node.
func takesAnyNode(kinds []TargetKind) bool {
	return !slices.ContainsFunc(nodeKinds, func(k TargetKind) bool { return !slices.Contains(kinds, k) })
}

// targetWords are kinds as a schedule writes them, with "<node>" for the
// kinds that pick one node when kinds hold them all.
func targetWords(kinds []TargetKind) []string {
	var words []string
	if takesAnyNode(kinds) {
		words = append(words, "<node>")
		kinds = slices.DeleteFunc(slices.Clone(kinds), func(k TargetKind) bool { return slices.Contains(nodeKinds, k) })
	}
	for _, k := range kinds {
		words = append(words, targetForms[k])
	}
	return words
}

// targetsText lists target kinds for an error: "a node (leader:<topic>/
// <partition>, ...) or all".
func targetsText(kinds []TargetKind) string {
	words := targetWords(kinds)
	for i, w := range words {
		if w == "<node>" {
			words[i] = nodeTargetsText()
		}
	}
	return orList(words)
}

// nodeForms are the forms of the targets that pick one node: <node>.
func nodeForms() []string {
	forms := make([]string, len(nodeKinds))
	for i, k := range nodeKinds {
		forms[i] = targetForms[k]
	}
	return forms
}

// nodeNote says what <name> is.
const nodeNote = "<name> is a node's name, such as Queen's db"

// nodeTargetsText lists the forms of the targets that pick one node, for
// an error: "a node (leader:<topic>/<partition>, ..., previous)".
func nodeTargetsText() string {
	forms := nodeForms()
	for i, k := range nodeKinds {
		if k == Named {
			forms[i] = "a node's name such as db"
		}
	}
	return "a node (" + strings.Join(forms, ", ") + ")"
}

// orList joins "a", "b or c".
func orList(parts []string) string {
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

// actionNames lists every action a schedule can name.
func actionNames() string {
	names := make([]string, len(actionTable))
	for i, sp := range actionTable {
		names[i] = string(sp.action)
	}
	return orList(names)
}

// syntax is how help writes a step of the action, after at=<duration>:
// "loss <P>% <node> | pair:<id>-<id>", "restart [<node>]".
func (sp *actionSpec) syntax() string {
	s := string(sp.action)
	if sp.amount != nil {
		s += " " + sp.amountForm
	}
	targets := strings.Join(targetWords(sp.targets), " | ")
	switch sp.target {
	case oneTarget:
		s += " " + targets
	case targetOrPrevious, targetOrCluster:
		s += " [" + targets + "]"
	}
	if sp.tail != nil {
		s += " " + sp.tailForm
	}
	return s
}

// ScheduleHelp is the usage of --fault: the form of a step, then one
// line per entry of actionTable, then the targets, with the brokers' own
// words for them (words, from drivers.TargetWords).
func ScheduleHelp(words Aliases) string {
	var b strings.Builder
	b.WriteString(`faults during the load: "at=<duration> <action> [<target>]; ...", e.g. "at=30s kill most-leaders:ackcheck; at=40s restart" (docs/faults.md). Actions:` + "\n")
	for _, sp := range actionTable {
		fmt.Fprintf(&b, "  %s: %s\n", sp.syntax(), sp.help)
	}
	fmt.Fprintf(&b, "<node> is %s (%s)", orList(nodeForms()), nodeNote)
	if len(words) > 0 {
		var ws []string
		for _, w := range slices.Sorted(func(yield func(string) bool) {
			for w := range words {
				if !yield(w) {
					return
				}
			}
		}) {
			ws = append(ws, fmt.Sprintf("%s: for %s:", w, words[w]))
		}
		fmt.Fprintf(&b, "; brokers' own words are taken too (%s)", strings.Join(ws, ", "))
	}
	b.WriteString(". Network faults need a local cluster started with --netns, or cluster-file nodes with ports: (nft or iptables over SSH)")
	return b.String()
}

// ActionsMarkdown is docs/faults.md's list of the actions, a table made
// from actionTable (TestDocsListEveryAction keeps the page equal to it).
func ActionsMarkdown() string {
	code := func(s string) string { return "`" + strings.ReplaceAll(s, "|", `\|`) + "`" }
	var b strings.Builder
	b.WriteString("| step | what it does | example |\n|---|---|---|\n")
	for _, sp := range actionTable {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", code(sp.syntax()), sp.help, code(sp.example))
	}
	forms := nodeForms()
	for i, f := range forms {
		forms[i] = code(f)
	}
	fmt.Fprintf(&b, "\n%s is %s, chosen when the fault fires (%s).\n", code("<node>"), orList(forms), strings.ReplaceAll(nodeNote, "<name>", code("<name>")))
	return b.String()
}
