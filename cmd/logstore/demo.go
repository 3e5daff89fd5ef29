//go:build !nodemo

package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/logstore/logstore/internal/loggen"
	"github.com/logstore/logstore/pipeline"
	"github.com/logstore/logstore/sink"
)

func init() {
	register("demo", "zero setup: embedded three-zone Kafka, realistic logs, the real pipeline → ./logstore-demo/run-…/", runDemo)
}

//go:embed demo.yaml
var demoConfig []byte

// demoZoneNames are the embedded brokers' zones, one member reading in each.
var demoZoneNames = []string{"az-a", "az-b", "az-c"}

// runDemo produces logs into an embedded three-broker Kafka and runs one
// member per zone with --until now. Every run writes into a folder of its
// own (run-<UTC time>) below --output: the embedded Kafka is new each
// time, so its offsets start at 0 again, and a run into the last one's
// folder found its output's resume records done and read nothing.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "[--records N] [--output URL] [--table]", stdout, stderr)
	records := fs.Int("records", 300_000, "log records to produce")
	partitions := fs.Int("partitions", 6, "partitions of the demo topic")
	output := fs.String("output", "logstore-demo", "where each run's folder goes: a folder, file:///path or s3://bucket/prefix (endpoint from AWS_ENDPOINT_URL_S3)")
	badEvery := fs.Int("bad-every", 100, "make every N-th record malformed (0: none)")
	table := fs.Bool("table", false, "also commit every batch to an Iceberg table (SQL catalog on a SQLite file) in a folder beside the run's")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkDemoCounts(*records, *partitions, *badEvery); err != nil {
		return err
	}
	parent, err := sink.ParseURL(*output)
	if err != nil {
		return usageError{err.Error()}
	}
	loc, err := demoRunLocation(parent, time.Now())
	if err != nil {
		return err
	}
	conf := demoConfig
	var tableDir string
	if *table {
		if loc.Scheme != "file" {
			return usageError{"demo --table: the table's catalog is a local SQLite file; give --output a folder"}
		}
		tableDir = loc.Dir + "-table"
		if err := os.MkdirAll(tableDir, 0o755); err != nil {
			return fmt.Errorf("demo --table: %w", err)
		}
		conf = demoWithTable(conf, tableDir)
	}
	zones := &demoZones{zones: demoZoneNames}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(len(zones.zones)), kfake.SeedTopics(int32(*partitions), "logs"), kfake.ListenFn(zones.listen))
	if err != nil {
		return fmt.Errorf("starting the embedded Kafka: %w", err)
	}
	defer cluster.Close()
	zones.serveFromEveryZone(cluster, "logs")
	delayFirstRebalance(cluster, len(zones.zones), 3*time.Second)
	brokers := cluster.ListenAddrs()
	fmt.Fprintf(stdout, "demo: embedded Kafka, %d brokers in zones %s; producing %d logs (1 in %d malformed) into %d partitions…\n", len(zones.zones), strings.Join(zones.zones, ", "), *records, *badEvery, *partitions)
	start := time.Now()
	if err := produceDemoLogs(ctx, brokers, *records, *badEvery); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "demo: produced in %s; one member per zone runs --until now into %s\n", time.Since(start).Round(time.Millisecond), loc)

	members := make([]*pipeline.Job, len(zones.zones))
	var log *slog.Logger
	var cfg *pipeline.Config
	for i, zone := range zones.zones {
		os.Setenv("LOGSTORE_DEMO_BROKERS", strings.Join(brokers, ","))
		os.Setenv("LOGSTORE_DEMO_OUTPUT", loc.String())
		os.Setenv("LOGSTORE_DEMO_ZONE", zone)
		if cfg, err = pipeline.Parse("demo.yaml (embedded)", conf); err != nil {
			return err
		}
		if log == nil {
			log = newLogger(cfg.Log, stderr)
		}
		if members[i], err = pipeline.NewJob(ctx, cfg, pipeline.Deps{Log: log.With("member", zone)}); err != nil {
			return err
		}
		defer members[i].Close()
	}
	exitOnSecondSignal(ctx, log)
	if os.Getenv("GOMEMLIMIT") == "" {
		// Go's soft limit as runJob sets it, with every member's budget:
		// the members share the process, and its fixed costs once.
		fixed := pipeline.MemoryLimit(cfg.Batch) - cfg.Batch.MemoryBudget
		debug.SetMemoryLimit(int64(len(members))*cfg.Batch.MemoryBudget + fixed)
	}
	done := showProgress(ctx, func() pipeline.Progress { return sumProgress(members) }, cfg.Run.ProgressInterval, log, stderr)
	errs := make([]error, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Go(func() { errs[i] = m.Run(ctx, pipeline.Mode{UntilNow: true}) })
	}
	wg.Wait()
	done()
	writeDemoSummary(stdout, members, loc)
	if tableDir != "" {
		catalog := filepath.Join(tableDir, "catalog.db")
		fmt.Fprintf(stdout, "  Iceberg table    logs.demo, catalog %s, data under %s\n", catalog, filepath.Join(tableDir, "warehouse"))
		fmt.Fprintf(stdout, "                   its row count, with pyiceberg (scripts/setup.sh, or pip install 'pyiceberg[sql-sqlite,pyarrow]>=0.12'):\n")
		fmt.Fprintf(stdout, "                   scripts/read_iceberg.py --catalog %s --table logs.demo --count\n", catalog)
	}
	return demoError(errs, loc)
}

