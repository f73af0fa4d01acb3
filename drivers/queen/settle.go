package queen

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// settlePoll is how often Settle asks the server for its file buffer.
const settlePoll = 200 * time.Millisecond

// Settle implements drivers.Settler: it waits until the server's file
// buffer is empty (GET /api/v1/system/maintenance: bufferedMessages), so
// that every push answered "buffered" has been replayed into PostgreSQL
// before the read-back reads where the partitions end. The buffer is the
// server's, not the topic's: it waits for all of it.
//
// It fails at once while maintenance mode is on (the server replays
// nothing then), and when the count has not gone down for idle, or the
// server has not answered for idle. Under load on this project's machines
// a read-back right after maintenance mode ended read 6,013 buffered acks
// as lost that were still being replayed.
func (d *Driver) Settle(ctx context.Context, _ string, idle time.Duration) (string, error) {
	start := time.Now()
	first, last := int64(-1), int64(-1)
	progress := time.Now()
	var lastErr error
	for {
		var m struct {
			MaintenanceMode *bool  `json:"maintenanceMode"`
			Buffered        *int64 `json:"bufferedMessages"`
		}
		err := d.call(ctx, http.MethodGet, "/api/v1/system/maintenance", nil, &m)
		switch {
		case err != nil:
			lastErr = err
		case m.Buffered == nil:
			return "", fmt.Errorf("GET /api/v1/system/maintenance: no bufferedMessages in the answer: cannot tell whether buffered pushes were replayed")
		case m.MaintenanceMode != nil && *m.MaintenanceMode && *m.Buffered > 0:
			return "", fmt.Errorf("the Queen server is in maintenance mode with %d messages in its file buffer: it replays none of them into PostgreSQL until maintenance mode is off", *m.Buffered)
		case *m.Buffered == 0:
			if first <= 0 {
				return "", nil
			}
			return fmt.Sprintf("waited %s for the Queen server to replay %d buffered messages into PostgreSQL", time.Since(start).Round(time.Millisecond), first), nil
		default:
			lastErr = nil
			if first < 0 {
				first = *m.Buffered
			}
			if last < 0 || *m.Buffered < last {
				progress = time.Now()
			}
			last = *m.Buffered
		}
		if time.Since(progress) >= idle {
			if lastErr != nil {
				return "", fmt.Errorf("the Queen server did not answer for %s while its file buffer may hold messages not yet replayed: %w", idle, lastErr)
			}
			return "", fmt.Errorf("the Queen server's file buffer still holds %d messages after %s without one replayed into PostgreSQL (of %d when the read-back began)", last, idle, first)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(settlePoll):
		}
	}
}

var _ drivers.Settler = (*Driver)(nil)
