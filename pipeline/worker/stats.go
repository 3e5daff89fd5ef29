package worker

import (
	"sync/atomic"
	"time"
)

// Stats counts what the job did; the run summary and the metrics read it.
type Stats struct {
	Started           time.Time
	Records           atomic.Int64 // records read (after skipping control batches)
	Rows              atomic.Int64 // rows written to the sinks
	Filtered          atomic.Int64 // records dropped by schema.where
	DeadLetters       atomic.Int64 // records written to the dead-letter destinations
	Skipped           atomic.Int64 // bad records dropped with on_error: skip
	Batches           atomic.Int64 // batches committed
	BudgetCuts        atomic.Int64 // batches cut early because the memory budget was full
	StagedRows        atomic.Int64 // rows handed to the sinks before their batch was cut
	BackpressureNanos atomic.Int64 // time fetching waited for memory
	LostRecords       atomic.Int64 // records deleted by retention before they were read
	Refused           atomic.Int64 // rows a sink refused for good, sent to the dead letters
	TruncatedLetters  atomic.Int64 // dead letters cut to fit the dead-letter topic
	UnwritableLetters atomic.Int64 // dead letters no destination could take (logged instead)
	OffsetResets      atomic.Int64 // on_offset_out_of_range applied: a position outside the log
	RecutOverBudget   atomic.Int64 // bytes re-cuts held beyond batch.memory_budget instead of waiting
	FloorFetches      atomic.Int64 // fetches of fetchFloor past a budget over its size (Budget.acquireOrFloor)
	FirstRecord       atomic.Int64 // when the first record arrived, Unix nanoseconds; 0 before
}

func NewStats() *Stats { return &Stats{Started: time.Now()} }
