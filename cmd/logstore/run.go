package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/logstore/logstore/pipeline"
)

func init() {
	register("run", "run the job: Kafka → Parquet files (S3 or local) and Kafka", runRun)
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", "-c FILE [--until now] [--from TIME --to TIME]", stderr)
	path := fs.String("c", "", "config file (YAML)")
	until := fs.String("until", "", `"now": read to the end offsets seen at start, flush, commit and exit (Spark's availableNow)`)
	from := fs.String("from", "", "replay from this RFC 3339 time (with --to), outside the group, into a separate prefix")
	to := fs.String("to", "", "replay up to this RFC 3339 time (exclusive)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return usageError{"run needs -c FILE"}
	}
	mode, err := parseMode(*until, *from, *to)
	if err != nil {
		return err
	}
	cfg, err := pipeline.Load(*path)
	if err != nil {
		return err
	}
	log := newLogger(cfg.Log, stderr)
	releaseStartPages()
	return runJob(ctx, cfg, mode, pipeline.Deps{Log: log}, stdout, stderr)
}

func parseMode(until, from, to string) (pipeline.Mode, error) {
	var m pipeline.Mode
	switch until {
	case "":
	case "now":
		m.UntilNow = true
	default:
		return m, usageError{fmt.Sprintf("--until %q: only \"now\" is supported", until)}
	}
	if (from == "") != (to == "") {
		return m, usageError{"--from and --to go together"}
	}
	if from == "" {
		return m, nil
	}
	if m.UntilNow {
		return m, usageError{"--until now and --from/--to exclude each other"}
	}
	var err error
	if m.From, err = parseFlagTime("--from", from); err != nil {
		return m, err
	}
	if m.To, err = parseFlagTime("--to", to); err != nil {
		return m, err
	}
	if !m.To.After(m.From) {
		return m, usageError{"--to must be after --from"}
	}
	m.Prefix = pipeline.BackfillPrefix(m.From, m.To)
	return m, nil
}

// parseFlagTime reads an RFC 3339 time; its error shows an example, not Go's
// layout string.
func parseFlagTime(flag, v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return t, usageError{fmt.Sprintf("%s %q is not an RFC 3339 time such as 2026-11-29T07:00:00Z (UTC) or 2026-11-29T16:00:00+09:00", flag, v)}
	}
	return t, nil
}

// runJob runs a job to its end, with progress when it has one (stderr),
// and prints the summary. The first signal
// (already wired into ctx) is the graceful stop; a second one exits at once:
// what was committed stays committed, and open batches are re-read.
func runJob(ctx context.Context, cfg *pipeline.Config, mode pipeline.Mode, deps pipeline.Deps, stdout, stderr io.Writer) error {
	exitOnSecondSignal(ctx, deps.Log)
	if os.Getenv("GOMEMLIMIT") == "" {
		// The budget plus room for the fixed costs (configs/reference.yaml,
		// batch.memory_budget): the garbage collector works harder near it
		// instead of letting the heap double (GOGC's default).
		debug.SetMemoryLimit(pipeline.MemoryLimit(cfg.Batch))
	}
	if cfg.Metrics.Listen != "" {
		// Served from before zone detection, so /healthz answers a slow
		// start, until the job returns, so a stopping member still answers
		// (/readyz: stopping) while it flushes.
		if deps.Metrics == nil {
			deps.Metrics = pipeline.NewMetrics(nil)
		}
		serving, stopServing := context.WithCancel(context.WithoutCancel(ctx))
		defer stopServing()
		if err := deps.Metrics.Serve(serving, cfg.Metrics.Listen); err != nil {
			return err
		}
	}
	if err := pipeline.ZoneClientID(ctx, cfg, deps.Log); err != nil {
		return err
	}
	job, err := pipeline.NewJob(ctx, cfg, deps)
	if err != nil {
		return err
	}
	defer job.Close()
	done := func() {}
	if mode.Bounded() {
		done = showProgress(ctx, job.Progress, cfg.Run.ProgressInterval, deps.Log, stderr)
	}
	err = job.Run(ctx, mode)
	done()
	job.Summary().WriteText(stdout)
	return err
}

// exitOnSecondSignal exits at once on a signal after the first (already
// wired into ctx, the graceful stop).
func exitOnSecondSignal(ctx context.Context, log *slog.Logger) {
	go func() {
		<-ctx.Done()
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		<-sig
		log.Error("second signal: exiting now; uncommitted batches will be re-read")
		os.Exit(exitRuntime)
	}()
}
