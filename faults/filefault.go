package faults

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ackcheck/ackcheck/remote"
)

// The file faults (bitflip, truncate, stale, and snapshot, which stale
// needs) change a stopped node's data files the way a failing disk or a
// buggy controller would, as Jepsen's NATS nemesis does: a couple of
// flipped bits, a file cut short, an old chunk put back.
//
// Invariants:
//   - They act only on a node whose broker does not run at that moment
//     (its PID is read first; a running node's step fails with why):
//     changing files under a live process tests the page cache, not the
//     broker's recovery.
//   - Every file is copied whole, beside the data dir, and the copy's
//     checksum checked, and the undo journaled (fsynced), before the file
//     changes: a heal after a crash of ackcheck puts back the original
//     byte-identical (UndoFile).
//   - What changed is in the record (FileChange): the file, the offsets
//     and bits, the cut, the chunk put back, and the file's sha256 before
//     and after, the proof. The same seed, step and files give the same
//     changes (rngFor).
//   - Every command goes through the node's remote.Runner (sh, GNU
//     coreutils: dd, sha256sum, truncate, cp, mv, sync, find), so a fault
//     works the same on a local cluster and over SSH.

// FileNodes is implemented by Nodes whose data dirs ackcheck can reach
// with shell commands: a local cluster whose launcher names each node's
// data dir, and a cluster file's nodes with data_dir.
type FileNodes interface {
	// DataDirOn is node id's data dir and the runner that runs commands
	// on the machine it lives on.
	DataDirOn(id int32) (dir string, r remote.Runner, err error)
}

// The limits of one file fault.
const (
	// maxFaultFiles is how many files one step changes at most (chosen by
	// the seed among those that match).
	maxFaultFiles = 32
	// bitsPerFile is how many bits a bitflip flips in each file: Jepsen's
	// "about two".
	bitsPerFile = 2
	// staleChunk is the size of the chunk a snapshot saves of each file.
	staleChunk = 64 << 10
)

// FileChange is what a file fault did to one file: the proof that it
// changed what it says, and nothing else.
type FileChange struct {
	File string `json:"file"`
	// Size and Size after the change, in bytes.
	Size      int64 `json:"size"`
	SizeAfter int64 `json:"size_after"`
	// SHA256 of the file before and after.
	SHA256Before string `json:"sha256_before"`
	SHA256After  string `json:"sha256_after"`
	// Bits, for a bitflip: every bit flipped.
	Bits []FlippedBit `json:"bits,omitempty"`
	// Cut, for a truncate: how many bytes were cut from its end.
	Cut int64 `json:"cut,omitempty"`
	// Chunk, for a stale chunk put back (or saved, for a snapshot).
	Chunk *Chunk `json:"chunk,omitempty"`
	// Backup is where the original waits for the heal (none for a
	// snapshot, which changes nothing).
	Backup string `json:"backup,omitempty"`
}

// FlippedBit is one bit a bitflip inverted: bit Bit (0 the lowest) of
// the byte at Offset, which went from Before to After.
type FlippedBit struct {
	Offset int64 `json:"offset"`
	Bit    uint8 `json:"bit"`
	Before uint8 `json:"before"`
	After  uint8 `json:"after"`
}

// Chunk is a piece of a file a snapshot saved: Len bytes at Offset, kept
// in Saved, taken at SavedAt.
type Chunk struct {
	Offset  int64     `json:"offset"`
	Len     int64     `json:"len"`
	Saved   string    `json:"saved"`
	SavedAt time.Time `json:"saved_at"`
}

// fileKind is what one file fault does.
type fileKind uint8

const (
	flipBits fileKind = iota + 1
	cutFile
	putStale
	takeSnapshot
)

// fileFault is bitflip, truncate, stale or snapshot on one node's files.
// Its target picks the node as onNode's does.
type fileFault struct{ kind fileKind }

func (f fileFault) available(ctx context.Context, env Env, st Step) error {
	if err := nodeAvailable(env, st); err != nil {
		return err
	}
	if st.Glob == "" && len(env.DataFiles) == 0 {
		return fmt.Errorf("the broker profile names no data files: give a glob (%s node:<id> '*.log')", st.Action)
	}
	return f.availableOn(env, candidateNodes(env, st))
}

