package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/logstore/logstore/pipeline"
	"github.com/logstore/logstore/rack"
)

func init() {
	register("rack", "detect this worker's zone and match it with the brokers' racks", runRack)
}

func runRack(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("rack", "[-c FILE] [--brokers HOST:PORT,...] [--broker-racks RACK,...] [--json]", stdout, stderr)
	path := fs.String("c", "", "config file: its rack section, and kafka.brokers to read the brokers' racks from")
	brokers := fs.String("brokers", "", "bootstrap brokers to read racks from (overrides kafka.brokers)")
	brokerRacks := fs.String("broker-racks", "", "the brokers' racks, given instead of asking a cluster")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var cfg rack.Config
	var bootstrap []string
	var kcfg pipeline.InputConfig
	if *path != "" {
		c, err := pipeline.Load(*path)
		if err != nil {
			return err
		}
		cfg, kcfg, bootstrap = c.Rack, c.Kafka, c.Kafka.Brokers
	}
	cfg.SetDefaults()
	if *brokers != "" {
		bootstrap = splitList(*brokers)
	}
	warnings := &warningsOnly{}
	log := slog.New(warnings)
	var racks []string // nil: no match step
	switch {
	case *brokerRacks != "":
		racks = splitList(*brokerRacks)
	case len(bootstrap) > 0:
		kcfg.Brokers = bootstrap
		var err error
		if racks, err = pipeline.BrokerRacks(ctx, kcfg); err != nil {
			return err
		}
	}
	res, err := rack.Resolve(ctx, cfg, racks, log)
	if err != nil {
		return err
	}
	// After the result, which explains them.
	defer func() {
		for _, w := range warnings.messages {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
	}()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	shown := res.Rack
	if shown == "" {
		shown = "(none: rack-blind)"
	}
	fmt.Fprintf(stdout, "rack        %s\nsource      %s\ncandidates  %s\n", shown, res.Source, strings.Join(res.Candidates, ", "))
	if racks != nil {
		fmt.Fprintf(stdout, "brokers     %s (matched: %v)\n", strings.Join(racks, ", "), res.Matched)
	}
	for _, t := range res.Trace {
		fmt.Fprintf(stdout, "  %-11s %-9s %-8s %s\n", t.Provider, t.Outcome, t.Elapsed, t.Detail)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// warningsOnly keeps the messages of the warnings rack.Resolve logs for a
// worker. Their attributes repeat the trace this command prints as a table
// (about 1 KB on one line), so only the advice in the message is shown.
type warningsOnly struct{ messages []string }

func (w *warningsOnly) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (w *warningsOnly) Handle(_ context.Context, r slog.Record) error {
	w.messages = append(w.messages, r.Message)
	return nil
}

func (w *warningsOnly) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warningsOnly) WithGroup(string) slog.Handler      { return w }
