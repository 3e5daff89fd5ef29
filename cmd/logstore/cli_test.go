package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"
)

// runCLI runs the logstore command line in-process, as main does.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runMain(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// editedLocalConfig writes a copy of configs/local.yaml with the first line
// holding old changed to new, and returns the copy's path and that line's
// number.
func editedLocalConfig(t *testing.T, old, new string) (path string, line int) {
	t.Helper()
	raw, err := os.ReadFile("../../configs/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	for i, l := range lines {
		if strings.Contains(l, old) && !strings.HasPrefix(strings.TrimSpace(l), "#") {
			lines[i], line = strings.Replace(l, old, new, 1), i+1
			break
		}
	}
	if line == 0 {
		t.Fatalf("configs/local.yaml has no line with %q", old)
	}
	path = filepath.Join(t.TempDir(), "local.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, line
}

func TestCheckNamesTheBadKeyAndItsLine(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []string // in the message, besides file:line
	}{
		{"misspelt key", "group:", "gruop:", []string{`"gruop"`, "configs/reference.yaml"}},
		{"bad enum", "format: text", "format: yaml", []string{"log.format", `"yaml"`, "json, text"}},
		{"bad nested enum", "follower_fetching: auto", "follower_fetching: sometimes", []string{"rack.follower_fetching", "auto, on, off"}},
		// They passed check, then the reader fetched 8 MiB a partition.
		{"negative fetch size", "start_offset: earliest", "fetch: {max_bytes: -1}", []string{"kafka.fetch.max_bytes", "-1 is negative", "1MiB"}},
		{"negative fetch wait", "start_offset: earliest", "fetch: {max_wait: -1s}", []string{"kafka.fetch.max_wait", "-1s is negative", "500ms"}},
		{"negative batch limit", "max_rows: 50000", "max_rows: -5", []string{"batch.max_rows", "-5 is negative"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, line := editedLocalConfig(t, tt.old, tt.new)
			code, stdout, stderr := runCLI(t, "check", "-c", path)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitUsage, stdout, stderr)
			}
			for _, w := range append([]string{fmt.Sprintf("%s:%d:", path, line)}, tt.want...) {
				if !strings.Contains(stderr, w) {
					t.Errorf("the message does not say %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // wanted in stdout
		stderr string // wanted in stderr
	}{
		{"no args", nil, exitUsage, "", "usage: logstore <command>"},
		{"unknown command", []string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{"help", []string{"--help"}, exitOK, "commands:", ""},
		{"version", []string{"version"}, exitOK, "logstore ", ""},
		{"unknown flag", []string{"check", "--nope"}, exitUsage, "", "-nope"},
		{"check without a file", []string{"check"}, exitUsage, "", "check needs -c FILE"},
		{"missing config file", []string{"check", "-c", "no-such.yaml"}, exitUsage, "", "no-such.yaml"},
		{"stray argument", []string{"version", "extra"}, exitUsage, "", `unexpected argument "extra"`},
		{"--version", []string{"--version"}, exitOK, runtime.Version(), ""},
		{"-v", []string{"-v"}, exitOK, runtime.Version(), ""},
		// A file named on the command line that is not there is a usage
		// error, as a missing config file is.
		{"replay of a missing input", []string{"replay", "-c", "../../configs/local.yaml", "--input", "/nonexistent"}, exitUsage, "", "/nonexistent"},
		{"run --from in words", []string{"run", "-c", "../../configs/local.yaml", "--from", "yesterday", "--to", "2026-11-29T08:00:00Z"}, exitUsage, "", `--from "yesterday" is not an RFC 3339 time such as 2026-11-29T07:00:00Z`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.code || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("logstore %s: exit %d, want %d with %q in stdout and %q in stderr\nstdout: %s\nstderr: %s",
					strings.Join(tt.args, " "), code, tt.code, tt.stdout, tt.stderr, stdout, stderr)
			}
		})
	}
}

// Help asked for is output (stdout, exit 0), so it pipes into a pager; a
// flag mistake is an error (stderr, exit 2).
func TestEverySubcommandHasHelpOnStdout(t *testing.T) {
	if len(commands) == 0 {
		t.Fatal("no subcommands registered")
	}
	for name := range commands {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, name, "--help")
			if code != exitOK || !strings.Contains(stdout, "usage: logstore "+name) || stderr != "" {
				t.Errorf("logstore %s --help: exit %d, want 0 with a usage line on stdout and nothing on stderr\nstdout: %s\nstderr: %s", name, code, stdout, stderr)
			}
		})
	}
}