func (f fileFault) pick(ctx context.Context, t *targets, env Env, st Step, rec *Record) (picked, error) {
	return onNode{}.pick(ctx, t, env, st, rec)
}

// apply changes the node's files; the record holds every change.
func (f fileFault) apply(ctx context.Context, w *world, st Step, on picked, rec *Record) (string, error) {
	node := on.nodes[0]
	err := f.act(ctx, w, node, st, rec)
	changed := 0
	for _, fc := range rec.Files {
		if fc.SHA256Before != fc.SHA256After {
			changed++
		}
	}
	if f.kind == takeSnapshot {
		return fmt.Sprintf("node %d, a chunk of %d files saved (seed %d)", node, len(rec.Files), rec.Seed), err
	}
	return fmt.Sprintf("node %d, %d of %d files changed (seed %d)", node, changed, len(rec.Files), rec.Seed), err
}

// availableOn: the nodes' data dirs can be reached, and there are globs
// to pick files with (the step's or the broker profile's).
func (f fileFault) availableOn(env Env, ids []int32) error {
	fn, ok := env.Nodes.(FileNodes)
	if !ok {
		return fmt.Errorf("ackcheck cannot reach these nodes' data files (%s): use a local cluster whose launcher names its data dirs, or give each node a data_dir in the cluster file", env.Nodes.Where())
	}
	for _, id := range ids {
		if _, _, err := fn.DataDirOn(id); err != nil {
			return err
		}
	}
	return nil
}

// act changes the files, once it knows the broker does not run.
func (f fileFault) act(ctx context.Context, w *world, node int32, st Step, rec *Record) error {
	fn, ok := w.Nodes.(FileNodes)
	if !ok {
		return fmt.Errorf("ackcheck cannot reach node %d's data files (%s)", node, w.Nodes.Where())
	}
	dir, r, err := fn.DataDirOn(node)
	if err != nil {
		return err
	}
	if f.kind != takeSnapshot {
		pid, err := w.Nodes.PID(ctx, node)
		if err != nil {
			return fmt.Errorf("cannot tell whether node %d runs: %w", node, err)
		}
		if pid != 0 {
			return fmt.Errorf("node %d runs as PID %d: %s changes only the files of a node stopped or killed at that moment (schedule kill node:%d before it and restart after)", node, pid, st.Action, node)
		}
	}
	globs := w.globs(st)
	if len(globs) == 0 {
		return fmt.Errorf("no files to pick: give a glob (%s node:%d '*.blk'), the broker profile names no data files", st.Action, node)
	}
	ops := fileOps{r: r}
	files, err := ops.list(ctx, dir, globs)
	if err != nil {
		return err
	}
	rng := rngFor(w.seed, st, node)
	rec.Seed = w.seed
	if f.kind == putStale {
		return w.files.putBack(ctx, w, ops, node, dir, files, rec)
	}
	files = pickFiles(rng, files)
	if len(files) == 0 {
		return fmt.Errorf("no file in node %d's data dir %s matches %s", node, dir, strings.Join(globs, " "))
	}
	if f.kind == takeSnapshot {
		return w.files.snapshot(ctx, ops, node, dir, files, rng, rec)
	}
	for _, fi := range files {
		if fi.size == 0 {
			continue // nothing to flip or cut
		}
		ch, err := changeFile(ctx, w, st.Action, ops, node, dir, fi, func(ch *FileChange) error {
			if f.kind == flipBits {
				return flip(ctx, ops, fi, rng, ch)
			}
			return cut(ctx, ops, fi, rng, ch)
		})
		if ch != nil {
			rec.Files = append(rec.Files, *ch)
		}
		if err != nil {
			return err
		}
	}
	if len(rec.Files) == 0 {
		return fmt.Errorf("every file in node %d's data dir matching %s is empty: nothing to change", node, strings.Join(globs, " "))
	}
	return nil
}

// globs are the step's glob, or the broker profile's data files.
func (w *world) globs(st Step) []string {
	if st.Glob != "" {
		return []string{st.Glob}
	}
	return w.DataFiles
}

