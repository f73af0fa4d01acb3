package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Path is one direction of reachability: From dials To. From 0 is the
// hub (the client side).
type Path struct {
	From, To int32
}

func (p Path) String() string {
	from := "client"
	if p.From != 0 {
		from = fmt.Sprintf("node %d", p.From)
	}
	return fmt.Sprintf("%s -> node %d", from, p.To)
}

// Reach is what a probe found on each path: true when the path carries
// packets both ways, which a TCP connect shows by being answered at all,
// accepted or refused; false when it timed out.
type Reach map[Path]bool

// Probe connects over every path between the Net's nodes, and from the
// client side to each node, to port, each within timeout, all at once. A
// connection refused is an answer: the path works, nothing listens. So a
// probe needs no server, and tells a cut path from a stopped broker.
func (n *Net) Probe(ctx context.Context, port int, timeout time.Duration) (Reach, error) {
	var paths []Path
	for _, to := range n.Nodes {
		paths = append(paths, Path{0, to})
		for _, from := range n.Nodes {
			if from != to {
				paths = append(paths, Path{from, to})
			}
		}
	}
	ch := make(chan PathAnswer, len(paths))
	for _, p := range paths {
		go func() {
			ok, err := n.reaches(ctx, p, port, timeout)
			ch <- PathAnswer{p, ok, err}
		}()
	}
	return GatherReach(ch, len(paths))
}

// PathAnswer is one path's probe: whether it carried packets (OK), or
// why it could not be told (Err).
type PathAnswer struct {
	Path Path
	OK   bool
	Err  error
}

// GatherReach takes n answers from ch into a Reach. A path whose probe
// failed is left out of it, and its error, naming the path, is among the
// joined errors returned.
func GatherReach(ch <-chan PathAnswer, n int) (Reach, error) {
	reach := Reach{}
	var errs []error
	for range n {
		a := <-ch
		if a.Err != nil {
			errs = append(errs, fmt.Errorf("probe %s: %w", a.Path, a.Err))
			continue
		}
		reach[a.Path] = a.OK
	}
	return reach, errors.Join(errs...)
}

func (n *Net) reaches(ctx context.Context, p Path, port int, timeout time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := netip.AddrPortFrom(n.NodeAddr(p.To), uint16(port)).String()
	var c net.Conn
	var err error
	if p.From == 0 {
		c, err = n.Dial(ctx, "tcp", addr)
	} else {
		c, err = n.DialFrom(ctx, p.From, "tcp", addr)
	}
	return Answered(c, err)
}

// Answered says what a TCP connect's outcome proves of its path, and
// closes c: connected or refused, the path carries packets both ways
// (true); timed out, it is cut (false); any other error proves nothing
// and is returned.
func Answered(c net.Conn, err error) (bool, error) {
	switch {
	case err == nil:
		c.Close()
		return true, nil
	case errors.Is(err, syscall.ECONNREFUSED):
		return true, nil
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return false, nil
	}
	return false, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Cut lists the paths that did not answer, in order.
func (r Reach) Cut() []Path {
	var cut []Path
	for p, ok := range r {
		if !ok {
			cut = append(cut, p)
		}
	}
	slices.SortFunc(cut, func(a, b Path) int {
		if a.From != b.From {
			return int(a.From - b.From)
		}
		return int(a.To - b.To)
	})
	return cut
}

// String says which paths are cut: "all N paths answer", or the cut ones.
func (r Reach) String() string {
	cut := r.Cut()
	if len(cut) == 0 {
		return "all " + strconv.Itoa(len(r)) + " paths answer"
	}
	s := make([]string, len(cut))
	for i, p := range cut {
		s[i] = p.String()
	}
	return fmt.Sprintf("%d of %d paths cut: %s", len(cut), len(r), strings.Join(s, ", "))
}
