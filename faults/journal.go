package faults

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/ackcheck/ackcheck/netns"
)

// UndoKind is what an undo puts back.
type UndoKind string

const (
	// UndoResume resumes a paused node (SIGCONT).
	UndoResume UndoKind = "resume"
	// UndoStart starts a node left down.
	UndoStart UndoKind = "start"
	// UndoTopicConfig puts a topic setting back.
	UndoTopicConfig UndoKind = "topic-config"
	// UndoNodeConfig puts a node's config file back (and restarts it).
	UndoNodeConfig UndoKind = "node-config"
	// UndoSwitch turns a broker-wide mode (drivers.Switcher, Key) back to
	// Value, "on" or "off".
	UndoSwitch UndoKind = "switch"
	// UndoNetRule removes a network rule (Rule) from the namespaces of
	// the Net whose prefix is Net.
	UndoNetRule UndoKind = "net-rule"
	// UndoFile puts a node's data file (File) back from its copy
	// (Backup), whose sha256 is Sum: the undo of the file faults.
	UndoFile UndoKind = "file"
	// UndoDiskError ends a node's disk errors (disk-ok).
	UndoDiskError UndoKind = "disk-error"
)

// Undo is one thing a fault changed and how to put it back. Every undo is
// idempotent: applying it when it is already undone changes nothing.
type Undo struct {
	Kind UndoKind `json:"kind"`
	Node int32    `json:"node,omitempty"`
	// topic-config: Key of Topic goes back to Value (nil: no override).
	Topic string  `json:"topic,omitempty"`
	Key   string  `json:"key,omitempty"`
	Value *string `json:"value,omitempty"`
	// node-config: the node's config file goes back to Content, then the
	// node is restarted if Restart.
	Content *string `json:"content,omitempty"`
	Restart bool    `json:"restart,omitempty"`
	// net-rule: Rule is removed from network Net (found again by its
	// prefix, netns.Open); Port is where the heal's probe connects.
	Net  string      `json:"net,omitempty"`
	Port int         `json:"port,omitempty"`
	Rule *netns.Rule `json:"rule,omitempty"`
	// file: File goes back to the copy Backup, whose sha256 is Sum.
	File   string `json:"file,omitempty"`
	Backup string `json:"backup,omitempty"`
	Sum    string `json:"sum,omitempty"`
	// Why says what the fault did, for the heal report.
	Why string `json:"why"`
}

func (u Undo) String() string {
	switch u.Kind {
	case UndoResume:
		return fmt.Sprintf("resume node %d", u.Node)
	case UndoStart:
		return fmt.Sprintf("start node %d", u.Node)
	case UndoTopicConfig:
		v := "its default"
		if u.Value != nil {
			v = *u.Value
		}
		return fmt.Sprintf("set %s of topic %s back to %s", u.Key, u.Topic, v)
	case UndoNodeConfig:
		return fmt.Sprintf("restore node %d's config file%s", u.Node, map[bool]string{true: " and restart it"}[u.Restart])
	case UndoSwitch:
		v := "off"
		if u.Value != nil {
			v = *u.Value
		}
		return fmt.Sprintf("turn %s %s", u.Key, v)
	case UndoDiskError:
		return fmt.Sprintf("end node %d's disk errors", u.Node)
	case UndoFile:
		return fmt.Sprintf("put node %d's file %s back from %s", u.Node, u.File, u.Backup)
	case UndoNetRule:
		if u.Rule == nil {
			return "remove a network rule"
		}
		return fmt.Sprintf("remove the rule %s (%s) from network %s", u.Rule.Name, u.Rule, u.Net)
	}
	return string(u.Kind)
}

// journalLine is one line of heal.jsonl.
type journalLine struct {
	Op   string `json:"op"` // add or done
	ID   int    `json:"id"`
	Undo *Undo  `json:"undo,omitempty"`
}

