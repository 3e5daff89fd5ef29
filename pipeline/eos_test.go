package pipeline

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/logstore/logstore/internal/testkit"
	"github.com/logstore/logstore/sink"
	"github.com/logstore/logstore/sink/iceberg"
)

// eosConfig is a job of group reading logs on the embedded cluster into
// the topic out with exactly_once, with files in dir when dir is not "".
func eosConfig(brokers []string, group, dir, out string, maxRows int) string {
	files := ""
	if dir != "" {
		files = fmt.Sprintf("files: {url: %q, file: {fsync: false}}, ", dir)
	}
	return fmt.Sprintf(`kafka: {brokers: ["%s"], topics: [logs], group: %s, start_offset: earliest}
rack: {providers: [static]}
schema: {columns: [{name: n, type: int64, required: true}]}
batch: {max_rows: %d}
sinks: {%skafka: {topic: %s, delivery: exactly_once, transaction_timeout: 5s}}
dead_letter: {on_error: skip}
`, strings.Join(brokers, `", "`), group, maxRows, files, out)
}

// startJob runs a job of raw until ctx ends; the returned function waits
// for its end.
func startJob(t *testing.T, ctx context.Context, raw string, mode Mode) func() error {
	t.Helper()
	cfg, err := Parse("test.yaml", []byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	j, err := NewJob(ctx, cfg, Deps{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		defer j.Close()
		done <- j.Run(ctx, mode)
	}()
	return func() error { return <-done }
}

// everyValueOnce reports each of the n values {"n":0}.. that seen does not
// hold exactly once.
func everyValueOnce(t *testing.T, seen map[string]int, n int) {
	t.Helper()
	bad := 0
	for i := range n {
		if c := seen[fmt.Sprintf(`{"n":%d}`, i)]; c != 1 {
			if bad++; bad <= 10 {
				t.Errorf("record %d seen %d times by read_committed", i, c)
			}
		}
	}
	if bad > 10 {
		t.Errorf("... %d records in all not seen once (%d distinct values seen)", bad, len(seen))
	}
}

// TestJobCommitWhoseAnswerIsLostIsNotProducedAgain: the job stops (a
// revoke, SIGTERM) while a transaction's EndTxn(commit) is out; the
// coordinator commits it, and the answer is lost with the job's context.
// The worker's stop must not take the batch for aborted and flush it again
// in a new transaction: read_committed consumers would see its rows twice.
// When the abort that follows goes unanswered too, the group's offset
// (read with require_stable) tells that the transaction committed.
func TestJobCommitWhoseAnswerIsLostIsNotProducedAgain(t *testing.T) {
	for _, abortLost := range []bool{false, true} {
		t.Run(fmt.Sprintf("abort_lost=%v", abortLost), func(t *testing.T) { lostCommitJob(t, abortLost) })
	}
}

func lostCommitJob(t *testing.T, abortLost bool) {
	const n = 100
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, "logs", "out"))
	produceN(t, c.ListenAddrs(), 0, n)
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()

	// The first commit is held until the job's context ends, then taken:
	// its answer goes to a client that no longer waits. Whatever else ends
	// a transaction waits until the coordinator took that commit; with
	// abortLost the abort then waits past the client's write_timeout.
	var once sync.Once
	taken := make(chan struct{})
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, Observe: true, Count: -1, Err: kerr.UnknownServerError, When: func(r kmsg.Request) bool {
		if r.(*kmsg.EndTxnRequest).Commit {
			once.Do(func() { close(taken) })
		}
		return false
	}})
	held, aborts := false, 0
	c.ControlKey(int16(kmsg.EndTxn), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if r.(*kmsg.EndTxnRequest).Commit && !held {
			held = true
			stop()
			c.SleepControl(func() { <-ctx.Done(); time.Sleep(100 * time.Millisecond) })
			return nil, nil, false
		}
		if held {
			c.SleepControl(func() { <-taken })
		}
		if !r.(*kmsg.EndTxnRequest).Commit && abortLost && aborts == 0 {
			aborts++
			c.SleepControl(func() { time.Sleep(1500 * time.Millisecond) })
		}
		return nil, nil, false
	})

	cfg := eosConfig(c.ListenAddrs(), "g", t.TempDir(), "out", 50)
	cfg = strings.Replace(cfg, "transaction_timeout: 5s", "transaction_timeout: 5s, write_timeout: 1s", 1)
	wait := startJob(t, ctx, cfg, Mode{})
	if err := wait(); err != nil {
		t.Logf("the stopped job: %v", err)
	}
	if !held {
		t.Fatal("no commit was held")
	}
	runTestJob(t, eosConfig(c.ListenAddrs(), "g", t.TempDir(), "out", 50), Mode{UntilNow: true})
	everyValueOnce(t, testkit.ReadCommitted(t, c.ListenAddrs(), "out", n), n)
}