// rngFor is the random source of one step on one node: the run's seed
// and the step as written (with its node), so that a run repeated with
// the same seed and schedule changes the same offsets and bits.
func rngFor(seed int64, st Step, node int32) *rand.Rand {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%d", st, node)
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// pickFiles chooses at most maxFaultFiles of files (sorted by path), by rng.
func pickFiles(rng *rand.Rand, files []fileInfo) []fileInfo {
	if len(files) <= maxFaultFiles {
		return files
	}
	files = slices.Clone(files)
	rng.Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
	files = files[:maxFaultFiles]
	slices.SortFunc(files, func(a, b fileInfo) int { return strings.Compare(a.path, b.path) })
	return files
}

// changeFile copies fi whole beside the data dir, checks the copy,
// journals its restore, and only then lets change alter the file; it
// returns what changed, with the checksums.
func changeFile(ctx context.Context, w *world, a Action, ops fileOps, node int32, dir string, fi fileInfo, change func(*FileChange) error) (*FileChange, error) {
	before, err := ops.sum(ctx, fi.path)
	if err != nil {
		return nil, err
	}
	backup := path.Join(backupDir(dir), fmt.Sprintf("%d-%s", time.Now().UnixNano(), path.Base(fi.path)))
	// The undo is journaled before the copy exists, so that a kill of
	// ackcheck while it copies leaves no copy the heal does not know of;
	// the undo of a file that still holds the original only removes the
	// copy (undo), and the file changes only once the copy checked whole.
	if _, err := w.journal.Add(Undo{Kind: UndoFile, Node: node, File: fi.path, Backup: backup, Sum: before,
		Why: fmt.Sprintf("%s of node %d's data files", a, node)}); err != nil {
		return nil, err
	}
	if err := ops.copy(ctx, fi.path, backup); err != nil {
		return nil, err
	}
	if got, err := ops.sum(ctx, backup); err != nil || got != before {
		return nil, fmt.Errorf("the copy %s of %s does not match it (%s, %v): nothing changed", backup, fi.path, got, err)
	}
	ch := &FileChange{File: fi.path, Size: fi.size, SHA256Before: before, Backup: backup}
	if err := change(ch); err != nil {
		return ch, fmt.Errorf("%s: %w", fi.path, err)
	}
	if ch.SHA256After, err = ops.sum(ctx, fi.path); err != nil {
		return ch, err
	}
	if ch.SizeAfter, err = ops.size(ctx, fi.path); err != nil {
		return ch, err
	}
	return ch, nil
}

// backupDir is where the originals of dir's changed files wait for the
// heal: beside the data dir, never inside it, so that the broker never
// reads them.
func backupDir(dir string) string { return strings.TrimSuffix(dir, "/") + ".ackcheck-files" }

// flip inverts bitsPerFile distinct bits of fi, each at a uniform place.
func flip(ctx context.Context, ops fileOps, fi fileInfo, rng *rand.Rand, ch *FileChange) error {
	seen := map[int64]bool{}
	for len(ch.Bits) < bitsPerFile && len(seen) < int(min(fi.size*8, bitsPerFile)) {
		pos := rng.Int64N(fi.size * 8)
		if seen[pos] {
			continue
		}
		seen[pos] = true
		off, bit := pos/8, uint8(pos%8)
		b, err := ops.readByte(ctx, fi.path, off)
		if err != nil {
			return err
		}
		nb := b ^ (1 << bit)
		if err := ops.writeByte(ctx, fi.path, off, nb); err != nil {
			return err
		}
		ch.Bits = append(ch.Bits, FlippedBit{Offset: off, Bit: bit, Before: b, After: nb})
	}
	slices.SortFunc(ch.Bits, func(a, b FlippedBit) int { return int(a.Offset - b.Offset) })
	return nil
}

// cut truncates fi by a Zipf-distributed number of bytes, 1 to its size:
// mostly a few bytes, now and then much of the file.
func cut(ctx context.Context, ops fileOps, fi fileInfo, rng *rand.Rand, ch *FileChange) error {
	n := int64(1)
	if fi.size > 1 {
		n += int64(rand.NewZipf(rng, 1.5, 1, uint64(fi.size-1)).Uint64())
	}
	if err := ops.truncate(ctx, fi.path, fi.size-n); err != nil {
		return err
	}
	ch.Cut = n
	return nil
}

// fileSnaps holds the chunks each node's snapshot saved, for stale.
type fileSnaps struct {
	mu sync.Mutex
	m  map[int32][]FileChange
}

// snapshot saves a chunk of each file (staleChunk bytes at a place the
// seed picks, or the whole of a smaller file) beside the data dir. It
// changes no data file.
func (s *fileSnaps) snapshot(ctx context.Context, ops fileOps, node int32, dir string, files []fileInfo, rng *rand.Rand, rec *Record) error {
	var saved []FileChange
	now := time.Now()
	for i, fi := range files {
		if fi.size == 0 {
			continue
		}
		n := min(fi.size, staleChunk)
		off := int64(0)
		if fi.size > n {
			off = rng.Int64N(fi.size-n+1) &^ 4095
		}
		to := path.Join(backupDir(dir), fmt.Sprintf("snap-%d-%d-%s", now.UnixNano(), i, path.Base(fi.path)))
		if err := ops.saveChunk(ctx, fi.path, off, n, to); err != nil {
			return err
		}
		sum, err := ops.sum(ctx, fi.path)
		if err != nil {
			return err
		}
		saved = append(saved, FileChange{File: fi.path, Size: fi.size, SizeAfter: fi.size, SHA256Before: sum, SHA256After: sum,
			Chunk: &Chunk{Offset: off, Len: n, Saved: to, SavedAt: now}})
	}
	if len(saved) == 0 {
		return fmt.Errorf("every file picked in node %d's data dir is empty: nothing to save", node)
	}
	s.mu.Lock()
	if s.m == nil {
		s.m = map[int32][]FileChange{}
	}
	s.m[node] = saved
	s.mu.Unlock()
	rec.Files = saved
	return nil
}

// putBack writes the node's last snapshot's chunks back over the files
// that still exist, match the step's globs, and reach the chunk's
// offset, each after its copy and journal entry (changeFile).
func (s *fileSnaps) putBack(ctx context.Context, w *world, ops fileOps, node int32, dir string, files []fileInfo, rec *Record) error {
	s.mu.Lock()
	saved := s.m[node]
	s.mu.Unlock()
	if len(saved) == 0 {
		return fmt.Errorf("node %d has no snapshot to put back: schedule `snapshot node:%d` earlier in the run", node, node)
	}
	byPath := map[string]fileInfo{}
	for _, fi := range files {
		byPath[fi.path] = fi
	}
	for _, sv := range saved {
		fi, ok := byPath[sv.File]
		if !ok || fi.size < sv.Chunk.Offset {
			continue // gone since, or now shorter than where the chunk began
		}
		c := *sv.Chunk
		ch, err := changeFile(ctx, w, Stale, ops, node, dir, fi, func(*FileChange) error {
			return ops.writeChunk(ctx, c.Saved, fi.path, c.Offset)
		})
		if ch != nil {
			ch.Chunk = &c
			rec.Files = append(rec.Files, *ch)
		}
		if err != nil {
			return err
		}
	}
	if len(rec.Files) == 0 {
		return fmt.Errorf("none of the %d files node %d's snapshot saved a chunk of still exists with that chunk's offset", len(saved), node)
	}
	return nil
}

// undo puts a changed file back from its copy, byte-identical: with the
// node stopped (a running node is stopped first, its start journaled for
// the heal's next pass), the copy is copied beside the file, fsynced, and renamed over
// it, its checksum checked, and the copy removed. A file that already
// holds the original's checksum (never changed: ackcheck died while it
// copied; or put back before) is left as it is, and only its copy goes.
func (fileFault) undo(ctx context.Context, w *world, u Undo) error {
	if err := w.needNodes(); err != nil {
		return err
	}
	fn, ok := w.Nodes.(FileNodes)
	if !ok {
		return fmt.Errorf("cannot reach node %d's files to put %s back from %s", u.Node, u.File, u.Backup)
	}
	_, r, err := fn.DataDirOn(u.Node)
	if err != nil {
		return err
	}
	ops := fileOps{r: r}
	if sum, err := ops.sum(ctx, u.File); err == nil && sum == u.Sum {
		// Never changed (ackcheck died while it copied) or put back
		// already: only the copy, whole or partial, if any, goes.
		return ops.remove(ctx, u.Backup, u.File)
	}
	if have, err := ops.exists(ctx, u.Backup); err != nil {
		return err
	} else if !have {
		if sum, _ := ops.sum(ctx, u.File); sum == u.Sum {
			return nil
		}
		return fmt.Errorf("the copy %s of %s is gone and the file does not hold the original (sha256 %s): restore it by hand", u.Backup, u.File, u.Sum)
	}
	pid, err := w.Nodes.PID(ctx, u.Node)
	if err != nil {
		return err
	}
	if pid != 0 {
		// The node's start is journaled before its stop, as a stop
		// fault's is: the heal's next pass starts it, once every file of
		// it is back (a start per file would race the next restore).
		if _, ok := w.journal.Find(UndoStart, u.Node); !ok {
			if _, err := w.journal.Add(Undo{Kind: UndoStart, Node: u.Node, Why: fmt.Sprintf("stop of node %d to put its data files back", u.Node)}); err != nil {
				return err
			}
		}
		w.states.set(nodeDown, u.Node)
		if err := w.Nodes.Stop(ctx, u.Node, 30*time.Second); err != nil {
			return fmt.Errorf("stop node %d to put its file back: %w", u.Node, err)
		}
	}
	return restoreFile(ctx, ops, u)
}

// restoreFile puts u.File back from u.Backup, checks it, removes the copy.
func restoreFile(ctx context.Context, ops fileOps, u Undo) error {
	if err := ops.restore(ctx, u.Backup, u.File); err != nil {
		return err
	}
	if sum, err := ops.sum(ctx, u.File); err != nil || sum != u.Sum {
		return fmt.Errorf("%s after the restore has sha256 %s, not the original's %s (%v); the copy stays in %s", u.File, sum, u.Sum, err, u.Backup)
	}
	return ops.remove(ctx, u.Backup, u.File)
}

// fileInfo is a data file as find lists it.
type fileInfo struct {
	path string
	size int64
}

// fileOps are the file commands, run through a node's runner.
type fileOps struct{ r remote.Runner }

// list finds the regular files under dir that match one of globs
// (globMatch), sorted by path.
func (o fileOps) list(ctx context.Context, dir string, globs []string) ([]fileInfo, error) {
	var names []string
	for _, g := range globs {
		names = append(names, "-name "+remote.Quote(path.Base(g)))
	}
	out, err := o.r.Run(ctx, fmt.Sprintf(`find %s -type f \( %s \) -printf '%%s\t%%P\n'`, remote.Quote(dir), strings.Join(names, " -o ")))
	if err != nil {
		return nil, fmt.Errorf("list the data files in %s: %w", dir, err)
	}
	var files []fileInfo
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		size, rel, ok := strings.Cut(line, "\t")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(size, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("list the data files in %s: unexpected line %q", dir, line)
		}
		if slices.ContainsFunc(globs, func(g string) bool { return globMatch(g, rel) }) {
			files = append(files, fileInfo{path: path.Join(dir, rel), size: n})
		}
	}
	slices.SortFunc(files, func(a, b fileInfo) int { return strings.Compare(a.path, b.path) })
	return files, nil
}

