package worker

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestWorkerBackfillCutsAtOffsetsOnly: a backfill's batches end at
// multiples of its stride whatever the fetch sizes, batch.max_age or the
// memory budget say, so a re-run writes the same names.
func TestWorkerBackfillCutsAtOffsetsOnly(t *testing.T) {
	for _, perFetch := range []int{1, 4, 100} {
		w, _, s, _ := testWorker(t, &fakeLog{values: logValues(8, nil, []int64{5}), perFetch: perFetch}, 2, "dead_letter")
		w.Stride, w.Prefix = 3, "_backfill/x/"
		w.Limits.MaxAge = time.Nanosecond
		w.Budget = NewBudget(1)
		if err := w.Run(context.Background(), position{Offset: 1, Cut: -1}); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(s.batches); got != "[1-2:2 3-5:2 6-7:2]" {
			t.Errorf("%d per fetch: batches %s, want [1-2:2 3-5:2 6-7:2]", perFetch, got)
		}
	}
}