// tableConfig is the sinks.iceberg entry of a table on a SQLite catalog and
// a local warehouse in dir.
func tableConfig(dir string) string {
	return fmt.Sprintf("iceberg: {table: logs.raw, spool_dir: %q, catalog: {uri: %q, warehouse: %q}, file: {fsync: false}}, ",
		filepath.Join(dir, "spool"), filepath.Join(dir, "catalog.db"), "file://"+filepath.Join(dir, "warehouse"))
}

// TestTableAndExactlyOnceKafkaWithoutFilesLoseNoBatch: with a table and
// exactly_once Kafka and no files sink, the table commits a batch before
// the transaction that writes it to Kafka. A stop between the two leaves
// the table ahead of the Kafka output (whose position is the group's
// offset, committed in the transaction); the next run must start where
// the least advanced output stands, so the Kafka output gets the batch
// (and the table skips it), instead of starting after the table and
// losing it from Kafka.
func TestTableAndExactlyOnceKafkaWithoutFilesLoseNoBatch(t *testing.T) {
	const n = 200
	c, cfg := tableAndKafkaStoppedBeforeEndTxn(t, n, 70)
	runTestJob(t, cfg, Mode{UntilNow: true})
	everyValueOnce(t, testkit.ReadCommitted(t, c.ListenAddrs(), "out", n), n)
}

// tableAndKafkaStoppedBeforeEndTxn runs a job writing n records to a
// table and to exactly-once Kafka without files, its EndTxn commits
// refused, and stops it once two were refused: the table may hold batches
// whose transaction never committed. It returns the cluster and the config
// to run again.
func tableAndKafkaStoppedBeforeEndTxn(t *testing.T, n, maxRows int) (*kfake.Cluster, string) {
	t.Helper()
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, "logs", "out"))
	produceN(t, c.ListenAddrs(), 0, n)
	cfg := strings.Replace(eosConfig(c.ListenAddrs(), "g", "", "out", maxRows), "sinks: {", "sinks: {"+tableConfig(t.TempDir()), 1)
	refused := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, Count: -1, Err: kerr.UnknownServerError,
		When: func(r kmsg.Request) bool { return r.(*kmsg.EndTxnRequest).Commit }})
	ctx, stop := context.WithTimeout(context.Background(), 4*time.Second)
	defer stop()
	wait := startJob(t, ctx, strings.Replace(cfg, "run: ", "", 1)+"run: {shutdown_timeout: 1s}\n", Mode{})
	if err := refused.Wait(ctx, 2); err != nil {
		t.Fatalf("no commit was refused: %v", err)
	}
	stop()
	if err := wait(); err != nil {
		t.Logf("the stopped job: %v", err)
	}
	refused.Remove()
	return c, cfg
}

// TestTableAndExactlyOnceKafkaWithoutFilesLoseNoBatchWhenOffsetsAreLost:
// the job stopped between a transaction's commit and the table's snapshot,
// and the group's offsets are then lost (deleted, as here, or expired
// after offsets.retention.minutes). The table is behind the Kafka
// output by that batch; the Kafka output's own record, its positions
// topic written in the same transactions, says where it stands, so the
// next start writes the batch into the table only: every record reaches
// read_committed consumers once (before the positions topic the batch
// came again: 70 of 200 seen twice; before the table moved after the
// transaction it was missing: 70 of 200).
func TestTableAndExactlyOnceKafkaWithoutFilesLoseNoBatchWhenOffsetsAreLost(t *testing.T) {
	const n, maxRows = 200, 70
	c, cfg := tableAndKafkaStoppedBeforeEndTxn(t, n, maxRows)
	// The group's offsets are lost: the group is deleted.
	deleteGroup(t, c.ListenAddrs(), "g")
	runTestJob(t, cfg, Mode{UntilNow: true})
	seen := testkit.ReadCommitted(t, c.ListenAddrs(), "out", n)
	missing, again := 0, 0
	for i := range n {
		switch k := seen[fmt.Sprintf(`{"n":%d}`, i)]; {
		case k == 0:
			missing++
		case k > 1:
			again += k - 1
		}
	}
	if missing > 0 || again > 0 {
		t.Errorf("read_committed: %d of %d records missing, %d seen again; want each once", missing, n, again)
	}
}

