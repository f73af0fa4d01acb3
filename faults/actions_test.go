package faults

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// missingParts lists what an entry of actionTable lacks, by name.
func missingParts(sp actionSpec) []string {
	var miss []string
	need := func(ok bool, part string) {
		if !ok {
			miss = append(miss, part)
		}
	}
	need(sp.action != "", "action")
	need(sp.help != "", "help line")
	need(sp.expect != "", "expectation")
	need(sp.target != 0, "arity")
	need(len(sp.targets) > 0, "targets")
	need(sp.make != nil, "constructor")
	need((len(sp.undo) > 0) != (sp.noUndo != ""), "undo (or why none)")
	need((sp.amount != nil) == (sp.amountForm != ""), "amount with its form")
	for _, u := range sp.undo {
		need(u.kind != "" && u.by != nil, "undo kind and its undoer")
	}
	need(sp.target != noTarget || reflect.DeepEqual(sp.targets, []TargetKind{Cluster}), "noTarget acting on the cluster")
	// An action on a node's process is one a broker profile can describe.
	onProcess := takesAnyNode(sp.targets) && !sp.network
	need(onProcess == (sp.node != ""), "profile's name (drivers.NodeFault) iff it acts on a node's process")
	need(!sp.replacesProcess || sp.takesNodeAway, "replacesProcess only with takesNodeAway")
	if steps, err := ParseSchedule(sp.example); err != nil || len(steps) != 1 {
		miss = append(miss, fmt.Sprintf("an example that parses (%v)", err))
	} else if got, ok := specOf(steps[0].Action); !ok || got.action != sp.action {
		miss = append(miss, "an example of itself")
	}
	if sp.make != nil {
		for _, k := range sp.targets {
			need(sp.make(Target{Kind: k}) != nil, "a fault for target "+string(k))
		}
	}
	return miss
}

// Every entry has each part: arity, targets, predicates that agree,
// expectation, constructor for each of its targets, undo (or why none),
// help line and an example that parses as itself.
func TestActionTableComplete(t *testing.T) {
	seen := map[Action]bool{}
	for _, sp := range actionTable {
		if miss := missingParts(sp); len(miss) > 0 {
			t.Errorf("%s lacks: %s", sp.action, strings.Join(miss, "; "))
		}
		if seen[sp.action] {
			t.Errorf("%s has two entries", sp.action)
		}
		seen[sp.action] = true
	}
	// Every undo kind has an owner, and every entry that journals a kind
	// names the same one (undoerOf takes the first).
	owners := map[UndoKind]string{}
	for _, sp := range actionTable {
		for _, u := range sp.undo {
			name := fmt.Sprintf("%T", u.by)
			if o, ok := owners[u.kind]; ok && o != name {
				t.Errorf("undo %s: %s in one entry, %s in %s", u.kind, o, name, sp.action)
			}
			owners[u.kind] = name
		}
	}
	for _, k := range []UndoKind{UndoResume, UndoStart, UndoTopicConfig, UndoNodeConfig, UndoSwitch, UndoNetRule, UndoFile, UndoDiskError} {
		if _, err := undoerOf(k); err != nil {
			t.Errorf("undo %s: no entry journals it: %v", k, err)
		}
	}
	for _, k := range allTargetKinds {
		if targetForms[k] == "" {
			t.Errorf("target kind %s has no form", k)
		}
	}
	if len(targetForms) != len(allTargetKinds) {
		t.Errorf("%d target forms, %d kinds listed", len(targetForms), len(allTargetKinds))
	}
}

// The check above fires on an entry that lacks a part.
func TestActionTableCompleteFires(t *testing.T) {
	broken := actionTable[0] // kill
	broken.help, broken.undo, broken.node = "", nil, ""
	broken.example = "at=1s stop node:1"
	got := strings.Join(missingParts(broken), "; ")
	for _, want := range []string{"help line", "undo (or why none)", "drivers.NodeFault", "an example of itself"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q not reported: %s", want, got)
		}
	}
	if miss := missingParts(actionTable[0]); len(miss) > 0 {
		t.Errorf("kill itself lacks %v", miss)
	}
}

// targetExamples are a written target of each kind.
var targetExamples = map[TargetKind]string{
	Leader: "leader:t/0", Follower: "follower:t/0", MostLeaders: "most-leaders:t", Controller: "controller", Node: "node:2",
	Named: "db", Previous: "previous", All: "all", Topic: "topic:t", Brokers: "brokers", Cluster: "cluster",
	Split: "split:1|2,3", Minority: "minority:t", Majority: "majority:t", OneWayPath: "one-way:1->2", Pair: "pair:1-2",
	Coordinator: "coordinator:g",
}

