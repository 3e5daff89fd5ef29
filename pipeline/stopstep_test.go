package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/sink"
)

// outputs is one set of outputs a job can be configured with: the three
// sinks, the Kafka output's delivery, and the dead letters' destinations.
type outputs struct {
	files, table bool
	kafka        string // "" (none), sink.DeliveryExactlyOnce or sink.DeliveryAtLeastOnce
	dlqTopic     bool
	dlqFiles     bool
}

func (o outputs) String() string {
	var s []string
	for _, x := range []struct {
		on   bool
		name string
	}{{o.files, "files"}, {o.table, "table"}, {o.kafka == sink.DeliveryExactlyOnce, "kafka_eos"}, {o.kafka == sink.DeliveryAtLeastOnce, "kafka_alo"},
		{o.dlqTopic, "dlq_topic"}, {o.dlqFiles, "dlq_files"}} {
		if x.on {
			s = append(s, x.name)
		}
	}
	return strings.Join(s, "+")
}

// everyOutputs is every combination a config can hold. Left out because
// the config refuses them: no sink at all ("no sink configured"), a
// dead-letter destination alone (it is not a sink), dead_letter.files
// without sinks.files (its files go under sinks.files' _errors/), and
// exactly-once beside at-least-once Kafka (there is one sinks.kafka with
// one delivery).
func everyOutputs() []outputs {
	var all []outputs
	for _, files := range []bool{false, true} {
		for _, table := range []bool{false, true} {
			for _, kafka := range []string{"", sink.DeliveryExactlyOnce, sink.DeliveryAtLeastOnce} {
				for _, dlqTopic := range []bool{false, true} {
					for _, dlqFiles := range []bool{false, true} {
						o := outputs{files, table, kafka, dlqTopic, dlqFiles}
						if !files && !table && kafka == "" || dlqFiles && !files {
							continue
						}
						all = append(all, o)
					}
				}
			}
		}
	}
	return all
}

// steps are the failpoints a batch of o passes in its commit cycle, in
// order.
func (o outputs) steps() []string {
	s := []string{sink.FailMarked}
	if o.files {
		s = append(s, sink.FailFileSaved)
	}
	if o.table {
		s = append(s, sink.FailTableFiles, sink.FailTableCommitted)
	}
	s = append(s, sink.FailDelivered)
	if o.kafka == sink.DeliveryExactlyOnce {
		s = append(s, sink.FailInTxn, sink.FailTxnEnding, sink.FailTxnCommitted)
	}
	return s
}

// config is o's job on brokers, its files and table below dir.
func (o outputs) config(brokers []string, dir string, maxRows int) string {
	var sinks, dlq []string
	if o.files {
		sinks = append(sinks, fmt.Sprintf("files: {url: %q, file: {fsync: false}}", filepath.Join(dir, "files")))
	}
	if o.table {
		sinks = append(sinks, strings.TrimSuffix(tableConfig(dir), ", "))
	}
	if o.kafka != "" {
		sinks = append(sinks, fmt.Sprintf("kafka: {topic: out, delivery: %s, transaction_timeout: 5s}", o.kafka))
	}
	if o.dlqTopic {
		dlq = append(dlq, "topic: dlq")
	}
	if o.dlqFiles {
		dlq = append(dlq, "files: true")
	}
	if len(dlq) == 0 {
		dlq = append(dlq, "on_error: skip")
	}
	return fmt.Sprintf(`kafka: {brokers: ["%s"], topics: [logs], group: g, start_offset: earliest}
rack: {providers: [static]}
schema: {columns: [{name: n, type: int64, required: true}]}
batch: {max_rows: %d}
sinks: {%s}
dead_letter: {%s}
run: {shutdown_timeout: 1s}
`, strings.Join(brokers, `", "`), maxRows, strings.Join(sinks, ", "), strings.Join(dlq, ", "))
}