// TestMemberCommitsItsPartitionsInOneTransaction: with exactly_once a
// member writes the batches its partitions have ready in one transaction
// per commit cycle, not one per batch, and every record reaches
// read_committed consumers once.
func TestMemberCommitsItsPartitionsInOneTransaction(t *testing.T) {
	const n, partitions = 1200, 12
	c := testkit.FakeCluster(t, kfake.SeedTopics(partitions, "logs"), kfake.SeedTopics(1, "out"))
	produceN(t, c.ListenAddrs(), 0, n)
	commits := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, Observe: true, Count: -1,
		When: func(r kmsg.Request) bool { return r.(*kmsg.EndTxnRequest).Commit }})
	cfg := eosConfig(c.ListenAddrs(), "g", "", "out", 25)
	cfg = strings.Replace(cfg, "sinks: {", "sinks: {commit_interval: 300ms, ", 1)
	stats, err := runTestJobStats(t, cfg, Mode{UntilNow: true})
	if err != nil {
		t.Fatal(err)
	}
	everyValueOnce(t, testkit.ReadCommitted(t, c.ListenAddrs(), "out", n), n)
	batches, txns := stats.Batches.Load(), int64(commits.Hits())
	t.Logf("%d batches in %d transactions", batches, txns)
	if batches < n/25 || txns*4 > batches {
		t.Errorf("%d batches in %d transactions: want several partitions' batches per transaction", batches, txns)
	}
}

// tableOfDir opens the table of tableConfig(dir).
func tableOfDir(t *testing.T, dir string) *iceberg.Table {
	t.Helper()
	cfg := sink.Config{Iceberg: &sink.IcebergConfig{Table: "logs.raw", SpoolDir: filepath.Join(dir, "spool"),
		Catalog: sink.IcebergCatalog{URI: filepath.Join(dir, "catalog.db"), Warehouse: "file://" + filepath.Join(dir, "warehouse")}}}
	cfg.SetDefaults()
	tbl, err := iceberg.New(context.Background(), cfg.Iceberg, &sink.Schema{Fields: []sink.Field{{Name: "n", Type: sink.Int64, Required: true}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// tableLast is the last offset of logs/partition the table of tableConfig(dir)
// holds, -1 for none.
func tableLast(t *testing.T, dir string, partition int) int64 {
	t.Helper()
	tbl := tableOfDir(t, dir)
	defer tbl.Close()
	p, ok, err := tbl.Position(context.Background(), "logs", partition)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return -1
	}
	return p.Last
}

// TestPartitionReadsItsNextBatchWhileTheLastIsInTheCycle: with
// exactly_once a batch waits for the member's commit cycle; the partition
// reads its next batch meanwhile instead of standing still. The first
// transaction's commit is held until the partition fetches past that
// batch (each fetch here returns one produced batch of 50 records): a
// worker that waits for the cycle never does, and the commit is let go
// after 3 s. Every record is then in the output once, and nothing of the
// next batch was committed before the first: the group's offsets only grow
// by whole batches.
func TestPartitionReadsItsNextBatchWhileTheLastIsInTheCycle(t *testing.T) {
	const n, rows = 200, 50
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, "logs", "out"))
	for from := 0; from < n; from += rows {
		produceN(t, c.ListenAddrs(), from, rows) // one record batch each
	}
	var once sync.Once
	readOn := make(chan struct{})
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Observe: true, Count: -1, When: func(r kmsg.Request) bool {
		for _, tp := range r.(*kmsg.FetchRequest).Topics {
			for _, p := range tp.Partitions {
				if p.FetchOffset >= rows {
					once.Do(func() { close(readOn) })
				}
			}
		}
		return false
	}})
	var mu sync.Mutex // the controls run on the cluster's goroutine
	held, readWhileHeld := false, false
	var offsets []int64
	c.ControlKey(int16(kmsg.TxnOffsetCommit), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		for _, tp := range r.(*kmsg.TxnOffsetCommitRequest).Topics {
			for _, p := range tp.Partitions {
				offsets = append(offsets, p.Offset)
			}
		}
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.EndTxn), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		if r.(*kmsg.EndTxnRequest).Commit && !held {
			held = true
			c.SleepControl(func() {
				select {
				case <-readOn:
					readWhileHeld = true
				case <-time.After(3 * time.Second):
				}
			})
		}
		return nil, nil, false
	})
	cfg := eosConfig(c.ListenAddrs(), "g", t.TempDir(), "out", rows)
	cfg = strings.Replace(cfg, "start_offset: earliest}", "start_offset: earliest, fetch: {max_bytes: 1}}", 1)
	runTestJob(t, cfg, Mode{UntilNow: true})
	everyValueOnce(t, testkit.ReadCommitted(t, c.ListenAddrs(), "out", n), n)
	mu.Lock()
	defer mu.Unlock()
	if !held {
		t.Fatal("no commit was held")
	}
	if !readWhileHeld {
		t.Errorf("the partition did not read past its first batch (offsets 0-%d) while that batch's transaction waited to commit", rows-1)
	}
	for i, o := range offsets {
		if o%rows != 0 || i > 0 && o <= offsets[i-1] {
			t.Errorf("the group's offsets went %v: want whole batches of %d, in order", offsets, rows)
			break
		}
	}
}

