package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/logstore/logstore/pipeline"
	"github.com/logstore/logstore/rack"
)

func init() {
	register("plan", "show the rack-aware assignment for a topology file or the live group", runPlan)
}

func runPlan(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plan", "--topology FILE | -c FILE [--json]", stdout, stderr)
	topology := fs.String("topology", "", "a JSON topology (brokers, topics, members); see configs/topology-example.json")
	path := fs.String("c", "", "config file: plan the live cluster's partitions for the group's current members")
	asJSON := fs.Bool("json", false, `print {"assignments": ..., "local": N, "total": M}`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var res rack.PlanResult
	switch {
	case (*topology == "") == (*path == ""):
		return usageError{"plan needs exactly one of --topology FILE and -c FILE"}
	case *topology != "":
		t, err := rack.ReadTopologyFile(*topology)
		if err != nil {
			return usageError{err.Error()}
		}
		res = rack.PlanTopology(t)
	default:
		cfg, err := pipeline.Load(*path)
		if err != nil {
			return err
		}
		if res, err = pipeline.PlanLive(ctx, cfg, slog.New(slog.NewTextHandler(stderr, nil))); err != nil {
			return err
		}
		if advice := pipeline.FilesAdvice(res.Total, cfg); advice != "" {
			fmt.Fprintf(stderr, "logstore: note: %s\n", advice)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return res.WriteText(stdout)
}
