package lazyfs

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// node is a file or directory: go-fuse's loopback node, with every
// operation that changes data or names routed through FS's memory of what
// is unsynced.
type node struct {
	fs.LoopbackNode
	lfs *FS
}

// path is the node's path in the backing directory.
func (n *node) path() string {
	return filepath.Join(n.RootData.Path, n.Path(n.RootData.RootNode.EmbeddedInode()))
}

func inoOf(path string) (uint64, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

func reopenPath(path string) func() (*os.File, error) {
	return func() (*os.File, error) { return os.OpenFile(path, os.O_RDWR, 0) }
}

// truncateTo remembers what cutting path's file to size removes.
func (n *node) truncateTo(path string, size int64, write func() syscall.Errno) syscall.Errno {
	ino, err := inoOf(path)
	if err != nil {
		return fs.ToErrno(err)
	}
	return n.lfs.change(ino, reopenPath(path), size, 1<<62, write)
}

var (
	_ fs.NodeOpener          = (*node)(nil)
	_ fs.NodeCreater         = (*node)(nil)
	_ fs.NodeMkdirer         = (*node)(nil)
	_ fs.NodeMknoder         = (*node)(nil)
	_ fs.NodeSymlinker       = (*node)(nil)
	_ fs.NodeLinker          = (*node)(nil)
	_ fs.NodeUnlinker        = (*node)(nil)
	_ fs.NodeRmdirer         = (*node)(nil)
	_ fs.NodeRenamer         = (*node)(nil)
	_ fs.NodeSetattrer       = (*node)(nil)
	_ fs.NodeOpendirHandler  = (*node)(nil)
	_ fs.NodeCopyFileRanger  = (*node)(nil)
	_ fs.NodeTmpfiler        = (*node)(nil)
	_ fs.FilePassthroughFder = (*handle)(nil)
	_ fs.FileFsyncdirer      = (*dirHandle)(nil)
)

// Open opens the backing file. O_TRUNC is remembered like any truncate.
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	var fh fs.FileHandle
	var fuseFlags uint32
	open := func() syscall.Errno {
		var errno syscall.Errno
		fh, fuseFlags, errno = n.LoopbackNode.Open(ctx, flags)
		return errno
	}
	var errno syscall.Errno
	if flags&syscall.O_TRUNC != 0 {
		errno = n.truncateTo(n.path(), 0, open)
	} else {
		errno = open()
	}
	if errno != 0 {
		return nil, 0, errno
	}
	h, errno := n.lfs.wrap(fh)
	return h, fuseFlags, errno
}

// Create creates a file; the new entry is pending until its directory is
// fsynced.
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	dir := n.path()
	p := filepath.Join(dir, name)
	if _, err := inoOf(p); err == nil && flags&syscall.O_TRUNC != 0 {
		if errno := n.truncateTo(p, 0, func() syscall.Errno { return 0 }); errno != 0 {
			return nil, nil, 0, errno
		}
	}
	n.lfs.lossMu.RLock()
	defer n.lfs.lossMu.RUnlock()
	_, statErr := inoOf(p)
	existed := statErr == nil
	ch, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if !existed {
		n.lfs.created(dir, p)
	}
	h, errno := n.lfs.wrap(fh)
	return ch, h, fuseFlags, errno
}

// created records a new entry p in dir.
func (l *FS) created(dir, p string) {
	if ino, err := inoOf(dir); err == nil {
		l.addEntry(entry{kind: "create", dir: ino, path: p})
	}
}

// newEntry runs make, which adds name to this directory through the
// loopback node, and records the new entry as pending until the
// directory is fsynced.
func (n *node) newEntry(name string, make func() (*fs.Inode, syscall.Errno)) (*fs.Inode, syscall.Errno) {
	n.lfs.lossMu.RLock()
	defer n.lfs.lossMu.RUnlock()
	ch, errno := make()
	if errno == 0 {
		n.lfs.created(n.path(), filepath.Join(n.path(), name))
	}
	return ch, errno
}