// checkDemoCounts refuses counts the demo cannot honour: a negative
// --records produced nothing and exited 0, --partitions 0 made kfake pick
// its own default.
func checkDemoCounts(records, partitions, badEvery int) error {
	switch {
	case records < 1:
		return usageError{fmt.Sprintf("demo: --records %d: give at least 1 (the default is 300000)", records)}
	case partitions < 1:
		return usageError{fmt.Sprintf("demo: --partitions %d: give at least 1 (the default is 6)", partitions)}
	case badEvery < 0:
		return usageError{fmt.Sprintf("demo: --bad-every %d: give 0 for no malformed records, or N for one in N", badEvery)}
	}
	return nil
}

// demoError is the members' errors, each told once. A demo stopped early
// (Ctrl-C) cannot be continued as a job can: the next run starts a new
// embedded Kafka and a new folder.
// demoWithTable adds sinks.iceberg to the demo's job: table logs.demo,
// hourly, its SQLite catalog and warehouse in dir (beside the run's folder,
// so the run's Parquet count stays the files sink's own).
func demoWithTable(conf []byte, dir string) []byte {
	block := fmt.Sprintf(`sinks:
  iceberg:
    table: logs.demo
    catalog: {type: sql, uri: %q, warehouse: %q}
    partition_by: [{column: ts, transform: hour}]
`, filepath.Join(dir, "catalog.db"), "file://"+filepath.Join(dir, "warehouse"))
	return []byte(strings.Replace(string(conf), "sinks:\n", block, 1))
}

func demoError(errs []error, loc sink.Location) error {
	var distinct []error
	stopped := true
	for _, err := range errs {
		if err == nil {
			continue
		}
		stopped = stopped && errors.Is(err, pipeline.ErrStoppedEarly)
		if !slices.ContainsFunc(distinct, func(e error) bool { return e.Error() == err.Error() }) {
			distinct = append(distinct, err)
		}
	}
	if len(distinct) > 0 && stopped {
		return demoStopped{loc}
	}
	return errors.Join(distinct...)
}

// demoStopped is a demo stopped before the end; it exits as a stopped run.
type demoStopped struct{ loc sink.Location }

func (d demoStopped) Error() string {
	return fmt.Sprintf("demo stopped before the end; what it wrote is under %s, and `make demo` starts a new run", d.loc)
}

func (demoStopped) Is(target error) bool { return target == pipeline.ErrStoppedEarly }

// demoRunLocation is a folder below parent no run has used: run-<UTC time>.
func demoRunLocation(parent sink.Location, now time.Time) (sink.Location, error) {
	name := "run-" + now.UTC().Format("20060102-150405")
	loc := parent
	for n := 2; ; n++ {
		if parent.Scheme != "file" {
			loc.Prefix = path.Join(parent.Prefix, name)
			return loc, nil
		}
		loc.Dir = filepath.Join(parent.Dir, name)
		if _, err := os.Stat(loc.Dir); errors.Is(err, fs.ErrNotExist) {
			return loc, nil
		} else if err != nil {
			return loc, fmt.Errorf("demo output: %w", err)
		}
		name = fmt.Sprintf("run-%s-%d", now.UTC().Format("20060102-150405"), n)
	}
}

// sumProgress is the members' progress together.
func sumProgress(members []*pipeline.Job) pipeline.Progress {
	var all pipeline.Progress
	for _, m := range members {
		p := m.Progress()
		all.Records += p.Records
		all.Rows += p.Rows
		all.RecordsPerSecond += p.RecordsPerSecond
		if p.Remaining < 0 || all.Remaining < 0 {
			all.Remaining = -1
		} else {
			all.Remaining += p.Remaining
		}
	}
	all.ETA = -1
	if all.Remaining >= 0 && all.RecordsPerSecond > 0 {
		all.ETA = time.Duration(float64(all.Remaining) / all.RecordsPerSecond * float64(time.Second)).Round(time.Second)
	}
	return all
}

