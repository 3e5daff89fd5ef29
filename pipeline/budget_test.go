package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/logstore/logstore/pipeline/record"
)

// TestWorkerRecutNeverWaitsOnTheBudget: a pending cut cannot end early, so
// it must not wait for memory it may never get (a budget lowered after an
// OOM, or taken by other partitions' re-cuts).
func TestWorkerRecutNeverWaitsOnTheBudget(t *testing.T) {
	w, _, s, _ := testWorker(t, &fakeLog{values: logValues(6, nil, nil), perFetch: 10}, 100, "dead_letter")
	cost := w.recordCost(&record.Record{Value: []byte(`{"n": 0}`)})
	w.budget = newBudget(2 * cost)
	// A deadlock guard, not a timing: the run ends long before.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.run(ctx, position{Offset: 0, Cut: 4}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s.batches) != "[0-4:5 5-5:1]" {
		t.Errorf("batches %v, want the re-cut 0-4 whole, then 5-5", s.batches)
	}
	if got := w.stats.RecutOverBudget.Load(); got != 3*cost {
		t.Errorf("%d bytes over budget reported, want %d (3 records)", got, 3*cost)
	}
	if !w.budget.tryAcquire(2 * cost) {
		t.Error("the budget was not given back whole")
	}
}
