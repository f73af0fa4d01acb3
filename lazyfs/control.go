package lazyfs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// The control protocol: a client connects to the Unix socket, writes one
// line, and reads one JSON line back when the command is complete.
//
//	lose [<wait>]   lose unsynced writes, after waiting up to <wait> (a Go
//	                duration, default 10s) for every file to be closed
//	sync            make everything durable
//	status          report what is unsynced
//	disk-error <call> [<percent>]
//	                make <percent>% (default 100) of the calls fsync,
//	                write or read fail with EIO from now on
//	disk-ok [<call>]
//	                end the disk errors (on every call, or on one)
//
// The answer is {"ok":true,"loss":{...}} / {"ok":true,"status":{...}} or
// {"ok":false,"error":"..."}.

// Reply is the answer to a control command.
type Reply struct {
	OK     bool        `json:"ok"`
	Error  string      `json:"error,omitempty"`
	Loss   *LossReport `json:"loss,omitempty"`
	Status *Status     `json:"status,omitempty"`
	// Ended are the disk errors a disk-ok ended, with what they did.
	Ended []DiskError `json:"ended,omitempty"`
}

// DefaultCloseWait is how long a lose waits for open files to be closed.
const DefaultCloseWait = 10 * time.Second

// Serve answers control commands on a Unix socket at path until ctx ends.
// It removes a stale socket file first, and the socket when it returns.
func (l *FS) Serve(ctx context.Context, path string) error {
	if len(path) > 100 {
		return fmt.Errorf("control socket path %s is too long for a Unix socket (%d bytes, at most 100): use a shorter directory", path, len(path))
	}
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listen on control socket %s: %w", path, err)
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	defer os.Remove(path)
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go l.answer(c)
	}
}

func (l *FS) answer(c net.Conn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil && line == "" {
		return
	}
	c.SetReadDeadline(time.Time{})
	json.NewEncoder(c).Encode(l.Do(line))
}

// Do runs one control command line.
func (l *FS) Do(line string) Reply {
	f := strings.Fields(line)
	if len(f) == 0 {
		return Reply{Error: "empty command: use lose [<wait>], sync or status"}
	}
	switch f[0] {
	case "lose":
		wait := DefaultCloseWait
		if len(f) > 1 {
			d, err := time.ParseDuration(f[1])
			if err != nil || d < 0 {
				return Reply{Error: fmt.Sprintf("lose %s: the wait must be a duration such as 5s", f[1])}
			}
			wait = d
		}
		rep := l.Lose(wait)
		return Reply{OK: true, Loss: &rep}
	case "sync":
		l.Sync()
		s := l.Status()
		return Reply{OK: true, Status: &s}
	case "status":
		s := l.Status()
		return Reply{OK: true, Status: &s}
	case "disk-error":
		if len(f) < 2 || len(f) > 3 {
			return Reply{Error: "disk-error <fsync|write|read> [<percent>]"}
		}
		pct := 100
		if len(f) == 3 {
			p, err := strconv.Atoi(strings.TrimSuffix(f[2], "%"))
			if err != nil {
				return Reply{Error: fmt.Sprintf("disk-error %s %s: the rate is a percent, 1 to 100", f[1], f[2])}
			}
			pct = p
		}
		if err := l.SetDiskError(f[1], pct); err != nil {
			return Reply{Error: err.Error()}
		}
		s := l.Status()
		return Reply{OK: true, Status: &s}
	case "disk-ok":
		ended := l.ClearDiskError(f[1:]...)
		s := l.Status()
		return Reply{OK: true, Status: &s, Ended: ended}
	}
	return Reply{Error: fmt.Sprintf("unknown command %q: use lose [<wait>], sync, status, disk-error <call> [<percent>] or disk-ok [<call>]", f[0])}
}

// Control sends one command to the lazyfs whose control socket is path
// and returns its answer once the command is complete.
func Control(ctx context.Context, path, command string) (Reply, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return Reply{}, fmt.Errorf("reach lazyfs control socket %s: %w (is `ackcheck lazyfs mount` running?)", path, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if _, err := fmt.Fprintln(c, command); err != nil {
		return Reply{}, fmt.Errorf("send %q to %s: %w", command, path, err)
	}
	var r Reply
	if err := json.NewDecoder(c).Decode(&r); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return Reply{}, fmt.Errorf("read lazyfs's answer to %q: %w", command, err)
	}
	if !r.OK {
		return r, errors.New("lazyfs: " + r.Error)
	}
	return r, nil
}