// writeDemoSummary prints what this run did: its members' counters, the
// share of fetched bytes each read in its own zone, and the files in this
// run's own folder, data apart from dead letters.
func writeDemoSummary(w io.Writer, members []*pipeline.Job, loc sink.Location) {
	var all pipeline.Summary
	fmt.Fprintf(w, "logstore demo summary (%d members, one per zone)\n", len(members))
	for _, m := range members {
		s := m.Summary()
		fmt.Fprintf(w, "  member %-6s   %d records, %d rows; %s of its fetched bytes from its own zone\n", s.Rack, s.Records, s.Rows, localShare(s.SameRackBytes, s.CrossRackBytes))
		all.Records += s.Records
		all.Rows += s.Rows
		all.Batches += s.Batches
		all.DeadLetters += s.DeadLetters
		all.Filtered += s.Filtered
		all.SameRackBytes += s.SameRackBytes
		all.CrossRackBytes += s.CrossRackBytes
		all.Elapsed = max(all.Elapsed, s.Elapsed)
	}
	fmt.Fprintf(w, "  elapsed          %s\n", all.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  records read     %d\n", all.Records)
	fmt.Fprintf(w, "  rows written     %d in %d batches\n", all.Rows, all.Batches)
	fmt.Fprintf(w, "  dead letters     %d\n", all.DeadLetters)
	fmt.Fprintf(w, "  filtered         %d (schema.where drops DEBUG lines)\n", all.Filtered)
	fmt.Fprintf(w, "  local share      %s of %.1f MiB fetched; %.1f KiB across zones (leaders' answers naming the replica in the reader's zone)\n", localShare(all.SameRackBytes, all.CrossRackBytes),
		float64(all.SameRackBytes+all.CrossRackBytes)/(1<<20), float64(all.CrossRackBytes)/(1<<10))
	if loc.Scheme != "file" {
		fmt.Fprintf(w, "  files            under %s\n", loc)
		return
	}
	data, dead := countDemoFiles(loc.Dir)
	fmt.Fprintf(w, "  Parquet files    %d data files (%.1f MiB) and %d dead-letter files (%.1f MiB, in _errors/), written by this run under %s\n",
		data.n, float64(data.size)/(1<<20), dead.n, float64(dead.size)/(1<<20), loc.Dir)
	fmt.Fprintln(w, "  zones            labels on one machine: the embedded brokers answer a fetch with the replica in the reader's zone, as Kafka's rack-aware selector does; `make zones` (root) counts real cross-zone bytes with the kernel")
}

func localShare(same, cross int64) string {
	if same+cross == 0 {
		return "n/a (nothing fetched)"
	}
	return fmt.Sprintf("%.2f %%", 100*float64(same)/float64(same+cross))
}

// produceDemoLogs writes realistic logs, some malformed, spread by key.
func produceDemoLogs(ctx context.Context, brokers []string, n, badEvery int) error {
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: "logs", Balancer: &kafka.Hash{}, BatchSize: 5000, BatchTimeout: 5 * time.Millisecond, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	gen := loggen.New(42, time.Now().Add(-2*time.Hour), 2*time.Hour/time.Duration(max(n, 1)))
	gen.BadEvery = badEvery
	batch := make([]kafka.Message, 0, 5000)
	for i := 0; i < n; i++ {
		key, value, at := gen.Next()
		batch = append(batch, kafka.Message{Key: append([]byte(nil), key...), Value: append([]byte(nil), value...), Time: at})
		if len(batch) == cap(batch) || i == n-1 {
			if err := w.WriteMessages(ctx, batch...); err != nil {
				return fmt.Errorf("producing demo logs: %w", err)
			}
			batch = batch[:0]
		}
	}
	return nil
}

type fileCount struct {
	n    int
	size int64
}

// countDemoFiles counts the Parquet files under dir: data, and dead
// letters (below an _errors folder).
func countDemoFiles(dir string) (data, dead fileCount) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") && !strings.HasSuffix(p, sink.DeadLetterExt) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		c := &data
		if rel, _ := filepath.Rel(dir, p); strings.HasPrefix(rel, "_errors"+string(filepath.Separator)) {
			c = &dead
		}
		c.n++
		c.size += info.Size()
		return nil
	})
	return data, dead
}
