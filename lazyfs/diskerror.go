package lazyfs

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// The calls a disk error can fail, as the control protocol names them.
const (
	CallFsync = "fsync" // fsync and fdatasync of files
	CallWrite = "write" // write
	CallRead  = "read"  // read
)

// DiskCalls are the calls a disk error can fail.
var DiskCalls = []string{CallFsync, CallWrite, CallRead}

// diskErrors is the disk errors in force: per call, the share of calls
// that fail with EIO, and how many did. The share is exact and
// deterministic: at 30%, calls 4, 7 and 10 of every ten fail (the k-th
// call fails when floor(k*p/100) grows), so a run repeats.
//
// A failed call does nothing: a failed fsync leaves the file's writes
// unsynced (a later loss drops them, as a real disk would after a failed
// flush), a failed write writes nothing, a failed read reads nothing.
type diskErrors struct {
	mu     sync.Mutex
	rate   map[string]int   // percent, 1 to 100
	calls  map[string]int64 // calls seen since the error was set
	failed map[string]int64 // calls failed since the error was set
}

// DiskError is one call's error in force, as Status reports it.
type DiskError struct {
	Call    string `json:"call"`
	Percent int    `json:"percent"`
	Calls   int64  `json:"calls"`
	Failed  int64  `json:"failed"`
}

// SetDiskError makes percent% of call's calls fail with EIO from now on
// (100: every one), until ClearDiskError.
func (l *FS) SetDiskError(call string, percent int) error {
	if !slices.Contains(DiskCalls, call) {
		return fmt.Errorf("disk error on %q: use fsync, write or read", call)
	}
	if percent < 1 || percent > 100 {
		return fmt.Errorf("disk error rate %d%%: use 1 to 100", percent)
	}
	d := &l.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.rate == nil {
		d.rate, d.calls, d.failed = map[string]int{}, map[string]int64{}, map[string]int64{}
	}
	d.rate[call], d.calls[call], d.failed[call] = percent, 0, 0
	return nil
}

// ClearDiskError ends the disk errors on calls (every call when none is
// given) and returns what they did.
func (l *FS) ClearDiskError(calls ...string) []DiskError {
	d := &l.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(calls) == 0 {
		calls = DiskCalls
	}
	var out []DiskError
	for _, c := range calls {
		if p, ok := d.rate[c]; ok {
			out = append(out, DiskError{Call: c, Percent: p, Calls: d.calls[c], Failed: d.failed[c]})
			delete(d.rate, c)
		}
	}
	return out
}

// diskErrors lists the errors in force.
func (l *FS) diskErrors() []DiskError {
	d := &l.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []DiskError
	for c, p := range d.rate {
		out = append(out, DiskError{Call: c, Percent: p, Calls: d.calls[c], Failed: d.failed[c]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

// fail reports whether this call of kind call fails now.
func (l *FS) fail(call string) bool {
	d := &l.disk
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.rate[call]
	if !ok {
		return false
	}
	k := d.calls[call]
	d.calls[call]++
	if (k+1)*int64(p)/100 > k*int64(p)/100 {
		d.failed[call]++
		return true
	}
	return false
}

// Read reads, unless a disk error fails it.
func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if h.lfs.fail(CallRead) {
		return nil, syscall.EIO
	}
	return h.LoopbackFile.Read(ctx, dest, off)
}