// randomText is n characters that do not compress.
func randomText(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(rand.Text())
	}
	return b.String()[:n]
}

// TestRowsTheOutputTopicWouldRefuseLeaveTheBatch: with exactly_once, a
// row whose record is over the output topic's max.message.bytes (and
// under batch_bytes) leaves its batch as dead_letter.on_error says before
// any output has it: the Kafka output reads the topic's limit at start,
// since its rows are staged (into the files and held for the transaction)
// before the brokers could refuse one. Every other row is in the output
// once, the refused one in neither output.
func TestRowsTheOutputTopicWouldRefuseLeaveTheBatch(t *testing.T) {
	const n, rows, big = 200, 50, 60
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, "logs", "out"))
	testkit.SetTopicConfig(t, c.ListenAddrs(), "out", "max.message.bytes", "2000")
	values := make([][]byte, n)
	for i := range values {
		pad := 8
		if i == big {
			pad = 4000
		}
		values[i] = fmt.Appendf(nil, `{"n": %d, "s": %q}`, i, randomText(pad))
	}
	for from := 0; from < n; from += rows {
		produceValues(t, c.ListenAddrs(), values[from:from+rows])
	}
	dir := t.TempDir()
	cfg := eosConfig(c.ListenAddrs(), "g", dir, "out", rows)
	cfg = strings.Replace(cfg, "required: true}]}", "required: true}, {name: s, type: string}]}", 1)
	cfg = strings.Replace(cfg, "start_offset: earliest}", "start_offset: earliest, fetch: {max_bytes: 1}}", 1)
	runTestJob(t, cfg, Mode{UntilNow: true})
	seen := map[int]int{}
	for v, k := range testkit.ReadCommitted(t, c.ListenAddrs(), "out", n-1) {
		var i int
		if _, err := fmt.Sscanf(v, `{"n":%d,`, &i); err != nil {
			t.Fatalf("an output row %.60q: %v", v, err)
		}
		seen[i] += k
	}
	inFiles, _ := columnNInFiles(t, dir)
	for i := range n {
		want := 1
		if i == big {
			want = 0
		}
		if seen[i] != want || inFiles[int64(i)] != want {
			t.Errorf("record %d is in the output topic %d times and in the files %d; want %d", i, seen[i], inFiles[int64(i)], want)
		}
	}
}

// TestPartitionReadsItsNextBatchWhileTheTableCommits: a table waits for
// the member's next snapshot (sinks.commit_interval) before a batch is
// committed; the partition reads its next batch meanwhile, once the
// batch's data files are written. Seen by the cluster, in the order it
// takes requests: a fetch past the first batch comes before the group's
// offset passes it (a worker that waits for the snapshot fetches only
// after). Every record is in the table once.
func TestPartitionReadsItsNextBatchWhileTheTableCommits(t *testing.T) {
	const n, rows = 200, 50
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, "logs"))
	for from := 0; from < n; from += rows {
		produceN(t, c.ListenAddrs(), from, rows) // one record batch each
	}
	var seq, fetchedPast, committedPast atomic.Int64
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch, kmsg.OffsetCommit}, Observe: true, Count: -1, When: func(r kmsg.Request) bool {
		at := seq.Add(1)
		switch r := r.(type) {
		case *kmsg.FetchRequest:
			for _, tp := range r.Topics {
				for _, p := range tp.Partitions {
					if p.FetchOffset >= rows {
						fetchedPast.CompareAndSwap(0, at)
					}
				}
			}
		case *kmsg.OffsetCommitRequest:
			for _, tp := range r.Topics {
				for _, p := range tp.Partitions {
					if p.Offset >= rows {
						committedPast.CompareAndSwap(0, at)
					}
				}
			}
		}
		return false
	}})
	dir := t.TempDir()
	cfg := fmt.Sprintf(`kafka: {brokers: ["%s"], topics: [logs], group: g, start_offset: earliest, fetch: {max_bytes: 1}}
rack: {providers: [static]}
schema: {columns: [{name: n, type: int64, required: true}]}
batch: {max_rows: %d}
sinks: {commit_interval: 1s, %s}
dead_letter: {on_error: skip}
`, strings.Join(c.ListenAddrs(), `", "`), rows, strings.TrimSuffix(tableConfig(dir), ", "))
	runTestJob(t, cfg, Mode{UntilNow: true})
	if got := tableRecords(t, dir); got != n {
		t.Errorf("the table holds %d records; want %d", got, n)
	}
	if f, c := fetchedPast.Load(), committedPast.Load(); f == 0 || c == 0 || f > c {
		t.Errorf("request %d fetched past the first batch, request %d committed past it: the partition waited for the table's snapshot before reading on", f, c)
	}
}

