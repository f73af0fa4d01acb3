package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// # Proving a ledger whole
//
// The commit record (commits.go) vouches for the ledger's tail: it says
// how much was committed in all. It cannot see a hole: a write-ahead log
// emptied or deleted before the last one, whose loss Pebble does not
// notice, leaves the last log's totals intact and the events of the
// flushes in between gone, and those missing sends then read back as
// "phantoms" blamed on the broker, and those missing acks as messages
// nobody checks. So every commit to the database, a flush of events or a
// PutMeta, also writes a flush record in the same atomic batch:
//
//	'F' flush number(4)  ->  first fragment(4) fragments(4) events(8) total events(8)
//
// Flush numbers count from 0 without gaps, and fragment numbers are handed
// out in flush order, so a whole ledger holds flush records 0..F-1 whose
// fragment ranges tile 0..N-1, every one of those fragments, each flush's
// events in its fragments, and a commit record that vouches for F (or F-1:
// ackcheck died between the database's commit and the record's). checkWhole
// proves all of it by one pass over the keys and the count of each fragment,
// before any verdict is given. Anything else is damage: a flush, a fragment
// or a commit record missing, or a commit record that disagrees with the
// flush it names.
//
// Ledgers written before flush records existed hold none: they open, with
// Proof.Whole false and the reason, and their verdict must say it.
const flushPrefix = 'F'

const flushRecordSz = 24

type flushRecord struct {
	firstFrag uint32
	frags     uint32
	events    uint64 // in this flush
	total     uint64 // committed so far, this flush included
}

func flushKey(n uint32) []byte {
	k := make([]byte, 5)
	k[0] = flushPrefix
	binary.BigEndian.PutUint32(k[1:], n)
	return k
}

func (r flushRecord) encode() []byte {
	b := make([]byte, flushRecordSz)
	binary.BigEndian.PutUint32(b[0:], r.firstFrag)
	binary.BigEndian.PutUint32(b[4:], r.frags)
	binary.BigEndian.PutUint64(b[8:], r.events)
	binary.BigEndian.PutUint64(b[16:], r.total)
	return b
}

func decodeFlushRecord(v []byte) (flushRecord, bool) {
	if len(v) != flushRecordSz {
		return flushRecord{}, false
	}
	return flushRecord{
		firstFrag: binary.BigEndian.Uint32(v[0:]), frags: binary.BigEndian.Uint32(v[4:]),
		events: binary.BigEndian.Uint64(v[8:]), total: binary.BigEndian.Uint64(v[16:]),
	}, true
}

// Proof is what OpenReadOnly established about the ledger before handing
// it out.
type Proof struct {
	// Whole: every flush the commit record vouches for is in the
	// database, with every fragment and event it wrote, and nothing else.
	Whole bool `json:"whole"`
	// Flushes, Fragments and Events are what the database holds.
	Flushes   uint32 `json:"flushes"`
	Fragments uint32 `json:"fragments"`
	Events    uint64 `json:"events"`
	// Reason says why a ledger that is not Whole could not be proven so;
	// such a ledger is not known to be damaged (an older ackcheck wrote
	// it), but nothing vouches for its holes.
	Reason string `json:"reason,omitempty"`
}

// ErrReadOnly is returned by the writing methods of a ledger opened with
// OpenReadOnly.
var ErrReadOnly = errors.New("the ledger is open read-only")