func TestFlagMistakeUsageGoesToStderr(t *testing.T) {
	code, stdout, stderr := runCLI(t, "demo", "--nope")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, "usage: logstore demo") {
		t.Errorf("logstore demo --nope: exit %d, want %d with the usage on stderr only\nstdout: %s\nstderr: %s", code, exitUsage, stdout, stderr)
	}
}

func TestTableHelpDescribesSubcommands(t *testing.T) {
	code, stdout, _ := runCLI(t, "table", "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, sub := range []string{"positions  ", "expire  ", "compact  "} {
		if !strings.Contains(stdout, sub) {
			t.Errorf("table --help does not describe %q:\n%s", strings.TrimSpace(sub), stdout)
		}
	}
}

func TestPlanJSONShape(t *testing.T) {
	code, stdout, stderr := runCLI(t, "plan", "--topology", "../../configs/topology-example.json", "--json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	for _, k := range []string{"assignments", "local", "total"} {
		if _, ok := got[k]; !ok {
			t.Errorf("no %q in %s", k, stdout)
		}
	}
	var res struct {
		Assignments map[string][]struct {
			Topic     string `json:"topic"`
			Partition *int   `json:"partition"`
		} `json:"assignments"`
		Local, Total int
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	// The example has 9 + 3 partitions and four members: three each.
	assigned := 0
	for member, tps := range res.Assignments {
		for _, tp := range tps {
			if tp.Topic == "" || tp.Partition == nil {
				t.Errorf("member %s: an assignment without topic or partition: %s", member, stdout)
			}
		}
		if len(tps) != 3 {
			t.Errorf("member %s has %d partitions, want 3 (balanced)", member, len(tps))
		}
		assigned += len(tps)
	}
	if len(res.Assignments) != 4 || res.Total != 12 || assigned != 12 || res.Local < 1 || res.Local > res.Total {
		t.Errorf("%d members, local %d, total %d, %d assigned; want 4 members, 12 assigned, 0 < local <= total",
			len(res.Assignments), res.Local, res.Total, assigned)
	}
}

// rackOutput is what `logstore rack --json` prints. (rack.Result does not
// decode its own JSON: a trace entry's elapsed time is written as "1.5ms".)
type rackOutput struct {
	Rack        string   `json:"rack"`
	Source      string   `json:"source"`
	Candidates  []string `json:"candidates"`
	BrokerRacks []string `json:"broker_racks"`
	Matched     bool     `json:"matched"`
	Trace       []struct {
		Provider string `json:"provider"`
		Outcome  string `json:"outcome"`
		Detail   string `json:"detail"`
		Elapsed  string `json:"elapsed"`
	} `json:"trace"`
}

// rackJSON runs `logstore rack --json` and decodes what it prints.
func rackJSON(t *testing.T, args ...string) rackOutput {
	t.Helper()
	code, stdout, stderr := runCLI(t, append([]string{"rack", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("logstore rack: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	var res rackOutput
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("logstore rack --json printed no result: %v\n%s", err, stdout)
	}
	return res
}

func TestRackFromEnv(t *testing.T) {
	t.Setenv("LOGSTORE_RACK", "az-b")
	res := rackJSON(t, "--broker-racks", "az-a,az-b")
	if res.Rack != "az-b" || res.Source != "env" || !res.Matched {
		t.Errorf("rack %q from %q (matched %v), want az-b from env, matched", res.Rack, res.Source, res.Matched)
	}
}

func TestRackWithNoProviderAnswering(t *testing.T) {
	t.Setenv("LOGSTORE_RACK", "")
	cfg := filepath.Join(t.TempDir(), "env-only.yaml")
	text := fmt.Sprintf(`kafka: {brokers: ["127.0.0.1:9"], topics: [logs], group: g}
rack: {providers: [env]}
sinks: {files: {url: %q}}
dead_letter: {on_error: skip}
`, t.TempDir())
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// --broker-racks: the match step runs without asking the config's
	// (absent) cluster.
	res := rackJSON(t, "-c", cfg, "--broker-racks", "az-a,az-b,az-c")
	if res.Rack != "" || res.Source != "" || res.Matched {
		t.Errorf("rack %q from %q (matched %v), want none", res.Rack, res.Source, res.Matched)
	}
	providers := make([]string, len(res.Trace))
	for i, e := range res.Trace {
		providers[i] = e.Provider + ":" + e.Outcome
	}
	if !slices.Equal(providers, []string{"env:absent"}) {
		t.Errorf("trace %v, want only env, absent", providers)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s, more than the default rack.budget", d)
	}
}

// TestRackPrintsItsTraceOnce: the trace was printed as a table and again
// inside a ~1 KB WARN line; the warning's advice is kept, once.
func TestRackPrintsItsTraceOnce(t *testing.T) {
	t.Setenv("LOGSTORE_RACK", "")
	cfg := filepath.Join(t.TempDir(), "env-only.yaml")
	text := fmt.Sprintf(`kafka: {brokers: ["127.0.0.1:9"], topics: [logs], group: g}
rack: {providers: [static, env]}
sinks: {files: {url: %q}}
dead_letter: {on_error: skip}
`, t.TempDir())
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "rack", "-c", cfg, "--broker-racks", "az-a,az-b")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	all := stdout + stderr
	for _, once := range []string{"LOGSTORE_RACK is not set", "rack.static is not set", "set rack.static or LOGSTORE_RACK"} {
		if n := strings.Count(all, once); n != 1 {
			t.Errorf("%q printed %d times, want once:\n%s", once, n, all)
		}
	}
}

func TestTimeFlagsShowNoGoLayout(t *testing.T) {
	for _, flag := range []string{"--from", "--to"} {
		args := []string{"run", "-c", "../../configs/local.yaml", "--from", "2026-11-29T07:00:00Z", "--to", "2026-11-29T08:00:00Z"}
		args[slices.Index(args, flag)+1] = "yesterday"
		code, _, stderr := runCLI(t, args...)
		if code != exitUsage || strings.Contains(stderr, "2006") || strings.Contains(stderr, "parsing time") {
			t.Errorf("%s yesterday: exit %d, want %d and no Go time layout:\n%s", flag, code, exitUsage, stderr)
		}
	}
}

func TestVersionShowsModuleCommitAndGo(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.11",
		Main:      debug.Module{Path: "github.com/logstore/logstore", Version: "v0.4.0"},
		Settings: []debug.BuildSetting{
			{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "arm64"},
			{Key: "vcs.revision", Value: "4e30bdd0c8a1f2e3d4c5b6a79881726354453627"},
			{Key: "vcs.time", Value: "2026-12-02T05:44:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	got := versionText("dev", bi)
	for _, want := range []string{"logstore v0.4.0", "github.com/logstore/logstore", "4e30bdd0c8a1f2e3d4c5b6a79881726354453627", "2026-12-02T05:44:00Z", "uncommitted changes", "go1.26.11 linux/arm64"} {
		if !strings.Contains(got, want) {
			t.Errorf("version does not say %q:\n%s", want, got)
		}
	}
	// A version stamped by the build (-X main.version, the Dockerfile's
	// VERSION) wins over the module's.
	if got := versionText("1.2.3", bi); !strings.Contains(got, "logstore 1.2.3") {
		t.Errorf("stamped version not shown:\n%s", got)
	}
	// A test binary has no VCS stamp: say so rather than print nothing.
	if got := versionText("dev", &debug.BuildInfo{GoVersion: "go1.26.11"}); !strings.Contains(got, "commit    unknown") {
		t.Errorf("no commit line:\n%s", got)
	}
}
