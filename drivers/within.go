package drivers

import "context"

// Within runs fn, which blocks until something closes, stops or drains,
// and returns nil when fn has returned, or ctx.Err() as soon as ctx ends
// first. fn is never interrupted: on ctx's end it keeps running in its own
// goroutine until it returns by itself, so fn must return eventually (a
// client's Close, a WaitGroup's Wait).
func Within(ctx context.Context, fn func()) error {
	done := make(chan struct{})
	go func() {
		fn()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
