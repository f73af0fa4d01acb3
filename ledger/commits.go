package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The commit record is the ledger's account of itself, kept beside Pebble:
// after every committed flush, one fixed-size, checksummed entry naming
// the fragment counter and the total of events committed so far is
// appended to commitFile and synced. Pebble commits first, so the record is
// never ahead of what Pebble holds unless Pebble lost something it had
// synced: a WAL cut short or altered in the middle, which Pebble's recovery
// takes for the torn tail of a crash and silently drops from that point on.
// Open compares the two and refuses a ledger whose database is behind its
// record (ErrDamaged), instead of letting verify judge what is left.
//
// What a crash of ackcheck does to the record: at most a torn last entry
// (its checksum fails and it is ignored), and a record one flush behind
// Pebble. Neither is damage. With Options.NoSync the record is not synced
// either, so after a power loss of the load machine it can be ahead of a
// database that lost its unsynced tail: such a ledger reads as damaged,
// which is the truth about a NoSync ledger after a power loss.
const commitFile = "COMMITTED"

const (
	commitMagic   = 0xac4c0301
	commitEntrySz = 24 // magic(4) fragNo(4) events(8) flushes(4) crc32(4)
)

// ErrDamaged is returned (wrapped, with the file and what is missing) when
// the ledger on disk is not what ackcheck committed: no verdict may be
// given from it.
var ErrDamaged = errors.New("the ledger is damaged")

// commitEntry is the state after a committed flush: fragments and events
// written so far, and flushes, the number of flush records (see whole.go)
// so far. Ledgers written before flush records existed left flushes 0 in
// what was then a reserved field.
type commitEntry struct {
	fragNo  uint32
	events  uint64
	flushes uint32
}

func (e commitEntry) encode() []byte {
	b := make([]byte, commitEntrySz)
	binary.LittleEndian.PutUint32(b[0:], commitMagic)
	binary.LittleEndian.PutUint32(b[4:], e.fragNo)
	binary.LittleEndian.PutUint64(b[8:], e.events)
	binary.LittleEndian.PutUint32(b[16:], e.flushes)
	binary.LittleEndian.PutUint32(b[20:], crc32.ChecksumIEEE(b[:20]))
	return b
}

// decodeCommits returns the last valid entry of a commit record and
// whether an entry before the last was damaged (a torn last entry is what a
// crash leaves; a bad one before it is not).
func decodeCommits(data []byte) (last commitEntry, ok bool, damagedAt int) {
	damagedAt = -1
	n := len(data) / commitEntrySz
	for i := 0; i < n; i++ {
		b := data[i*commitEntrySz : (i+1)*commitEntrySz]
		if binary.LittleEndian.Uint32(b[0:]) != commitMagic || crc32.ChecksumIEEE(b[:20]) != binary.LittleEndian.Uint32(b[20:]) {
			if i < n-1 && damagedAt < 0 {
				damagedAt = i * commitEntrySz
			}
			continue
		}
		last = commitEntry{fragNo: binary.LittleEndian.Uint32(b[4:]), events: binary.LittleEndian.Uint64(b[8:]), flushes: binary.LittleEndian.Uint32(b[16:])}
		ok = true
	}
	return last, ok, damagedAt
}

// commitLog appends entries to the commit record.
type commitLog struct {
	f    vfs.File
	off  int64 // where the next entry goes
	sync bool
}

func openCommitLog(fs vfs.FS, dir string, sync bool) (*commitLog, []byte, error) {
	path := fs.PathJoin(dir, commitFile)
	var data []byte
	existed := false
	if f, err := fs.Open(path); err == nil {
		existed = true
		data, err = io.ReadAll(f)
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	f, err := fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	c := &commitLog{f: f, off: int64(len(data) / commitEntrySz * commitEntrySz), sync: sync}
	if !existed {
		// A new record starts with an entry for the empty ledger, synced
		// with its directory entry before anything is committed: a record
		// found empty later was emptied, never one ackcheck left so.
		if err := c.append(commitEntry{}); err != nil {
			f.Close()
			return nil, nil, err
		}
		if d, err := fs.OpenDir(dir); err == nil {
			d.Sync()
			d.Close()
		}
	}
	// Append after the last whole entry: a torn tail is overwritten.
	return c, data, nil
}

func (c *commitLog) append(e commitEntry) error {
	if _, err := c.f.WriteAt(e.encode(), c.off); err != nil {
		return fmt.Errorf("write the ledger's commit record: %w", err)
	}
	c.off += commitEntrySz
	if c.sync {
		if err := c.f.Sync(); err != nil {
			return fmt.Errorf("sync the ledger's commit record: %w", err)
		}
	}
	return nil
}

func (c *commitLog) close() error { return c.f.Close() }

// checkCommits compares the commit record with what Pebble holds.
// wals names the write-ahead logs found before Pebble opened (and replayed
// and removed) them.
func checkCommits(fs vfs.FS, dir string, data []byte, fragNo uint32, events uint64, wals string) error {
	last, ok, damagedAt := decodeCommits(data)
	path := fs.PathJoin(dir, commitFile)
	if damagedAt >= 0 {
		return fmt.Errorf("%w: %s has a bad entry at byte %d", ErrDamaged, path, damagedAt)
	}
	if !ok {
		return nil // a ledger that never committed a flush, or an old one
	}
	if fragNo < last.fragNo || events < last.events {
		return fmt.Errorf("%w: %s records %d events in %d fragments committed, but the database holds %d events in %d fragments; "+
			"its write-ahead log (%s) was cut short or altered, and Pebble drops everything after such damage. "+
			"No verdict can be given from it: run the check again",
			ErrDamaged, path, last.events, last.fragNo, events, fragNo, wals)
	}
	return nil
}

// walFiles names the write-ahead logs in dir, and their total size.
func walFiles(fs vfs.FS, dir string) (names string, bytes int64) {
	entries, err := fs.List(dir)
	if err != nil {
		return dir, 0
	}
	var logs []string
	for _, n := range entries {
		if strings.HasSuffix(n, ".log") {
			p := filepath.Join(dir, n)
			logs = append(logs, p)
			if st, err := fs.Stat(p); err == nil {
				bytes += st.Size()
			}
		}
	}
	slices.Sort(logs)
	if len(logs) == 0 {
		return dir, 0
	}
	return strings.Join(logs, ", "), bytes
}