// globMatch says whether the file at rel (relative to the data dir)
// matches glob: a glob without a slash matches the file's name at any
// depth (*.blk), one with a slash its whole relative path, each part by
// path.Match (orders-0/*.log: partition 0's segments, nothing deeper).
func globMatch(glob, rel string) bool {
	if !strings.Contains(glob, "/") {
		ok, _ := path.Match(glob, path.Base(rel))
		return ok
	}
	ok, _ := path.Match(glob, rel)
	return ok
}

func (o fileOps) sum(ctx context.Context, p string) (string, error) {
	out, err := o.r.Run(ctx, "sha256sum -- "+remote.Quote(p))
	if err != nil {
		return "", fmt.Errorf("checksum %s: %w", p, err)
	}
	f := strings.Fields(out)
	if len(f) == 0 {
		return "", fmt.Errorf("checksum %s: no output", p)
	}
	return f[0], nil
}

func (o fileOps) size(ctx context.Context, p string) (int64, error) {
	out, err := o.r.Run(ctx, "stat -c %s -- "+remote.Quote(p))
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", p, err)
	}
	return strconv.ParseInt(strings.TrimSpace(out), 10, 64)
}

func (o fileOps) exists(ctx context.Context, p string) (bool, error) {
	out, err := o.r.Run(ctx, fmt.Sprintf("if [ -f %s ]; then echo yes; else echo no; fi", remote.Quote(p)))
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(out) == "yes", nil
}

