//go:build !linux

package load

import (
	"context"
	"time"
)

// startTimerKick does nothing here: timers keep the resolution the
// runtime gives them (see timerKickPeriod).
func startTimerKick(ctx context.Context, period time.Duration) <-chan struct{} {
	stopped := make(chan struct{})
	close(stopped)
	return stopped
}