// TestEveryRecordOnceWhateverStepAStopFalls: for every combination of
// outputs a config can hold (everyOutputs says which it cannot), the job
// is stopped (a SIGTERM, a revoke) right after each step of the commit
// cycle its outputs have, the second time a batch passes it, then run
// again to the end. Every output then holds what its guarantee
// (docs/guarantees.md) promises: the exactly-once ones every record once
// (the files tile the offsets with no overlap, the table's position is the
// end, read_committed consumers of exactly-once Kafka and of its
// dead-letter topic see each record once, _errors/ holds each dead letter
// once), the at-least-once ones (Kafka at_least_once, a dead-letter topic
// beside no exactly-once Kafka) every record, written again at most for the
// batches in flight at the stop. In the "refused" cases the brokers refuse
// the stopping job's commits (EndTxn, offset commits), so its flush at the
// stop cannot finish, as after a crash. In the "offsets_lost" cases
// (combinations with exactly-once Kafka) the run after the stop is under a
// new group id that adopts the old one's positions
// (sinks.kafka.adopt_positions_of), so it has no offsets, as when the
// group's offsets expire or are deleted: the exactly-once outputs still
// hold every record once (before the Kafka output kept its positions
// topic, a batch whose transaction committed before the stop came again
// in it).
func TestEveryRecordOnceWhateverStepAStopFalls(t *testing.T) {
	// The cases wait far more than they compute (a case is about 0.6 s of
	// group joins, commits and reads for 0.05 CPU-s), so they run
	// stopParallel at a time, each its own job on its own in-process
	// cluster, whatever -parallel (GOMAXPROCS) allows: t.Run called from
	// several goroutines runs its subtests side by side.
	sem := make(chan struct{}, stopParallel)
	var wg sync.WaitGroup
	for _, o := range everyOutputs() {
		for _, step := range o.steps() {
			for _, c := range []struct{ refused, lost bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
				if c.lost && o.kafka != sink.DeliveryExactlyOnce {
					continue
				}
				name := fmt.Sprintf("%s/%s/refused=%v", o, step, c.refused)
				if c.lost {
					name = fmt.Sprintf("%s/%s/refused=%v,offsets_lost", o, step, c.refused)
				}
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					t.Run(name, func(t *testing.T) { stopAtStep(t, o, step, c.refused, c.lost) })
				})
			}
		}
	}
	wg.Wait()
}

// stopParallel is how many stop cases run at once.
const stopParallel = 8

// Every tenth record of the stop tests is not JSON: a dead letter.
const (
	stopRecords    = 120
	stopPartitions = 2
	stopMaxRows    = 30
)

func stopTestValue(i int) ([]byte, bool) {
	if i%10 == 9 {
		return fmt.Appendf(nil, "bad %d", i), false
	}
	return fmt.Appendf(nil, `{"n": %d}`, i), true
}

func stopAtStep(t *testing.T, o outputs, step string, refused, lost bool) {
	c := testkit.FakeCluster(t, kfake.SeedTopics(stopPartitions, "logs"), kfake.SeedTopics(1, "out", "dlq"))
	values := make([][]byte, stopRecords)
	for i := range values {
		values[i], _ = stopTestValue(i)
	}
	produceValues(t, c.ListenAddrs(), values)
	dir := t.TempDir()
	cfg := o.config(c.ListenAddrs(), dir, stopMaxRows)

	stopped := make(chan struct{})
	var refusals []*kfake.FaultHandle
	var stop context.CancelFunc
	ctx := sink.StopAt(context.Background(), step, 2, func() {
		if refused {
			refusals = append(refusals,
				c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, Count: -1, Err: kerr.UnknownServerError, When: func(r kmsg.Request) bool { return r.(*kmsg.EndTxnRequest).Commit }}),
				c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit, kmsg.TxnOffsetCommit}, Count: -1, Err: kerr.UnknownServerError}))
		}
		stop()
		close(stopped)
	})
	ctx, stop = context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	wait := startJob(t, ctx, cfg, Mode{})
	if err := wait(); err != nil {
		t.Logf("the stopped job: %v", err)
	}
	select {
	case <-stopped:
	default:
		t.Fatalf("the job never passed %s twice", step)
	}
	for _, f := range refusals {
		f.Remove()
	}
	if lost {
		// The group renamed: its offsets are the old name's, and the
		// positions topic's record of g is taken as g2's.
		cfg = strings.Replace(cfg, "group: g,", "group: g2,", 1)
		cfg = strings.Replace(cfg, "delivery: exactly_once,", "delivery: exactly_once, adopt_positions_of: g,", 1)
	}
	runTestJob(t, cfg, Mode{UntilNow: true})
	checkStopOutputs(t, c.ListenAddrs(), o, dir)
}