func (o fileOps) readByte(ctx context.Context, p string, off int64) (uint8, error) {
	out, err := o.r.Run(ctx, fmt.Sprintf("dd if=%s bs=1 count=1 skip=%d iflag=skip_bytes status=none | od -An -tu1", remote.Quote(p), off))
	if err != nil {
		return 0, fmt.Errorf("read byte %d of %s: %w", off, p, err)
	}
	b, err := strconv.ParseUint(strings.TrimSpace(out), 10, 8)
	if err != nil {
		return 0, fmt.Errorf("read byte %d of %s: unexpected %q", off, p, out)
	}
	return uint8(b), nil
}

// writeByte writes b at off in place and fsyncs the file.
func (o fileOps) writeByte(ctx context.Context, p string, off int64, b uint8) error {
	_, err := o.r.Run(ctx, fmt.Sprintf(`printf '\%03o' | dd of=%s bs=1 count=1 seek=%d oflag=seek_bytes conv=notrunc,fsync status=none`, b, remote.Quote(p), off))
	if err != nil {
		return fmt.Errorf("write byte %d of %s: %w", off, p, err)
	}
	return nil
}

func (o fileOps) truncate(ctx context.Context, p string, size int64) error {
	if _, err := o.r.Run(ctx, fmt.Sprintf("truncate -s %d -- %s && sync -- %s", size, remote.Quote(p), remote.Quote(p))); err != nil {
		return fmt.Errorf("truncate %s to %d bytes: %w", p, size, err)
	}
	return nil
}

