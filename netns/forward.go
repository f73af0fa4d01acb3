package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// DialFunc makes a connection: net.Dialer.DialContext's signature, as
// Net.Dial has it.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Forwarder joins each TCP connection accepted on a local address to one
// it makes to Target with its DialFunc (Net.Dial: from the hub), and
// copies bytes both ways. It serves a client library that has no dialer
// option of its own (pulsar-client-go calls net.Dial): the library dials
// the forwarder, and the node sees a connection from the hub, which the
// Net's rules cut like any other.
//
// Invariants:
//   - Nothing is answered on the node's behalf: an accepted connection
//     whose dial to Target fails is closed without a byte written, and
//     bytes are only ever copied, never buffered beyond one read.
//   - The two halves of a joined pair live and die together: when either
//     side ends (EOF, error, Close), both are closed.
//   - After Close returns, the listener and every connection it made are
//     closed and no goroutine of the Forwarder runs.
type Forwarder struct {
	l           net.Listener
	target      string
	dial        DialFunc
	dialTimeout time.Duration

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

// Forward listens on listen (host:port; port 0 picks one) and forwards
// every connection it accepts to target through dial, each dial bounded
// by dialTimeout. It returns once the listener is open.
func Forward(listen, target string, dial DialFunc, dialTimeout time.Duration) (*Forwarder, error) {
	if dial == nil || dialTimeout <= 0 {
		return nil, errors.New("a forwarder needs a dial function and a positive dial timeout")
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("forward %s to %s: listen: %w (another forwarder, or a server, holds the port)", listen, target, err)
	}
	f := &Forwarder{l: l, target: target, dial: dial, dialTimeout: dialTimeout, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.accept()
	return f, nil
}

// Addr is the address the Forwarder listens on.
func (f *Forwarder) Addr() string { return f.l.Addr().String() }

// Target is where it forwards to.
func (f *Forwarder) Target() string { return f.target }

// Close stops accepting, closes every connection, and waits for the
// Forwarder's goroutines to end.
func (f *Forwarder) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	err := f.l.Close()
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
	return err
}

// track adds c to the connections Close closes; false (c closed) when
// the Forwarder is closed already.
func (f *Forwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		c.Close()
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *Forwarder) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
	c.Close()
}

func (f *Forwarder) accept() {
	defer f.wg.Done()
	for {
		c, err := f.l.Accept()
		if err != nil {
			f.mu.Lock()
			closed := f.closed
			f.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors, say: the load's next connection may
			// find one, and the forwarder must not stop serving for it.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if !f.track(c) {
			return
		}
		f.wg.Add(1)
		go f.join(c)
	}
}

// join dials the target for the accepted connection in, and copies both
// ways until either side ends.
func (f *Forwarder) join(in net.Conn) {
	defer f.wg.Done()
	defer f.untrack(in)
	// Bounded by dialTimeout only: a target cut off drops the SYN, and
	// the client then sees its connection closed unanswered, as its own
	// connect would have failed. Whatever it sent meanwhile is dropped
	// with the connection.
	ctx, cancel := context.WithTimeout(context.Background(), f.dialTimeout)
	out, err := f.dial(ctx, "tcp", f.target)
	cancel()
	if err != nil {
		return
	}
	if !f.track(out) {
		return
	}
	defer f.untrack(out)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src) //nolint:errcheck // either side's end ends the pair
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	// One side ended: close both, so that the other copy ends too.
	in.Close()
	out.Close()
	<-done
}
