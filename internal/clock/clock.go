// Package clock holds the one wait every retry loop of the project uses.
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
