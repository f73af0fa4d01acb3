package queen

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ackcheck/ackcheck/drivers"
)

// settlePoll is how often Settle asks the server for its file buffer.
const settlePoll = 200 * time.Millisecond

// bufferState is what Settle knows of the server's file buffer at one
// moment.
type bufferState struct {
	maintenance bool
	// counted is the server's bufferedMessages: the events this server
	// process wrote to its buffer and has not replayed. It does not
	// count events in files an earlier process left (the server's own
	// comment: "these events predate this server instance"), and a
	// replay of those, or a file flushed again after a failed batch,
	// takes it down past them, clamped at zero: so zero is not "empty".
	counted int64
	// failedFiles is bufferStats.failedFiles.count, the files a replay
	// gave up on for now; -1 when the server did not say.
	failedFiles int64
	// dirBytes is the bytes of events in the buffer's files on disk;
	// -1 when ackcheck cannot read the buffer dir (Config.BufferDir).
	dirBytes int64
	dirFiles int
}

// drained says the buffer holds nothing more to replay, by every account
// Settle has.
func (s bufferState) drained() bool {
	return s.counted == 0 && s.failedFiles <= 0 && s.dirBytes <= 0
}

func (s bufferState) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d messages counted by the server", s.counted)
	if s.failedFiles > 0 {
		fmt.Fprintf(&b, ", %d files in its failed/ dir", s.failedFiles)
	}
	if s.dirBytes >= 0 {
		fmt.Fprintf(&b, ", %d bytes in %d files of its buffer dir", s.dirBytes, s.dirFiles)
	}
	return b.String()
}

// Settle implements drivers.Settler: it waits until the server's file
// buffer is empty, so that every push answered "buffered" has been
// replayed into PostgreSQL before the read-back reads where the
// partitions end. The buffer is the server's, not the topic's: it waits
// for all of it.
//
// Empty means: bufferedMessages 0 and no failed files
// (GET /api/v1/system/maintenance), and, when Config.BufferDir names the
// server's FILE_BUFFER_DIR (a local cluster), no file there holding
// events. The dir is the only account of events an earlier server
// process buffered: a server restarted with files left over reports 0
// while it replays them, and a read-back then read 14 of 175,649 acked
// messages as lost that PostgreSQL held minutes later (issue 37's
// 100,000-partition run, a server SIGKILL then a PostgreSQL SIGKILL).
//
// It fails at once while maintenance mode is on with anything buffered
// (the server replays nothing then), and when the buffer has not shrunk
// for idle, or the server has not answered for idle. Under load on this
// project's machines a read-back right after maintenance mode ended read
// 6,013 buffered acks as lost that were still being replayed.
func (d *Driver) Settle(ctx context.Context, _ string, idle time.Duration, report func(string)) (string, error) {
	return d.settle(ctx, idle, report, drivers.SettleProgressEvery)
}

// settle is Settle, saying what it waits for through report every
// reportEvery.
func (d *Driver) settle(ctx context.Context, idle time.Duration, report func(string), reportEvery time.Duration) (string, error) {
	start := time.Now()
	var first, last bufferState
	seen := false
	progress, reported := time.Now(), time.Now()
	var lastErr error
	for {
		if report != nil && seen && time.Since(reported) >= reportEvery {
			reported = time.Now()
			report(fmt.Sprintf("waiting %s for the Queen server to replay its file buffer into PostgreSQL before the read-back: %s now, %s when it began",
				time.Since(start).Round(time.Second), last, first))
		}
		st, err := d.bufferState(ctx)
		switch {
		case err != nil:
			lastErr = err
		case st.maintenance && !st.drained():
			return "", fmt.Errorf("the Queen server is in maintenance mode with %s: it replays none of them into PostgreSQL until maintenance mode is off", st)
		case st.drained():
			if !seen {
				return "", nil
			}
			return fmt.Sprintf("waited %s for the Queen server to replay its file buffer into PostgreSQL (%s when the read-back began)", time.Since(start).Round(time.Millisecond), first), nil
		default:
			lastErr = nil
			if !seen {
				first, seen = st, true
			} else if st.counted < last.counted || st.dirBytes < last.dirBytes || st.failedFiles < last.failedFiles {
				progress = time.Now()
			}
			last = st
		}
		if time.Since(progress) >= idle {
			if lastErr != nil {
				return "", fmt.Errorf("the Queen server did not answer for %s while its file buffer may hold messages not yet replayed: %w", idle, lastErr)
			}
			return "", fmt.Errorf("the Queen server's file buffer still holds %s after %s without one replayed into PostgreSQL (%s when the read-back began)", last, idle, first)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(settlePoll):
		}
	}
}

// bufferState asks the server for its buffer's counts and reads the
// buffer dir when it is known.
func (d *Driver) bufferState(ctx context.Context) (bufferState, error) {
	var m struct {
		MaintenanceMode *bool  `json:"maintenanceMode"`
		Buffered        *int64 `json:"bufferedMessages"`
		Stats           *struct {
			FailedFiles *struct {
				Count *int64 `json:"count"`
			} `json:"failedFiles"`
		} `json:"bufferStats"`
	}
	if err := d.call(ctx, http.MethodGet, "/api/v1/system/maintenance", nil, &m); err != nil {
		return bufferState{}, err
	}
	if m.Buffered == nil {
		return bufferState{}, errors.New("GET /api/v1/system/maintenance: no bufferedMessages in the answer: cannot tell whether buffered pushes were replayed")
	}
	st := bufferState{counted: *m.Buffered, failedFiles: -1, dirBytes: -1}
	st.maintenance = m.MaintenanceMode != nil && *m.MaintenanceMode
	if m.Stats != nil && m.Stats.FailedFiles != nil && m.Stats.FailedFiles.Count != nil {
		st.failedFiles = *m.Stats.FailedFiles.Count
	}
	if d.cfg.BufferDir != "" {
		n, files, err := bufferedBytes(d.cfg.BufferDir)
		if err != nil {
			return bufferState{}, err
		}
		st.dirBytes, st.dirFiles = n, files
	}
	return st, nil
}

// bufferedBytes sums the sizes of the Queen server's buffer files in dir
// and dir/failed: failover_* and qos0_* files named *.buf (finalized,
// waiting for replay) or *.buf.tmp (being written; created empty, so an
// empty one holds nothing). The server deletes a file once every event in
// it is in PostgreSQL.
func bufferedBytes(dir string) (bytes int64, files int, err error) {
	for _, d := range []string{dir, filepath.Join(dir, "failed")} {
		entries, err := os.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) && d != dir {
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("read the Queen server's file buffer dir (--queen-buffer-dir): %w", err)
		}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasPrefix(name, "failover_") && !strings.HasPrefix(name, "qos0_") || !strings.Contains(name, ".buf") {
				continue
			}
			info, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue // replayed and deleted between the listing and now
			}
			if err != nil {
				return 0, 0, fmt.Errorf("read the Queen server's file buffer dir (--queen-buffer-dir): %w", err)
			}
			if info.Size() > 0 {
				bytes += info.Size()
				files++
			}
		}
	}
	return bytes, files, nil
}

var _ drivers.Settler = (*Driver)(nil)
