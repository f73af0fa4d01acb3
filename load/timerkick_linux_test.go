package load

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readSyscalls is this process's count of read system calls so far
// (/proc/self/io's syscr), counted by the kernel.
func readSyscalls(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skipf("no /proc/self/io to count system calls: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "syscr: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatalf("/proc/self/io: %q: %v", line, err)
			}
			return n
		}
	}
	t.Skip("/proc/self/io has no syscr")
	return 0
}

// TestTimerKickOneReadPerExpiry: the kick makes one read system call per
// wake, counted by the kernel (/proc/self/io), not the two a loop of
// os.File.Read makes (the count, then EAGAIN before it parks). The kick
// is a per-process cost by the second, paid by every shard process
// (docs/scale-out.md, Figures). Nothing here is timed: the kernel's
// count of reads is compared with the kick's count of wakes, however
// many the machine's load let happen.
func TestTimerKickOneReadPerExpiry(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wakes int
	r0 := readSyscalls(t)
	stopped := startTimerKickCounting(ctx, time.Millisecond, &wakes)
	time.Sleep(300 * time.Millisecond)
	cancel()
	<-stopped
	reads := readSyscalls(t) - r0
	if wakes < 20 {
		t.Fatalf("the kick woke %d times in 300 ms at a 1 ms period: it is not running", wakes)
	}
	// The test's own reads (two of /proc/self/io, the runtime's
	// occasional eventfd) are the slack.
	if limit := int64(wakes) + int64(wakes)/10 + 10; reads > limit {
		t.Errorf("%d read system calls for %d wakes of the kick: more than one per wake (limit %d)", reads, wakes, limit)
	}
	t.Logf("%d wakes, %d read system calls", wakes, reads)
}