// OpenReadOnly opens the ledger in dir without changing a byte of it, and
// proves it whole (Proof) or refuses it with ErrDamaged naming what is
// missing. Pebble replays the write-ahead logs into memory only; any file
// it would create, rename or remove is refused by a read-only filesystem
// (roFS), so that a second verify sees the same files as the first, and
// an error names files as they are. Record, PutMeta and DeleteKind return
// ErrReadOnly; Scan, GetMeta and Count work as on any ledger.
func OpenReadOnly(dir string, opts Options) (*Ledger, error) {
	opts.ensureDefaults()
	base := opts.FS
	if base == nil {
		base = vfs.Default
	}
	if _, err := base.Stat(dir); err != nil {
		return nil, fmt.Errorf("open ledger %s: %w", dir, err)
	}
	fs := &roFS{FS: base}
	commits, commitsErr := readCommits(base, dir)
	l := &Ledger{dir: dir, opts: opts, readOnly: true, shards: make(map[uint32]*shard), sentThru: make(map[uint32]uint64)}
	po := &pebble.Options{FS: fs, ReadOnly: true, ErrorIfNotExists: true, Logger: quietLogger{}, EventListener: &pebble.EventListener{
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			path := info.Path
			l.damagedPath.CompareAndSwap(nil, &path)
			l.damaged.Store(true)
		},
	}}
	writeOnce(po, opts)
	db, err := openPebble(dir, po, l)
	if err != nil {
		if errors.Is(err, errRefusedWrite) || errors.Is(err, errInUse) || strings.Contains(err.Error(), "lock") {
			return nil, openError(dir, err)
		}
		// Anything else Pebble cannot open is a database not as ackcheck
		// left it: a MANIFEST, marker, options file or table missing,
		// cut or altered.
		return nil, fmt.Errorf("%w: Pebble cannot open %s: %v. The ledger's files: %s. No verdict can be given from it",
			ErrDamaged, dir, firstLine(err.Error()), listFiles(base, dir))
	}
	l.db = db
	fail := func(err error) (*Ledger, error) {
		l.damaged.Store(true)
		l.closeDB()
		return nil, err
	}
	for _, m := range []struct {
		name string
		v    any
	}{{metaFragNo, &l.fragNo}, {metaSentThrough, &l.sentThru}, {metaEvents, &l.events}} {
		if err := l.GetMeta(m.name, m.v); err != nil && !errors.Is(err, ErrNoMeta) {
			return fail(err)
		}
	}
	if commitsErr != nil {
		return fail(commitsErr)
	}
	proof, err := l.checkWhole(commits)
	if err != nil {
		return fail(err)
	}
	l.proof = proof
	return l, nil
}

// openPebble opens Pebble and turns a panic of its Fatalf (damage met
// while opening) into an error.
func openPebble(dir string, po *pebble.Options, l *Ledger) (db *pebble.DB, err error) {
	defer l.catch(&err)
	return pebble.Open(dir, po)
}

// Proof returns what OpenReadOnly proved; the zero Proof for a ledger
// opened with Open.
func (l *Ledger) Proof() Proof { return l.proof }

// ReadOnly reports whether l was opened with OpenReadOnly.
func (l *Ledger) ReadOnly() bool { return l.readOnly }

// commitState is the commit record as read from disk.
type commitState struct {
	exists bool
	size   int64
	last   commitEntry
	ok     bool // at least one valid entry
}

// readCommits reads the commit record without creating it. A bad entry
// before the last is damage; a torn last entry is what a crash leaves.
func readCommits(fs vfs.FS, dir string) (commitState, error) {
	path := fs.PathJoin(dir, commitFile)
	f, err := fs.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return commitState{}, nil
	}
	if err != nil {
		return commitState{}, fmt.Errorf("open %s: %w", path, err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return commitState{}, fmt.Errorf("read %s: %w", path, err)
	}
	last, ok, damagedAt := decodeCommits(data)
	if damagedAt >= 0 {
		return commitState{}, fmt.Errorf("%w: %s has a bad entry at byte %d; no verdict can be given from it", ErrDamaged, path, damagedAt)
	}
	return commitState{exists: true, size: int64(len(data)), last: last, ok: ok}, nil
}

