package sink

import (
	"context"
	"os"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
)

// Crash tests kill the process at exact points of the commit protocol:
// LOGSTORE_FAILPOINT=NAME:N sends SIGKILL to the process the N-th time the
// point NAME is passed. Unset (always, outside tests) it costs one string
// comparison per batch, never per record.
var failpoint struct {
	name string
	left atomic.Int64
}

func init() {
	name, n, ok := strings.Cut(os.Getenv("LOGSTORE_FAILPOINT"), ":")
	if !ok {
		return
	}
	if count, err := strconv.Atoi(n); err == nil && count > 0 {
		failpoint.name = name
		failpoint.left.Store(int64(count))
	}
}

// Failpoint names, in the order a batch passes them.
const (
	FailFetched   = "fetched"      // a fetch returned records
	FailMarked    = "marked"       // first is committed with the cut mark "cut:<last>"
	FailFileSaved = "file-written" // one file of a batch is stored; more may follow
	FailDelivered = "delivered"    // every sink has the batch; next not yet committed
	// exactly_once: the batch's rows are produced in its open
	// transaction; its dead letters and next are not yet in it.
	FailInTxn = "in-transaction"
	// exactly_once: rows, dead letters and next are in the transaction;
	// EndTxn is not sent.
	FailTxnEnding = "transaction-ending"
	// exactly_once: the transaction committed; the resume record does
	// not say so yet.
	FailTxnCommitted = "transaction-committed"

	// A file is being stored, its bytes all sent: its temporary file (a
	// file store's .NAME.tmp-*) or its unfinished multipart upload (S3) is
	// there, the file not yet in place. One name per kind of file, as
	// storingPoint tells them apart by key.
	FailStoringData        = "storing-data"
	FailStoringDeadLetters = "storing-dead-letters" // _errors/
	FailStoringMeta        = "storing-meta"         // _logstore/: a resume record, a manifest

	// The table sink's, between FailFileSaved and FailDelivered.
	FailTableFiles     = "table-files-written" // a batch's data files are stored, not yet committed to the table
	FailTableCommitted = "table-committed"     // the table holds the batch; the worker has not heard yet
)

// stopPoint is an in-process test's point: its stop is called, once, the
// n-th time the point is passed, and the caller goes on (a stop, not a
// crash: what a SIGTERM or a revoke does at that moment). It rides on the
// job's context, so jobs run side by side in one test process each stop at
// their own point.
type stopPoint struct {
	name string
	left atomic.Int64
	stop func()
}

type stopPointKey struct{}

// StopAt returns ctx with a point that calls stop the n-th time a job run
// with it (or a context made from it) passes the point name, for tests
// that stop a job between two steps of the commit protocol.
func StopAt(ctx context.Context, name string, n int, stop func()) context.Context {
	p := &stopPoint{name: name, stop: stop}
	p.left.Store(int64(n))
	return context.WithValue(ctx, stopPointKey{}, p)
}

// Failpoint calls the stop of ctx's StopAt point name when its count is
// used up, and kills the process if LOGSTORE_FAILPOINT names this point
// and its count is used up.
func Failpoint(ctx context.Context, name string) {
	passStopPoint(ctx, name)
	processFailpoint(name)
}

// passStopPoint calls the stop of ctx's StopAt point name when its count
// is used up.
func passStopPoint(ctx context.Context, name string) {
	if p, _ := ctx.Value(stopPointKey{}).(*stopPoint); p != nil && p.name == name && p.left.Add(-1) == 0 {
		p.stop()
	}
}

// cycleFailpoint is Failpoint in the member's cycle, which runs with a
// context of its own: the process's point is passed once per cycle, and
// each part's StopAt point with the context its writer handed it over
// with.
func cycleFailpoint(ctx context.Context, writers []context.Context, name string) {
	for _, w := range writers {
		if w != nil {
			passStopPoint(w, name)
		}
	}
	processFailpoint(name)
}

// processFailpoint kills the process if LOGSTORE_FAILPOINT names point
// name and its count is used up.
func processFailpoint(name string) {
	if failpoint.name != name {
		return
	}
	if failpoint.left.Add(-1) == 0 {
		kill()
		select {} // SIGKILL is not instant; never run past the point
	}
}

// failpointStoring is the failpoint a Put of key passes while the file is
// not yet in place; naming it costs nothing while no failpoint is set.
func failpointStoring(ctx context.Context, key string) {
	if failpoint.name != "" {
		Failpoint(ctx, storingPoint(key))
	}
}

func storingPoint(key string) string {
	dir := path.Dir("/" + key)
	switch {
	case strings.HasSuffix(dir, "/_errors"):
		return FailStoringDeadLetters
	case underMeta(dir + "/"):
		return FailStoringMeta
	}
	return FailStoringData
}
