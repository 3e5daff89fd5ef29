package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEOSLabArguments: the exactly-once lab (scripts/eos-lab.sh) takes
// minutes of load and is not run here; its argument parsing is, with
// --dry-run, so a flag that stops parsing, or a knob read wrong, shows
// in CI and not after the services are set up.
func TestEOSLabArguments(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		args []string
		ok   bool
		want string
	}{
		{"defaults", nil, nil, true,
			"600 partitions, 20000 records/s for 300 s (warm-up 30 s), batch.max_age 10s, sinks.commit_interval default, delivery exactly_once"},
		{"flags", nil, []string{"--partitions", "60", "--rate", "2000", "--duration", "2m", "--commit-interval", "1s", "--delivery", "at_least_once,exactly_once"}, true,
			"60 partitions, 2000 records/s for 120 s (warm-up 30 s), batch.max_age 10s, sinks.commit_interval 1s, delivery at_least_once exactly_once"},
		{"env", []string{"EOSLAB_RATE=500", "EOSLAB_DURATION=90", "EOSLAB_WARMUP=10s"}, nil, true,
			"600 partitions, 500 records/s for 90 s (warm-up 10 s)"},
		{"a flag wins over the env", []string{"EOSLAB_RATE=500"}, []string{"--rate", "700"}, true, "700 records/s"},
		{"bad duration", nil, []string{"--duration", "5x"}, false, "'5x' is not a duration"},
		{"warm-up longer than the run", nil, []string{"--duration", "20s"}, false, "must be longer than the warm-up"},
		{"bad delivery", nil, []string{"--delivery", "exactly_once,twice"}, false, "--delivery twice: want exactly_once or at_least_once"},
		{"bad rate", nil, []string{"--rate", "fast"}, false, "--rate fast: want records/s"},
		{"missing value", nil, []string{"--partitions"}, false, "--partitions needs a value"},
		{"unknown option", nil, []string{"--rounds", "3"}, false, "unknown option '--rounds'"},
		{"group protocol default", nil, nil, true, "delivery exactly_once, group protocol classic,"},
		{"group protocol flag", nil, []string{"--group-protocol", "consumer"}, true, "group protocol consumer,"},
		{"group protocol env", []string{"EOSLAB_GROUP_PROTOCOL=consumer"}, nil, true, "group protocol consumer,"},
		{"bad group protocol", nil, []string{"--group-protocol", "eager"}, false, "--group-protocol eager: want classic or consumer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command("bash", append([]string{"../../scripts/eos-lab.sh", "--dry-run"}, c.args...)...)
			cmd.Env = append(cmd.Environ(), c.env...)
			out, err := cmd.CombinedOutput()
			if (err == nil) != c.ok {
				t.Fatalf("exit error %v, want ok=%v; output:\n%s", err, c.ok, out)
			}
			if !strings.Contains(string(out), c.want) {
				t.Errorf("output does not say %q:\n%s", c.want, out)
			}
		})
	}
}