// Journal is a run's undo log, <out>/heal.jsonl: an undo is appended and
// fsynced before its fault applies, and a done line after it was undone.
// After a crash, what was added and not done is what is still applied
// (or was about to be: undos are idempotent, so undoing one that never
// applied is harmless).
type Journal struct {
	mu      sync.Mutex
	f       *os.File // nil: in memory only
	next    int
	pending map[int]Undo
}

// OpenJournal opens (creating) the journal at path and loads what is
// pending. An empty path keeps the journal in memory.
func OpenJournal(path string) (*Journal, error) {
	j := &Journal{pending: map[int]Undo{}}
	if path == "" {
		return j, nil
	}
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var l journalLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				// A torn last line from a crash: what it announced was not
				// applied yet (the fault waits for the fsync).
				continue
			}
			switch l.Op {
			case "add":
				if l.Undo != nil {
					j.pending[l.ID] = *l.Undo
				}
			case "done":
				delete(j.pending, l.ID)
			}
			j.next = max(j.next, l.ID+1)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read heal journal %s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open heal journal: %w", err)
	}
	j.f = f
	return j, nil
}

func (j *Journal) write(l journalLine) error {
	if j.f == nil {
		return nil
	}
	data, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if _, err := j.f.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("write heal journal: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("sync heal journal: %w", err)
	}
	return nil
}

// Add records u durably and returns its ID. The caller applies the fault
// only after Add returned without error.
func (j *Journal) Add(u Undo) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	id := j.next
	if err := j.write(journalLine{Op: "add", ID: id, Undo: &u}); err != nil {
		return 0, err
	}
	j.next++
	j.pending[id] = u
	return id, nil
}

// Done marks id undone.
func (j *Journal) Done(id int) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, ok := j.pending[id]; !ok {
		return nil
	}
	if err := j.write(journalLine{Op: "done", ID: id}); err != nil {
		return err
	}
	delete(j.pending, id)
	return nil
}

// Find returns the newest pending undo of kind for node, if any.
func (j *Journal) Find(kind UndoKind, node int32) (int, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	best, found := -1, false
	for id, u := range j.pending {
		if u.Kind == kind && u.Node == node && id > best {
			best, found = id, true
		}
	}
	return best, found
}

// HasTopicConfig reports whether an undo of key on topic is pending: a
// later toggle of the same setting must not record a second one, since
// the first holds the setting as it was before the run touched it.
func (j *Journal) HasTopicConfig(topic, key string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, u := range j.pending {
		if u.Kind == UndoTopicConfig && u.Topic == topic && u.Key == key {
			return true
		}
	}
	return false
}

// FindSwitch returns the pending undo that puts mode name back, if any.
func (j *Journal) FindSwitch(name string) (id int, u Undo, ok bool) {
	ids, undos := j.Pending()
	for i, u := range undos {
		if u.Kind == UndoSwitch && u.Key == name {
			return ids[i], u, true
		}
	}
	return 0, Undo{}, false
}

// HasNodeConfig is HasTopicConfig for a node's config file.
func (j *Journal) HasNodeConfig(node int32) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, u := range j.pending {
		if u.Kind == UndoNodeConfig && u.Node == node {
			return true
		}
	}
	return false
}

// NeedsCluster reports whether undoing undos needs the cluster's nodes or
// its broker: every kind but a network rule (removed from its namespaces,
// found again by their prefix) and a file (put back through the nodes'
// runners, NeedsNodes) does.
func NeedsCluster(undos []Undo) bool {
	for _, u := range undos {
		if u.Kind != UndoNetRule && u.Kind != UndoFile && u.Kind != UndoDiskError {
			return true
		}
	}
	return false
}

// Pending returns the pending undos, newest first: the order to undo in.
func (j *Journal) Pending() (ids []int, undos []Undo) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for id := range j.pending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	for _, id := range ids {
		undos = append(undos, j.pending[id])
	}
	return ids, undos
}

// Close closes the file.
func (j *Journal) Close() error {
	if j.f == nil {
		return nil
	}
	return j.f.Close()
}