// checkWhole proves the database holds every flush the commit record
// vouches for, each with all its fragments and events (see the comment
// at flushPrefix), or returns ErrDamaged saying what is missing.
func (l *Ledger) checkWhole(cs commitState) (p Proof, err error) {
	defer l.catch(&err)
	recs, err := l.flushRecords()
	if err != nil {
		return p, err
	}
	if len(recs) == 0 {
		return l.checkWithoutFlushes(cs)
	}
	last := recs[len(recs)-1]
	p.Flushes, p.Fragments, p.Events = uint32(len(recs)), last.firstFrag+last.frags, last.total
	if err := l.checkCommitVouches(cs, recs, p.Events); err != nil {
		return p, err
	}
	if err := l.checkFragments(recs, p.Fragments); err != nil {
		return p, err
	}
	p.Whole = true
	return p, nil
}

// commitPath is the ledger's commit record, as its errors name it.
func (l *Ledger) commitPath() string { return l.opts.fsOrDefault().PathJoin(l.dir, commitFile) }

// damagedf is ErrDamaged with what is wrong (format, args), the ledger's
// files and that no verdict can be given from it.
func (l *Ledger) damagedf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format+". The ledger's files: %s. No verdict can be given from it", append([]any{ErrDamaged}, append(args, listFiles(l.opts.fsOrDefault(), l.dir))...)...)
}

// flushRecords reads the flush records in order, refusing one ackcheck
// did not write, a gap in their numbers, and one that does not start
// where the flushes before it end.
func (l *Ledger) flushRecords() ([]flushRecord, error) {
	var recs []flushRecord
	it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: []byte{flushPrefix}, UpperBound: []byte{flushPrefix + 1}})
	if err != nil {
		return nil, l.damage("read the ledger's flush records", err)
	}
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		r, ok := decodeFlushRecord(it.Value())
		if len(k) != 5 || !ok {
			it.Close()
			return nil, l.damagedf("flush record %x is not one ackcheck wrote", k)
		}
		n := binary.BigEndian.Uint32(k[1:])
		if want := uint32(len(recs)); n != want {
			it.Close()
			return nil, l.damagedf("flush records %d to %d are missing from the database (the next present is %d): "+
				"a write-ahead log or table that held them was emptied, deleted or cut", want, n-1, n)
		}
		var frag uint32
		var total uint64
		if len(recs) > 0 {
			prev := recs[len(recs)-1]
			frag, total = prev.firstFrag+prev.frags, prev.total
		}
		if r.firstFrag != frag || r.total != total+r.events {
			it.Close()
			return nil, l.damagedf("flush record %d names fragments from %d and %d events in all, where the flushes before it end at fragment %d and %d events", n, r.firstFrag, r.total, frag, total)
		}
		recs = append(recs, r)
	}
	if err := it.Close(); err != nil {
		return nil, l.damage("read the ledger's flush records", err)
	}
	return recs, nil
}

// checkWithoutFlushes judges a database with no flush records: damaged
// when the commit record vouches for flushes; whole when it holds no
// fragments either (nothing was committed); otherwise an older ledger,
// written before flush records were kept, which cannot be proven whole
// (or is damaged when it holds less than the commit record says).
func (l *Ledger) checkWithoutFlushes(cs commitState) (p Proof, err error) {
	if cs.ok && cs.last.flushes > 0 {
		return p, l.damagedf("%s vouches for %d flushes (%d events), and the database holds none of them", l.commitPath(), cs.last.flushes, cs.last.events)
	}
	frags, events, err := l.countFragments(nil)
	if err != nil {
		return p, err
	}
	if frags == 0 {
		return Proof{Whole: true}, nil
	}
	p.Fragments, p.Events = frags, events
	if cs.ok && (cs.last.fragNo > l.fragNo || cs.last.events > l.events) {
		return p, l.damagedf("%s records %d events in %d fragments committed, but the database holds %d events in %d fragments: "+
			"a write-ahead log was cut short or altered", l.commitPath(), cs.last.events, cs.last.fragNo, l.events, l.fragNo)
	}
	p.Reason = "this ledger was written by an ackcheck that kept no flush records: a hole in it (a write-ahead log emptied or deleted) could not be seen, so it cannot be proven whole"
	return p, nil
}

