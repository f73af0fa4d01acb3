// Package lazyfs is a FUSE filesystem that loses, on command, every write
// that was not fsynced: a power loss for the processes that use it, while
// the machine keeps running. Jepsen's LazyFS does the same in C++; this one
// is small, in Go, and built for one question: does an ack survive a power
// loss?
//
// The filesystem passes everything through to a backing directory, so the
// backing directory always holds what the processes see. What makes it
// "lazy" is what it remembers on the side:
//
//   - Per file (by backing inode): its size at its last fsync and the
//     original bytes of every 4 KiB page below that size that changed
//     since. Appends cost nothing to remember; an overwrite keeps the page
//     it overwrote, once per fsync interval.
//   - Per directory: the entries created, removed or renamed since the
//     directory's last fsync, in order. A removed entry waits in a trash
//     directory beside the backing directory, so that it can come back.
//
// Lose puts every file back to its content and size at its last fsync,
// then undoes the pending entry changes, newest first. Invariant: a file
// with nothing remembered holds exactly its durable content.
//
// What it models, exactly (in the default, strict mode; see Options for
// the journal mode):
//
//   - fsync and fdatasync of a file make all its writes so far durable
//     (both behave alike: metadata-only syncs are not told apart). A write
//     that races an fsync counts as not synced.
//   - fsync of a directory makes durable the entries created in it,
//     removed from it, and renamed into it (a rename is durable when its
//     destination directory is synced; syncing only the source directory
//     does not keep it). A file created and fsynced in a directory that is
//     never synced disappears in a loss, its data with it.
//   - Sync (the control command) makes everything durable, as a clean
//     shutdown of the machine would.
//   - A pending change whose path a later change took away, when that
//     later change was made durable (an unlink inside a directory whose
//     removal is durable; an entry inside a directory renamed durably),
//     stays: the durable change implies it. Lenient in the rename case,
//     where a real filesystem could lose the inner entry.
//
// What it does not model: torn writes (a page is lost or kept whole, never
// half), reordering of writes within one fsync interval (a loss drops all
// of them, never a subset), the periodic writeback a kernel does on its
// own (nothing becomes durable without an fsync: the harshest legal
// filesystem, harsher than ext4's 5 s journal commit), O_DIRECT (its writes
// are treated as buffered), xattrs, modes, owners and times (never rolled
// back), and a crash of lazyfs itself (what it remembered is gone, and
// everything written counts as durable).
package lazyfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// pageSize is the granularity at which overwritten content is remembered.
const pageSize = 4096

// FS is one mounted lazy filesystem.
type FS struct {
	backing    string
	mountpoint string
	journal    bool // EntriesJournal
	trash      string
	server     *fuse.Server
	root       *node

	// lossMu is held for reading by every operation that changes data or
	// entries, and for writing by Lose and Sync, so that a loss sees a
	// still filesystem.
	lossMu sync.RWMutex

	mu        sync.Mutex // guards the fields below
	files     map[uint64]*fileState
	entries   []entry
	trashSeq  int
	open      int
	losses    int
	syncs     int64
	dirSyncs  int64
	lastLoss  *LossReport
	unmounted bool

	// disk is the disk errors in force (diskerror.go).
	disk diskErrors
}

// fileState is what a file changed since its last fsync. It exists only
// while the file has unsynced changes.
type fileState struct {
	mu     sync.Mutex
	f      *os.File // our own read-write handle on the backing file
	synced int64    // size at the last fsync
	saved  map[int64][]byte
	gone   bool // synced or lost: a new state must be made
}

// entry is one directory change not yet durable.
type entry struct {
	kind  string // create, remove, rename, exchange
	dir   uint64 // backing inode of the directory whose fsync keeps it
	path  string // create: the new name; remove: the old name; rename: the new name
	from  string // rename, exchange: the old name
	trash string // remove: where the entry waits; rename: the replaced target
	// replacedDir: a rename replaced an empty directory.
	replacedDir bool
}

// Entry durability modes (Options.Entries).
const (
	// EntriesStrict: a directory change is durable only once its
	// directory is fsynced (POSIX's promise, and nothing more).
	EntriesStrict = "strict"
	// EntriesJournal: every pending directory change becomes durable at
	// the next fsync of any file or directory on the filesystem, as with
	// the metadata journal of ext4 or XFS, whose commit an fsync forces.
	EntriesJournal = "journal"
)

