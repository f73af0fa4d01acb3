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
func startTimerKick(ctx context.Context, period time.Duration) <-chan struct{} {
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
	// Once ctx ends, the pending read returns at once.
	release := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Now()) })
	go func() {
		defer close(stopped)
		defer release()
		defer f.Close()
		var expirations [8]byte
		for {
			if _, err := f.Read(expirations[:]); err != nil {
				return
			}
		}
	}()
	return stopped
}