// checkCommitVouches checks the tail against the commit record: it must
// exist and be readable, vouch for no flush the database lacks, lag it by
// one flush at most, and agree with the flush record of the last flush it
// vouches for. events is what the database's flush records hold in all.
func (l *Ledger) checkCommitVouches(cs commitState, recs []flushRecord, events uint64) error {
	commitPath := l.commitPath()
	switch {
	case !cs.exists:
		return l.damagedf("the commit record %s is missing, while the database holds %d flushes: without it the ledger's tail cannot be proven whole", commitPath, len(recs))
	case !cs.ok:
		return l.damagedf("the commit record %s is empty or unreadable (%d bytes), while the database holds %d flushes: without it the ledger's tail cannot be proven whole", commitPath, cs.size, len(recs))
	case cs.last.flushes > uint32(len(recs)):
		return l.damagedf("%s vouches for %d flushes (%d events in %d fragments), but the database holds only %d (%d events): "+
			"the last write-ahead log was cut short, emptied or altered, and Pebble dropped everything after the damage",
			commitPath, cs.last.flushes, cs.last.events, cs.last.fragNo, len(recs), events)
	case cs.last.flushes+1 < uint32(len(recs)):
		// With each entry synced after its flush, the record lags the
		// database by one flush at most (ackcheck died in between).
		return l.damagedf("%s vouches for %d flushes but the database holds %d: the commit record was cut", commitPath, cs.last.flushes, len(recs))
	}
	if cs.last.flushes == 0 {
		// ackcheck died between the first commit and its entry.
		return nil
	}
	if r := recs[cs.last.flushes-1]; r.firstFrag+r.frags != cs.last.fragNo || r.total != cs.last.events {
		return l.damagedf("%s says flush %d ended at fragment %d and %d events; the database's flush record says %d and %d",
			commitPath, cs.last.flushes-1, cs.last.fragNo, cs.last.events, r.firstFrag+r.frags, r.total)
	}
	return nil
}

// checkFragments checks that the database holds every fragment of every
// flush (fragments 0 to fragments-1), each once, with the events its
// flush record says, and nothing else.
func (l *Ledger) checkFragments(recs []flushRecord, fragments uint32) error {
	seen := make([]uint64, (fragments+63)/64)
	perFlush := make([]uint64, len(recs))
	var extra error
	_, _, err := l.countFragments(func(key []byte, frag uint32, events uint64) bool {
		if frag >= fragments {
			extra = l.damagedf("fragment %d (key %x) belongs to no flush record: the ledger holds writes its records do not account for", frag, key)
			return false
		}
		if seen[frag/64]&(1<<(frag%64)) != 0 {
			extra = l.damagedf("fragment %d is stored twice", frag)
			return false
		}
		seen[frag/64] |= 1 << (frag % 64)
		i := sort.Search(len(recs), func(i int) bool { return recs[i].firstFrag+recs[i].frags > frag })
		perFlush[i] += events
		return true
	})
	if err != nil {
		return err
	}
	if extra != nil {
		return extra
	}
	for i, r := range recs {
		if perFlush[i] != r.events {
			missing := 0
			for f := r.firstFrag; f < r.firstFrag+r.frags; f++ {
				if seen[f/64]&(1<<(f%64)) == 0 {
					missing++
				}
			}
			return l.damagedf("flush %d wrote %d events in fragments %d to %d; the database holds %d of those events (%d fragments missing)",
				i, r.events, r.firstFrag, r.firstFrag+r.frags-1, perFlush[i], missing)
		}
	}
	return nil
}