// Options tune a mount.
type Options struct {
	// Entries is when directory changes become durable: EntriesStrict
	// (the default) or EntriesJournal.
	Entries string
	// Debug logs every FUSE request (go-fuse's debug output).
	Debug bool
}

// Mount mounts a lazy filesystem of backing on mountpoint. The mountpoint
// is created if missing; a dead mount left there by a killed lazyfs is
// cleared first. Unmount it with Unmount.
func Mount(backing, mountpoint string, opts Options) (*FS, error) {
	var err error
	if backing, err = filepath.Abs(backing); err != nil {
		return nil, err
	}
	if mountpoint, err = filepath.Abs(mountpoint); err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, fmt.Errorf("backing directory %s: %w (create it first)", backing, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil, fmt.Errorf("backing %s is not a directory", backing)
	}
	if err := ClearDeadMount(mountpoint); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(mountpoint, 0o755); err != nil {
		return nil, fmt.Errorf("create mountpoint: %w", err)
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return nil, fmt.Errorf("FUSE is not available here (/dev/fuse: %v): load the fuse module or run where FUSE works", err)
	}
	// The trash must be on the backing directory's filesystem (removed
	// entries are renamed into it) and outside the tree the mount shows.
	// What a previous lazyfs left in it was removed for good.
	trash := filepath.Join(filepath.Dir(backing), "."+filepath.Base(backing)+".lazyfs-trash")
	if err := os.RemoveAll(trash); err != nil {
		return nil, fmt.Errorf("clear %s: %w", trash, err)
	}
	if err := os.Mkdir(trash, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", trash, err)
	}
	switch opts.Entries {
	case "":
		opts.Entries = EntriesStrict
	case EntriesStrict, EntriesJournal:
	default:
		return nil, fmt.Errorf("entries mode %q: use %s or %s", opts.Entries, EntriesStrict, EntriesJournal)
	}
	l := &FS{backing: backing, mountpoint: mountpoint, trash: trash, files: map[uint64]*fileState{}, journal: opts.Entries == EntriesJournal}
	lr := &fs.LoopbackRoot{Path: backing, Dev: uint64(st.Dev)}
	lr.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, lfs: l}
	}
	l.root = &node{LoopbackNode: fs.LoopbackNode{RootData: lr}, lfs: l}
	lr.RootNode = l.root
	// No kernel caching of names or attributes: after a loss, the next
	// lookup must see the backing directory as it is.
	zero := time.Duration(0)
	server, err := fs.Mount(mountpoint, l.root, &fs.Options{
		EntryTimeout: &zero, AttrTimeout: &zero, NegativeTimeout: &zero,
		MountOptions: fuse.MountOptions{
			FsName: "lazyfs:" + backing, Name: "lazyfs", DirectMount: true, Debug: opts.Debug,
			AllowOther: os.Geteuid() == 0,
		},
	})
	if err != nil {
		os.Remove(trash)
		return nil, fmt.Errorf("mount lazyfs on %s: %w (is fusermount3 installed? apt-get install fuse3)", mountpoint, err)
	}
	l.server = server
	return l, nil
}

// Mountpoint is where the filesystem is mounted.
func (l *FS) Mountpoint() string { return l.mountpoint }

// Backing is the directory that holds the data.
func (l *FS) Backing() string { return l.backing }

// Unmount unmounts the filesystem, waiting up to a few seconds for it to
// stop being busy. What was not synced stays in the backing directory:
// an unmount is a clean shutdown, not a loss.
func (l *FS) Unmount() error {
	l.mu.Lock()
	if l.unmounted {
		l.mu.Unlock()
		return nil
	}
	l.unmounted = true
	l.mu.Unlock()
	var err error
	for i := 0; i < 20; i++ {
		if err = l.server.Unmount(); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		// Busy for good (a process still holds a file): detach it lazily,
		// so that nothing is left mounted behind this process.
		if out, lerr := exec.Command("fusermount3", "-u", "-z", l.mountpoint).CombinedOutput(); lerr != nil {
			return fmt.Errorf("unmount %s: %v; fusermount3 -u -z: %v %s", l.mountpoint, err, lerr, out)
		}
	}
	l.server.Wait()
	l.Sync()
	return os.RemoveAll(l.trash)
}

// Wait blocks until the filesystem is unmounted (by Unmount or from
// outside, with fusermount3 -u).
func (l *FS) Wait() { l.server.Wait() }

