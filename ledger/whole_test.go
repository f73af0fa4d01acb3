package ledger

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// buildCorpusLedger writes a ledger that looks like a run's: two
// producers' sends, outcomes, reads and live reads in many flushes,
// metadata written between them, and small memtables so that it holds
// both tables and write-ahead logs. With behind set, Pebble cannot write
// a table until the end, and the ledger's files are copied from under it
// into dir then, as a SIGKILL would leave them: every memtable still only
// in its own write-ahead log, so that the first, middle and last logs all
// hold events.
func buildCorpusLedger(t *testing.T, dir string, behind bool) {
	t.Helper()
	opts := Options{FlushInterval: time.Hour, memTableSize: 64 << 10}
	at := dir
	var stall *stallTables
	if behind {
		stall = &stallTables{FS: vfs.Default, release: make(chan struct{})}
		opts.FS, opts.memTablesQueued = stall, 100
		at = filepath.Join(t.TempDir(), "live")
	}
	l, err := Open(at, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if behind {
			copyDir(t, at, dir)
			close(stall.release)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	if err := l.PutMeta("run", map[string]int{"start": 1}); err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 30000; s++ {
		for p := uint32(0); p < 2; p++ {
			l.Record(Send, Event{Producer: p, Seq: uint64(s), Time: int64(s)})
			l.Record(Outcome, Event{Producer: p, Seq: uint64(s), Partition: int32(s % 3), Offset: int64(s), Status: OutcomeAcked})
			if s%3 == 0 {
				l.Record(LiveRead, Event{Producer: p, Seq: uint64(s), Time: 5})
			}
		}
		if s%400 == 399 {
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if s == 15000 {
			if err := l.PutMeta("faults", []string{"kill node:3"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.PutMeta("run", map[string]int{"start": 1, "end": 2}); err != nil {
		t.Fatal(err)
	}
}

// stallTables holds back the creation of every table file until release
// is closed: Pebble's memtable flushes wait, and their logs stay.
type stallTables struct {
	vfs.FS
	release chan struct{}
}

func (fs *stallTables) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if strings.HasSuffix(name, ".sst") {
		<-fs.release
	}
	return fs.FS.Create(name, c)
}

// contents is everything a verdict reads from a ledger: every event of
// every kind, and the metadata.
func contents(t *testing.T, l *Ledger) string {
	t.Helper()
	h := sha256.New()
	n := 0
	for _, k := range kinds {
		c, err := l.Scan(k)
		if err != nil {
			t.Fatalf("scan %c: %v", k, err)
		}
		for {
			e, ok := c.Next()
			if !ok {
				break
			}
			fmt.Fprintf(h, "%c%+v\n", k, e)
			n++
		}
		if err := c.Err(); err != nil {
			t.Fatalf("scan %c: %v", k, err)
		}
		c.Close()
	}
	for _, name := range []string{"run", "faults", metaFragNo, metaEvents, metaSentThrough} {
		var v any
		err := l.GetMeta(name, &v)
		fmt.Fprintf(h, "%s=%v %v\n", name, v, err)
	}
	return fmt.Sprintf("%d events, %s", n, hex.EncodeToString(h.Sum(nil))[:16])
}

// fileHashes is every file in dir with its content's hash.
func fileHashes(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		s := sha256.Sum256(b)
		out[e.Name()] = hex.EncodeToString(s[:8])
	}
	return out
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	es, _ := os.ReadDir(from)
	for _, e := range es {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func filesLike(t *testing.T, dir, pattern string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, pattern))
	sort.Strings(m)
	return m
}

// The damage corpus (issue 24): a ledger damaged in every way a disk, a
// copy or a hand can damage it is either refused with ErrDamaged, or
// still holds exactly what the intact ledger holds (the damage hit
// something no verdict reads, such as a recycled log or the LOCK file).
// Never a shorter ledger to judge. And OpenReadOnly changes no byte of it,
// damaged or not, and names the files as they are.
func TestDamageCorpusNeverPasses(t *testing.T) {
	for _, base := range []struct {
		name         string
		behind       bool
		logs, tables int // at least
	}{
		{"closed", false, 1, 3},
		{"killed with flushes behind", true, 3, 0},
	} {
		t.Run(base.name, func(t *testing.T) { damageCorpus(t, base.behind, base.logs, base.tables) })
	}
}

func damageCorpus(t *testing.T, behind bool, minLogs, minTables int) {
	intact := filepath.Join(t.TempDir(), "intact")
	buildCorpusLedger(t, intact, behind)
	l, err := OpenReadOnly(intact, Options{})
	if err != nil {
		t.Fatalf("the intact ledger: %v", err)
	}
	want := contents(t, l)
	if p := l.Proof(); !p.Whole || p.Flushes != 30000/400+3 || p.Events != 30000*4+2*10000 {
		t.Fatalf("intact ledger's proof: %+v", p)
	}
	l.Close()
	logs, ssts := filesLike(t, intact, "*.log"), filesLike(t, intact, "*.sst")
	if len(logs) < minLogs || len(ssts) < minTables {
		t.Fatalf("the corpus ledger should hold %d write-ahead logs and %d tables: %v %v", minLogs, minTables, logs, ssts)
	}

	type hurt func(t *testing.T, path string)
	empty := func(t *testing.T, p string) { must(t, os.Truncate(p, 0)) }
	remove := func(t *testing.T, p string) { must(t, os.Remove(p)) }
	cut := func(t *testing.T, p string) {
		st, err := os.Stat(p)
		must(t, err)
		must(t, os.Truncate(p, st.Size()/2))
	}
	flip := func(t *testing.T, p string) {
		b, err := os.ReadFile(p)
		must(t, err)
		if len(b) == 0 {
			t.Skip("empty file")
		}
		for i := len(b) / 2; i < min(len(b), len(b)/2+64); i++ {
			b[i] ^= 0x5a
		}
		must(t, os.WriteFile(p, b, 0o644))
	}
	ways := map[string]hurt{"emptied": empty, "deleted": remove, "cut in half": cut, "bytes flipped": flip}
	type target struct{ name, file string }
	var targets []target
	targets = append(targets, target{"first WAL", filepath.Base(logs[0])}, target{"last WAL", filepath.Base(logs[len(logs)-1])})
	if len(logs) > 2 {
		targets = append(targets, target{"middle WAL", filepath.Base(logs[len(logs)/2])})
	}
	if len(ssts) > 0 {
		targets = append(targets, target{"first table", filepath.Base(ssts[0])}, target{"middle table", filepath.Base(ssts[len(ssts)/2])},
			target{"last table", filepath.Base(ssts[len(ssts)-1])})
	}
	targets = append(targets, target{"COMMITTED", commitFile})
	for _, m := range []string{"MANIFEST-*", "marker.manifest.*", "marker.format-version.*", "OPTIONS-*", "LOCK"} {
		for _, f := range filesLike(t, intact, m) {
			targets = append(targets, target{filepath.Base(f), filepath.Base(f)})
		}
	}
	refused, whole := 0, 0
	for _, tg := range targets {
		for wname, way := range ways {
			t.Run(tg.name+" "+wname, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "ledger")
				copyDir(t, intact, dir)
				way(t, filepath.Join(dir, tg.file))
				before := fileHashes(t, dir)
				l, err := OpenReadOnly(dir, Options{})
				if err == nil {
					got := contents(t, l)
					p := l.Proof()
					l.Close()
					if got != want || !p.Whole {
						t.Fatalf("a damaged ledger opened with other contents (%s, want %s), proof %+v", got, want, p)
					}
					whole++
					t.Logf("still whole: %+v", p)
				} else {
					t.Logf("refused: %v", err)
					if !errors.Is(err, ErrDamaged) {
						t.Fatalf("want ErrDamaged, got %v", err)
					}
					for _, f := range strings.Fields(err.Error()) {
						if strings.HasPrefix(f, dir) {
							f = strings.TrimRight(f, ",.;:)")
							if _, serr := os.Stat(f); serr != nil && !strings.HasSuffix(f, tg.file) {
								t.Errorf("the error names %s, which is not there: %v", f, err)
							}
						}
					}
					refused++
				}
				if after := fileHashes(t, dir); fmt.Sprint(after) != fmt.Sprint(before) {
					t.Fatalf("OpenReadOnly changed the ledger's files:\nbefore %v\nafter  %v", before, after)
				}
			})
		}
	}
	t.Logf("%d damaged ledgers refused, %d whole (damage to what no verdict reads)", refused, whole)
	if refused == 0 {
		t.Fatal("no damage was refused")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Each of checkWhole's checks fires on the damage it is there for, made
// by hand in the database where no file-level damage can isolate it, and
// stays quiet on the same ledger untouched.
func TestCheckWholeFiresOnEachHole(t *testing.T) {
	fragKey := func(k Kind, producer uint32, firstSeq uint64, frag uint32) []byte {
		key := make([]byte, 17)
		key[0] = byte(k)
		binary.BigEndian.PutUint32(key[1:], producer)
		binary.BigEndian.PutUint64(key[5:], firstSeq)
		binary.BigEndian.PutUint32(key[13:], frag)
		return key
	}
	// The ledger: PutMeta (flush 0), then flushes 1..5 of 100 sends each,
	// one fragment a flush (fragments 0..4).
	cases := []struct {
		name string
		hurt func(t *testing.T, l *Ledger)
		want string // "" : whole
	}{
		{"untouched", func(*testing.T, *Ledger) {}, ""},
		{"a flush record gone from the middle", func(t *testing.T, l *Ledger) {
			must(t, l.db.Delete(flushKey(3), pebble.Sync))
		}, "flush records 3 to 3 are missing"},
		{"the last flush record gone", func(t *testing.T, l *Ledger) {
			must(t, l.db.Delete(flushKey(5), pebble.Sync))
		}, "vouches for 6 flushes"},
		{"a flush record that does not follow the one before", func(t *testing.T, l *Ledger) {
			must(t, l.db.Set(flushKey(2), flushRecord{firstFrag: 7, frags: 1, events: 100, total: 200}.encode(), pebble.Sync))
		}, "flush record 2 names fragments from 7"},
		{"a fragment gone", func(t *testing.T, l *Ledger) {
			must(t, l.db.Delete(fragKey(Send, 1, 200, 2), pebble.Sync))
		}, "flush 3 wrote 100 events in fragments 2 to 2; the database holds 0"},
		{"a fragment no flush accounts for", func(t *testing.T, l *Ledger) {
			must(t, l.db.Set(fragKey(Send, 1, 900, 9), encodeFragment(nil, []Event{{Producer: 1, Seq: 900}}), pebble.Sync))
		}, "fragment 9 (key"},
		{"a fragment stored twice", func(t *testing.T, l *Ledger) {
			must(t, l.db.Set(fragKey(Send, 1, 150, 1), encodeFragment(nil, []Event{{Producer: 1, Seq: 150}}), pebble.Sync))
		}, "fragment 1 is stored twice"},
		{"the commit record disagrees with its flush", func(t *testing.T, l *Ledger) {
			must(t, l.commits.append(commitEntry{fragNo: 4, events: 500, flushes: 6}))
		}, "says flush 5 ended at fragment 4 and 500 events; the database's flush record says 5 and 500"},
		{"the commit record behind by two flushes", func(t *testing.T, l *Ledger) {
			must(t, l.commits.append(commitEntry{fragNo: 3, events: 300, flushes: 4}))
		}, "the commit record was cut"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(dir, Options{FlushInterval: time.Hour})
			must(t, err)
			must(t, l.PutMeta("run", 1))
			for f := 0; f < 5; f++ {
				for s := f * 100; s < f*100+100; s++ {
					l.Record(Send, Event{Producer: 1, Seq: uint64(s)})
				}
				must(t, l.Flush())
			}
			c.hurt(t, l)
			must(t, l.Close())
			r, err := OpenReadOnly(dir, Options{})
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if p := r.Proof(); !p.Whole || p.Flushes != 6 || p.Fragments != 5 || p.Events != 500 {
					t.Fatalf("proof %+v", p)
				}
				r.Close()
				return
			}
			if err == nil {
				r.Close()
				t.Fatalf("opened, proof %+v; want damage %q", r.Proof(), c.want)
			}
			if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want ErrDamaged saying %q, got %v", c.want, err)
			}
		})
	}
}

// A ledger from before flush records opens, not whole, with the reason;
// and verify's reading of it changes nothing.
func TestLedgerWithoutFlushRecordsIsNotProvenWhole(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{FlushInterval: time.Hour})
	must(t, err)
	for s := 0; s < 300; s++ {
		l.Record(Send, Event{Producer: 1, Seq: uint64(s)})
	}
	must(t, l.Flush())
	// What an older ackcheck left: no flush records, and a commit
	// record of entries without a flush count.
	must(t, l.db.DeleteRange([]byte{flushPrefix}, []byte{flushPrefix + 1}, pebble.Sync))
	must(t, l.commits.append(commitEntry{fragNo: l.fragNo, events: l.events}))
	must(t, l.Close())
	before := fileHashes(t, dir)
	r, err := OpenReadOnly(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if p := r.Proof(); p.Whole || !strings.Contains(p.Reason, "cannot be proven whole") || p.Events != 300 || p.Fragments != 1 {
		t.Fatalf("proof %+v", p)
	}
	if err := r.Record(Send, Event{}); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Record on a read-only ledger: %v", err)
	}
	if err := r.PutMeta("x", 1); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("PutMeta on a read-only ledger: %v", err)
	}
	if after := fileHashes(t, dir); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("files changed:\n%v\n%v", before, after)
	}
}