// countFragments walks every fragment key of every kind, handing each,
// with its number and event count, to visit (nil: none) until visit
// returns false; it returns the fragments and events seen.
func (l *Ledger) countFragments(visit func(key []byte, frag uint32, events uint64) bool) (frags uint32, events uint64, err error) {
	for _, k := range kinds {
		it, err := l.db.NewIter(&pebble.IterOptions{LowerBound: []byte{byte(k)}, UpperBound: []byte{byte(k) + 1}})
		if err != nil {
			return frags, events, l.damage("scan the ledger", err)
		}
		for it.First(); it.Valid(); it.Next() {
			key := it.Key()
			n, c := binary.Uvarint(it.Value())
			if len(key) != 17 || c <= 0 || n > fragmentMax {
				it.Close()
				return frags, events, fmt.Errorf("%w: ledger key %x: %w", ErrDamaged, key, errBadFragment)
			}
			frags++
			events += n
			if visit != nil && !visit(key, binary.BigEndian.Uint32(key[13:]), n) {
				break
			}
		}
		if err := it.Close(); err != nil {
			return frags, events, l.damage("scan the ledger", err)
		}
	}
	return frags, events, nil
}

// listFiles names the files in dir with their sizes, for messages about
// damage: the user sees what is there, as it is.
func listFiles(fs vfs.FS, dir string) string {
	names, err := fs.List(dir)
	if err != nil {
		return fmt.Sprintf("(cannot list %s: %v)", dir, err)
	}
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(", ")
		}
		if st, err := fs.Stat(fs.PathJoin(dir, n)); err == nil {
			fmt.Fprintf(&b, "%s (%d bytes)", fs.PathJoin(dir, n), st.Size())
		} else {
			b.WriteString(fs.PathJoin(dir, n))
		}
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

func (o Options) fsOrDefault() vfs.FS {
	if o.FS == nil {
		return vfs.Default
	}
	return o.FS
}

// errRefusedWrite is what roFS answers to anything that would change the
// directory.
var errRefusedWrite = errors.New("ackcheck refused a write to a ledger opened read-only")

// roFS passes reads to FS and refuses every call that would create,
// change or remove a file. Lock takes the lock of an existing LOCK file
// (a run still writing the ledger holds it) and creates none.
type roFS struct{ vfs.FS }

func (fs *roFS) refuse(op, name string) error {
	return fmt.Errorf("%w: %s %s", errRefusedWrite, op, name)
}

func (fs *roFS) Create(name string, _ vfs.DiskWriteCategory) (vfs.File, error) {
	return nil, fs.refuse("create", name)
}
func (fs *roFS) Link(oldname, newname string) error { return fs.refuse("link", newname) }
func (fs *roFS) OpenReadWrite(name string, _ vfs.DiskWriteCategory, _ ...vfs.OpenOption) (vfs.File, error) {
	return nil, fs.refuse("open for writing", name)
}
func (fs *roFS) Remove(name string) error             { return fs.refuse("remove", name) }
func (fs *roFS) RemoveAll(name string) error          { return fs.refuse("remove", name) }
func (fs *roFS) Rename(oldname, newname string) error { return fs.refuse("rename", oldname) }
func (fs *roFS) ReuseForWrite(oldname, newname string, _ vfs.DiskWriteCategory) (vfs.File, error) {
	return nil, fs.refuse("reuse", oldname)
}
func (fs *roFS) MkdirAll(dir string, _ os.FileMode) error { return fs.refuse("create directory", dir) }
func (fs *roFS) Lock(name string) (io.Closer, error) {
	if _, err := fs.FS.Stat(name); err != nil {
		return io.NopCloser(nil), nil
	}
	c, err := fs.FS.Lock(name)
	if err != nil {
		// Another process holds it (EAGAIN), or this one: the ledger is in
		// use, not damaged; said so, whatever the system's words for it.
		return nil, fmt.Errorf("%w: %s: %w", errInUse, name, err)
	}
	return c, nil
}

// errInUse is what roFS answers when the ledger's lock is held: a run
// still writing it, or another verify or report reading it.
var errInUse = errors.New("the ledger's lock is held")