// ClearDeadMount unmounts path if it is a dead FUSE mount ("transport
// endpoint is not connected"), which a SIGKILLed lazyfs leaves behind.
func ClearDeadMount(path string) error {
	_, err := os.Stat(path)
	if !errors.Is(err, syscall.ENOTCONN) {
		return nil
	}
	out, uerr := exec.Command("fusermount3", "-u", "-z", path).CombinedOutput()
	if uerr != nil {
		if out2, err2 := exec.Command("umount", "-l", path).CombinedOutput(); err2 != nil {
			return fmt.Errorf("%s is a dead FUSE mount and could not be cleared: fusermount3: %v %s; umount: %v %s", path, uerr, out, err2, out2)
		}
	}
	return nil
}

// Status is what the filesystem holds unsynced now.
type Status struct {
	Backing        string      `json:"backing"`
	Mountpoint     string      `json:"mountpoint"`
	Entries        string      `json:"entries"`
	DirtyFiles     int         `json:"dirty_files"`
	SavedBytes     int64       `json:"saved_bytes"` // overwritten bytes remembered (zero pages cost nothing)
	UnsyncedBytes  int64       `json:"unsynced_bytes"`
	PendingEntries int         `json:"pending_entries"`
	OpenHandles    int         `json:"open_handles"`
	FileSyncs      int64       `json:"file_syncs"`
	DirSyncs       int64       `json:"dir_syncs"`
	Losses         int         `json:"losses"`
	LastLoss       *LossReport `json:"last_loss,omitempty"`
	// DiskErrors are the disk errors in force (SetDiskError).
	DiskErrors []DiskError `json:"disk_errors,omitempty"`
}

// Status reports what is unsynced now.
func (l *FS) Status() Status {
	l.lossMu.Lock() // a still view
	defer l.lossMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	entries := EntriesStrict
	if l.journal {
		entries = EntriesJournal
	}
	s := Status{Backing: l.backing, Mountpoint: l.mountpoint, Entries: entries, DirtyFiles: len(l.files),
		PendingEntries: len(l.entries), OpenHandles: l.open, FileSyncs: l.syncs, DirSyncs: l.dirSyncs,
		Losses: l.losses, LastLoss: l.lastLoss, DiskErrors: l.diskErrors()}
	for _, st := range l.files {
		for _, b := range st.saved {
			if len(b) > 0 && &b[0] != &zeroPage[0] {
				s.SavedBytes += int64(len(b))
			}
		}
		if fi, err := st.f.Stat(); err == nil {
			s.UnsyncedBytes += max(0, fi.Size()-st.synced)
		}
	}
	return s
}

// LossReport is what a loss undid.
type LossReport struct {
	At            time.Time `json:"at"`
	FilesRestored int       `json:"files_restored"`
	BytesDropped  int64     `json:"bytes_dropped"`  // cut off past the synced size
	BytesRestored int64     `json:"bytes_restored"` // overwritten pages put back
	EntriesUndone int       `json:"entries_undone"` // directory changes rolled back
	// EntriesSuperseded: pending changes whose path a later, durable change
	// took away (an entry in a directory since removed or renamed
	// durably). The durable change implies them; they stay.
	EntriesSuperseded int      `json:"entries_superseded"`
	UndoFailures      []string `json:"undo_failures"` // changes that could not be undone
	OpenHandles       int      `json:"open_handles"`  // files still open at the loss
	WaitedForCloseMs  int64    `json:"waited_for_close_ms"`
}

