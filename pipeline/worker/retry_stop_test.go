package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestRetryStoppedByTheContextIsNoFailure: a sink call that ends because
// the run is stopping (Ctrl-C, SIGTERM) returned context.Canceled, and
// Retry logged "staging a batch failed; retrying … context canceled" and
// counted a retry for what was the stop, not a failure.
func TestRetryStoppedByTheContextIsNoFailure(t *testing.T) {
	for _, stopErr := range []error{context.Canceled, context.DeadlineExceeded} {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(stopErr)
		var logs bytes.Buffer
		retries := 0
		err := Retry(ctx, slog.New(slog.NewTextHandler(&logs, nil)), "staging a batch", func() { retries++ }, func() error {
			return fmt.Errorf("writing the spool file: %w", stopErr)
		})
		if !errors.Is(err, stopErr) {
			t.Errorf("%v: retry returned %v, want the stop's error", stopErr, err)
		}
		if retries != 0 || strings.Contains(logs.String(), "failed; retrying") {
			t.Errorf("%v: the stop was counted as %d retries and logged:\n%s", stopErr, retries, logs.String())
		}
	}
}
