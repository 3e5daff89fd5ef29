package worker

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/logstore/logstore/sink"
)

// losingFiles is the Files sink on a spool disk that fills: at the Stage
// and Write calls named it loses what it had staged of the batch and says
// so, as the real sink does when a spool write fails (sink.RestageError).
type losingFiles struct {
	*sink.Files
	stages, writes       int
	loseStage, loseWrite map[int]bool
}

func (l *losingFiles) Stage(ctx context.Context, b *sink.Batch) (bool, error) {
	if l.stages++; l.loseStage[l.stages] {
		return false, l.lose(b)
	}
	return l.Files.Stage(ctx, b)
}

func (l *losingFiles) Write(ctx context.Context, b *sink.Batch) error {
	if l.writes++; l.loseWrite[l.writes] {
		return l.lose(b)
	}
	return l.Files.Write(ctx, b)
}

func (l *losingFiles) lose(b *sink.Batch) error {
	l.Files.Discard(b.Topic, b.Partition, b.Prefix)
	return &sink.RestageError{Topic: b.Topic, Partition: b.Partition, First: b.First, Err: syscall.ENOSPC}
}

// TestWorkerReadsABatchLostFromTheSpoolAgain: the spool loses the open
// batch twice, once while its rows are staged and once as its files are
// closed at the cut (after the cut mark is committed). The partition
// holds, backs off (two retries in logstore_retries_total), reads the
// batch again from its first offset each time and cuts it where the mark
// says: one file with every record once, no spool file left, no budget
// held. Before, the retried Stage could never succeed (the rows staged
// before it were gone) and the partition was stuck for good.
func TestWorkerReadsABatchLostFromTheSpoolAgain(t *testing.T) {
	const n = 20000
	log := &fakeLog{values: logValues(n, nil, nil), perFetch: 500}
	w, commits, _, _ := testWorker(t, log, 0, "dead_letter")
	out, spool := t.TempDir(), t.TempDir()
	sinks, err := sink.New(context.Background(), sink.Config{Files: &sink.FilesConfig{URL: out, SpoolDir: spool}}, sink.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	files := &losingFiles{Files: sinks.Files, loseStage: map[int]bool{5: true}, loseWrite: map[int]bool{1: true}}
	w.Sinks = []sink.Sink{files}
	w.Budget = NewBudget(32 << 10)
	w.FetchMax = 16 << 10
	retries := &countingMetrics{}
	w.Metrics = retries
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Run(ctx, position{Offset: 0, Cut: -1}); err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the partition never got past the lost batch")
	}
	type row struct {
		N int64 `parquet:"n"`
	}
	rows, err := parquet.ReadFile[row](filepath.Join(out, "t-0-0-19999.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]int, n)
	for _, r := range rows {
		seen[r.N]++
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("record %d is in the file %d times (of %d rows)", i, c, len(rows))
		}
	}
	if got := retries.retried(OpFiles); got != 2 {
		t.Errorf("retries of %s = %d, want 2 (logstore_retries_total{op=files})", OpFiles, got)
	}
	var marks []string
	for _, c := range commits.calls {
		if c.meta != "" {
			marks = append(marks, c.meta)
		}
	}
	if len(marks) != 2 || marks[0] != marks[1] {
		t.Errorf("cut marks %v: the batch lost at its cut must be cut again where its mark says", marks)
	}
	if last := commits.calls[len(commits.calls)-1]; last.offset != n || last.meta != "" {
		t.Errorf("last commit %+v, want %d", last, n)
	}
	if left, _ := os.ReadDir(spool); len(left) != 0 {
		t.Errorf("%d spool files left behind", len(left))
	}
	if use := w.Budget.inUse(); use != 0 {
		t.Errorf("%d bytes of the budget still held", use)
	}
}

// countingMetrics is Metrics that counts retries by operation.
type countingMetrics struct {
	mu      sync.Mutex
	retries map[string]int
}

func (m *countingMetrics) Retried(op string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.retries == nil {
		m.retries = map[string]int{}
	}
	m.retries[op]++
}

func (m *countingMetrics) retried(op string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.retries[op]
}

func (m *countingMetrics) TimeCommit(string, time.Time) {}
func (m *countingMetrics) TimeFlush(string, time.Time)  {}
