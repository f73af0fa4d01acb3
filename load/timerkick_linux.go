package load

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// startTimerKick wakes Go's netpoller every period until ctx ends (see
// timerKickPeriod). The returned channel is closed once it has stopped and
// released its timerfd. There is no kick when period <= 0, or without a
// timerfd: timers then keep their millisecond resolution.
//
// Each expiry costs one read of the timerfd, not two (see kickLoop).
func startTimerKick(ctx context.Context, period time.Duration) <-chan struct{} {
	return startTimerKickCounting(ctx, period, nil)
}

// startTimerKickCounting is startTimerKick; expiries, if not nil, counts
// the reads that took an expirations count (the kick's wakes), and may be
// read once the returned channel is closed.
func startTimerKickCounting(ctx context.Context, period time.Duration, expiries *int) <-chan struct{} {
	stopped := make(chan struct{})
	if period <= 0 {
		close(stopped)
		return stopped
	}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		close(stopped)
		return stopped
	}
	// A non-blocking descriptor given to os.NewFile is read through the
	// netpoller, in the epoll set the runtime waits on.
	f := os.NewFile(uintptr(fd), "timer-kick")
	every := unix.NsecToTimespec(int64(period))
	if err := unix.TimerfdSettime(fd, 0, &unix.ItimerSpec{Value: every, Interval: every}, nil); err != nil {
		f.Close()
		close(stopped)
		return stopped
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		close(stopped)
		return stopped
	}
	// Once ctx ends, the pending wait returns at once.
	release := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Now()) })
	go func() {
		defer close(stopped)
		defer release()
		defer f.Close()
		kickLoop(rc, expiries)
	}()
	return stopped
}

// kickLoop reads the timerfd behind rc each time the netpoller says it is
// readable, until the wait fails (the deadline set when the load's
// context ends, or the file closed), and returns that error. The read
// takes the expirations count, so that the next expiry is a new edge for
// the netpoller's edge-triggered epoll.
//
// One read system call per expiry: os.File.Read reads and, on EAGAIN,
// waits and reads again, so a loop of it reads twice per expiry (the
// count, then EAGAIN before parking): 1,250 wasted system calls a second
// per process at timerKickPeriod. All the reads happen in one RawConn
// Read call, whose callback never reports done: a new Read would clear a
// readiness the netpoller had recorded since the last read (it resets the
// descriptor's state before its first wait), and an expiry in that gap
// would be lost to the netpoller. expiries, if not nil, counts the reads
// that took a count.
func kickLoop(rc interface {
	Read(func(fd uintptr) bool) error
}, expiries *int) error {
	return rc.Read(func(fd uintptr) bool {
		var count [8]byte
		// EAGAIN: a spurious wake, or the first call, made before any
		// wait; wait again.
		if n, _ := unix.Read(int(fd), count[:]); n == len(count) && expiries != nil {
			*expiries++
		}
		return false
	})
}
