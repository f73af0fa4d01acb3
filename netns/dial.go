package netns

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// A socket belongs to the network namespace of the thread that created
// it, for its whole life. So a connection into a Net is made on an OS
// thread moved into the Net's namespace for the socket() call, and is
// then used from any goroutine like any other: the load's clients need no
// namespace of their own. The thread is never moved back: its goroutine
// ends locked to it, and the Go runtime then ends the thread rather than
// reuse it (runtime.LockOSThread).

// Dial connects from the hub, the client side of the Net: the address the
// nodes see is HubAddr. Its signature is that of net.Dialer.DialContext,
// to be handed to a client library's dialer option.
func (n *Net) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return dialIn(ctx, n.Hub(), network, addr)
}

// DialFrom connects from node id's namespace, as one node reaches another.
func (n *Net) DialFrom(ctx context.Context, id int32, network, addr string) (net.Conn, error) {
	return dialIn(ctx, n.NodeNS(id), network, addr)
}

// Listen listens inside node id's namespace.
func (n *Net) Listen(id int32, network, addr string) (net.Listener, error) {
	var l net.Listener
	err := inNamespace(n.NodeNS(id), func() (err error) {
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}

func dialIn(ctx context.Context, ns, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNamespace(ns, func() (err error) {
		c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// inNamespace runs fn on a fresh OS thread inside the named network
// namespace and waits for it.
func inNamespace(ns string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread is in another namespace now, and
		// a goroutine that ends locked takes its thread with it.
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			done <- fmt.Errorf("network namespace %s: %w", ns, err)
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("enter network namespace %s: %w", ns, err)
			return
		}
		done <- fn()
	}()
	return <-done
}
