package faults

import (
	"strconv"
	"strings"
)

// Active lists the applied faults whose effect is still in force, in the
// order they were applied: a node killed or stopped and not restarted, a
// node paused and not resumed, a power loss until its nodes answer again,
// a mode or fsync switch not switched back. Live dashboards show it.
func (in *Injector) Active() []Record {
	return ActiveOf(in.Records())
}

// ActiveOf is Active over a list of records in the order they happened.
func ActiveOf(records []Record) []Record {
	type entry struct {
		rec   Record
		order int
	}
	active := map[string]entry{}
	node := func(id int32) string { return "node:" + strconv.Itoa(int(id)) }
	for i, r := range records {
		if r.Result != Applied && r.Result != Observed {
			continue
		}
		switch a := r.Action; {
		case a == Kill || a == Stop || a == Pause || a == UnexpectedDeath || a == DiedOnDiskError:
			active[node(r.Node)] = entry{r, i}
		case a == Restart || a == Resume:
			delete(active, node(r.Node))
		case a == DiskError:
			active["disk "+node(r.Node)] = entry{r, i}
		case a == DiskOK:
			delete(active, "disk "+node(r.Node))
		case a == PowerLoss:
			if r.ReadyAt.IsZero() {
				ids := r.Nodes
				if len(ids) == 0 {
					ids = []int32{r.Node}
				}
				for _, id := range ids {
					active[node(id)] = entry{r, i}
				}
			}
		case a == HealNetwork:
			for k := range active {
				if strings.HasPrefix(k, "network:") {
					delete(active, k)
				}
			}
		case a.IsNetwork():
			// Each in force until a heal-network removes them all.
			active["network:"+strconv.Itoa(i)] = entry{r, i}
		case a == FsyncOn || a == FsyncOff:
			toggle(active, "fsync "+r.Target, entry{r, i}, a == FsyncOn)
		default:
			if name, on, ok := a.Switch(); ok {
				toggle(active, "mode "+name+" "+r.Target, entry{r, i}, on)
			}
		}
	}
	// One record can be in force on several nodes (a power loss of all):
	// list it once.
	seen := map[int]bool{}
	var byOrder []entry
	for _, e := range active {
		if !seen[e.order] {
			seen[e.order] = true
			byOrder = append(byOrder, e)
		}
	}
	for i := 1; i < len(byOrder); i++ {
		for j := i; j > 0 && byOrder[j].order < byOrder[j-1].order; j-- {
			byOrder[j], byOrder[j-1] = byOrder[j-1], byOrder[j]
		}
	}
	out := make([]Record, len(byOrder))
	for i, e := range byOrder {
		out[i] = e.rec
	}
	return out
}

// toggle keeps a switch's latest change in force until the opposite
// change undoes it.
func toggle[E any](active map[string]E, key string, e E, on bool) {
	k := key + map[bool]string{true: " on", false: " off"}[on]
	undo := key + map[bool]string{true: " off", false: " on"}[on]
	if _, ok := active[undo]; ok {
		delete(active, undo)
		return
	}
	active[k] = e
}
