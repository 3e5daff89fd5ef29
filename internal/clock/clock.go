// Package clock holds the project's waits: the one every retry loop uses,
// and the ticker of its periodic lines.
package clock

import (
	"context"
	"time"
)

// Sleep waits d, or less if ctx ends first; it reports whether the whole of
// d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Every calls f every d in a goroutine of its own until ctx ends or stop
// is called; stop returns once f runs no more.
func Every(ctx context.Context, d time.Duration, f func()) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f()
			}
		}
	}()
	return func() {
		cancel()
		<-ended
	}
}
