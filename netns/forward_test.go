package netns

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echoServer answers each line with "echo: " and the line, on l, until l
// closes. If quit is set, it closes each connection after its first line.
func echoServer(l net.Listener, quit bool) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					return
				}
				fmt.Fprintf(c, "echo: %s", line)
				if quit {
					return
				}
			}
		}()
	}
}

// roundTrip writes line on c and reads one line back, within a second.
func roundTrip(c net.Conn, line string) (string, error) {
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := fmt.Fprintf(c, "%s\n", line); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// countingDial dials with a plain dialer and counts its calls: the
// forwarder makes every connection through the function it was given.
func countingDial(calls *atomic.Int64) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		calls.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
}

func TestForwarder(t *testing.T) {
	failing := func(context.Context, string, string) (net.Conn, error) { return nil, errors.New("no route") }
	for _, tc := range []struct {
		name string
		dial func(*atomic.Int64) DialFunc
		quit bool // the target closes after one line
		// want: each connection's answer to "a" then "b"; "" for a
		// connection closed with nothing read.
		want [2]string
	}{
		{"both ways", countingDial, false, [2]string{"echo: a\n", "echo: b\n"}},
		{"target ends the pair", countingDial, true, [2]string{"echo: a\n", ""}},
		{"dial fails: closed unanswered", func(c *atomic.Int64) DialFunc {
			return func(ctx context.Context, n, a string) (net.Conn, error) { c.Add(1); return failing(ctx, n, a) }
		}, false, [2]string{"", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			target, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer target.Close()
			go echoServer(target, tc.quit)
			var calls atomic.Int64
			f, err := Forward("127.0.0.1:0", target.Addr().String(), tc.dial(&calls), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			const conns = 3
			for i := range conns {
				c, err := net.Dial("tcp", f.Addr())
				if err != nil {
					t.Fatal(err)
				}
				for j, line := range []string{"a", "b"} {
					got, err := roundTrip(c, line)
					if got != tc.want[j] || (tc.want[j] == "" && err == nil) {
						t.Fatalf("connection %d, line %q: got %q (%v), want %q", i, line, got, err, tc.want[j])
					}
					if tc.want[j] == "" && !errors.Is(err, io.EOF) && !strings.Contains(fmt.Sprint(err), "reset") && !strings.Contains(fmt.Sprint(err), "broken pipe") {
						t.Fatalf("connection %d, line %q: %v, want it closed (EOF), not left hanging", i, line, err)
					}
					if tc.want[j] == "" {
						break
					}
				}
				c.Close()
			}
			if got := calls.Load(); got != conns {
				t.Errorf("%d dials for %d connections: every connection must be made by the dial function, once", got, conns)
			}
		})
	}
}

// Close closes the listener and every joined connection, and returns
// only once they are: a client mid-conversation sees its connection end.
func TestForwarderClose(t *testing.T) {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	go echoServer(target, false)
	f, err := Forward("127.0.0.1:0", target.Addr().String(), (&net.Dialer{}).DialContext, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := roundTrip(c, "a"); got != "echo: a\n" {
		t.Fatalf("%q %v", got, err)
	}
	done := make(chan error, 1)
	go func() { done <- f.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return within 5 s")
	}
	if got, err := roundTrip(c, "b"); err == nil {
		t.Errorf("after Close the connection still answers %q", got)
	}
	if c2, err := net.DialTimeout("tcp", f.Addr(), time.Second); err == nil {
		c2.Close()
		t.Error("after Close the forwarder's address still accepts")
	}
	if err := f.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if _, err := Forward("127.0.0.1:0", "x:1", nil, time.Second); err == nil {
		t.Error("a forwarder without a dial function was made")
	}
}

// Through a Net: a server that listens only inside node 1's namespace is
// reached from the machine's own namespace through a forwarder that dials
// from the hub; a cut of node 1 from the clients stops new connections
// (closed unanswered within the dial timeout) and the one in flight
// (no answer), and the heal gives both back.
func TestForwarderThroughNet(t *testing.T) {
	n := testNet(t)
	l, err := n.Listen(1, "tcp", n.NodeAddr(1).String()+":7001")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go echoServer(l, false)
	f, err := Forward("127.0.0.1:0", l.Addr().String(), n.Dial, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kept, err := net.Dial("tcp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	if got, err := roundTrip(kept, "before"); got != "echo: before\n" {
		t.Fatalf("before the cut: %q %v", got, err)
	}
	ctx := context.Background()
	cut := Rule{Name: "fwd", Kind: Cut, Node: 1, Client: true}
	if err := n.Apply(ctx, cut); err != nil {
		t.Fatal(err)
	}
	if got, err := roundTrip(kept, "during"); err == nil {
		t.Errorf("the connection made before the cut still answers during it: %q", got)
	}
	start := time.Now()
	fresh, err := net.Dial("tcp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	fresh.SetDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 1)
	if _, err := fresh.Read(b); !errors.Is(err, io.EOF) && !strings.Contains(fmt.Sprint(err), "reset") {
		t.Errorf("a new connection during the cut: %v, want it closed unanswered", err)
	} else if took := time.Since(start); took < 1500*time.Millisecond {
		t.Errorf("a new connection during the cut closed after %s: want it closed by the 2 s dial timeout (the SYN dropped), not at once", took)
	}
	fresh.Close()
	if err := n.Remove(ctx, cut); err != nil {
		t.Fatal(err)
	}
	again, err := net.Dial("tcp", f.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if got, err := roundTrip(again, "after"); got != "echo: after\n" {
		t.Errorf("after the heal: %q %v", got, err)
	}
}