// Lose loses every unsynced write and directory change. It first waits up
// to waitClosed for every file to be closed: a killed process's last
// dirty mmap pages reach the filesystem when the kernel closes its files,
// and a loss must come after them. It returns when the loss is complete.
func (l *FS) Lose(waitClosed time.Duration) LossReport {
	start := time.Now()
	for time.Since(start) < waitClosed {
		l.mu.Lock()
		open := l.open
		l.mu.Unlock()
		if open == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	l.lossMu.Lock()
	rep := LossReport{At: time.Now(), WaitedForCloseMs: time.Since(start).Milliseconds(), UndoFailures: []string{}}
	l.mu.Lock()
	files, entries := l.files, l.entries
	l.files, l.entries = map[uint64]*fileState{}, nil
	rep.OpenHandles = l.open
	l.mu.Unlock()

	// Data first, while every file is still where its fd points; then the
	// names, newest first, so that each undo finds the state it expects.
	for _, st := range files {
		st.mu.Lock()
		dropped, restored, err := st.restore()
		st.mu.Unlock()
		if err != nil {
			rep.UndoFailures = append(rep.UndoFailures, err.Error())
		}
		rep.FilesRestored++
		rep.BytesDropped += dropped
		rep.BytesRestored += restored
	}
	for i := len(entries) - 1; i >= 0; i-- {
		switch err := l.undo(entries[i]); {
		case errors.Is(err, errSuperseded):
			rep.EntriesSuperseded++
		case err != nil:
			rep.UndoFailures = append(rep.UndoFailures, err.Error())
		default:
			rep.EntriesUndone++
		}
	}
	l.mu.Lock()
	l.losses++
	l.lastLoss = &rep
	l.mu.Unlock()
	l.lossMu.Unlock()
	l.forgetKernelState()
	return rep
}

// restore puts the file back to its synced size and content.
func (st *fileState) restore() (dropped, restored int64, err error) {
	defer func() {
		st.f.Close()
		st.gone = true
	}()
	if fi, serr := st.f.Stat(); serr == nil {
		dropped = max(0, fi.Size()-st.synced)
	}
	if err := st.f.Truncate(st.synced); err != nil {
		return dropped, 0, fmt.Errorf("truncate %s: %w", st.f.Name(), err)
	}
	pages := make([]int64, 0, len(st.saved))
	for p := range st.saved {
		pages = append(pages, p)
	}
	sort.Slice(pages, func(i, j int) bool { return pages[i] < pages[j] })
	for _, p := range pages {
		b := st.saved[p]
		if _, err := st.f.WriteAt(b, p*pageSize); err != nil {
			return dropped, restored, fmt.Errorf("restore %s page %d: %w", st.f.Name(), p, err)
		}
		restored += int64(len(b))
	}
	return dropped, restored, nil
}

// errSuperseded: a change could not be undone because a later change,
// made durable, removed or renamed the directory it was made in.
var errSuperseded = errors.New("superseded by a later durable change")

// undo rolls one pending change back by its recorded path. Changes are
// undone newest first, so the path is where the change left things,
// except when a later change was made durable (and so is not undone)
// and took the path away: then the change is superseded. That makes the
// model lenient there (an entry inside a durably renamed directory keeps
// its content), never harsher than a real filesystem.
func (l *FS) undo(e entry) error {
	// What is missing must not be ours: the trash copy of a removed or
	// replaced entry is always there until its change is settled.
	trashKept := e.trash == "" || exists(e.trash)
	err := l.undoPath(e)
	if err == nil || !errors.Is(err, os.ErrNotExist) || !trashKept {
		return err
	}
	if e.trash != "" {
		os.RemoveAll(e.trash)
	}
	return fmt.Errorf("undo %s of %s: %w", e.kind, e.path, errSuperseded)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func (l *FS) undoPath(e entry) error {
	var err error
	switch e.kind {
	case "create":
		err = os.RemoveAll(e.path)
	case "remove":
		err = os.Rename(e.trash, e.path)
	case "rename":
		if err = os.Rename(e.path, e.from); err == nil {
			if e.trash != "" {
				err = os.Rename(e.trash, e.path)
			} else if e.replacedDir {
				err = os.Mkdir(e.path, 0o755)
			}
		}
	case "exchange":
		err = renameExchange(e.path, e.from)
	}
	if err != nil {
		return fmt.Errorf("undo %s of %s: %w", e.kind, e.path, err)
	}
	return nil
}

// forgetKernelState drops the kernel's cached pages and names and
// go-fuse's tree below the root, so that everything is looked up afresh
// in the backing directory as the loss left it.
func (l *FS) forgetKernelState() {
	var walk func(dir *fs.Inode)
	walk = func(dir *fs.Inode) {
		for name, child := range dir.Children() {
			if child.IsDir() {
				walk(child)
			} else {
				child.NotifyContent(0, 0)
			}
			dir.RmChild(name)
			dir.NotifyEntry(name)
		}
	}
	walk(l.root.EmbeddedInode())
}

// Sync makes everything durable: every file's current content and every
// pending directory change, as a clean shutdown of the machine would.
func (l *FS) Sync() {
	l.lossMu.Lock()
	defer l.lossMu.Unlock()
	l.mu.Lock()
	files, entries := l.files, l.entries
	l.files, l.entries = map[uint64]*fileState{}, nil
	l.mu.Unlock()
	for _, st := range files {
		st.mu.Lock()
		st.f.Sync()
		st.f.Close()
		st.gone = true
		st.mu.Unlock()
	}
	for _, e := range entries {
		if e.trash != "" {
			os.RemoveAll(e.trash)
		}
	}
}

// state returns ino's unsynced state, making one if the file has none:
// then the file's content now is its durable content. reopen opens the
// backing file read-write.
func (l *FS) state(ino uint64, reopen func() (*os.File, error)) (*fileState, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st, ok := l.files[ino]; ok {
		return st, nil
	}
	f, err := reopen()
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	st := &fileState{f: f, synced: fi.Size(), saved: map[int64][]byte{}}
	l.files[ino] = st
	return st, nil
}

// change runs write on ino's backing file after remembering the original
// content of [off, off+n) below the synced size.
func (l *FS) change(ino uint64, reopen func() (*os.File, error), off, n int64, write func() syscall.Errno) syscall.Errno {
	l.lossMu.RLock()
	defer l.lossMu.RUnlock()
	for {
		st, err := l.state(ino, reopen)
		if err != nil {
			return fs.ToErrno(err)
		}
		st.mu.Lock()
		if st.gone { // synced meanwhile: start a new interval
			st.mu.Unlock()
			continue
		}
		if err := st.preserve(off, n); err != nil {
			st.mu.Unlock()
			return fs.ToErrno(err)
		}
		errno := write()
		st.mu.Unlock()
		return errno
	}
}

// preserve remembers the original pages of [off, off+n) that lie below
// the synced size and are not remembered yet.
func (st *fileState) preserve(off, n int64) error {
	if n <= 0 || off >= st.synced {
		return nil
	}
	end := min(off+n, st.synced)
	for p := off / pageSize; p*pageSize < end; p++ {
		if _, ok := st.saved[p]; ok {
			continue
		}
		buf := make([]byte, min(pageSize, st.synced-p*pageSize))
		// A short read (EOF) happens only when the file is shorter than
		// synced now; the part cut off was remembered when it was cut.
		m, err := st.f.ReadAt(buf, p*pageSize)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("remember page %d of %s: %w", p, st.f.Name(), err)
		}
		if isZero(buf[:m]) {
			buf = zeroPage[:m] // preallocated index files are mostly zeros: share one page
		}
		st.saved[p] = buf[:m]
	}
	return nil
}

var zeroPage = make([]byte, pageSize)

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// synced marks ino durable after fsync returned for it. fsync runs under
// the state's lock, so that no write lands between the fsync and the mark.
func (l *FS) fsyncFile(ino uint64, fsync func() syscall.Errno) syscall.Errno {
	l.lossMu.RLock()
	defer l.lossMu.RUnlock()
	l.mu.Lock()
	st := l.files[ino]
	l.syncs++
	l.mu.Unlock()
	if l.journal {
		defer l.dirSynced(0) // after the fsync returned: commits every pending entry
	}
	if st == nil {
		return fsync()
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if errno := fsync(); errno != 0 {
		return errno
	}
	if !st.gone {
		st.gone = true
		st.f.Close()
		l.mu.Lock()
		if l.files[ino] == st {
			delete(l.files, ino)
		}
		l.mu.Unlock()
	}
	return 0
}

// addEntry records a directory change.
func (l *FS) addEntry(e entry) {
	l.mu.Lock()
	l.entries = append(l.entries, e)
	l.mu.Unlock()
}

// dirSynced makes durable the pending changes whose directory is dir (in
// journal mode: every pending change).
func (l *FS) dirSynced(dir uint64) {
	l.mu.Lock()
	if dir != 0 {
		l.dirSyncs++
	}
	kept := l.entries[:0]
	var done []entry
	for _, e := range l.entries {
		if e.dir == dir || l.journal {
			done = append(done, e)
		} else {
			kept = append(kept, e)
		}
	}
	l.entries = kept
	l.mu.Unlock()
	for _, e := range done {
		if e.trash != "" {
			os.RemoveAll(e.trash)
		}
	}
}

// trashPath returns a new name in the trash.
func (l *FS) trashPath() string {
	l.mu.Lock()
	l.trashSeq++
	n := l.trashSeq
	l.mu.Unlock()
	return filepath.Join(l.trash, strconv.Itoa(n))
}

func (l *FS) opened(delta int) {
	l.mu.Lock()
	l.open += delta
	l.mu.Unlock()
}