// checkStopOutputs checks every output of o against its guarantee.
func checkStopOutputs(t *testing.T, brokers []string, o outputs, dir string) {
	t.Helper()
	var good, bad []string
	for i := range stopRecords {
		if v, ok := stopTestValue(i); ok {
			good = append(good, fmt.Sprintf(`{"n":%d}`, i))
		} else {
			bad = append(bad, string(v))
		}
	}
	// A stop writes again at most each partition's batch in flight.
	inFlight := stopPartitions * stopMaxRows
	switch o.kafka {
	case sink.DeliveryExactlyOnce:
		eachOnce(t, "the Kafka output", testkit.ReadCommitted(t, brokers, "out", len(good)), good)
	case sink.DeliveryAtLeastOnce:
		eachAtLeastOnce(t, "the Kafka output", testkit.ReadCommitted(t, brokers, "out", len(good)), good, inFlight)
	}
	if o.dlqTopic {
		seen := testkit.ReadCommitted(t, brokers, "dlq", len(bad))
		if o.kafka == sink.DeliveryExactlyOnce {
			eachOnce(t, "the dead-letter topic", seen, bad)
		} else {
			eachAtLeastOnce(t, "the dead-letter topic", seen, bad, inFlight)
		}
	}
	if o.files {
		for p, end := range filesTile(t, filepath.Join(dir, "files")) {
			if end != stopRecords/stopPartitions {
				t.Errorf("files of partition %d end at %d, want %d", p, end, stopRecords/stopPartitions)
			}
		}
	}
	if o.dlqFiles {
		eachOnce(t, "_errors/", deadLetterFileValues(t, filepath.Join(dir, "files")), bad)
	}
	if o.table {
		for p := range stopPartitions {
			if last := tableLast(t, dir, p); last != stopRecords/stopPartitions-1 {
				t.Errorf("the table holds partition %d up to %d, want %d", p, last, stopRecords/stopPartitions-1)
			}
		}
	}
}

// eachOnce reports each of want that seen does not hold exactly once, and
// what seen holds beyond want.
func eachOnce(t *testing.T, output string, seen map[string]int, want []string) {
	t.Helper()
	missing, twice := countAgainst(seen, want)
	if missing > 0 || twice > 0 {
		t.Errorf("%s: %d of %d records missing, %d written more than once (%d values seen)", output, missing, len(want), twice, len(seen))
	}
}

// eachAtLeastOnce reports each of want that seen lacks, and repeats
// beyond bound.
func eachAtLeastOnce(t *testing.T, output string, seen map[string]int, want []string, bound int) {
	t.Helper()
	missing, again := countAgainst(seen, want)
	if missing > 0 || again > bound {
		t.Errorf("%s: %d of %d records missing, %d written again (at most %d, the batches in flight, may be)", output, missing, len(want), again, bound)
	} else if again > 0 {
		t.Logf("%s: %d records written again (at least once)", output, again)
	}
}

// countAgainst is how many of want seen lacks, and how many writes of
// them it holds beyond one each; a value seen that is not wanted counts
// as written again.
func countAgainst(seen map[string]int, want []string) (missing, again int) {
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[w] = true
		if seen[w] == 0 {
			missing++
		}
	}
	for v, n := range seen {
		if !wanted[v] {
			again += n
		} else if n > 1 {
			again += n - 1
		}
	}
	return missing, again
}

// deadLetterFileValues counts the values of the dead letters in the
// _errors/ files below out.
func deadLetterFileValues(t *testing.T, out string) map[string]int {
	t.Helper()
	type letter struct {
		Value []byte `parquet:"value,optional"`
	}
	seen := map[string]int{}
	for _, f := range testkit.FilesUnder(t, out) {
		if !strings.HasPrefix(f, "_errors/") || !strings.HasSuffix(f, sink.DeadLetterExt) {
			continue
		}
		rows, err := parquet.ReadFile[letter](filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			seen[string(r.Value)]++
		}
	}
	return seen
}
