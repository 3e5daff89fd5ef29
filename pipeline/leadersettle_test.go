package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/logstore/logstore/pipeline/worker"
	"github.com/segmentio/kafka-go"
)

// afterLeadersSettle runs list, a test's own offset listing, under the
// job's retry (capped backoff from 250 ms) for up to limit: right after a
// broker restarts, a listing meets NOT_LEADER_FOR_PARTITION until the
// client's cached metadata names the new leaders, as the job's own calls
// do; TestGroupLocalAgainAfterBrokerRestart failed on it once.
func afterLeadersSettle(t *testing.T, what string, limit time.Duration, list func(ctx context.Context) (map[int]int64, error)) map[int]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var out map[int]int64
	log := slog.New(slog.DiscardHandler)
	err := worker.Retry(ctx, log, what, func() {}, func() (err error) {
		out, err = list(ctx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAfterLeadersSettleRetriesALeaderMove(t *testing.T) {
	calls := 0
	got := afterLeadersSettle(t, "listing offsets", 10*time.Second, func(context.Context) (map[int]int64, error) {
		if calls++; calls < 3 {
			return nil, fmt.Errorf("listing offsets of t/0: %w", kafka.NotLeaderForPartition)
		}
		return map[int]int64{0: 42}, nil
	})
	if calls != 3 || got[0] != 42 {
		t.Errorf("%d calls, got %v; want the third call's answer", calls, got)
	}
}