// The parser takes exactly the targets each entry lists, for every
// action and every target kind, and preflight's constructor agrees.
func TestParserTakesTheTablesTargets(t *testing.T) {
	for _, sp := range actionTable {
		name := string(sp.action)
		if sp.mode {
			name = strings.Replace(name, "<mode>", "maintenance", 1)
		}
		amount := ""
		if sp.amount != nil {
			amount = strings.Fields(strings.TrimPrefix(sp.example, "at="))[2] + " "
		}
		// What follows the example's target (a glob, a disk call) follows
		// every target.
		tail := ""
		if sp.tail != nil {
			f := strings.Fields(sp.example)
			tail = " " + strings.Join(f[3:], " ")
			if sp.amount != nil {
				tail = " " + strings.Join(f[4:], " ")
			}
		}
		for _, k := range allTargetKinds {
			step := fmt.Sprintf("at=1s %s %s%s%s", name, amount, targetExamples[k], tail)
			steps, err := ParseSchedule(step)
			want := slices.Contains(sp.targets, k) && sp.target != noTarget
			if (err == nil) != want {
				t.Errorf("%q: accepted %v, the table says %v (%v)", step, err == nil, want, err)
				continue
			}
			if err == nil {
				if steps[0].Target.Kind != k {
					t.Errorf("%q parsed as target %s", step, steps[0].Target)
				}
				if _, err := faultOf(steps[0]); err != nil {
					t.Errorf("%q: no fault: %v", step, err)
				}
			}
		}
		if sp.target == noTarget || sp.target == targetOrPrevious || sp.target == targetOrCluster {
			step := fmt.Sprintf("at=1s %s", name)
			if _, err := ParseSchedule(step); err != nil {
				t.Errorf("%q: %v", step, err)
			}
		}
	}
}

// What each action is, for the code that reads records: network or not,
// written with an amount or not, measured for recovery or not, and every
// one with an expectation the reports quote.
func TestActionKinds(t *testing.T) {
	tests := []struct {
		a                         Action
		network, amount, takesAwy bool
	}{
		{Kill, false, false, true},
		{Pause, false, false, true},
		{FsyncOn, false, false, false},
		{Partition, true, false, true},
		{PartitionClient, true, false, true},
		{Loss, true, true, false},
		{Bandwidth, true, true, false},
		{Delay, true, true, false},
		{HealNetwork, true, false, false},
		{SwitchAction("maintenance", true), false, false, false},
	}
	for _, tc := range tests {
		if tc.a.IsNetwork() != tc.network || tc.a.TakesAmount() != tc.amount || tc.a.TakesNodeAway() != tc.takesAwy {
			t.Errorf("%s: network %v, amount %v, takes a node away %v; want %v, %v, %v",
				tc.a, tc.a.IsNetwork(), tc.a.TakesAmount(), tc.a.TakesNodeAway(), tc.network, tc.amount, tc.takesAwy)
		}
		if tc.a.Expectation() == "" {
			t.Errorf("%s has no expectation", tc.a)
		}
		if tc.a.ReplacesProcess() && tc.network {
			t.Errorf("%s replaces the node's process", tc.a)
		}
	}
	if e := SwitchAction("maintenance", false).Expectation(); !strings.Contains(e, "maintenance turns off") {
		t.Errorf("maintenance-off expects %q", e)
	}
	for _, a := range []Action{FsyncOn, FsyncOff, Kill} {
		if _, _, ok := a.Switch(); ok {
			t.Errorf("%s reads as a broker mode switch", a)
		}
	}
	if UnexpectedDeath.TakesNodeAway() || UnexpectedDeath.Expectation() != "" {
		t.Error("unexpected-death, which no schedule names, has an entry")
	}
}

// docs/faults.md's list of actions is the table's (ActionsMarkdown),
// between its two markers. ACKCHECK_UPDATE_DOCS=1 writes it.
func TestDocsListEveryAction(t *testing.T) {
	const path = "../docs/faults.md"
	const begin, end = "<!-- actions: made from faults/actions.go (ACKCHECK_UPDATE_DOCS=1 go test ./faults -run TestDocsListEveryAction) -->\n", "<!-- end of actions -->\n"
	md, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(md)
	i, j := strings.Index(page, begin), strings.Index(page, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no list of actions between %q and %q", path, begin, end)
	}
	want := ActionsMarkdown()
	if got := page[i+len(begin) : j]; got != want {
		if os.Getenv("ACKCHECK_UPDATE_DOCS") == "1" {
			if err := os.WriteFile(path, []byte(page[:i+len(begin)]+want+page[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s's list of actions differs from the action table; run ACKCHECK_UPDATE_DOCS=1 go test ./faults -run TestDocsListEveryAction\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// CheckSchedule refuses a step at or after the load's end, and only that.
func TestCheckSchedule(t *testing.T) {
	steps, err := ParseSchedule("at=5s kill node:1; at=10s restart")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSchedule(steps, 11*time.Second); err != nil {
		t.Errorf("inside the load: %v", err)
	}
	err = CheckSchedule(steps, 10*time.Second)
	if err == nil || err.Error() != "fault at=10s restart previous fires after the load ends (--duration 10s)" {
		t.Errorf("at the load's end: %v", err)
	}
}

// A broker's word for a target kind is taken for a kind ackcheck has and
// a word of its own only.
func TestAliasesAdd(t *testing.T) {
	a := Aliases{}
	if err := a.Add("owner", Leader); err != nil || a["owner"] != Leader {
		t.Errorf("owner for leader: %v", err)
	}
	for _, tc := range []struct {
		word string
		kind TargetKind
	}{{"boss", "leadr"}, {"node", Leader}, {"x", Named}, {"a:b", Leader}} {
		if err := a.Add(tc.word, tc.kind); err == nil {
			t.Errorf("%s for %s taken", tc.word, tc.kind)
		}
	}
}
