package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/logstore/logstore/pipeline"
	"github.com/logstore/logstore/pipeline/decode"
	"github.com/logstore/logstore/sink"
)

func init() {
	register("check", "validate a config and print it with defaults applied and secrets redacted", runCheck)
}

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("check", "-c FILE", stdout, stderr)
	path := fs.String("c", "", "config file (YAML)")
	offline := fs.Bool("offline", false, "do not read the table of sinks.iceberg from its catalog (for configs from untrusted sources: without it, check connects to the catalog the config names)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *path == "" {
		return usageError{"check needs -c FILE"}
	}
	cfg, err := pipeline.Load(*path)
	if err != nil {
		return err
	}
	if !*offline {
		if err := checkTableOf(ctx, cfg, stderr); err != nil {
			return err
		}
	}
	out, err := yaml.MarshalWithOptions(cfg, yaml.Indent(2))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# %s is valid; effective config:\n%s", *path, out)
	return nil
}

// tableCheckTimeout bounds the look at the table's catalog: check answers
// even when the catalog is out of reach.
const tableCheckTimeout = 20 * time.Second

// checkTableOf checks, when the config has sinks.iceberg and its catalog
// answers, that the table can take what the config writes (a narrowed
// column, another partition spec would stop the job at start): such a
// table is the config's error (exit 2). A catalog out of reach is said on
// stderr and is no error: check runs in CI, without the job's network.
func checkTableOf(ctx context.Context, cfg *pipeline.Config, stderr io.Writer) error {
	tc := cfg.Sinks.Iceberg
	if tc == nil {
		return nil
	}
	dec, err := decode.New(cfg.Schema)
	if err != nil {
		return err // Load checked the schema
	}
	ctx, cancel := context.WithTimeout(ctx, tableCheckTimeout)
	defer cancel()
	err = sink.CheckTable(ctx, tc, dec.Schema())
	var te *sink.TableConfigError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		return fmt.Errorf("sinks.iceberg: %w", err)
	case errors.Is(err, sink.ErrNoTableSink):
		fmt.Fprintf(stderr, "logstore: table %s not checked: %v\n", tc.Table, err)
		return nil
	}
	fmt.Fprintf(stderr, "logstore: table %s not checked (its catalog did not answer: %v); the job checks it at start\n", tc.Table, err)
	return nil
}