// TestExactlyOnceCutsBatchesWhereAtLeastOnceDoes (issue 45): with
// exactly_once the rows of a batch were held decoded until its cut, so
// the memory budget cut its batches where at least once, which stages
// them, cuts none: more files and more transactions for the same records.
// Staged as at least once stages (the Kafka output holding its records'
// bytes for the transaction), the same records make the same files under
// either delivery, each row once in the files and in the output topic.
func TestExactlyOnceCutsBatchesWhereAtLeastOnceDoes(t *testing.T) {
	// Decoded, the rows are ~3x the 16 MiB budget (recordCost: a row of
	// eight columns is ~550 bytes); their records ~7 MiB.
	const n = 90_000
	c := testkit.FakeCluster(t, kfake.SeedTopics(1, "logs", "out-alo", "out-eos"))
	values := make([][]byte, 0, 1000)
	for from := 0; from < n; from += cap(values) {
		values = values[:0]
		for i := from; i < from+cap(values); i++ {
			values = append(values, fmt.Appendf(nil, `{"n":%d,"a":"x","b":"x","c":"x","d":"x","e":"x","f":"x","g":"x"}`, i))
		}
		produceValues(t, c.ListenAddrs(), values)
	}
	files := map[string]int{}
	for _, delivery := range []string{"at_least_once", "exactly_once"} {
		dir := t.TempDir()
		out := "out-alo"
		if delivery == "exactly_once" {
			out = "out-eos"
		}
		cfg := eosConfig(c.ListenAddrs(), "g-"+delivery, dir, out, 0)
		cfg = strings.Replace(cfg, "delivery: exactly_once", "delivery: "+delivery, 1)
		cfg = strings.Replace(cfg, "batch: {max_rows: 0}", "batch: {max_rows: 0, memory_budget: 16MiB}", 1)
		cfg = strings.Replace(cfg, "{name: n, type: int64, required: true}]}",
			"{name: n, type: int64, required: true}, {name: a, type: string}, {name: b, type: string}, {name: c, type: string}, "+
				"{name: d, type: string}, {name: e, type: string}, {name: f, type: string}, {name: g, type: string}]}", 1)
		stats, err := runTestJobStats(t, cfg, Mode{UntilNow: true})
		if err != nil {
			t.Fatal(err)
		}
		inFiles, count := columnNInFiles(t, dir)
		files[delivery] = count
		seen := map[int]int{}
		for v, k := range testkit.ReadCommitted(t, c.ListenAddrs(), out, n) {
			var i int
			if _, err := fmt.Sscanf(v, `{"n":%d,`, &i); err != nil {
				t.Fatalf("an output row %.60q: %v", v, err)
			}
			seen[i] += k
		}
		bad := 0
		for i := range n {
			if seen[i] != 1 || inFiles[int64(i)] != 1 {
				if bad++; bad <= 5 {
					t.Errorf("%s: record %d is in the output topic %d times and in the files %d; want once each", delivery, i, seen[i], inFiles[int64(i)])
				}
			}
		}
		t.Logf("%s: %d files, %d batches, %d cut by the memory budget", delivery, files[delivery], stats.Batches.Load(), stats.BudgetCuts.Load())
	}
	if files["exactly_once"] != files["at_least_once"] {
		t.Errorf("the same %d records made %d files with exactly_once and %d with at_least_once; want as many", n, files["exactly_once"], files["at_least_once"])
	}
}

// columnNInFiles counts each value of column n in the Parquet files under
// dir (not the dead letters'), and the files.
func columnNInFiles(t *testing.T, dir string) (map[int64]int, int) {
	t.Helper()
	seen, files := map[int64]int{}, 0
	for _, f := range testkit.FilesUnder(t, dir) {
		if strings.HasPrefix(f, "_errors/") || !strings.HasSuffix(f, ".parquet") {
			continue
		}
		files++
		got, err := parquet.ReadFile[struct {
			N int64 `parquet:"n"`
		}](filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range got {
			seen[r.N]++
		}
	}
	return seen, files
}
