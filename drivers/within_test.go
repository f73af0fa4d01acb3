package drivers

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWithin(t *testing.T) {
	ran := false
	if err := Within(context.Background(), func() { ran = true }); err != nil || !ran {
		t.Fatalf("a function that returns: err %v, ran %v; want nil, true", err, ran)
	}

	release := make(chan struct{})
	finished := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := Within(ctx, func() { <-release; close(finished) })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a function that blocks past ctx: err %v, want the deadline", err)
	}
	close(release) // fn was not interrupted: it still finishes by itself
	select {
	case <-finished:
	case <-time.After(5 * time.Second):
		t.Fatal("fn did not finish after its release")
	}
}