// copy copies src to dst whole (creating dst's directory) and fsyncs it.
func (o fileOps) copy(ctx context.Context, src, dst string) error {
	cmd := fmt.Sprintf("mkdir -p %s && cp -p -- %s %s && sync -- %s", remote.Quote(path.Dir(dst)), remote.Quote(src), remote.Quote(dst), remote.Quote(dst))
	if _, err := o.r.Run(ctx, cmd); err != nil {
		return fmt.Errorf("copy %s to %s before changing it: %w", src, dst, err)
	}
	return nil
}

// restore copies backup beside p, fsyncs it and renames it over p, then
// fsyncs p's directory: p is the old file or the original, whole.
func (o fileOps) restore(ctx context.Context, backup, p string) error {
	tmp := p + ".ackcheck-heal"
	cmd := fmt.Sprintf("cp -p -- %s %s && sync -- %s && mv -f -- %s %s && sync -- %s",
		remote.Quote(backup), remote.Quote(tmp), remote.Quote(tmp), remote.Quote(tmp), remote.Quote(p), remote.Quote(path.Dir(p)))
	if _, err := o.r.Run(ctx, cmd); err != nil {
		return fmt.Errorf("put %s back from %s: %w", p, backup, err)
	}
	return nil
}

func (o fileOps) saveChunk(ctx context.Context, p string, off, n int64, to string) error {
	cmd := fmt.Sprintf("mkdir -p %s && dd if=%s of=%s bs=64K skip=%d count=%d iflag=skip_bytes,count_bytes status=none && sync -- %s",
		remote.Quote(path.Dir(to)), remote.Quote(p), remote.Quote(to), off, n, remote.Quote(to))
	if _, err := o.r.Run(ctx, cmd); err != nil {
		return fmt.Errorf("save %d bytes at %d of %s: %w", n, off, p, err)
	}
	return nil
}

func (o fileOps) writeChunk(ctx context.Context, from, p string, off int64) error {
	cmd := fmt.Sprintf("dd if=%s of=%s bs=64K seek=%d oflag=seek_bytes conv=notrunc,fsync status=none", remote.Quote(from), remote.Quote(p), off)
	if _, err := o.r.Run(ctx, cmd); err != nil {
		return fmt.Errorf("put the chunk %s back at %d of %s: %w", from, off, p, err)
	}
	return nil
}

// remove removes backup, the copy of p, once p holds the original.
func (o fileOps) remove(ctx context.Context, backup, p string) error {
	if _, err := o.r.Run(ctx, "rm -f -- "+remote.Quote(backup)); err != nil {
		return fmt.Errorf("remove the copy %s once %s holds the original: %w", backup, p, err)
	}
	return nil
}
