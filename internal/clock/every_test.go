package clock

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestEveryStopsCalling: f runs again and again, and not once after stop
// returned.
func TestEveryStopsCalling(t *testing.T) {
	var n atomic.Int64
	third := make(chan struct{})
	stop := Every(context.Background(), time.Millisecond, func() {
		if n.Add(1) == 3 {
			close(third)
		}
	})
	<-third
	stop()
	at := n.Load()
	time.Sleep(20 * time.Millisecond)
	if got := n.Load(); got != at {
		t.Errorf("f ran %d more times after stop", got-at)
	}
}