// Mkdir makes a directory; pending until its parent is fsynced.
func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.newEntry(name, func() (*fs.Inode, syscall.Errno) { return n.LoopbackNode.Mkdir(ctx, name, mode, out) })
}

// Mknod makes a special file; pending until its parent is fsynced.
func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.newEntry(name, func() (*fs.Inode, syscall.Errno) { return n.LoopbackNode.Mknod(ctx, name, mode, rdev, out) })
}

// Symlink makes a symlink; pending until its parent is fsynced.
func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.newEntry(name, func() (*fs.Inode, syscall.Errno) { return n.LoopbackNode.Symlink(ctx, target, name, out) })
}

// Link makes a hard link; the new name is pending until its parent is
// fsynced.
func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.newEntry(name, func() (*fs.Inode, syscall.Errno) { return n.LoopbackNode.Link(ctx, target, name, out) })
}

// Unlink moves the entry to the trash until its directory is fsynced.
func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.remove(name, false)
}

// Rmdir moves the empty directory to the trash until its parent is
// fsynced.
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return n.remove(name, true)
}

func (n *node) remove(name string, isDir bool) syscall.Errno {
	n.lfs.lossMu.RLock()
	defer n.lfs.lossMu.RUnlock()
	dir := n.path()
	p := filepath.Join(dir, name)
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return fs.ToErrno(err)
	}
	if gotDir := st.Mode&syscall.S_IFMT == syscall.S_IFDIR; gotDir != isDir {
		if isDir {
			return syscall.ENOTDIR
		}
		return syscall.EISDIR
	}
	if isDir {
		d, err := os.Open(p)
		if err != nil {
			return fs.ToErrno(err)
		}
		names, err := d.Readdirnames(1)
		d.Close()
		if len(names) > 0 {
			return syscall.ENOTEMPTY
		}
		if err != nil && err != io.EOF {
			return fs.ToErrno(err)
		}
	}
	dirIno, err := inoOf(dir)
	if err != nil {
		return fs.ToErrno(err)
	}
	trash := n.lfs.trashPath()
	if err := os.Rename(p, trash); err != nil {
		return fs.ToErrno(err)
	}
	n.lfs.addEntry(entry{kind: "remove", dir: dirIno, path: p, trash: trash})
	return 0
}

// Rename renames; the change is pending until the destination directory
// is fsynced. A replaced file is kept (hard-linked in the trash) until
// then.
func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	if flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE) != 0 {
		return syscall.EINVAL // RENAME_WHITEOUT is for overlay filesystems
	}
	n.lfs.lossMu.RLock()
	defer n.lfs.lossMu.RUnlock()
	from := filepath.Join(n.path(), name)
	to := filepath.Join(np.path(), newName)
	dirIno, err := inoOf(np.path())
	if err != nil {
		return fs.ToErrno(err)
	}
	e := entry{kind: "rename", dir: dirIno, path: to, from: from}
	if flags&unix.RENAME_EXCHANGE != 0 {
		e.kind = "exchange"
	} else if flags&unix.RENAME_NOREPLACE == 0 {
		var st syscall.Stat_t
		if err := syscall.Lstat(to, &st); err == nil {
			if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
				e.replacedDir = true
			} else {
				e.trash = n.lfs.trashPath()
				if err := os.Link(to, e.trash); err != nil {
					return fs.ToErrno(err)
				}
			}
		}
	}
	if errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags); errno != 0 {
		if e.trash != "" {
			os.Remove(e.trash)
		}
		return errno
	}
	n.lfs.addEntry(e)
	return 0
}

func renameExchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}

// Setattr remembers what a truncate removes, then applies the change.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if h, ok := f.(*handle); ok {
		f = h.LoopbackFile // the loopback file applies it to its fd
	}
	apply := func() syscall.Errno { return n.LoopbackNode.Setattr(ctx, f, in, out) }
	if size, ok := in.GetSize(); ok {
		return n.truncateTo(n.path(), int64(size), apply)
	}
	return apply()
}

