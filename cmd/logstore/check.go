package main

import (
	"context"
	"fmt"
	"io"

	"github.com/goccy/go-yaml"

	"github.com/logstore/logstore/pipeline"
)

func init() {
	register("check", "validate a config and print it with defaults applied and secrets redacted", runCheck)
}

func runCheck(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("check", "-c FILE", stdout, stderr)
	path := fs.String("c", "", "config file (YAML)")
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
	out, err := yaml.MarshalWithOptions(cfg, yaml.Indent(2))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# %s is valid; effective config:\n%s", *path, out)
	return nil
}