// CopyFileRange is refused so that the kernel copies through Read and
// Write, which the filesystem sees.
func (n *node) CopyFileRange(ctx context.Context, fhIn fs.FileHandle, offIn uint64, out *fs.Inode, fhOut fs.FileHandle, offOut uint64, length uint64, flags uint64) (uint32, syscall.Errno) {
	return 0, syscall.EOPNOTSUPP
}

// Tmpfile (O_TMPFILE) is not supported: its linkat would bypass the
// record of created entries.
func (n *node) Tmpfile(ctx context.Context, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EOPNOTSUPP
}

// OpendirHandle wraps the loopback directory handle to see its fsyncs.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	ds, ok := fh.(loopbackDir)
	if !ok {
		return nil, 0, syscall.EIO
	}
	return &dirHandle{loopbackDir: ds, n: n}, fuseFlags, 0
}

// loopbackDir is what go-fuse's loopback directory handle implements.
type loopbackDir interface {
	fs.DirStream
	fs.FileReleasedirer
	fs.FileSeekdirer
	fs.FileFsyncdirer
	fs.FileReaddirenter
}

type dirHandle struct {
	loopbackDir
	n *node
}

// Fsyncdir fsyncs the backing directory and makes its pending entries
// durable.
func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	d.n.lfs.lossMu.RLock()
	defer d.n.lfs.lossMu.RUnlock()
	if errno := d.loopbackDir.Fsyncdir(ctx, flags); errno != 0 {
		return errno
	}
	ino, err := inoOf(d.n.path())
	if err != nil {
		return fs.ToErrno(err)
	}
	d.n.lfs.dirSynced(ino)
	return 0
}

// handle is an open file: the loopback file, with writes, truncates and
// fsyncs seen by FS.
type handle struct {
	*fs.LoopbackFile
	lfs *FS
	ino uint64
	fd  int
}

// wrap makes fh, a loopback file, one of ours.
func (l *FS) wrap(fh fs.FileHandle) (*handle, syscall.Errno) {
	lf, ok := fh.(*fs.LoopbackFile)
	if !ok {
		return nil, syscall.EIO
	}
	fd, ok := lf.PassthroughFd()
	if !ok {
		lf.Release(context.Background())
		return nil, syscall.EBADF
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		lf.Release(context.Background())
		return nil, fs.ToErrno(err)
	}
	l.opened(1)
	return &handle{LoopbackFile: lf, lfs: l, ino: st.Ino, fd: fd}, 0
}

// PassthroughFd refuses kernel passthrough: with it, writes would go to
// the backing file without passing through here.
func (h *handle) PassthroughFd() (int, bool) { return -1, false }

func (h *handle) reopen() (*os.File, error) {
	return os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", h.fd), os.O_RDWR, 0)
}

// Write remembers the pages it overwrites, then writes.
func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if h.lfs.fail(CallWrite) {
		return 0, syscall.EIO
	}
	var n uint32
	errno := h.lfs.change(h.ino, h.reopen, off, int64(len(data)), func() syscall.Errno {
		var errno syscall.Errno
		n, errno = h.LoopbackFile.Write(ctx, data, off)
		return errno
	})
	return n, errno
}

// Allocate remembers the range it may change, then allocates.
func (h *handle) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	return h.lfs.change(h.ino, h.reopen, int64(off), int64(size), func() syscall.Errno {
		return h.LoopbackFile.Allocate(ctx, off, size, mode)
	})
}

// Fsync fsyncs the backing file and makes the file's content durable.
func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if h.lfs.fail(CallFsync) {
		return syscall.EIO // nothing synced: the writes stay losable
	}
	return h.lfs.fsyncFile(h.ino, func() syscall.Errno { return h.LoopbackFile.Fsync(ctx, flags) })
}

// Release closes the backing file.
func (h *handle) Release(ctx context.Context) syscall.Errno {
	h.lfs.opened(-1)
	return h.LoopbackFile.Release(ctx)
}
